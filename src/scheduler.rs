//! The transfer scheduler: moves due entries onto the target list, like Redisson's
//! `QueueTransferTask`, and coexists with Java schedulers on the same queue.
//!
//! One scheduler per queue listens on the queue's channel from its own connection. It transfers
//! once at start and after every (re)subscribe, because messages published while it was
//! disconnected are lost; it sleeps until the earliest due time it knows of (from the last
//! transfer's reply or a channel message); and it sweeps every
//! [`sweep_interval`](SchedulerConfig::with_sweep_interval) whatever happens, so a lost message,
//! timer or subscription never strands due entries. Several schedulers (Rust or Java) may run on
//! one queue: each transfer is one atomic script, so every entry moves exactly once.

use crate::entry::EntryFormat;
use crate::keys::QueueKeys;
use crate::reliable::Clock;
use crate::scripts;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::{ClientLike, EventInterface, PubsubInterface};
use fred::prelude::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Settings of a transfer scheduler.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SchedulerConfig {
    /// Entries moved by one script call (Redisson: 100); with a larger
    /// [`max_batch_size`](Self::max_batch_size), the starting and smallest batch.
    pub batch_size: usize,
    /// Largest batch when batches grow adaptively. Default: equal to `batch_size` (no growth).
    /// Above it, a batch is scaled after each call by
    /// [`target_call_time`](Self::target_call_time) over the call's time (by at most 2x either
    /// way; a call that found fewer entries due than its batch never grows it), so calls settle
    /// near the target.
    pub max_batch_size: usize,
    /// How long one transfer call should hold Redis at most, for adaptive batches.
    pub target_call_time: Duration,
    /// Order-list length from which transfers use delayq's position index
    /// (`delayq_index:{NAME}`) instead of one `LREM` scan per entry; 0 turns it off.
    pub index_threshold: usize,
    /// Most order-list entries added to the position index by one call.
    pub index_chunk: usize,
    /// While the index is in use, most list elements one call may scan with `LREM` for entries
    /// the index cannot place yet (a batch ends early, in due order, when this runs out).
    pub scan_budget: usize,
    /// Longest time between two transfers, whatever messages say; `None` turns the sweep off.
    pub sweep_interval: Option<Duration>,
    /// How to read an entry that fits both packings (see [`crate::entry`]).
    pub entry_format: EntryFormat,
    /// Longest wait before retrying after a failed transfer (the wait starts at 100 ms and
    /// doubles).
    pub max_backoff: Duration,
    /// Whose clock decides what is due (see [`Clock`]). Default: this process's.
    pub clock: Clock,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            batch_size: 100,
            max_batch_size: 100,
            target_call_time: Duration::from_millis(5),
            index_threshold: 1_000,
            index_chunk: 2_000,
            scan_budget: 200_000,
            sweep_interval: Some(Duration::from_secs(1)),
            entry_format: EntryFormat::Current,
            max_backoff: Duration::from_secs(5),
            clock: Clock::Client,
        }
    }
}

impl SchedulerConfig {
    /// Sets the entries moved per script call (and the largest batch, unless that is larger).
    #[must_use]
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self.max_batch_size = self.max_batch_size.max(batch_size);
        self
    }

    /// Lets batches grow up to `max` while calls stay short (see
    /// [`max_batch_size`](Self::max_batch_size)).
    #[must_use]
    pub fn with_adaptive_batch(mut self, max: usize, target_call_time: Duration) -> Self {
        self.max_batch_size = max;
        self.target_call_time = target_call_time;
        self
    }

    /// Sets the order-list length from which the position index is used (0: never).
    #[must_use]
    pub fn with_index_threshold(mut self, threshold: usize) -> Self {
        self.index_threshold = threshold;
        self
    }

    /// Sets (or, with `None`, turns off) the periodic safety sweep.
    #[must_use]
    pub fn with_sweep_interval(mut self, interval: impl Into<Option<Duration>>) -> Self {
        self.sweep_interval = interval.into();
        self
    }

    /// Sets the preferred reading of ambiguous entries.
    #[must_use]
    pub fn with_entry_format(mut self, format: EntryFormat) -> Self {
        self.entry_format = format;
        self
    }

    /// Sets the longest retry wait after errors.
    #[must_use]
    pub fn with_max_backoff(mut self, max_backoff: Duration) -> Self {
        self.max_backoff = max_backoff;
        self
    }

    /// Sets whose clock decides what is due (see [`Clock`]).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    fn validate(&self) -> Result<()> {
        if self.batch_size == 0 || self.max_batch_size < self.batch_size {
            return Err(Error::InvalidConfig(
                "batch_size must be at least 1 and max_batch_size at least batch_size".into(),
            ));
        }
        if self.index_chunk == 0 {
            return Err(Error::InvalidConfig(
                "index_chunk must be at least 1".into(),
            ));
        }
        if self.sweep_interval == Some(Duration::ZERO) {
            return Err(Error::InvalidConfig(
                "sweep_interval must be positive (or None)".into(),
            ));
        }
        Ok(())
    }
}

