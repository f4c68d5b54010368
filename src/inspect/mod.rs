//! What an operator reads about a queue: [`Inspect`], the view `queue.inspect()` returns, and
//! the types of its reads.
//!
//! A service offers and takes through the queue; a console, a health check or `delayq stats`
//! reads through this view, so the queue's own page lists the calls a service makes and this
//! one the calls an operator makes (the writes an operator makes are
//! [`Admin`](crate::admin::Admin)'s). Nothing here writes.
//!
//! - `mod.rs`: [`Inspect`], [`Pending`], [`QueueStats`], [`ReliableStats`];
//! - `preview.rs`: [`Preview`] and [`PreviewList`], pages of a queue's lists for dashboards;
//! - `check.rs`: [`CheckReport`] and [`AccessCheck`], what `check` found about the server.
//!
//! The reads themselves are written beside what they read (the queue's lists in `queue/`, the
//! dead letters in [`reliable`](crate::reliable)), each in an `impl Inspect` block; docs.rs
//! shows them on this one page.

mod check;
mod preview;

pub use crate::observe::{DayActivity, MinuteActivity, ProcessInfo, DAYS_KEPT};
pub use check::{AccessCheck, CheckReport};
pub use preview::{Preview, PreviewList};

use crate::redis::ops::{reliable_stats, stats};
use crate::time::now_ms;
use fred::clients::Client;

/// Every live delayq worker and scheduler on the server, each with the queues it serves by
/// name ([`ProcessInfo::queues`]) and its discovery globs, by kind then id: one
/// `ZRANGEBYSCORE` of `delayq_live:{delayq}`, however many queues there are. A process that
/// cannot write that key (its ACL rights reach only its queues' keys) is not in it: it is
/// still in the registries of its queues ([`Inspect::processes`]).
///
/// # Errors
///
/// A Redis error, or the key holding another type.
///
/// # Examples
///
/// ```no_run
/// # async fn ex(client: fred::clients::Client) -> Result<(), delayq::Error> {
/// for process in delayq::inspect::live_processes(&client).await? {
///     println!("{} {} serves {:?}", process.kind, process.id, process.queues);
/// }
/// # Ok(()) }
/// ```
pub async fn live_processes(client: &Client) -> crate::Result<Vec<ProcessInfo>> {
    crate::observe::list_live_processes(client, now_ms()).await
}
use crate::Error;
use bytes::Bytes;
use std::sync::Arc;

/// The operator's reads of one queue: counters, pending values, previews, activity, processes,
/// the server check, dead letters, quarantine. Made by `queue.inspect()` (e.g.
/// [`DelayedQueue::inspect`](crate::DelayedQueue::inspect)); borrows the queue.
///
/// # Examples
///
/// ```no_run
/// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> delayq::Result<()> {
/// let stats = queue.inspect().stats().await?;
/// println!("{} pending, {} ready", stats.pending, stats.ready);
/// for pending in queue.inspect().pending(10).await? {
///     println!("{:?} due at {:?}", pending.value, pending.due_ms);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Inspect<'a, Q> {
    pub(crate) queue: &'a Q,
}

impl<Q> Clone for Inspect<'_, Q> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Q> Copy for Inspect<'_, Q> {}

impl<'a, Q> Inspect<'a, Q> {
    /// The view of `queue`.
    pub(crate) fn of(queue: &'a Q) -> Self {
        Inspect { queue }
    }
}

/// A pending value with its due time, in offer order.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Pending<V> {
    /// The decoded value, or why it could not be read (a malformed entry, or a decode error
    /// with its raw bytes).
    pub value: std::result::Result<V, Arc<Error>>,
    /// The encoded value bytes (the whole entry when it is malformed).
    pub raw: Bytes,
    /// Due time in epoch ms, or `None` for an order-list entry with no zset member.
    pub due_ms: Option<i64>,
}

/// A snapshot of a queue's counters (one atomic script) and its next due time (read just after).
///
/// Serializes with its fields' names (`pending`, `scheduled`, `ready`, `quarantined`,
/// `next_due_ms`), the names `delayq stats --json` and the dashboard use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
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

impl From<stats::Counts> for QueueStats {
    fn from(counts: stats::Counts) -> Self {
        QueueStats {
            pending: counts.pending,
            scheduled: counts.scheduled,
            ready: counts.ready,
            quarantined: counts.quarantined,
            next_due_ms: counts.next_due_ms,
        }
    }
}

/// A snapshot of delayq's own keys for a queue (one atomic script): what its reliable consumers
/// hold. Serializes with its fields' names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
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

impl From<reliable_stats::Counts> for ReliableStats {
    fn from(counts: reliable_stats::Counts) -> Self {
        ReliableStats {
            in_flight: counts.in_flight,
            overdue: counts.overdue,
            dead: counts.dead,
            counters: counts.counters,
            quarantined: counts.quarantined,
            next_deadline_ms: counts.next_deadline_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stats serialize with the names the CLI's `--json` and the dashboard print.
    #[test]
    fn stats_serialize_with_their_field_names() {
        let stats = QueueStats {
            pending: 3,
            scheduled: 3,
            ready: 2,
            quarantined: 1,
            next_due_ms: Some(5),
        };
        assert_eq!(
            serde_json::to_value(stats).unwrap(),
            serde_json::json!({"pending": 3, "scheduled": 3, "ready": 2, "quarantined": 1,
                "next_due_ms": 5})
        );
        let reliable = ReliableStats {
            in_flight: 4,
            dead: 2,
            ..ReliableStats::default()
        };
        assert_eq!(
            serde_json::to_value(reliable).unwrap(),
            serde_json::json!({"in_flight": 4, "overdue": 0, "dead": 2, "counters": 0,
                "quarantined": 0, "next_deadline_ms": null})
        );
    }
}
