//! What delayq records through the [`metrics`](https://docs.rs/metrics) facade (feature
//! `metrics`): every metric is recorded from this module. Without the feature each function is
//! a no-op and the handles are empty.
//!
//! A program installs a recorder (the `delayq` binary renders Prometheus text) and calls
//! [`describe`] once. Handles carry their `queue` label (and `logical_queue` on a shard of a
//! sharded queue) from the moment they are made, once per queue, so recording is an atomic add
//! and formats nothing; a queue's handles are dropped when the queue leaves, so a recorder that
//! retires series nobody holds retires the queue's.
//!
//! Every metric, with its type, labels and meaning, is in the one table of the
//! [operations guide](https://github.com/delayq/delayq/blob/main/docs/operations.md#metrics);
//! [`METRICS`] lists them with their kinds and HELP texts, and `scripts/check_docs.py` checks
//! that the two agree.
//!
//! # Examples
//!
//! ```
//! // With no recorder installed, recording costs next to nothing and goes nowhere.
//! let stats = delayq::inspect::QueueStats::default();
//! delayq::metrics::record_queue_gauges("orders", &stats, None, 0);
//! ```

mod limits;
mod scheduler;
mod schedules;
pub use limits::record_limit_gauges;
pub(crate) use limits::LimitMetrics;
pub(crate) use scheduler::SchedulerMetrics;
pub(crate) use schedules::FiringMetrics;

/// What kind of metric a [`Metric`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricKind {
    /// Only goes up (Prometheus `counter`).
    Counter,
    /// A value read or set (Prometheus `gauge`).
    Gauge,
    /// A distribution of durations (Prometheus `histogram`).
    Histogram,
}

/// One metric delayq records or a program exporting delayq's gauges shows: its name, its kind
/// and the sentence of its HELP line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metric {
    /// The metric's name, e.g. `delayq_moved_total`.
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: MetricKind,
    /// What it measures, one sentence.
    pub help: &'static str,
}

impl Metric {
    const fn new(name: &'static str, kind: MetricKind, help: &'static str) -> Metric {
        Metric { name, kind, help }
    }
}

use MetricKind::{Counter, Gauge, Histogram};

/// Every metric, with its kind and HELP text (the operations guide's table says the same).
pub const METRICS: &[Metric] = &[
    Metric::new(
        "delayq_build_info",
        Gauge,
        "1, labelled with the delayq version",
    ),
    Metric::new(
        "delayq_moved_total",
        Counter,
        "values the scheduler moved to the target list",
    ),
    Metric::new(
        "delayq_transfers_total",
        Counter,
        "transfer script calls that succeeded",
    ),
    Metric::new(
        "delayq_transfer_duration_seconds",
        Histogram,
        "time of one transfer call",
    ),
    Metric::new(
        "delayq_transfer_lateness_seconds",
        Histogram,
        "from the head's due time to the transfer that moved it",
    ),
    Metric::new(
        "delayq_quarantined_total",
        Counter,
        "malformed entries set aside",
    ),
    Metric::new(
        "delayq_errors_total",
        Counter,
        "failed transfers, by kind of error",
    ),
    Metric::new(
        "delayq_paused_skips_total",
        Counter,
        "drains skipped because the queue is paused",
    ),
    Metric::new(
        "delayq_resubscribes_total",
        Counter,
        "pub/sub connection back, channels subscribed again",
    ),
    Metric::new(
        "delayq_reconnects_total",
        Counter,
        "command connection back",
    ),
    Metric::new(
        "delayq_connection_errors_total",
        Counter,
        "command connection errors",
    ),
    Metric::new("delayq_taken_total", Counter, "values a worker took"),
    Metric::new(
        "delayq_redelivered_total",
        Counter,
        "values taken again (attempt > 1)",
    ),
    Metric::new(
        "delayq_acked_total",
        Counter,
        "values handled and acknowledged",
    ),
    Metric::new(
        "delayq_nacked_total",
        Counter,
        "handler failures (retried or dead)",
    ),
    Metric::new(
        "delayq_retried_total",
        Counter,
        "failures given back for a retry",
    ),
    Metric::new(
        "delayq_dead_lettered_total",
        Counter,
        "values moved to the dead letters",
    ),
    Metric::new(
        "delayq_worker_in_flight",
        Gauge,
        "jobs this process is running",
    ),
    Metric::new(
        "delayq_handler_duration_seconds",
        Histogram,
        "time in the handler",
    ),
    Metric::new(
        "delayq_pending",
        Gauge,
        "pending entries (the order list's length)",
    ),
    Metric::new(
        "delayq_ready",
        Gauge,
        "due values waiting on the target list",
    ),
    Metric::new("delayq_in_flight", Gauge, "reliable deliveries in flight"),
    Metric::new(
        "delayq_inflight_overdue",
        Gauge,
        "reliable deliveries in flight past their deadline",
    ),
    Metric::new("delayq_dead", Gauge, "dead letters"),
    Metric::new("delayq_quarantine_size", Gauge, "quarantined entries"),
    Metric::new(
        "delayq_oldest_overdue_seconds",
        Gauge,
        "how long the head has been due (0 when nothing is)",
    ),
    Metric::new(
        "delayq_oldest_ready_age_seconds",
        Gauge,
        "how long the target list has held values without being seen empty (consumer lag)",
    ),
    Metric::new(
        "delayq_paused",
        Gauge,
        "1 while the queue is paused (delayq's transfers and workers leave it alone)",
    ),
    Metric::new(
        "delayq_unreadable",
        Gauge,
        "1 while the queue's last read failed (a key of another type, say), else 0",
    ),
    Metric::new(
        "delayq_memory_bytes",
        Gauge,
        "bytes Redis uses for the queue's keys (MEMORY USAGE, sampled)",
    ),
    Metric::new(
        "delayq_schedule_fired_total",
        Counter,
        "occurrences of recurring schedules offered",
    ),
    Metric::new(
        "delayq_schedule_lateness_seconds",
        Histogram,
        "from an occurrence's time to its offer (0 when offered ahead of it)",
    ),
    Metric::new(
        "delayq_schedule_missed_total",
        Counter,
        "missed-occurrence policy decisions, by policy",
    ),
    Metric::new(
        "delayq_limit_wait_seconds",
        Histogram,
        "time a worker waited for a slot or a token of the queue's limits, by reason",
    ),
    Metric::new(
        "delayq_limit_held_back_total",
        Counter,
        "values held back on their key's list by per-key limits",
    ),
    Metric::new(
        "delayq_limit_slots_held",
        Gauge,
        "slots of the queue's concurrency cap held now",
    ),
    Metric::new(
        "delayq_limit_concurrency",
        Gauge,
        "the queue's concurrency cap (its limits' slots)",
    ),
    Metric::new(
        "delayq_limit_held_values",
        Gauge,
        "values held back by per-key limits now",
    ),
];

