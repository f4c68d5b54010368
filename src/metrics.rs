//! What delayq records through the [`metrics`](https://docs.rs/metrics) facade (feature
//! `metrics`): every metric is recorded from this module. Without the feature each function is
//! a no-op and the handles are empty.
//!
//! A program installs a recorder (the `delayq` binary renders Prometheus text). Handles carry
//! their `queue` label from the moment they are made, once per queue, so recording is an atomic
//! add and formats nothing.
//!
//! Every metric, with its type, labels and meaning, is in the one table of the
//! [operations guide](https://github.com/delayq/delayq/blob/main/docs/operations.md#metrics);
//! [`NAMES`] lists the names, and `scripts/check_docs.py` checks that the two agree.
//!
//! # Examples
//!
//! ```
//! // With no recorder installed, recording costs next to nothing and goes nowhere.
//! let stats = delayq::QueueStats::default();
//! delayq::metrics::record_queue_gauges("orders", &stats, None, 0);
//! ```

use crate::error::Error;

/// Every metric name, for programs that describe or filter them.
pub const NAMES: &[&str] = &[
    "delayq_moved_total",
    "delayq_transfers_total",
    "delayq_transfer_duration_seconds",
    "delayq_transfer_lateness_seconds",
    "delayq_quarantined_total",
    "delayq_errors_total",
    "delayq_paused_skips_total",
    "delayq_resubscribes_total",
    "delayq_reconnects_total",
    "delayq_connection_errors_total",
    "delayq_taken_total",
    "delayq_redelivered_total",
    "delayq_acked_total",
    "delayq_nacked_total",
    "delayq_retried_total",
    "delayq_dead_lettered_total",
    "delayq_worker_in_flight",
    "delayq_handler_duration_seconds",
    "delayq_pending",
    "delayq_ready",
    "delayq_in_flight",
    "delayq_dead",
    "delayq_quarantine_size",
    "delayq_oldest_overdue_seconds",
];

/// The `kind` label of an error: `connection`, `refused` (a refusal such as LOADING, OOM or
/// NOPERM), `script` or `other`.
#[cfg(feature = "metrics")]
pub(crate) fn error_kind(err: &Error) -> usize {
    if err.is_connection_error() {
        0
    } else if matches!(err, Error::Refused { .. }) {
        1
    } else if matches!(err, Error::Script { .. }) {
        2
    } else {
        3
    }
}

#[cfg(feature = "metrics")]
const KINDS: [&str; 4] = ["connection", "refused", "script", "other"];

/// A scheduler's handles for one queue.
#[derive(Debug, Clone, Default)]
pub(crate) struct SchedulerMetrics {
    #[cfg(feature = "metrics")]
    inner: Option<std::sync::Arc<SchedulerInner>>,
}

#[cfg(feature = "metrics")]
#[derive(Debug)]
struct SchedulerInner {
    moved: metrics::Counter,
    transfers: metrics::Counter,
    duration: metrics::Histogram,
    lateness: metrics::Histogram,
    quarantined: metrics::Counter,
    errors: [metrics::Counter; 4],
    paused: metrics::Counter,
}

impl SchedulerMetrics {
    /// The handles of queue `name` (made once, when the scheduler takes the queue on).
    pub(crate) fn new(name: &str) -> SchedulerMetrics {
        #[cfg(feature = "metrics")]
        {
            let q = name.to_owned();
            let errors = KINDS.map(|kind| {
                metrics::counter!("delayq_errors_total", "queue" => q.clone(), "kind" => kind)
            });
            SchedulerMetrics {
                inner: Some(std::sync::Arc::new(SchedulerInner {
                    moved: metrics::counter!("delayq_moved_total", "queue" => q.clone()),
                    transfers: metrics::counter!("delayq_transfers_total", "queue" => q.clone()),
                    duration: metrics::histogram!("delayq_transfer_duration_seconds", "queue" => q.clone()),
                    lateness: metrics::histogram!("delayq_transfer_lateness_seconds", "queue" => q.clone()),
                    quarantined: metrics::counter!("delayq_quarantined_total", "queue" => q.clone()),
                    errors,
                    paused: metrics::counter!("delayq_paused_skips_total", "queue" => q),
                })),
            }
        }
        #[cfg(not(feature = "metrics"))]
        {
            let _ = name;
            SchedulerMetrics {}
        }
    }

    /// One successful transfer call that took `seconds`.
    pub(crate) fn transfer(&self, moved: u64, quarantined: u64, seconds: f64) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            m.transfers.increment(1);
            m.moved.increment(moved);
            m.quarantined.increment(quarantined);
            m.duration.record(seconds);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (moved, quarantined, seconds);
    }

    /// The head was due `seconds` before the transfer that moved it.
    pub(crate) fn lateness(&self, seconds: f64) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            m.lateness.record(seconds);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = seconds;
    }

    /// A failed transfer.
    pub(crate) fn error(&self, err: &Error) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            m.errors[error_kind(err)].increment(1);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = err;
    }

    /// A drain skipped: the queue is paused.
    pub(crate) fn paused(&self) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            m.paused.increment(1);
        }
    }
}

