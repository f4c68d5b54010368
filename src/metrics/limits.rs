//! The handles of one queue's limits in a worker: time spent waiting for a slot or a token,
//! values held back, and the gauges of what the limits hold.

use std::time::Duration;

/// One queue's handles in a worker (series appear on first use).
#[derive(Debug)]
pub(crate) struct LimitMetrics {
    #[cfg(feature = "metrics")]
    slot_wait: metrics::Histogram,
    #[cfg(feature = "metrics")]
    token_wait: metrics::Histogram,
    #[cfg(feature = "metrics")]
    held_back: metrics::Counter,
}

impl LimitMetrics {
    /// The handles of queue `name`.
    pub(crate) fn new(name: &str) -> LimitMetrics {
        #[cfg(feature = "metrics")]
        {
            let labels = super::queue_labels(name);
            let wait = |reason: &'static str| {
                let mut labels = labels.clone();
                labels.push(metrics::Label::new("reason", reason));
                metrics::histogram!("delayq_limit_wait_seconds", labels)
            };
            LimitMetrics {
                slot_wait: wait("slot"),
                token_wait: wait("token"),
                held_back: metrics::counter!("delayq_limit_held_back_total", labels),
            }
        }
        #[cfg(not(feature = "metrics"))]
        {
            let _ = name;
            LimitMetrics {}
        }
    }

    /// A start waited `spent` for a slot (`slot`) or a token.
    pub(crate) fn waiting(&self, slot: bool, spent: Duration) {
        #[cfg(feature = "metrics")]
        match slot {
            true => self.slot_wait.record(spent.as_secs_f64()),
            false => self.token_wait.record(spent.as_secs_f64()),
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (slot, spent);
    }

    /// A value was held back on its key's list.
    pub(crate) fn held_back(&self) {
        #[cfg(feature = "metrics")]
        self.held_back.increment(1);
    }
}

/// Sets the gauges of what queue `queue`'s limits hold now (from
/// [`StoredLimits::usage`](crate::limit::StoredLimits::usage)): slots held and values held
/// back.
pub fn record_limit_gauges(queue: &str, slots_held: u64, values_held: u64) {
    #[cfg(feature = "metrics")]
    {
        let labels = super::queue_labels(queue);
        metrics::gauge!("delayq_limit_slots_held", labels.clone()).set(slots_held as f64);
        metrics::gauge!("delayq_limit_held_values", labels).set(values_held as f64);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (queue, slots_held, values_held);
}
