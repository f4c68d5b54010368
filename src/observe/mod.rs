//! What delayq's workers and schedulers keep in Redis about themselves, for the console and
//! for each other: per-minute and per-day activity counts of each queue (shared by every
//! process), and a registry of the live processes. One [`Observer`] per worker or scheduler
//! group owns the task that writes both.

mod activity;
mod config;
mod registry;

pub use activity::{DayActivity, MinuteActivity, DAYS_KEPT};
pub use config::ObserveConfig;
pub use registry::ProcessInfo;

pub(crate) use activity::Event;
pub(crate) use registry::ProcessKind;

use crate::retry::FailureLog;
use crate::time::now_ms;
use crate::Result;
use activity::{Expiring, Tally};
use fred::clients::Client;
use registry::{Identity, Written};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::{interval, Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

pub(crate) use activity::read as read_activity;
pub(crate) use activity::read_days as read_activity_days;
pub(crate) use registry::list as list_processes;
pub(crate) use registry::list_live as list_live_processes;

/// The longest a stopping observer waits for its last flush and its record's removal.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// The queues a process serves, for its record: by name, and by discovery glob.
#[derive(Debug, Default)]
struct Served {
    names: BTreeSet<String>,
    patterns: Vec<String>,
}

/// What the handle and the task share.
#[derive(Debug)]
struct Shared {
    tally: Tally,
    served: Mutex<Served>,
    /// The queues served changed: beat now rather than at the next tick.
    changed: tokio::sync::Notify,
    config: ObserveConfig,
}

/// Counts a process's activity and keeps its registry record, from a task it owns; cheap to
/// clone. [`shutdown`](Self::shutdown) writes the last counts and removes the record; dropping
/// the last clone stops the task the same way, without waiting. With both halves of the
/// config off it is inert.
#[derive(Debug, Clone, Default)]
pub(crate) struct Observer {
    inner: Option<Arc<Inner>>,
}

#[derive(Debug)]
struct Inner {
    shared: Arc<Shared>,
    token: CancellationToken,
    join: Mutex<Option<JoinHandle<()>>>,
}

impl Shared {
    fn served(&self) -> MutexGuard<'_, Served> {
        self.served.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

impl Observer {
    /// Starts observing on `client` for a process of `kind` (an inert observer when the config
    /// keeps nothing).
    pub(crate) fn start(client: &Client, kind: ProcessKind, config: ObserveConfig) -> Observer {
        if !config.activity() && !config.registry() {
            return Observer::default();
        }
        let shared = Arc::new(Shared {
            tally: Tally::default(),
            served: Mutex::default(),
            changed: tokio::sync::Notify::new(),
            config,
        });
        let token = CancellationToken::new();
        let me = Identity::new(kind, now_ms());
        let span = tracing::debug_span!("observer", id = %me.id());
        let task = run(client.clone(), shared.clone(), me, token.clone());
        let join = tokio::spawn(tracing::Instrument::instrument(task, span));
        Observer {
            inner: Some(Arc::new(Inner {
                shared,
                token,
                join: Mutex::new(Some(join)),
            })),
        }
    }

    /// Counts `n` values of `queue` for `event`, in the current minute.
    pub(crate) fn count(&self, queue: &str, event: Event, n: u64) {
        match &self.inner {
            Some(inner) if inner.shared.config.activity() && n > 0 => {
                let minute = activity::minute_of(now_ms());
                inner.shared.tally.add(queue, minute, event, n);
            }
            _ => {}
        }
    }

    /// The process serves `queue` by name from now on (its record says so from its next beat,
    /// which comes at once).
    pub(crate) fn serve(&self, queue: &str) {
        self.change(|served| served.names.insert(queue.to_owned()));
    }

    /// The process no longer serves `queue` by name.
    pub(crate) fn unserve(&self, queue: &str) {
        self.change(|served| served.names.remove(queue));
    }

    /// The process serves the queues whose names match the glob `pattern` (the one glob of its
    /// discovery; `None`: it discovers nothing).
    pub(crate) fn discover(&self, pattern: Option<&str>) {
        let patterns: Vec<String> = pattern.into_iter().map(str::to_owned).collect();
        self.change(|served| {
            let changed = served.patterns != patterns;
            served.patterns = patterns;
            changed
        });
    }

    /// Applies `change` to what the process serves; a beat follows when it changed anything.
    fn change(&self, change: impl FnOnce(&mut Served) -> bool) {
        if let Some(inner) = &self.inner {
            if inner.shared.config.registry() && change(&mut inner.shared.served()) {
                inner.shared.changed.notify_one();
            }
        }
    }

    /// Stops the task: the last counts are written and the record removed (each given a few
    /// seconds), then it ends.
    pub(crate) async fn shutdown(&self) {
        self.shutdown_by(None).await;
    }

    /// As [`shutdown`](Self::shutdown), waiting no later than `deadline`: past it the task is
    /// ended where it is (the counts not yet written are lost, the record expires).
    pub(crate) async fn shutdown_by(&self, deadline: Option<Instant>) {
        let Some(inner) = &self.inner else {
            return;
        };
        inner.token.cancel();
        let join = inner
            .join
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut join) = join else {
            return;
        };
        match deadline {
            Some(deadline) => {
                if tokio::time::timeout_at(deadline, &mut join).await.is_err() {
                    join.abort();
                    let _ = join.await;
                }
            }
            None => {
                let _ = join.await;
            }
        }
    }
}

/// The task: a flush every flush interval, a beat every third of the record's time to live;
/// at the stop one last flush and the record's removal.
async fn run(client: Client, shared: Arc<Shared>, me: Identity, token: CancellationToken) {
    let config = shared.config;
    let mut flushes = interval(config.flush_interval());
    let mut beats = interval(config.beat_interval());
    flushes.set_missed_tick_behavior(MissedTickBehavior::Delay);
    beats.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut expiring = Expiring::default();
    let mut written = Written::default();
    let mut failures = (FailureLog::default(), FailureLog::default());
    let history_ms = config.history().as_millis() as i64;
    loop {
        tokio::select! {
            biased;
            _ = token.cancelled() => break,
            _ = flushes.tick(), if config.activity() => {
                let flushed = activity::flush(&client, &shared.tally, &mut expiring, history_ms, now_ms()).await;
                log(&mut failures.0, flushed.map(drop), "activity counts not written (they are dropped)");
            }
            _ = beats.tick(), if config.registry() => {
                log(&mut failures.1, beat(&client, &shared, &me, &mut written).await, "registry record not written");
            }
            _ = shared.changed.notified(), if config.registry() => {
                log(&mut failures.1, beat(&client, &shared, &me, &mut written).await, "registry record not written");
            }
        }
    }
    let deadline = Instant::now() + STOP_WAIT;
    if config.activity() {
        let last = activity::flush(&client, &shared.tally, &mut expiring, history_ms, now_ms());
        let _ = tokio::time::timeout_at(deadline, last).await;
    }
    if config.registry() {
        let ttl_ms = config.registry_ttl().as_millis() as i64;
        let removed = registry::remove(&client, &me, &written, ttl_ms);
        let removed = tokio::time::timeout_at(deadline, removed).await;
        if let Ok(Err(err)) = removed {
            tracing::debug!(error = %err, "registry record not removed; it expires");
        }
    }
}

async fn beat(
    client: &Client,
    shared: &Shared,
    me: &Identity,
    written: &mut Written,
) -> Result<()> {
    let (names, patterns) = {
        let served = shared.served();
        (served.names.clone(), served.patterns.clone())
    };
    let ttl_ms = shared.config.registry_ttl().as_millis() as i64;
    registry::beat(client, me, (&names, &patterns), written, (ttl_ms, now_ms())).await
}

/// Logs a failed write once at WARN (its repeats at DEBUG) and the recovery once: a Redis
/// outage says so once, not every few seconds.
fn log(failures: &mut FailureLog, result: Result<()>, what: &str) {
    match result {
        Ok(()) => {
            let failed = failures.recovered();
            if failed > 0 {
                tracing::info!(failed, "{what}: written again");
            }
        }
        Err(err) if failures.first_of_kind(&err.to_string()) => {
            tracing::warn!(error = %err, "{what}");
        }
        Err(err) => tracing::debug!(error = %err, "{what}"),
    }
}