/// The pub/sub connection came back and the channels of `queues` were subscribed again.
pub(crate) fn resubscribed(queues: usize) {
    tracing::debug!(queues, "re-subscribed");
    #[cfg(feature = "metrics")]
    metrics::counter!("delayq_resubscribes_total").increment(1);
}

/// The command connection came back (a program watching its client records this).
pub fn reconnected() {
    #[cfg(feature = "metrics")]
    metrics::counter!("delayq_reconnects_total").increment(1);
}

/// The command connection reported an error (a program watching its client records this).
pub fn connection_error() {
    #[cfg(feature = "metrics")]
    metrics::counter!("delayq_connection_errors_total").increment(1);
}

/// A worker's handles for one queue.
#[derive(Debug, Clone, Default)]
pub(crate) struct WorkerMetrics {
    #[cfg(feature = "metrics")]
    inner: Option<std::sync::Arc<WorkerInner>>,
}

#[cfg(feature = "metrics")]
#[derive(Debug)]
struct WorkerInner {
    taken: metrics::Counter,
    redelivered: metrics::Counter,
    acked: metrics::Counter,
    nacked: metrics::Counter,
    retried: metrics::Counter,
    dead: metrics::Counter,
    in_flight: metrics::Gauge,
    duration: metrics::Histogram,
}

/// How a job was settled, for [`WorkerMetrics::settled`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Settled {
    Acked,
    Retried,
    Dead,
}

impl WorkerMetrics {
    /// The handles of queue `name` (made once per queue when a worker starts).
    pub(crate) fn new(name: &str) -> WorkerMetrics {
        #[cfg(feature = "metrics")]
        {
            let q = name.to_owned();
            WorkerMetrics {
                inner: Some(std::sync::Arc::new(WorkerInner {
                    taken: metrics::counter!("delayq_taken_total", "queue" => q.clone()),
                    redelivered: metrics::counter!("delayq_redelivered_total", "queue" => q.clone()),
                    acked: metrics::counter!("delayq_acked_total", "queue" => q.clone()),
                    nacked: metrics::counter!("delayq_nacked_total", "queue" => q.clone()),
                    retried: metrics::counter!("delayq_retried_total", "queue" => q.clone()),
                    dead: metrics::counter!("delayq_dead_lettered_total", "queue" => q.clone()),
                    in_flight: metrics::gauge!("delayq_worker_in_flight", "queue" => q.clone()),
                    duration: metrics::histogram!("delayq_handler_duration_seconds", "queue" => q),
                })),
            }
        }
        #[cfg(not(feature = "metrics"))]
        {
            let _ = name;
            WorkerMetrics {}
        }
    }

    /// A value taken for its `attempt`th time; its job starts.
    pub(crate) fn started(&self, attempt: u32) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            m.taken.increment(1);
            if attempt > 1 {
                m.redelivered.increment(1);
            }
            m.in_flight.increment(1.0);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = attempt;
    }

    /// The handler ran for `seconds`; `failed` when it returned an error or panicked.
    pub(crate) fn handled(&self, seconds: f64, failed: bool) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            m.duration.record(seconds);
            if failed {
                m.nacked.increment(1);
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (seconds, failed);
    }

    /// A settlement that Redis took.
    pub(crate) fn settled(&self, how: Settled) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            match how {
                Settled::Acked => m.acked.increment(1),
                Settled::Retried => m.retried.increment(1),
                Settled::Dead => m.dead.increment(1),
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = how;
    }

    /// The job ended (however it ended).
    pub(crate) fn finished(&self) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            m.in_flight.decrement(1.0);
        }
    }
}

/// Sets queue `queue`'s gauges from one cheap read: `delayq_pending`, `delayq_ready`,
/// `delayq_quarantine_size`, and with `reliable` `delayq_in_flight` and `delayq_dead`;
/// `delayq_oldest_overdue_seconds` is how long the head has been due at `now_ms` (0 when
/// nothing is).
///
/// # Examples
///
/// ```
/// let stats = delayq::QueueStats::default();
/// delayq::metrics::record_queue_gauges("orders", &stats, None, 1_700_000_000_000);
/// ```
pub fn record_queue_gauges(
    queue: &str,
    stats: &crate::redis::ops::stats::QueueStats,
    reliable: Option<&crate::redis::ops::reliable_stats::ReliableStats>,
    now_ms: i64,
) {
    #[cfg(feature = "metrics")]
    {
        let q = queue.to_owned();
        let overdue_ms = stats
            .next_due_ms
            .map_or(0, |due| now_ms.saturating_sub(due).max(0));
        metrics::gauge!("delayq_pending", "queue" => q.clone()).set(stats.pending as f64);
        metrics::gauge!("delayq_ready", "queue" => q.clone()).set(stats.ready as f64);
        metrics::gauge!("delayq_quarantine_size", "queue" => q.clone())
            .set(stats.quarantined as f64);
        metrics::gauge!("delayq_oldest_overdue_seconds", "queue" => q.clone())
            .set(overdue_ms as f64 / 1000.0);
        if let Some(reliable) = reliable {
            metrics::gauge!("delayq_in_flight", "queue" => q.clone())
                .set(reliable.in_flight as f64);
            metrics::gauge!("delayq_dead", "queue" => q).set(reliable.dead as f64);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (queue, stats, reliable, now_ms);
}