/// What one transfer script call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransferOutcome {
    /// Values pushed onto the target list.
    pub moved: u64,
    /// Malformed entries taken out to the quarantine list.
    pub quarantined: u64,
    /// Due time (epoch ms) of the earliest entry still pending.
    pub next_due_ms: Option<i64>,
    /// Entries found through the position index.
    pub found_by_index: u64,
    /// Entries found in the window at the head of the order list (the rest of the batch was
    /// found through the index or by `LREM` scans).
    pub found_at_head: u64,
}

/// Runs the transfer script once with `now_ms` as the current time (or the server's time, with
/// [`Clock::Server`]).
pub(crate) async fn transfer_once(
    client: &Client,
    keys: &QueueKeys,
    now_ms: i64,
    batch_size: usize,
    config: &SchedulerConfig,
) -> Result<TransferOutcome> {
    let marker = format!("delayq:transfer-marker:{:016x}", rand::random::<u64>());
    let now: Value = match config.clock {
        Clock::Client => now_ms.into(),
        Clock::Server => "server".into(),
    };
    let reply: Value = scripts::TRANSFER
        .run(
            client,
            vec![
                keys.target().into(),
                keys.timeout().into(),
                keys.order().into(),
                keys.quarantine().into(),
                keys.index().into(),
            ],
            vec![
                now,
                (batch_size as i64).into(),
                config.entry_format.lua_flag().into(),
                (config.index_threshold as i64).into(),
                (config.index_chunk as i64).into(),
                marker.into(),
                (config.scan_budget as i64).into(),
            ],
        )
        .await
        .map_err(|e| Error::from_script(scripts::TRANSFER.name(), keys.target(), e))?;
    parse_transfer_reply(reply)
}

fn parse_transfer_reply(reply: Value) -> Result<TransferOutcome> {
    let bad = |detail: String| Error::UnexpectedReply {
        context: "transfer.lua",
        detail,
    };
    let Value::Array(items) = reply else {
        return Err(bad(format!("{reply:?}")));
    };
    let [moved, quarantined, head, found_by_index, found_at_head] =
        <[Value; 5]>::try_from(items).map_err(|items| bad(format!("{} items", items.len())))?;
    let count = |v: Value| v.as_u64().ok_or_else(|| bad(format!("count {v:?}")));
    Ok(TransferOutcome {
        moved: count(moved)?,
        quarantined: count(quarantined)?,
        next_due_ms: parse_score(&head).map_err(bad)?,
        found_by_index: count(found_by_index)?,
        found_at_head: count(found_at_head)?,
    })
}

/// Reads a zset score as Redis returns it to Lua (a decimal string), or nil/false.
pub(crate) fn parse_score(value: &Value) -> std::result::Result<Option<i64>, String> {
    match value {
        Value::Null | Value::Boolean(false) => Ok(None),
        Value::Integer(i) => Ok(Some(*i)),
        Value::Double(f) => Ok(Some(*f as i64)),
        other => {
            let text = other
                .as_str()
                .ok_or_else(|| format!("score {other:?}"))?
                .to_string();
            text.parse::<i64>()
                .ok()
                .or_else(|| text.parse::<f64>().ok().map(|f| f as i64))
                .map(Some)
                .ok_or_else(|| format!("score {text:?}"))
        }
    }
}

/// The current time in epoch milliseconds, as Java's `System.currentTimeMillis()`.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Counters of a running scheduler.
#[derive(Debug, Default)]
struct Counters {
    transfers: AtomicU64,
    moved: AtomicU64,
    quarantined: AtomicU64,
    errors: AtomicU64,
}

