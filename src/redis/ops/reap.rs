//! `reap.lua`: in-flight values past their deadline given back; stale attempt counters pruned.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    REAP,
    "reap.lua",
    [
        Target,
        Inflight,
        InflightData,
        Attempts,
        AttemptsSeen,
        Claims
    ]
);

/// What one reap call returned: its counts, the claim lists
/// whose lease ran out, and the foreign members it removed from the claim leases.
#[derive(Debug)]
pub(crate) struct Reaped {
    /// Values given back.
    pub(crate) returned: u64,
    /// Attempt counters pruned.
    pub(crate) pruned: u64,
    /// The earliest deadline still in flight.
    pub(crate) next_deadline_ms: Option<i64>,
    pub(crate) lapsed: Vec<String>,
    pub(crate) foreign: Vec<String>,
}

/// Gives back at most `batch` overdue values and prunes counters untouched for `retention`
/// (`None`: never).
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    batch: usize,
    retention: Option<Delay>,
) -> Result<Reaped> {
    let name = REAP.name();
    let reply: Value = REAP
        .call(queue)
        .arg(i64::try_from(batch.max(1)).unwrap_or(i64::MAX))
        .arg(retention.map_or(0, |keep| keep.ms().max(1)))
        .run(client)
        .await?;
    let [returned, pruned, head, lapsed, foreign] = reply::fixed(reply, name)?;
    let names = |list| -> Result<Vec<String>> {
        Ok(reply::bytes_list(list, name)?
            .into_iter()
            .map(|key| String::from_utf8_lossy(&key).into_owned())
            .collect())
    };
    let foreign = names(foreign)?;
    Ok(Reaped {
        returned: reply::count(returned, name)?,
        pruned: reply::count(pruned, name)?,
        next_deadline_ms: reply::score(&head, name)?,
        lapsed: names(lapsed)?,
        foreign,
    })
}
