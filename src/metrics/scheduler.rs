//! The handles of one queue's scheduler: values moved, transfer calls and their time, lateness,
//! and the counters of what seldom happens (quarantined entries, errors by kind, paused skips).

use crate::error::Error;

/// The `kind` label of an error, as its index in [`KINDS`]: `connection`, `refused` (a refusal
/// such as LOADING, OOM or NOPERM), `script`, `wrong_type` (a key of the queue holds another
/// type: the queue cannot be read until someone repairs it) or `other`.
#[cfg(feature = "metrics")]
fn error_kind(err: &Error) -> usize {
    if err.is_connection_error() {
        0
    } else if matches!(err, Error::Refused { .. }) {
        1
    } else if matches!(err, Error::Script { .. }) {
        2
    } else if matches!(err, Error::WrongType { .. }) {
        3
    } else {
        4
    }
}

/// The values of `delayq_errors_total`'s `kind` label.
#[cfg(feature = "metrics")]
const KINDS: [&str; 5] = ["connection", "refused", "script", "wrong_type", "other"];

/// A scheduler's handles for one queue. The counters of what seldom happens (errors,
/// quarantined entries, paused skips) are made on first use, so that a queue has no series
/// for them until then.
#[derive(Debug, Clone, Default)]
pub(crate) struct SchedulerMetrics {
    #[cfg(feature = "metrics")]
    inner: Option<std::sync::Arc<SchedulerInner>>,
}

#[cfg(feature = "metrics")]
#[derive(Debug)]
struct SchedulerInner {
    labels: Vec<metrics::Label>,
    moved: metrics::Counter,
    transfers: metrics::Counter,
    duration: metrics::Histogram,
    lateness: metrics::Histogram,
    quarantined: Lazy,
    errors: [Lazy; KINDS.len()],
    paused: Lazy,
}

/// A counter of one queue made the first time it counts.
#[cfg(feature = "metrics")]
#[derive(Debug)]
struct Lazy {
    name: &'static str,
    kind: Option<&'static str>,
    counter: std::sync::OnceLock<metrics::Counter>,
}

#[cfg(feature = "metrics")]
impl Lazy {
    fn new(name: &'static str, kind: Option<&'static str>) -> Lazy {
        Lazy {
            name,
            kind,
            counter: std::sync::OnceLock::new(),
        }
    }

    fn increment(&self, labels: &[metrics::Label], by: u64) {
        if by == 0 {
            return;
        }
        let counter = self.counter.get_or_init(|| {
            let mut labels = labels.to_vec();
            if let Some(kind) = self.kind {
                labels.push(metrics::Label::new("kind", kind));
            }
            metrics::counter!(self.name, labels)
        });
        counter.increment(by);
    }
}

impl SchedulerMetrics {
    /// The handles of queue `name` (made once, when the scheduler takes the queue on).
    pub(crate) fn new(name: &str) -> SchedulerMetrics {
        #[cfg(feature = "metrics")]
        {
            let labels = super::queue_labels(name);
            let l = || labels.clone();
            SchedulerMetrics {
                inner: Some(std::sync::Arc::new(SchedulerInner {
                    moved: metrics::counter!("delayq_moved_total", l()),
                    transfers: metrics::counter!("delayq_transfers_total", l()),
                    duration: metrics::histogram!("delayq_transfer_duration_seconds", l()),
                    lateness: metrics::histogram!("delayq_transfer_lateness_seconds", l()),
                    quarantined: Lazy::new("delayq_quarantined_total", None),
                    errors: KINDS.map(|kind| Lazy::new("delayq_errors_total", Some(kind))),
                    paused: Lazy::new("delayq_paused_skips_total", None),
                    labels,
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
            m.quarantined.increment(&m.labels, quarantined);
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
            m.errors[error_kind(err)].increment(&m.labels, 1);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = err;
    }

    /// A drain skipped: the queue is paused.
    pub(crate) fn paused(&self) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            m.paused.increment(&m.labels, 1);
        }
    }
}
