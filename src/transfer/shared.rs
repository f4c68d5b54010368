//! Shared schedulers: one group per client, joined by every queue handle of that client that
//! wants a scheduler (as every Java `RDelayedQueue` of one Redisson client shares its transfer
//! machinery), so a service with many queues opens one pub/sub connection, not one per queue.

use super::state::GroupShared;
use super::{GroupConfig, SchedulerGroup, TransferConfig};
use crate::redis::script::QueueSpec;
use crate::Result;
use fred::clients::Client;
use fred::interfaces::ClientLike;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

type Registry = Mutex<HashMap<String, (Weak<GroupShared>, GroupConfig)>>;
static REGISTRY: LazyLock<Registry> = LazyLock::new(Default::default);

/// The registry; every change is one map operation, so a poisoned lock is used as it is.
fn registry() -> std::sync::MutexGuard<'static, HashMap<String, (Weak<GroupShared>, GroupConfig)>> {
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

    /// Adds `queue` to `client`'s group with its `transfer` settings, starting the group (with
    /// `group`'s settings, or the defaults) if none runs. A `group` that differs from the
    /// settings of the running group is warned about: the group keeps its own.
    pub(crate) async fn acquire(
        client: &Client,
        queue: &QueueSpec,
        group: Option<GroupConfig>,
        transfer: TransferConfig,
    ) -> Result<Self> {
        transfer.validate()?;
        let group = group_of(client, queue.keys.target(), group).await?;
        group.add_spec(queue.clone(), transfer).await?;
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

/// The client's group, started with `asked` (or the defaults) if none runs; `queue` asked for it.
async fn group_of(
    client: &Client,
    queue: &str,
    asked: Option<GroupConfig>,
) -> Result<SchedulerGroup> {
    let id = client.id().to_owned();
    if let Some((group, in_force)) = lookup(&id) {
        warn_if_other(queue, in_force, asked);
        return Ok(group);
    }
    let config = asked.unwrap_or_default();
    let group = SchedulerGroup::spawn(client.clone(), config).await?;
    let existing = {
        let mut registry = registry();
        match registry
            .get(&id)
            .and_then(|(weak, config)| Some((weak.upgrade()?, *config)))
        {
            Some((shared, in_force)) => Some((SchedulerGroup::from_shared(shared), in_force)),
            None => {
                registry.retain(|_, (weak, _)| weak.strong_count() > 0);
                registry.insert(id, (Arc::downgrade(group.shared()), config));
                None
            }
        }
    };
    match existing {
        // Another handle started one meanwhile: use it and stop ours.
        Some((existing, in_force)) => {
            group.shutdown().await;
            warn_if_other(queue, in_force, asked);
            Ok(existing)
        }
        None => Ok(group),
    }
}

/// The running group of the client `id`, with its settings.
fn lookup(id: &str) -> Option<(SchedulerGroup, GroupConfig)> {
    let registry = registry();
    let (weak, config) = registry.get(id)?;
    Some((SchedulerGroup::from_shared(weak.upgrade()?), *config))
}

/// Warns that `queue` asked for group settings other than those of the group it joins.
fn warn_if_other(queue: &str, in_force: GroupConfig, asked: Option<GroupConfig>) {
    if let Some(asked) = asked.filter(|asked| *asked != in_force) {
        tracing::warn!(
            queue,
            ?in_force,
            ?asked,
            "this client's scheduler group runs already: it keeps its sweep and concurrency \
             settings, not those this queue asks for"
        );
    }
}