/// A snapshot of a scheduler's counters since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SchedulerStats {
    /// Transfer script calls that succeeded.
    pub transfers: u64,
    /// Values moved to the target list.
    pub moved: u64,
    /// Malformed entries quarantined.
    pub quarantined: u64,
    /// Failed transfers or subscriptions.
    pub errors: u64,
}

/// Starts transfer schedulers.
#[derive(Debug)]
pub struct Scheduler;

impl Scheduler {
    /// Starts a scheduler for the queue whose target list is `queue`.
    ///
    /// Commands go through `client`; the scheduler opens one more connection (a `clone_new` of
    /// `client`) for the channel. It has subscribed and is running when this returns.
    ///
    /// # Errors
    ///
    /// An invalid config, or no pub/sub connection.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(client: fred::clients::Client) -> Result<(), delayq::Error> {
    /// use delayq::{Scheduler, SchedulerConfig};
    ///
    /// let handle = Scheduler::spawn(client, "orders", SchedulerConfig::default()).await?;
    /// // ... until the service stops:
    /// handle.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn spawn(
        client: Client,
        queue: impl Into<String>,
        config: SchedulerConfig,
    ) -> Result<SchedulerHandle> {
        config.validate()?;
        let keys = QueueKeys::new(queue);
        let subscriber = client.clone_new();
        crate::connect::init_client(&subscriber).await?;
        // Receivers are taken before subscribing so that no message is missed.
        let messages = subscriber.message_rx();
        let reconnects = subscriber.reconnect_rx();
        if let Err(err) = subscriber.subscribe(keys.channel()).await {
            let _ = subscriber.quit().await;
            return Err(err.into());
        }
        let token = CancellationToken::new();
        let counters = Arc::new(Counters::default());
        let task = TransferTask {
            batch: config.batch_size,
            client,
            subscriber,
            keys: keys.clone(),
            config,
            token: token.clone(),
            counters: counters.clone(),
        };
        let join = tokio::spawn(task.run(messages, reconnects));
        tracing::debug!(queue = keys.target(), "transfer scheduler started");
        Ok(SchedulerHandle {
            keys,
            token,
            join: Some(join),
            counters,
        })
    }
}

/// Owns a running scheduler. Dropping it stops the scheduler (without waiting);
/// [`shutdown`](SchedulerHandle::shutdown) stops it and waits until it has.
#[derive(Debug)]
pub struct SchedulerHandle {
    keys: QueueKeys,
    token: CancellationToken,
    join: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
}

impl SchedulerHandle {
    /// The queue's target list name.
    pub fn queue(&self) -> &str {
        self.keys.target()
    }

    /// Counters since the scheduler started.
    pub fn stats(&self) -> SchedulerStats {
        SchedulerStats {
            transfers: self.counters.transfers.load(Ordering::Relaxed),
            moved: self.counters.moved.load(Ordering::Relaxed),
            quarantined: self.counters.quarantined.load(Ordering::Relaxed),
            errors: self.counters.errors.load(Ordering::Relaxed),
        }
    }

