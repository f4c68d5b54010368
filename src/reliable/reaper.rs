//! The reaper: in-flight values whose deadline passed, and the claim lists of consumers whose
//! lease ran out, go back onto the target list. Idempotent; any number may run.

use super::config::ReliableConfig;
use crate::codec::Codec;
use crate::queue::DelayedQueue;
use crate::redis::ops::reap::{self, ReapOutcome};
use crate::redis::ops::unclaim as unclaim_op;
use crate::redis::script::QueueSpec;
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use std::time::Duration;

/// Runs the reaper once: at most `batch` overdue values given back, counters untouched for
/// `retention` pruned, and every claim list whose lease ran out given back.
pub(super) async fn reap(
    client: &Client,
    queue: &QueueSpec,
    batch: usize,
    retention: Option<Duration>,
) -> Result<ReapOutcome> {
    let retention = retention.map(Delay::span).transpose()?;
    let reaped = reap::run(client, queue, batch, retention).await?;
    if !reaped.foreign.is_empty() {
        tracing::warn!(
            queue = queue.keys.target(),
            claims = queue.keys.claims(),
            foreign = ?reaped.foreign,
            "removed members of the claim leases that are no claim lists of this queue; the \
             keys they name were not touched (someone wrote them there)"
        );
    }
    let mut outcome = reaped.outcome;
    for claim in reaped.lapsed {
        outcome.unclaimed += unclaim(client, queue, &claim, false).await?;
    }
    Ok(outcome)
}

/// Gives back a claim list's values when its lease ran out (or at once with `force`).
pub(super) async fn unclaim(
    client: &Client,
    queue: &QueueSpec,
    claim: &str,
    force: bool,
) -> Result<u64> {
    unclaim_op::run(client, queue, claim, force).await
}

impl<C: Codec> DelayedQueue<C> {
    /// Runs the reaper once: in-flight values whose visibility deadline passed go back onto the
    /// target list (at most `batch`). Safe to run from any number of processes at once.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn reap_expired(&self, batch: usize) -> Result<ReapOutcome> {
        let retention = ReliableConfig::default().attempts_retention();
        reap(self.client(), self.spec(), batch, retention).await
    }
}
