//! `transfer.lua`: due entries onto the target list, as Redisson's transfer task moves them.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;
use std::sync::atomic::{AtomicU64, Ordering};

script!(
    TRANSFER,
    "transfer.lua",
    [Target, Timeout, Order, Channel, Quarantine, Index, Values, Paused]
);

/// How much one transfer call may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TransferLimits {
    /// Most entries moved.
    pub(crate) batch: usize,
    /// Order-list length from which the position index is used (0: never).
    pub(crate) index_threshold: usize,
    /// Most entries added to the index.
    pub(crate) index_chunk: usize,
    /// Most list elements scanned for entries the index cannot place.
    pub(crate) scan_budget: usize,
    /// Most entries moved when the batch grows to amortise the order-list pass.
    pub(crate) max_batch: usize,
    /// The call's time budget (see `lua/transfer.lua`, ARGV[9]).
    pub(crate) budget: std::time::Duration,
    /// Whether the queue's pause flag stops this call (schedulers) or not (a manual transfer).
    pub(crate) heed_pause: bool,
}

/// What one transfer script call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TransferOutcome {
    /// Values pushed onto the target list.
    pub(crate) moved: u64,
    /// Malformed entries taken out to the quarantine list.
    pub(crate) quarantined: u64,
    /// Due time (epoch ms) of the earliest entry still pending.
    pub(crate) next_due_ms: Option<i64>,
    /// Entries found through the position index.
    pub(crate) found_by_index: u64,
    /// Entries found in the window at the head of the order list (the rest of the batch was
    /// found through the index or by `LREM` scans).
    pub(crate) found_at_head: u64,
    /// The time (epoch ms) the call decided what was due by: this process's clock, or the
    /// Redis server's with [`Clock::Server`](crate::Clock::Server).
    pub(crate) now_ms: i64,
    /// The Redis server's time (epoch µs) when the call began, with
    /// [`Clock::Server`](crate::Clock::Server): a scheduler times its wake-ups by it.
    pub(crate) server_time_us: Option<i64>,
    /// The call was a scheduler's and found the queue paused: nothing moved.
    pub(crate) paused: bool,
    /// What one pass over the order list cost per element, in picoseconds, as this call
    /// measured it (long lists only): for the caller's [`PassCost`].
    pub(crate) pass_ps_per_element: Option<u64>,
    /// The queue's value index exists and does not cover the order list's tail: a scheduler
    /// brings it up to date ahead of lookups (`redis::ops::index_values`).
    pub(crate) value_index_behind: bool,
}

/// The lowest list-pass cost per element (ps) a caller's transfers measured lately, given to
/// each call (`lua/transfer.lua`, ARGV[11]). A call measures the cost with a few hundred µs of
/// wall-clock time; when Redis is not running for part of it (more busy processes than
/// cores), the figure comes out tens of times too high and the call, which sizes its batch and
/// time to the pass, runs for 100 ms. Too high is the only way it goes wrong, so the lowest
/// recent figure is the best: each new one replaces it when lower, and it rises by a tenth per
/// call otherwise, so that a list that really became slower to read is followed within calls.
#[derive(Debug, Default)]
pub(crate) struct PassCost(AtomicU64);

impl PassCost {
    fn hint(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn observe(&self, measured: Option<u64>) {
        let Some(measured) = measured.filter(|&m| m > 0) else {
            return;
        };
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |lowest| {
                Some(match lowest {
                    0 => measured,
                    lowest => measured.min(lowest.saturating_add(lowest / 10 + 1)),
                })
            });
    }
}

fn usize_arg(n: usize) -> Value {
    i64::try_from(n).unwrap_or(i64::MAX).into()
}