/// Every metric name, for programs that describe or filter them.
pub const NAMES: &[&str] = &names::<{ METRICS.len() }>();

const fn names<const N: usize>() -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = METRICS[i].name;
        i += 1;
    }
    out
}

/// The metric named `name`, if delayq has one.
///
/// ```
/// let moved = delayq::metrics::metric("delayq_moved_total").unwrap();
/// assert_eq!(moved.kind, delayq::metrics::MetricKind::Counter);
/// ```
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// Gives the installed recorder every metric's HELP text, sets `delayq_build_info` to 1 with
/// its `version` label, and makes the connection counters (`delayq_connection_errors_total`,
/// `delayq_reconnects_total`, `delayq_resubscribes_total`) at 0, so that their first rise
/// shows in `increase()`. Call it once, after installing the recorder.
///
/// ```
/// delayq::metrics::describe();
/// ```
pub fn describe() {
    #[cfg(feature = "metrics")]
    {
        for m in METRICS {
            match m.kind {
                Counter => metrics::describe_counter!(m.name, m.help),
                Gauge => metrics::describe_gauge!(m.name, m.help),
                Histogram => metrics::describe_histogram!(m.name, m.help),
            }
        }
        metrics::gauge!("delayq_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
        for name in PROCESS_COUNTERS {
            metrics::counter!(name).absolute(0);
        }
    }
}

/// The counters of the process's connections, made at 0 by [`describe`]: a counter first seen
/// at 1 has no earlier sample, and Prometheus's `increase()` misses that first rise.
#[cfg(feature = "metrics")]
const PROCESS_COUNTERS: [&str; 3] = [
    "delayq_connection_errors_total",
    "delayq_reconnects_total",
    "delayq_resubscribes_total",
];

/// The labels of queue `queue`'s series: `queue`, and for a shard of a sharded queue
/// `logical_queue`, the sharded queue's name, so that dashboards can sum over its shards.
#[cfg(feature = "metrics")]
pub(crate) fn queue_labels(queue: &str) -> Vec<metrics::Label> {
    let mut labels = vec![metrics::Label::new("queue", queue.to_owned())];
    if let Some(logical) = crate::keys::logical_queue(queue) {
        labels.push(metrics::Label::new("logical_queue", logical.to_owned()));
    }
    labels
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
            let labels = queue_labels(name);
            let l = || labels.clone();
            WorkerMetrics {
                inner: Some(std::sync::Arc::new(WorkerInner {
                    taken: metrics::counter!("delayq_taken_total", l()),
                    redelivered: metrics::counter!("delayq_redelivered_total", l()),
                    acked: metrics::counter!("delayq_acked_total", l()),
                    nacked: metrics::counter!("delayq_nacked_total", l()),
                    retried: metrics::counter!("delayq_retried_total", l()),
                    dead: metrics::counter!("delayq_dead_lettered_total", l()),
                    in_flight: metrics::gauge!("delayq_worker_in_flight", l()),
                    duration: metrics::histogram!("delayq_handler_duration_seconds", labels),
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
/// `delayq_quarantine_size`, and with `reliable` `delayq_in_flight`, `delayq_inflight_overdue`
/// and `delayq_dead`; `delayq_oldest_overdue_seconds` is how long the head has been due at
/// `now_ms` (0 when nothing is).
///
/// # Examples
///
/// ```
/// let stats = delayq::inspect::QueueStats::default();
/// delayq::metrics::record_queue_gauges("orders", &stats, None, 1_700_000_000_000);
/// ```
pub fn record_queue_gauges(
    queue: &str,
    stats: &crate::inspect::QueueStats,
    reliable: Option<&crate::inspect::ReliableStats>,
    now_ms: i64,
) {
    #[cfg(feature = "metrics")]
    {
        let labels = queue_labels(queue);
        let set = |name: &'static str, value: f64| metrics::gauge!(name, labels.clone()).set(value);
        let overdue_ms = stats
            .next_due_ms
            .map_or(0, |due| now_ms.saturating_sub(due).max(0));
        set("delayq_pending", stats.pending as f64);
        set("delayq_ready", stats.ready as f64);
        set("delayq_quarantine_size", stats.quarantined as f64);
        set("delayq_oldest_overdue_seconds", overdue_ms as f64 / 1000.0);
        if let Some(reliable) = reliable {
            set("delayq_in_flight", reliable.in_flight as f64);
            set("delayq_inflight_overdue", reliable.overdue as f64);
            set("delayq_dead", reliable.dead as f64);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (queue, stats, reliable, now_ms);
}
