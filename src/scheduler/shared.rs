//! Shared schedulers: one per (client, queue), kept while any queue handle holds a lease, as
//! every Java `RDelayedQueue` instance of one Redisson client shares one transfer task.

use super::{Scheduler, SchedulerConfig, SchedulerHandle};
use crate::redis::script::QueueSpec;
use crate::Result;
use fred::clients::Client;
use fred::interfaces::ClientLike;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

/// Which scheduler: the client's id and the queue's target list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SchedulerId {
    client: String,
    queue: String,
}

type Registry = Mutex<HashMap<SchedulerId, Weak<SharedScheduler>>>;
static REGISTRY: LazyLock<Registry> = LazyLock::new(Default::default);

/// The registry; a panic while it was held cannot leave it half-changed (every change is one
/// map operation), so a poisoned lock is used as it is.
fn registry() -> std::sync::MutexGuard<'static, HashMap<SchedulerId, Weak<SharedScheduler>>> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug)]
struct SharedScheduler {
    handle: Mutex<Option<SchedulerHandle>>,
}

/// One queue handle's share of a scheduler.
#[derive(Debug)]
pub(crate) struct SchedulerLease(Arc<SharedScheduler>);

impl SchedulerLease {
    /// Joins the scheduler of `client` and `queue`, starting it with `config` if none runs.
    pub(crate) async fn acquire(
        client: &Client,
        queue: &QueueSpec,
        config: SchedulerConfig,
    ) -> Result<Self> {
        let id = SchedulerId {
            client: client.id().to_owned(),
            queue: queue.keys.target().to_owned(),
        };
        if let Some(shared) = registry().get(&id).and_then(Weak::upgrade) {
            return Ok(SchedulerLease(shared));
        }
        let handle = Scheduler::spawn_for(client.clone(), queue.clone(), config).await?;
        let shared = Arc::new(SharedScheduler {
            handle: Mutex::new(Some(handle)),
        });
        let existing = {
            let mut registry = registry();
            match registry.get(&id).and_then(Weak::upgrade) {
                Some(existing) => Some(existing),
                None => {
                    registry.retain(|_, weak| weak.strong_count() > 0);
                    registry.insert(id, Arc::downgrade(&shared));
                    None
                }
            }
        };
        match existing {
            // Another handle started one meanwhile: use it and stop ours.
            Some(existing) => {
                SchedulerLease(shared).release().await;
                Ok(SchedulerLease(existing))
            }
            None => Ok(SchedulerLease(shared)),
        }
    }

    /// Gives the lease back; the last one stops the scheduler and waits for it.
    pub(crate) async fn release(self) {
        if let Ok(shared) = Arc::try_unwrap(self.0) {
            let handle = shared
                .handle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(handle) = handle {
                handle.shutdown().await;
            }
        }
    }
}