/// Moves at most `limits.batch` entries that are due by the queue's clock; `pass_cost` is the
/// caller's record of what the order-list pass costs (one per queue and caller).
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    limits: TransferLimits,
    pass_cost: &PassCost,
) -> Result<TransferOutcome> {
    // A marker that is no entry, random per call: the batch's list positions are set to it, then
    // removed with one LREM pass.
    let marker = format!("delayq:transfer-marker:{:016x}", rand::random::<u64>());
    let reply: Value = TRANSFER
        .call(queue)
        .arg(usize_arg(limits.batch.max(1)))
        .arg(usize_arg(limits.index_threshold))
        .arg(usize_arg(limits.index_chunk))
        .arg(marker)
        .arg(usize_arg(limits.scan_budget))
        .arg(usize_arg(limits.max_batch.max(limits.batch)))
        .arg(
            i64::try_from(limits.budget.as_micros())
                .unwrap_or(i64::MAX)
                .max(1),
        )
        .arg(if limits.heed_pause { "1" } else { "0" })
        .arg(i64::try_from(pass_cost.hint()).unwrap_or(i64::MAX))
        .run(client)
        .await?;
    let outcome = parse(reply)?;
    pass_cost.observe(outcome.pass_ps_per_element);
    Ok(outcome)
}

fn parse(reply: Value) -> Result<TransferOutcome> {
    let name = TRANSFER.name();
    let [moved, quarantined, head, found_by_index, found_at_head, now, server_us, paused, pass_ps, behind] =
        reply::fixed(reply, name)?;
    Ok(TransferOutcome {
        moved: reply::count(moved, name)?,
        quarantined: reply::count(quarantined, name)?,
        next_due_ms: reply::score(&head, name)?,
        found_by_index: reply::count(found_by_index, name)?,
        found_at_head: reply::count(found_at_head, name)?,
        now_ms: reply::score(&now, name)?.unwrap_or_default(),
        server_time_us: reply::score(&server_us, name)?,
        paused: reply::count(paused, name)? > 0,
        pass_ps_per_element: match pass_ps {
            Value::Null => None,
            measured => Some(reply::count(measured, name)?),
        },
        value_index_behind: reply::count(behind, name)? > 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_parse() {
        let reply = Value::Array(vec![
            Value::Integer(3),
            Value::Integer(1),
            Value::String("1767225600123".into()),
            Value::Integer(2),
            Value::Integer(1),
            Value::String("1767225600000".into()),
            Value::String("1767225600000250".into()),
            Value::Integer(0),
            Value::Integer(25_000),
            Value::Integer(1),
        ]);
        assert_eq!(
            parse(reply).unwrap(),
            TransferOutcome {
                moved: 3,
                quarantined: 1,
                next_due_ms: Some(1767225600123),
                found_by_index: 2,
                found_at_head: 1,
                now_ms: 1767225600000,
                server_time_us: Some(1767225600000250),
                paused: false,
                pass_ps_per_element: Some(25_000),
                value_index_behind: true,
            }
        );
        let empty = Value::Array(vec![
            Value::Integer(0),
            Value::Integer(0),
            Value::Null,
            Value::Integer(0),
            Value::Integer(0),
            Value::String("1".into()),
            Value::Null,
            Value::Integer(1),
            Value::Null,
            Value::Integer(0),
        ]);
        let empty = parse(empty).unwrap();
        assert_eq!(empty.next_due_ms, None);
        assert_eq!(empty.server_time_us, None);
        assert!(empty.paused);
        assert_eq!(empty.pass_ps_per_element, None);
        assert!(!empty.value_index_behind);
        assert!(parse(Value::Integer(1)).is_err());
    }

    /// A figure inflated by a preempted measurement never replaces a lower one; the lowest
    /// rises by a tenth per call, so a list that really became slower is followed.
    #[test]
    fn the_pass_cost_keeps_the_lowest_recent_figure() {
        let cost = PassCost::default();
        assert_eq!(cost.hint(), 0);
        cost.observe(None);
        assert_eq!(cost.hint(), 0);
        cost.observe(Some(25_000));
        assert_eq!(cost.hint(), 25_000);
        cost.observe(Some(900_000));
        assert_eq!(cost.hint(), 27_501);
        cost.observe(Some(20_000));
        assert_eq!(cost.hint(), 20_000);
        for _ in 0..20 {
            cost.observe(Some(60_000));
        }
        assert_eq!(cost.hint(), 60_000);
    }
}
