//! `stats.lua`: a queue's counters, read atomically.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
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

/// Reads the counters and the head's due time in one script, which never copies the head entry
/// (`lua/lib/head.lua`): a 16 MiB head costs what a small one does.
pub(crate) async fn run(client: &Client, queue: &QueueSpec) -> Result<Counts> {
    let name = STATS.name();
    let reply: Value = STATS.call(queue).run(client).await?;
    let [pending, scheduled, ready, quarantined, head] = reply::fixed(reply, name)?;
    Ok(Counts {
        pending: reply::count(pending, name)?,
        scheduled: reply::count(scheduled, name)?,
        ready: reply::count(ready, name)?,
        quarantined: reply::count(quarantined, name)?,
        next_due_ms: reply::score(&head, name)?,
    })
}
