//! The transfer task: transfer, then sleep until the next due time, a channel message, a
//! reconnect or the safety sweep, whichever comes first (mini-redis's purge loop, with a
//! channel).

use super::config::SchedulerConfig;
use super::Counters;
use crate::redis::ops::transfer;
use crate::redis::script::QueueSpec;
use crate::retry::{Backoff, FailureLog, Retrying};
use crate::time::{now_ms, until};
use crate::Result;
use fred::clients::Client;
use fred::interfaces::{ClientLike, EventInterface, PubsubInterface};
use fred::types::config::Server;
use fred::types::Message;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The first wait after a failed transfer (it doubles up to the config's `max_backoff`).
const FIRST_RETRY_WAIT: Duration = Duration::from_millis(100);

/// One running scheduler's state.
pub(super) struct TransferTask {
    pub(super) client: Client,
    pub(super) subscriber: Client,
    pub(super) queue: QueueSpec,
    pub(super) config: SchedulerConfig,
    pub(super) token: CancellationToken,
    pub(super) counters: Arc<Counters>,
    /// Current batch size (adaptive between the config's bounds).
    batch: usize,
    /// The earliest due time we know of, from transfers and channel messages.
    next_due: Option<i64>,
    /// How far the queue's clock is ahead of this process's, in ms, as the last transfer saw
    /// it: 0 with the client's clock; with the server's, so that a host whose clock is off
    /// still sleeps until the due time by the server's clock (instead of spinning, or
    /// oversleeping until the sweep).
    clock_ahead_ms: i64,
    /// Set when something says a transfer is needed now.
    transfer_now: bool,
    /// Failed transfers in a row, and the wait before the next try after the last one.
    retrying: Retrying,
    retry_wait: Option<Duration>,
    /// What has been logged about the failures in a row.
    failures: FailureLog,
    last_attempt: Instant,
}

impl TransferTask {
    pub(super) fn new(
        client: Client,
        subscriber: Client,
        queue: QueueSpec,
        config: SchedulerConfig,
        token: CancellationToken,
        counters: Arc<Counters>,
    ) -> TransferTask {
        TransferTask {
            batch: config.batch_size(),
            retrying: Retrying::new(Backoff::doubling(FIRST_RETRY_WAIT, config.max_backoff())),
            client,
            subscriber,
            queue,
            config,
            token,
            counters,
            next_due: None,
            clock_ahead_ms: 0,
            // We have just subscribed: catch up at once.
            transfer_now: true,
            retry_wait: None,
            failures: FailureLog::default(),
            last_attempt: Instant::now(),
        }
    }

    fn name(&self) -> &str {
        self.queue.keys.target()
    }

    pub(super) async fn run(
        mut self,
        mut messages: Receiver<Message>,
        mut reconnects: Receiver<Server>,
    ) {
        loop {
            if std::mem::take(&mut self.transfer_now) {
                self.transfer().await;
            }
            let wake = self.wake_at();
            let sleep = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                // Shutdown wins over any other wake-up.
                biased;
                _ = self.token.cancelled() => break,
                message = messages.recv() => self.on_message(message, &mut messages),
                reconnect = reconnects.recv() => self.on_reconnect(reconnect, &mut reconnects).await,
                _ = sleep => self.transfer_now = true,
            }
        }
        let _ = self.subscriber.unsubscribe(self.queue.keys.channel()).await;
        let _ = self.subscriber.quit().await;
        tracing::debug!(queue = %self.name(), "transfer scheduler stopped");
    }

    /// Transfers what is due; on failure, schedules a retry with backoff: doubling from 100 ms
    /// while the error may pass by itself (a connection, a busy or loading server), at once the
    /// longest wait when someone has to act (a key of the wrong type, no permission, out of
    /// memory). Each kind of error is logged once, then again only when it changes; the recovery
    /// is logged too.
    async fn transfer(&mut self) {
        self.last_attempt = Instant::now();
        match self.drain().await {
            Ok(head) => {
                self.next_due = head;
                self.retrying.succeeded();
                self.retry_wait = None;
                let failed = self.failures.recovered();
                if failed > 0 {
                    tracing::info!(queue = %self.name(), failed, "transfers work again");
                }
            }
            Err(err) => {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                let transient = err.is_transient();
                let wait = match transient {
                    true => self.retrying.failed(),
                    false => self.config.max_backoff(),
                };
                self.retry_wait = Some(wait);
                let retry_in_ms = wait.as_millis() as u64;
                if self.failures.first_of_kind(&err.to_string()) {
                    tracing::warn!(queue = %self.name(), error = %err, transient, retry_in_ms, "transfer failed; retrying (repeats of this error are logged at debug)");
                } else {
                    tracing::debug!(queue = %self.name(), error = %err, retry_in_ms, "transfer failed again");
                }
            }
        }
    }

    /// When to wake: after a failure, at the retry time; otherwise at the next due time, and
    /// never later than the safety sweep.
    fn wake_at(&self) -> Option<Instant> {
        if let Some(wait) = self.retry_wait {
            return Some(self.last_attempt + wait);
        }
        let now = Instant::now();
        let wake = self
            .next_due
            .map(|due| now + until(due, now_ms().saturating_add(self.clock_ahead_ms)));
        match self.config.sweep_interval() {
            Some(sweep) => {
                let at = self.last_attempt + sweep;
                Some(wake.map_or(at, |w| w.min(at)))
            }
            None => wake,
        }
    }

    /// A channel message: an earlier due time re-arms the wake-up (a later one is already
    /// covered by the current wake-up, which re-reads the head); anything unreadable, a lagged
    /// or closed stream, transfers now.
    fn on_message(
        &mut self,
        message: Result<Message, RecvError>,
        messages: &mut Receiver<Message>,
    ) {
        match message {
            Ok(message) if message.channel == self.queue.keys.channel() => {
                match message.value.as_str().and_then(|s| s.parse::<i64>().ok()) {
                    Some(due) if self.retry_wait.is_none() => {
                        if self.next_due.is_none_or(|known| due < known) {
                            self.next_due = Some(due);
                        }
                    }
                    Some(_) => {}
                    None => {
                        tracing::warn!(queue = %self.name(), payload = ?message.value, "unreadable channel message; transferring now");
                        self.transfer_now = true;
                    }
                }
            }
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => self.transfer_now = true,
            Err(RecvError::Closed) => {
                tracing::warn!(queue = %self.name(), "message stream closed; re-attaching");
                *messages = self.subscriber.message_rx();
                self.transfer_now = true;
            }
        }
    }

    /// The pub/sub connection came back: it has lost its subscription and any message sent
    /// meanwhile, so subscribe again, then catch up.
    async fn on_reconnect(
        &mut self,
        reconnect: Result<Server, RecvError>,
        reconnects: &mut Receiver<Server>,
    ) {
        if let Err(RecvError::Closed) = reconnect {
            *reconnects = self.subscriber.reconnect_rx();
        }
        if let Err(err) = self.subscriber.subscribe(self.queue.keys.channel()).await {
            self.counters.errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(queue = %self.name(), error = %err, "re-subscribe failed; the sweep covers until it works");
        } else {
            tracing::debug!(queue = %self.name(), "re-subscribed");
        }
        self.transfer_now = true;
    }

    /// Transfers until nothing due is left; returns the earliest due time still pending. A
    /// backlog (more than one call) is summed up in one log line.
    async fn drain(&mut self) -> Result<Option<i64>> {
        let (started, mut calls, mut moved) = (Instant::now(), 0u64, 0u64);
        let head = loop {
            let call = Instant::now();
            let outcome =
                transfer::run(&self.client, &self.queue, self.config.limits(self.batch)).await?;
            self.clock_ahead_ms = outcome.now_ms.saturating_sub(now_ms());
            let taken = outcome.moved + outcome.quarantined;
            self.batch = self.config.next_batch(self.batch, taken, call.elapsed());
            self.count(&outcome);
            calls += 1;
            moved += outcome.moved;
            match outcome.next_due_ms {
                // A backlog: more is due already. Keep going unless asked to stop.
                Some(due) if due <= outcome.now_ms && taken > 0 && !self.token.is_cancelled() => {
                    continue
                }
                head => break head,
            }
        };
        if calls > 1 {
            let ms = started.elapsed().as_millis() as u64;
            tracing::info!(queue = %self.name(), moved, calls, ms, "caught up a backlog");
        }
        Ok(head)
    }

    fn count(&self, outcome: &transfer::TransferOutcome) {
        let counters = &self.counters;
        counters.transfers.fetch_add(1, Ordering::Relaxed);
        counters.moved.fetch_add(outcome.moved, Ordering::Relaxed);
        if outcome.quarantined > 0 {
            counters
                .quarantined
                .fetch_add(outcome.quarantined, Ordering::Relaxed);
            tracing::error!(
                queue = self.name(),
                quarantined = outcome.quarantined,
                quarantine_key = self.queue.keys.quarantine(),
                "malformed entries moved to quarantine"
            );
        }
        if outcome.moved > 0 {
            tracing::debug!(
                queue = self.name(),
                moved = outcome.moved,
                by_index = outcome.found_by_index,
                at_head = outcome.found_at_head,
                batch = self.batch,
                "transferred"
            );
        }
    }
}
