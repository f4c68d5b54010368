//! The registry of queues that have schedules (`delayq_scheduled:{delayq}`): `set` adds the
//! queue, removing its last schedule takes it out, and a firing process reads it once a tick
//! instead of each queue's schedules zset.
//!
//! The registry's key is outside every queue's hash tag, so it cannot change atomically with a
//! schedule: `set` registers before and after writing (a schedule is never left unregistered by
//! a concurrent removal), and a removal that finds the zset empty takes the name out and then
//! looks again, registering it back if a schedule came in between.

use crate::keys::scheduled_queues;
use crate::redis::script::QueueSpec;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::{SetsInterface, SortedSetsInterface};
use std::collections::HashSet;

/// Adds the queue to the registry.
pub(super) async fn register(client: &Client, queue: &QueueSpec) -> Result<()> {
    let key = scheduled_queues();
    let _: i64 = client
        .sadd(&key, queue.keys.target())
        .await
        .map_err(|e| Error::from_redis("SADD", &key, e))?;
    Ok(())
}

/// Takes the queue out of the registry when it has no schedule left.
pub(super) async fn unregister_if_empty(client: &Client, queue: &QueueSpec) -> Result<()> {
    if has_schedules(client, queue).await? {
        return Ok(());
    }
    let key = scheduled_queues();
    let _: i64 = client
        .srem(&key, queue.keys.target())
        .await
        .map_err(|e| Error::from_redis("SREM", &key, e))?;
    // A `set` between the look and the removal registered before writing; this second look
    // sees its schedule, since it wrote before registering again.
    if has_schedules(client, queue).await? {
        register(client, queue).await?;
    }
    Ok(())
}

async fn has_schedules(client: &Client, queue: &QueueSpec) -> Result<bool> {
    let key = queue.keys.schedules();
    let count: i64 = client
        .zcard(key)
        .await
        .map_err(|e| Error::from_redis("ZCARD", key, e))?;
    Ok(count > 0)
}

/// The names of every queue that has schedules.
pub(crate) async fn scheduled(client: &Client) -> Result<HashSet<String>> {
    let key = scheduled_queues();
    client
        .smembers(&key)
        .await
        .map_err(|e| Error::from_redis("SMEMBERS", &key, e))
}
