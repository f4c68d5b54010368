//! The reaper: in-flight values whose deadline passed, and the claim lists of consumers whose
//! lease ran out, go back onto the target list. Idempotent; any number may run.

use super::config::ReliableConfig;
use crate::codec::Codec;
use crate::queue::{Admin, DelayedQueue};
use crate::redis::ops::reap;
use crate::redis::ops::unclaim as unclaim_op;
use crate::redis::script::QueueSpec;
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use std::time::Duration;

/// What one reaper call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ReapOutcome {
    /// In-flight values whose deadline had passed, put back onto the target list.
    pub returned: u64,
    /// Values on the claim lists of consumers whose lease ran out, put back onto the target list.
    pub unclaimed: u64,
    /// Attempt counters pruned for being untouched longer than the retention.
    pub pruned: u64,
    /// Members of the claim leases not named like this queue's claim lists, removed from it
    /// without touching the keys they name.
    pub foreign_claims: u64,
    /// The earliest deadline still in flight.
    pub next_deadline_ms: Option<i64>,
}

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
    let mut outcome = ReapOutcome {
        returned: reaped.returned,
        unclaimed: 0,
        pruned: reaped.pruned,
        foreign_claims: reaped.foreign.len() as u64,
        next_deadline_ms: reaped.next_deadline_ms,
    };
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

/// The reaper run by hand (delayq only).
impl<C: Codec> Admin<'_, DelayedQueue<C>> {
    /// Runs the reaper once: in-flight values whose visibility deadline passed go back onto the
    /// target list (at most `batch`). Safe to run from any number of processes at once.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn reap_expired(self, batch: usize) -> Result<ReapOutcome> {
        let retention = ReliableConfig::default().attempts_retention();
        reap(self.queue.client(), self.queue.spec(), batch, retention).await
    }
}
