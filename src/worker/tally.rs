//! What one job records as it goes: its queue's metric handles, and the activity counts the
//! worker keeps in Redis.

use crate::metrics::{Settled, WorkerMetrics};
use crate::observe::{Event, ObserveConfig, Observer, ProcessKind};
use fred::clients::Client;
use std::collections::HashMap;
use std::sync::Arc;

/// Starts the worker's observer (serving `names`) and makes each queue's recorders, once.
pub(super) fn start<'a>(
    client: &Client,
    config: ObserveConfig,
    names: &[&'a str],
) -> (Observer, HashMap<&'a str, JobTally>) {
    let observer = Observer::start(client, ProcessKind::Worker, config);
    let tallies = names
        .iter()
        .map(|&name| {
            observer.serve(name);
            let tally = JobTally::new(WorkerMetrics::new(name), observer.clone(), name.into());
            (name, tally)
        })
        .collect();
    (observer, tallies)
}

/// A job's recorders, each told of every step once.
#[derive(Debug, Clone, Default)]
pub(super) struct JobTally {
    metrics: WorkerMetrics,
    observer: Observer,
    queue: Arc<str>,
}

impl JobTally {
    pub(super) fn new(metrics: WorkerMetrics, observer: Observer, queue: Arc<str>) -> JobTally {
        JobTally {
            metrics,
            observer,
            queue,
        }
    }

    /// A value taken for its `attempt`th time; its job starts.
    pub(super) fn started(&self, attempt: u32) {
        self.metrics.started(attempt);
        self.observer.count(&self.queue, Event::Taken, 1);
    }

    /// The handler ran for `seconds`; `failed` when it returned an error or panicked.
    pub(super) fn handled(&self, seconds: f64, failed: bool) {
        self.metrics.handled(seconds, failed);
    }

    /// A settlement that Redis took.
    pub(super) fn settled(&self, how: Settled) {
        self.metrics.settled(how);
        let event = match how {
            Settled::Acked => Event::Acked,
            Settled::Retried => Event::Retried,
            Settled::Dead => Event::Dead,
        };
        self.observer.count(&self.queue, event, 1);
    }

    /// The job ended (however it ended).
    pub(super) fn finished(&self) {
        self.metrics.finished();
    }
}
