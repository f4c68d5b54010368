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

/// A queue's counters and its next due time, as read (`inspect::QueueStats` is their public
/// form).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) pending: u64,
    pub(crate) scheduled: u64,
    pub(crate) ready: u64,
    pub(crate) quarantined: u64,
    pub(crate) next_due_ms: Option<i64>,
}

/// Reads the counters (one script), then the head's due time (a `ZRANGE` of its own: the head
/// entry, read whole, is copied into a reply, not into the script, which takes several times
/// longer for a big one).
pub(crate) async fn run(client: &Client, queue: &QueueSpec) -> Result<Counts> {
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
    Ok(Counts {
        pending: reply::count(pending, name)?,
        scheduled: reply::count(scheduled, name)?,
        ready: reply::count(ready, name)?,
        quarantined: reply::count(quarantined, name)?,
        next_due_ms: reply::score(&head, name)?,
    })
}