    /// True once the scheduler's task has ended.
    pub fn is_finished(&self) -> bool {
        self.join.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the scheduler: a transfer in progress completes (scripts are atomic), then it
    /// unsubscribes and closes its pub/sub connection.
    pub async fn shutdown(mut self) {
        self.token.cancel();
        if let Some(join) = self.join.take() {
            if let Err(err) = join.await {
                tracing::warn!(queue = self.keys.target(), error = %err, "scheduler task failed");
            }
        }
    }
}

impl Drop for SchedulerHandle {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

struct TransferTask {
    /// Current batch size (adaptive between the config's bounds).
    batch: usize,
    client: Client,
    subscriber: Client,
    keys: QueueKeys,
    config: SchedulerConfig,
    token: CancellationToken,
    counters: Arc<Counters>,
}

/// Time from now until `due_ms` (zero when due).
fn until(due_ms: i64, now_ms: i64) -> Duration {
    Duration::from_millis(due_ms.saturating_sub(now_ms).max(0) as u64)
}

impl TransferTask {
    async fn run(
        mut self,
        mut messages: tokio::sync::broadcast::Receiver<fred::types::Message>,
        mut reconnects: tokio::sync::broadcast::Receiver<fred::types::config::Server>,
    ) {
        let queue = self.keys.target().to_owned();
        // The earliest due time we know of, from transfers and channel messages.
        let mut next_due: Option<i64> = None;
        let mut transfer_now = true; // we have just subscribed: catch up at once
        let mut backoff: Option<Duration> = None;
        let mut last_attempt = Instant::now();

        loop {
            if transfer_now {
                transfer_now = false;
                last_attempt = Instant::now();
                match self.drain().await {
                    Ok(head) => {
                        next_due = head;
                        backoff = None;
                    }
                    Err(err) => {
                        self.counters.errors.fetch_add(1, Ordering::Relaxed);
                        let wait = backoff
                            .map_or(Duration::from_millis(100), |b| b * 2)
                            .min(self.config.max_backoff);
                        backoff = Some(wait);
                        tracing::warn!(queue = %queue, error = %err, retry_in_ms = wait.as_millis() as u64, "transfer failed; retrying");
                    }
                }
            }

            // When to wake: after a failure, at the retry time; otherwise at the next due time;
            // and never later than the safety sweep.
            let now = Instant::now();
            let mut wake = match backoff {
                Some(wait) => Some(last_attempt + wait),
                None => next_due.map(|due| now + until(due, now_ms())),
            };
            if let Some(sweep) = self.config.sweep_interval {
                let at = last_attempt + sweep;
                wake = Some(wake.map_or(at, |w| w.min(at)));
            }
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
                message = messages.recv() => match message {
                    Ok(message) if message.channel == self.keys.channel() => {
                        match message.value.as_str().and_then(|s| s.parse::<i64>().ok()) {
                            // Only an earlier time changes the plan: a later one is already
                            // covered by the current wake-up, which re-reads the head.
                            Some(due) if backoff.is_none() => {
                                if next_due.is_none_or(|known| due < known) {
                                    next_due = Some(due);
                                }
                            }
                            Some(_) => {}
                            None => {
                                tracing::warn!(queue = %queue, payload = ?message.value, "unreadable channel message; transferring now");
                                transfer_now = true;
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => transfer_now = true,
                    Err(RecvError::Closed) => {
                        tracing::warn!(queue = %queue, "message stream closed; re-attaching");
                        messages = self.subscriber.message_rx();
                        transfer_now = true;
                    }
                },
                reconnect = reconnects.recv() => {
                    if let Err(RecvError::Closed) = reconnect {
                        reconnects = self.subscriber.reconnect_rx();
                    }
                    // A reconnected connection has lost its subscription and any message sent
                    // meanwhile: subscribe again, then catch up.
                    if let Err(err) = self.subscriber.subscribe(self.keys.channel()).await {
                        self.counters.errors.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(queue = %queue, error = %err, "re-subscribe failed; the sweep covers until it works");
                    } else {
                        tracing::debug!(queue = %queue, "re-subscribed");
                    }
                    transfer_now = true;
                }
                _ = sleep => transfer_now = true,
            }
        }

        let _ = self.subscriber.unsubscribe(self.keys.channel()).await;
        let _ = self.subscriber.quit().await;
        tracing::debug!(queue = %queue, "transfer scheduler stopped");
    }

    /// Transfers until nothing due is left; returns the earliest due time still pending.
    async fn drain(&mut self) -> Result<Option<i64>> {
        loop {
            let now = now_ms();
            let started = Instant::now();
            let outcome =
                transfer_once(&self.client, &self.keys, now, self.batch, &self.config).await?;
            self.adapt_batch(outcome.moved + outcome.quarantined, started.elapsed());
            self.counters.transfers.fetch_add(1, Ordering::Relaxed);
            self.counters
                .moved
                .fetch_add(outcome.moved, Ordering::Relaxed);
            if outcome.quarantined > 0 {
                self.counters
                    .quarantined
                    .fetch_add(outcome.quarantined, Ordering::Relaxed);
                tracing::error!(
                    queue = self.keys.target(),
                    quarantined = outcome.quarantined,
                    quarantine_key = self.keys.quarantine(),
                    "malformed entries moved to quarantine"
                );
            }
            if outcome.moved > 0 {
                tracing::debug!(
                    queue = self.keys.target(),
                    moved = outcome.moved,
                    by_index = outcome.found_by_index,
                    at_head = outcome.found_at_head,
                    batch = self.batch,
                    "transferred"
                );
            }
            let progressed = outcome.moved + outcome.quarantined > 0;
            match outcome.next_due_ms {
                // A backlog: more is due already. Keep going unless asked to stop.
                Some(due) if due <= now && progressed && !self.token.is_cancelled() => continue,
                head => return Ok(head),
            }
        }
    }

    /// Grows the batch while full calls are quick, shrinks it when a call is slow.
    fn adapt_batch(&mut self, taken: u64, took: Duration) {
        self.batch = next_batch(self.batch, taken, took, &self.config);
    }
}

/// The next batch size after a call that took `taken` entries in `took`.
fn next_batch(batch: usize, taken: u64, took: Duration, config: &SchedulerConfig) -> usize {
    config.next_batch(batch, taken, took)
}

impl SchedulerConfig {
    /// The batch size a scheduler uses after a call of `batch` that moved `taken` entries in
    /// `took`: with adaptive batches, `batch` scaled by the target time over `took` (between
    /// half and double), not grown after a call that found fewer than `batch` entries due,
    /// always within `batch_size..=max_batch_size`.
    pub fn next_batch(&self, batch: usize, taken: u64, took: Duration) -> usize {
        if self.max_batch_size <= self.batch_size {
            return self.batch_size;
        }
        let ratio =
            (self.target_call_time.as_secs_f64() / took.as_secs_f64().max(1e-6)).clamp(0.5, 2.0);
        if ratio > 1.0 && (taken as usize) < batch {
            return batch;
        }
        ((batch as f64 * ratio) as usize).clamp(self.batch_size, self.max_batch_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_reply_parses() {
        let reply = Value::Array(vec![
            Value::Integer(3),
            Value::Integer(1),
            Value::String("1767225600123".into()),
            Value::Integer(2),
            Value::Integer(1),
        ]);
        assert_eq!(
            parse_transfer_reply(reply).unwrap(),
            TransferOutcome {
                moved: 3,
                quarantined: 1,
                next_due_ms: Some(1767225600123),
                found_by_index: 2,
                found_at_head: 1,
            }
        );
        let empty = Value::Array(vec![
            Value::Integer(0),
            Value::Integer(0),
            Value::Null,
            Value::Integer(0),
            Value::Integer(0),
        ]);
        assert_eq!(parse_transfer_reply(empty).unwrap().next_due_ms, None);
        assert!(parse_transfer_reply(Value::Integer(1)).is_err());
    }

    #[test]
    fn until_never_negative() {
        assert_eq!(until(100, 200), Duration::ZERO);
        assert_eq!(until(250, 200), Duration::from_millis(50));
    }

    #[test]
    fn batches_adapt_within_bounds() {
        let fixed = SchedulerConfig::default();
        assert_eq!(next_batch(100, 100, Duration::ZERO, &fixed), 100);
        let adaptive =
            SchedulerConfig::default().with_adaptive_batch(1_000, Duration::from_millis(8));
        assert_eq!(
            next_batch(100, 100, Duration::from_millis(1), &adaptive),
            200
        );
        assert_eq!(
            next_batch(800, 800, Duration::from_millis(1), &adaptive),
            1_000
        );
        assert_eq!(
            next_batch(800, 10, Duration::from_millis(1), &adaptive),
            800
        );
        // Scaled by target / took: 8 ms / 10 ms.
        assert_eq!(
            next_batch(800, 800, Duration::from_millis(10), &adaptive),
            640
        );
        assert_eq!(
            next_batch(400, 400, Duration::from_millis(5), &adaptive),
            640
        );
        // At most halved, never below the base size.
        assert_eq!(
            next_batch(800, 800, Duration::from_millis(100), &adaptive),
            400
        );
        assert_eq!(
            next_batch(150, 150, Duration::from_millis(9), &adaptive),
            133
        );
        assert_eq!(
            next_batch(150, 150, Duration::from_millis(20), &adaptive),
            100
        );
    }

    #[test]
    fn config_is_checked() {
        assert!(SchedulerConfig::default()
            .with_batch_size(0)
            .validate()
            .is_err());
        assert!(SchedulerConfig::default()
            .with_sweep_interval(Duration::ZERO)
            .validate()
            .is_err());
        assert!(SchedulerConfig::default()
            .with_sweep_interval(None)
            .validate()
            .is_ok());
    }
}
