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

/// A snapshot of delayq's own keys for a queue (one atomic script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReliableStats {
    /// Values taken by reliable consumers and not settled.
    pub in_flight: u64,
    /// Of those, the ones whose deadline has passed (the next reap gives them back).
    pub overdue: u64,
    /// Dead letters.
    pub dead: u64,
    /// Attempt counters kept.
    pub counters: u64,
    /// Malformed entries in quarantine.
    pub quarantined: u64,
    /// The earliest in-flight deadline.
    pub next_deadline_ms: Option<i64>,
}

/// Reads the counters.
pub(crate) async fn run(client: &Client, queue: &QueueSpec) -> Result<ReliableStats> {
    let name = RELIABLE_STATS.name();
    let reply: Value = RELIABLE_STATS.call(queue).run(client).await?;
    let [in_flight, overdue, dead, counters, quarantined, head] = reply::fixed(reply, name)?;
    Ok(ReliableStats {
        in_flight: reply::count(in_flight, name)?,
        overdue: reply::count(overdue, name)?,
        dead: reply::count(dead, name)?,
        counters: reply::count(counters, name)?,
        quarantined: reply::count(quarantined, name)?,
        next_deadline_ms: reply::score(&head, name)?,
    })
}
