//! Shared schedulers: one group per client, joined by every queue handle of that client that
//! wants a scheduler (as every Java `RDelayedQueue` of one Redisson client shares its transfer
//! machinery), so a service with many queues opens one pub/sub connection, not one per queue.

use super::group::GroupShared;
use super::{SchedulerConfig, SchedulerGroup};
use crate::redis::script::QueueSpec;
use crate::Result;
use fred::clients::Client;
use fred::interfaces::ClientLike;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

type Registry = Mutex<HashMap<String, (Weak<GroupShared>, SchedulerConfig)>>;
static REGISTRY: LazyLock<Registry> = LazyLock::new(Default::default);

/// The registry; every change is one map operation, so a poisoned lock is used as it is.
fn registry(
) -> std::sync::MutexGuard<'static, HashMap<String, (Weak<GroupShared>, SchedulerConfig)>> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One queue handle's share of its client's scheduler group.
#[derive(Debug)]
pub(crate) struct SchedulerLease {
    group: SchedulerGroup,
    name: String,
}

impl SchedulerLease {
    /// The group the queue is in.
    pub(crate) fn group(&self) -> &SchedulerGroup {
        &self.group
    }

    /// Adds `queue` to `client`'s group, starting the group (with `config`'s sweep and
    /// concurrency settings) if none runs; the queue keeps its own `config`.
    pub(crate) async fn acquire(
        client: &Client,
        queue: &QueueSpec,
        config: SchedulerConfig,
    ) -> Result<Self> {
        let group = group_of(client, &config).await?;
        group.add_spec(queue.clone(), config).await?;
        Ok(SchedulerLease {
            group,
            name: queue.keys.target().to_owned(),
        })
    }

    /// Names of queues as the group moves values of them (see [`SchedulerGroup::moved_rx`]),
    /// with a key that is the same for every lease of one group.
    pub(crate) fn moved_rx(&self) -> (usize, tokio::sync::broadcast::Receiver<Arc<str>>) {
        let key = Arc::as_ptr(self.group.shared()) as usize;
        (key, self.group.moved_rx())
    }

    /// Gives the lease back: the queue leaves the group when no other handle holds it, and the
    /// last lease of the client stops the group and waits for it.
    pub(crate) async fn release(self) {
        self.group.remove(&self.name).await;
        let last = {
            let mut registry = registry();
            // This lease and the registry's weak reference: nobody else holds the group.
            let last = Arc::strong_count(self.group.shared()) == 1;
            if last {
                registry.retain(|_, (weak, _)| {
                    weak.strong_count() > 1 || !self.group.same_as_weak(weak)
                });
            }
            last
        };
        if last {
            self.group.shutdown().await;
        }
    }
}

/// The client's group, started with `config` if none runs.
async fn group_of(client: &Client, config: &SchedulerConfig) -> Result<SchedulerGroup> {
    let id = client.id().to_owned();
    if let Some(group) = lookup(&id) {
        return Ok(group);
    }
    let group = SchedulerGroup::spawn(client.clone(), config.clone()).await?;
    let existing = {
        let mut registry = registry();
        match registry
            .get(&id)
            .and_then(|(weak, config)| Some((weak.upgrade()?, config.clone())))
        {
            Some((shared, config)) => Some(SchedulerGroup::from_shared(shared, config)),
            None => {
                registry.retain(|_, (weak, _)| weak.strong_count() > 0);
                registry.insert(id, (Arc::downgrade(group.shared()), config.clone()));
                None
            }
        }
    };
    match existing {
        // Another handle started one meanwhile: use it and stop ours.
        Some(existing) => {
            group.shutdown().await;
            Ok(existing)
        }
        None => Ok(group),
    }
}

fn lookup(id: &str) -> Option<SchedulerGroup> {
    let registry = registry();
    let (weak, config) = registry.get(id)?;
    Some(SchedulerGroup::from_shared(weak.upgrade()?, config.clone()))
}
