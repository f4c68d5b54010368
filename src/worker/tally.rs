//! What one job records as it goes, each step once, into the three places that show it: the
//! worker's counters ([`WorkerStats`](super::WorkerStats)), its queue's metric handles, and the
//! activity counts the worker keeps in Redis (the console's).

use super::Counters;
use crate::metrics::{Settled, WorkerMetrics};
use crate::observe::{Event, ObserveConfig, Observer, ProcessKind};
use crate::Result;
use fred::clients::Client;
use std::collections::HashMap;
use std::sync::Arc;

/// Starts the worker's observer (serving `names`) and makes each queue's recorders, once, all
/// counting into `counters`.
pub(super) fn start<'a>(
    client: &Client,
    config: ObserveConfig,
    names: &[&'a str],
    counters: &Arc<Counters>,
) -> (Observer, HashMap<&'a str, JobTally>) {
    let observer = Observer::start(client, ProcessKind::Worker, config);
    let tallies = names
        .iter()
        .map(|&name| {
            observer.serve(name);
            let tally = JobTally {
                metrics: WorkerMetrics::new(name),
                observer: observer.clone(),
                queue: name.into(),
                counters: counters.clone(),
            };
            (name, tally)
        })
        .collect();
    (observer, tallies)
}

/// A job's recorders, each told of every step once.
#[derive(Debug, Clone)]
pub(super) struct JobTally {
    metrics: WorkerMetrics,
    observer: Observer,
    queue: Arc<str>,
    counters: Arc<Counters>,
}

impl JobTally {
    /// A value taken for its `attempt`th time; its job starts.
    pub(super) fn started(&self, attempt: u32) {
        Counters::bump(&self.counters.taken);
        self.metrics.started(attempt);
        self.observer.count(&self.queue, Event::Taken, 1);
    }

    /// The handler ran for `seconds`; `failed` when it returned an error or panicked.
    pub(super) fn handled(&self, seconds: f64, failed: bool) {
        self.metrics.handled(seconds, failed);
    }

    /// A settlement's result (`how` it settled; `None`: given back unprocessed); true when
    /// Redis took it. A failed one leaves the value in flight: the reaper gives it back after
    /// its deadline, so nothing is lost.
    pub(super) fn settlement(&self, how: Option<Settled>, result: Result<bool>) -> bool {
        let what = match how {
            Some(Settled::Acked) => "ack",
            Some(Settled::Retried) => "retry",
            Some(Settled::Dead) => "dead-letter",
            None => "give back",
        };
        match result {
            Ok(true) => {
                match how {
                    Some(how) => self.settled(how),
                    None => Counters::bump(&self.counters.given_back),
                }
                return true;
            }
            Ok(false) => {
                Counters::bump(&self.counters.lost);
                tracing::warn!(
                    what,
                    "the value was no longer ours (its visibility deadline had passed)"
                );
            }
            Err(err) => {
                Counters::bump(&self.counters.errors);
                tracing::warn!(what, error = %err, "settling failed; the value returns after its visibility deadline");
            }
        }
        false
    }

    /// A settlement that Redis took.
    fn settled(&self, how: Settled) {
        let counter = match how {
            Settled::Acked => &self.counters.acked,
            Settled::Retried => &self.counters.retried,
            Settled::Dead => &self.counters.dead,
        };
        Counters::bump(counter);
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
