//! [`TransferTally`]: one queue's transfers recorded once, each call as it comes back, into
//! the three places that show them: the counters ([`SchedulerStats`](super::SchedulerStats)),
//! the metrics, and the console's activity (the observer's per-minute counts).

use super::Counters;
use crate::metrics::SchedulerMetrics;
use crate::observe::{Event, Observer};
use crate::redis::ops::transfer::TransferOutcome;
use crate::time::now_ms;
use crate::Error;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One queue's recorders in its scheduler group: every step told once, to all of them.
#[derive(Debug, Clone)]
pub(super) struct TransferTally {
    counters: Arc<Counters>,
    metrics: SchedulerMetrics,
    observer: Observer,
    queue: Arc<str>,
}

impl TransferTally {
    /// The recorders of the queue `queue`, with fresh counters.
    pub(super) fn new(queue: &str, observer: Observer) -> TransferTally {
        TransferTally {
            counters: Arc::default(),
            metrics: SchedulerMetrics::new(queue),
            observer,
            queue: queue.into(),
        }
    }

    /// The counters, for the group's stats.
    pub(super) fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// A transfer call that came back (not paused) after `seconds`.
    pub(super) fn transferred(&self, outcome: &TransferOutcome, seconds: f64) {
        let counters = &self.counters;
        counters.transfers.fetch_add(1, Ordering::Relaxed);
        counters.moved.fetch_add(outcome.moved, Ordering::Relaxed);
        counters
            .quarantined
            .fetch_add(outcome.quarantined, Ordering::Relaxed);
        self.metrics
            .transfer(outcome.moved, outcome.quarantined, seconds);
        self.observer
            .count(&self.queue, Event::Moved, outcome.moved);
    }

    /// How late a planned transfer moved its first values, in seconds.
    pub(super) fn lateness(&self, seconds: f64) {
        self.metrics.lateness(seconds);
    }

    /// A transfer call found the queue paused.
    pub(super) fn paused(&self) {
        self.metrics.paused();
    }

    /// A drain ended without an error.
    pub(super) fn drained_ok(&self) {
        self.counters.last_ok_ms.store(now_ms(), Ordering::Relaxed);
    }

    /// A drain failed with `err`.
    pub(super) fn failed(&self, err: &Error) {
        self.counters.errors.fetch_add(1, Ordering::Relaxed);
        self.metrics.error(err);
    }
}
