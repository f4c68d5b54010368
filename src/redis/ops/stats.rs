//! `stats.lua`: a queue's counters, read atomically.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::interfaces::SortedSetsInterface;
use fred::prelude::Value;

script!(
    STATS,
    "stats.lua",
    [Target, Timeout, Order, Channel, Quarantine]
);

/// A snapshot of a queue's counters (one atomic script) and its next due time (read just after).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct QueueStats {
    /// Entries in the order list (Java `size()`).
    pub pending: u64,
    /// Members of the timeout zset (normally equal to `pending`).
    pub scheduled: u64,
    /// Values on the target list, ready to take.
    pub ready: u64,
    /// Malformed entries in delayq's quarantine list.
    pub quarantined: u64,
    /// Due time of the earliest pending entry.
    pub next_due_ms: Option<i64>,
}

/// Reads the counters (one script), then the head's due time (a `ZRANGE` of its own: the head
/// entry, read whole, is copied into a reply, not into the script, which takes several times
/// longer for a big one).
pub(crate) async fn run(client: &Client, queue: &QueueSpec) -> Result<QueueStats> {
    let name = STATS.name();
    let reply: Value = STATS.call(queue).run(client).await?;
    let [pending, scheduled, ready, quarantined] = reply::fixed(reply, name)?;
    let timeout = queue.keys.timeout();
    let head: Vec<(Value, Value)> = client
        .zrange(timeout, 0, 0, None, false, None, true)
        .await
        .map_err(|e| crate::Error::from_redis("ZRANGE", timeout, e))?;
    let head = head
        .into_iter()
        .next()
        .map_or(Value::Null, |(_, score)| score);
    Ok(QueueStats {
        pending: reply::count(pending, name)?,
        scheduled: reply::count(scheduled, name)?,
        ready: reply::count(ready, name)?,
        quarantined: reply::count(quarantined, name)?,
        next_due_ms: reply::score(&head, name)?,
    })
}
