//! `reliable_stats.lua`: the reliable consumer's counters, read atomically.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    RELIABLE_STATS,
    "reliable_stats.lua",
    [Target, Quarantine, Inflight, Attempts, Dead],
    untouched[Target]
);

/// The reliable consumer's counters, as read (`inspect::ReliableStats` is their public form).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) in_flight: u64,
    pub(crate) overdue: u64,
    pub(crate) dead: u64,
    pub(crate) counters: u64,
    pub(crate) quarantined: u64,
    pub(crate) next_deadline_ms: Option<i64>,
}

/// Reads the counters.
pub(crate) async fn run(client: &Client, queue: &QueueSpec) -> Result<Counts> {
    let name = RELIABLE_STATS.name();
    let reply: Value = RELIABLE_STATS.call(queue).run(client).await?;
    let [in_flight, overdue, dead, counters, quarantined, head] = reply::fixed(reply, name)?;
    Ok(Counts {
        in_flight: reply::count(in_flight, name)?,
        overdue: reply::count(overdue, name)?,
        dead: reply::count(dead, name)?,
        counters: reply::count(counters, name)?,
        quarantined: reply::count(quarantined, name)?,
        next_deadline_ms: reply::score(&head, name)?,
    })
}
