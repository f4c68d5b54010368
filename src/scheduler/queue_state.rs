//! One queue in a scheduler group: what is known of its next due time, its retries after
//! failures, and the drain (transfers until nothing due is left) that runs for it.

use super::config::SchedulerConfig;
use super::timer::now_us;
use super::Counters;
use crate::metrics::SchedulerMetrics;
use crate::redis::ops::transfer::{self, TransferOutcome};
use crate::redis::script::QueueSpec;
use crate::retry::{Backoff, FailureLog, Retrying};
use crate::time::now_ms;
use crate::Result;
use fred::clients::Client;
use fred::interfaces::KeysInterface;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The first wait after a failed transfer (it doubles up to the config's `max_backoff`).
const FIRST_RETRY_WAIT: Duration = Duration::from_millis(100);

/// How often a paused queue's flag is read again.
const PAUSED_RECHECK_MS: i64 = 1_000;

/// The state of one queue.
#[derive(Debug)]
pub(super) struct QueueState {
    pub(super) spec: QueueSpec,
    pub(super) config: SchedulerConfig,
    pub(super) counters: Arc<Counters>,
    metrics: SchedulerMetrics,
    /// Handles that asked for this queue (a group may be shared).
    pub(super) refs: usize,
    /// Found by discovery (and dropped by it when the queue vanishes), not added by hand.
    pub(super) discovered: bool,
    /// Current batch size (adaptive between the config's bounds).
    batch: usize,
    /// The earliest due time known (by the queue's clock), from transfers, probes, messages.
    next_due: Option<i64>,
    /// How far the queue's clock is ahead of this process's, in ms (0 with the client's).
    clock_ahead_ms: i64,
    retrying: Retrying,
    /// After a failed transfer: when to retry (epoch µs by this process's clock). Its own
    /// field, not counted from `last_check_us`: the sweep's probes move that one, and a retry
    /// counted from it never came while the sweep kept looking at the queue.
    retry_at_us: Option<i64>,
    failures: FailureLog,
    /// When a transfer or probe last ran (epoch µs).
    pub(super) last_check_us: i64,
    /// A drain is running.
    pub(super) running: bool,
    /// Something asked for a transfer while one ran: run another when it ends.
    pub(super) rerun: bool,
}

/// What a drain did.
#[derive(Debug)]
pub(super) struct Drained {
    pub(super) result: Result<Option<i64>>,
    pub(super) clock_ahead_ms: Option<i64>,
    pub(super) batch: usize,
    pub(super) outcomes: Vec<TransferOutcome>,
    pub(super) took: Duration,
}

impl Drained {
    /// Values moved onto the target list.
    pub(super) fn moved(&self) -> u64 {
        self.outcomes.iter().map(|outcome| outcome.moved).sum()
    }
}

impl QueueState {
    pub(super) fn new(spec: QueueSpec, config: SchedulerConfig, discovered: bool) -> QueueState {
        QueueState {
            batch: config.batch_size(),
            retrying: Retrying::new(Backoff::doubling(FIRST_RETRY_WAIT, config.max_backoff())),
            metrics: SchedulerMetrics::new(spec.keys.target()),
            spec,
            config,
            counters: Arc::default(),
            refs: 1,
            discovered,
            next_due: None,
            clock_ahead_ms: 0,
            retry_at_us: None,
            failures: FailureLog::default(),
            last_check_us: 0,
            running: false,
            rerun: false,
        }
    }

    pub(super) fn name(&self) -> &str {
        self.spec.keys.target()
    }

    /// When this queue next needs a transfer, epoch µs by this process's clock: after a failure
    /// at the retry time; otherwise at the due time by the queue's clock.
    pub(super) fn wake_at_us(&self) -> Option<i64> {
        if let Some(at) = self.retry_at_us {
            return Some(at);
        }
        self.next_due.map(|due| {
            due.saturating_sub(self.clock_ahead_ms)
                .saturating_mul(1_000)
        })
    }

    /// A due time announced on the channel: only an earlier one changes the plan (a later one
    /// is covered by the planned transfer, which re-reads the head). Ignored while retrying.
    pub(super) fn announce(&mut self, due: i64) {
        if self.retry_at_us.is_none() && self.next_due.is_none_or(|known| due < known) {
            self.next_due = Some(due);
        }
    }

    /// Transfer as soon as possible (a resubscribe, an unreadable message, a new queue).
    pub(super) fn due_now(&mut self) {
        self.retry_at_us = None;
        self.next_due = Some(i64::MIN);
    }

    /// The head a probe read (`None`: nothing pending).
    pub(super) fn probed(&mut self, head: Option<i64>) {
        self.last_check_us = now_us();
        if self.retry_at_us.is_none() {
            self.next_due = head;
        }
    }

    /// Starts a drain: the future to run, with this queue's settings.
    pub(super) fn drain(
        &mut self,
        client: &Client,
        token: &CancellationToken,
    ) -> impl std::future::Future<Output = Drained> + Send + 'static {
        self.running = true;
        self.rerun = false;
        self.last_check_us = now_us();
        // The due time this drain was planned for, by the queue's clock (for the lateness).
        let planned = self.next_due.filter(|&due| due > 0);
        drain(
            client.clone(),
            self.spec.clone(),
            self.config.clone(),
            self.batch,
            token.clone(),
            (self.metrics.clone(), planned),
        )
    }

    /// Takes in what a drain did: counters, the next due time, or a retry with backoff (doubling
    /// from 100 ms while the error may pass by itself, at once the longest wait when someone has
    /// to act). Each kind of error is logged once, its repeats at debug, the recovery at info.
    pub(super) fn drained(&mut self, drained: Drained) {
        self.running = false;
        self.last_check_us = now_us();
        self.batch = drained.batch;
        if let Some(ahead) = drained.clock_ahead_ms {
            self.clock_ahead_ms = ahead;
        }
        self.count(&drained);
        match drained.result {
            Ok(head) => {
                self.counters.last_ok_ms.store(now_ms(), Ordering::Relaxed);
                self.next_due = head;
                self.retrying.succeeded();
                self.retry_at_us = None;
                let failed = self.failures.recovered();
                if failed > 0 {
                    tracing::info!(queue = %self.name(), failed, "transfers work again");
                }
            }
            Err(err) => {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                self.metrics.error(&err);
                let transient = err.is_transient();
                let wait = match transient {
                    true => self.retrying.failed(),
                    false => self.config.max_backoff(),
                };
                let wait_us = i64::try_from(wait.as_micros()).unwrap_or(i64::MAX);
                self.retry_at_us = Some(self.last_check_us.saturating_add(wait_us));
                let retry_in_ms = wait.as_millis() as u64;
                if self.failures.first_of_kind(&err.to_string()) {
                    tracing::warn!(queue = %self.name(), error = %err, transient, retry_in_ms, "transfer failed; retrying (repeats of this error are logged at debug)");
                } else {
                    tracing::debug!(queue = %self.name(), error = %err, retry_in_ms, "transfer failed again");
                }
            }
        }
    }

    fn count(&self, drained: &Drained) {
        let counters = &self.counters;
        let (mut moved, mut quarantined) = (0, 0);
        for outcome in &drained.outcomes {
            moved += outcome.moved;
            quarantined += outcome.quarantined;
        }
        counters
            .transfers
            .fetch_add(drained.outcomes.len() as u64, Ordering::Relaxed);
        counters.moved.fetch_add(moved, Ordering::Relaxed);
        if quarantined > 0 {
            counters
                .quarantined
                .fetch_add(quarantined, Ordering::Relaxed);
            tracing::error!(
                queue = self.name(),
                quarantined,
                quarantine_key = self.spec.keys.quarantine(),
                "malformed entries moved to quarantine"
            );
        }
        if drained.outcomes.len() > 1 {
            let ms = drained.took.as_millis() as u64;
            let calls = drained.outcomes.len();
            tracing::info!(queue = %self.name(), moved, calls, ms, "caught up a backlog");
        } else if moved > 0 {
            tracing::debug!(
                queue = self.name(),
                moved,
                batch = self.batch,
                "transferred"
            );
        }
    }
}

/// Transfers until nothing due is left; the earliest due time still pending.
async fn drain(
    client: Client,
    spec: QueueSpec,
    config: SchedulerConfig,
    mut batch: usize,
    token: CancellationToken,
    (metrics, mut planned): (SchedulerMetrics, Option<i64>),
) -> Drained {
    let started = Instant::now();
    let mut outcomes = Vec::new();
    let mut clock_ahead_ms = None;
    let result = match paused(&client, &spec, &metrics).await {
        Ok(false) => loop {
            let call = Instant::now();
            let outcome = match transfer::run(&client, &spec, config.limits(batch)).await {
                Ok(outcome) => outcome,
                Err(err) => break Err(err),
            };
            metrics.transfer(
                outcome.moved,
                outcome.quarantined,
                call.elapsed().as_secs_f64(),
            );
            if let Some(due) = planned.take().filter(|_| outcome.moved > 0) {
                metrics.lateness(outcome.now_ms.saturating_sub(due).max(0) as f64 / 1000.0);
            }
            clock_ahead_ms = Some(outcome.now_ms.saturating_sub(now_ms()));
            let taken = outcome.moved + outcome.quarantined;
            batch = config.next_batch(batch, taken, call.elapsed());
            outcomes.push(outcome);
            match outcome.next_due_ms {
                // A backlog: more is due already. Keep going unless asked to stop.
                Some(due) if due <= outcome.now_ms && taken > 0 && !token.is_cancelled() => {
                    continue
                }
                head => break Ok(head),
            }
        },
        // Paused: look again in a second (one EXISTS a second while the flag is set).
        Ok(true) => Ok(Some(now_ms() + PAUSED_RECHECK_MS)),
        Err(err) => Err(err),
    };
    Drained {
        result,
        clock_ahead_ms,
        batch,
        outcomes,
        took: started.elapsed(),
    }
}

/// Whether the queue's pause flag (`delayq_paused:{NAME}`, set by `delayq ui`) is up.
async fn paused(client: &Client, spec: &QueueSpec, metrics: &SchedulerMetrics) -> Result<bool> {
    let key = spec.keys.paused();
    let found: i64 = client
        .exists(key.as_str())
        .await
        .map_err(|err| crate::Error::from_redis("EXISTS", &key, err))?;
    if found > 0 {
        metrics.paused();
    }
    Ok(found > 0)
}
