//! Beyond Redisson: acknowledged consumption, retries, dead letters, reschedule, quarantine
//! tools and the server clock, without changing anything a Java peer sees.
//!
//! # How a reliable take works
//!
//! Redisson's consumers `BLPOP` the target list: a value leaves Redis before the work is done,
//! so a crash loses it. A [`ReliableConsumer`] instead moves the value, in one script
//! (`take.lua`), from the target list into two keys of ours in the queue's hash slot:
//!
//! - `delayq_inflight:{NAME}`, a zset: delivery id → visibility deadline (epoch ms);
//! - `delayq_inflight_data:{NAME}`, a hash: delivery id → the value's bytes.
//!
//! Acks, nacks and dead letters also note the delivery id for a minute in the zset
//! `delayq_settled:{NAME}`, so that a call sent again after a dropped connection (the first one
//! ran, its reply was lost; sent again by the caller, or by a fred client that retries) reports
//! its own success instead of "no longer ours".
//!
//! Lua cannot block, so when the list is empty the consumer waits with
//! `BLMOVE NAME delayq_claim:{NAME}:ID LEFT RIGHT` on its own connection: Redis serves it in turn
//! with any Java `BLPOP` waiting on the same list, and moves the value into this consumer's own
//! claim list; the next `take.lua` call registers it in flight from there. Every `take.lua` call
//! renews the consumer's lease on its claim list (zset `delayq_claims:{NAME}`); if the process
//! dies between the `BLMOVE` and the take, its lease runs out and any reaper puts the claim list
//! back onto the head of the target list (`unclaim.lua`). So at every moment a value is on the
//! target list, on a claim list under a lease, or in flight under a deadline: if the process dies
//! anywhere, nothing is lost.
//!
//! (An earlier design waited with `BLMOVE NAME NAME LEFT LEFT`, which takes nothing away, but
//! the value it puts back is handed at once to a waiting Java `BLPOP`: idle reliable consumers
//! were starved by idle Java ones. The claim list keeps Redis's first-come, first-served order.)
//!
//! [`ack`](Delivery::ack) deletes the in-flight value; [`nack`](Delivery::nack) gives it back
//! (onto the target list, or with a delay as a normal Redisson entry of the delayed queue, so Java
//! sees it as pending); dropping a [`Delivery`] unsettled gives it back at the consumer's next
//! call. A reaper (`reap.lua`, run by every reliable consumer about once a second, and safe with
//! any number of them) puts values whose deadline passed back onto the target list:
//! a consumer that died or hung with a value loses it to the next consumer after the visibility
//! timeout. Long jobs push their deadline back with [`extend`](Delivery::extend) (the
//! [worker](crate::worker) does it by itself).
//!
//! Delivery is therefore *at least once*: a value is delivered again only when its consumer did
//! not settle it before its deadline (crash, hang, lost connection).
//!
//! # Attempt counts
//!
//! Retried values go back into the delayed queue as ordinary entries, with the same value bytes
//! (Java peers must see the value unchanged). The number of deliveries is kept apart, in the hash
//! `delayq_attempts:{NAME}`, keyed by the value's bytes: `take.lua` increments it, `ack` and dead
//! lettering delete it. So **equal values share one counter**: two equal values in flight at once
//! count each other's attempts, and acknowledging one resets the other's. Give values an identity
//! (an order id, a job id) when exact counts matter. Counters of values that left our hands
//! (taken by a Java consumer after a retry) are pruned by the reaper after
//! [`attempts_retention`](ReliableConfig::attempts_retention) (7 days by default), using the zset
//! `delayq_attempts_seen:{NAME}`.
//!
//! # Dead letters
//!
//! A value that failed its last attempt goes to the list `delayq_dead:{NAME}` with its attempt
//! count and last error ([`DeadLetter`]); [`DelayedQueue::dead_letters`],
//! [`replay_dead_letters`](DelayedQueue::replay_dead_letters) and
//! [`purge_dead_letters`](DelayedQueue::purge_dead_letters) (and `delayq dead list|replay|purge`)
//! manage them.

mod clock;
mod dead;

pub use clock::Clock;
pub use dead::{DeadLetter, MAX_ERROR_BYTES};

use crate::codec::{decode_value, encode_value, Codec};
use crate::entry::EntryFormat;
use crate::keys::QueueKeys;
use crate::queue::{due_time, DelayedQueue};
use crate::scheduler::{now_ms, parse_score};
use crate::scripts;
use crate::{Error, Result};
use bytes::Bytes;
use fred::clients::Client;
use fred::interfaces::{ClientLike, ListInterface};
use fred::prelude::Value;
use fred::types::lists::LMoveDirection;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Settings of a [`ReliableConsumer`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReliableConfig {
    /// How long a taken value stays ours without an ack or a heartbeat before a reaper gives
    /// it back. Default: 30 s.
    pub visibility: Duration,
    /// Longest single blocking wait for the target list; also how often a waiting consumer
    /// reaps and settles dropped deliveries. Default: 1 s.
    pub wait_slice: Duration,
    /// How often the consumer runs the reaper (`None`: never; run it elsewhere). Default: 1 s.
    pub reap_interval: Option<Duration>,
    /// Most values the reaper moves per script call. Default: 100.
    pub reap_batch: usize,
    /// How long an attempt counter nobody touched is kept (`None`: forever). Default: 7 days.
    pub attempts_retention: Option<Duration>,
    /// Most dead letters kept; older ones are trimmed (0: no limit). Default: 10,000.
    pub dead_letter_limit: usize,
}

impl Default for ReliableConfig {
    fn default() -> Self {
        ReliableConfig {
            visibility: Duration::from_secs(30),
            wait_slice: Duration::from_secs(1),
            reap_interval: Some(Duration::from_secs(1)),
            reap_batch: 100,
            attempts_retention: Some(Duration::from_secs(7 * 24 * 3600)),
            dead_letter_limit: 10_000,
        }
    }
}

impl ReliableConfig {
    /// Sets the visibility timeout.
    #[must_use]
    pub fn with_visibility(mut self, visibility: Duration) -> Self {
        self.visibility = visibility;
        self
    }

    /// Sets the longest single blocking wait.
    #[must_use]
    pub fn with_wait_slice(mut self, slice: Duration) -> Self {
        self.wait_slice = slice;
        self
    }

    /// Sets (or turns off) the reaper interval.
    #[must_use]
    pub fn with_reap_interval(mut self, interval: impl Into<Option<Duration>>) -> Self {
        self.reap_interval = interval.into();
        self
    }

    /// Sets how long untouched attempt counters are kept.
    #[must_use]
    pub fn with_attempts_retention(mut self, retention: impl Into<Option<Duration>>) -> Self {
        self.attempts_retention = retention.into();
        self
    }

    /// Sets the most dead letters kept (0: no limit).
    #[must_use]
    pub fn with_dead_letter_limit(mut self, limit: usize) -> Self {
        self.dead_letter_limit = limit;
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.visibility < Duration::from_millis(10) {
            return Err(Error::InvalidConfig(format!(
                "visibility must be at least 10 ms, not {:?}",
                self.visibility
            )));
        }
        due_time(0, self.visibility)?;
        if self.wait_slice < Duration::from_millis(10) {
            return Err(Error::InvalidConfig(
                "wait_slice must be at least 10 ms".into(),
            ));
        }
        if self.reap_interval == Some(Duration::ZERO) {
            return Err(Error::InvalidConfig(
                "reap_interval must be positive (or None)".into(),
            ));
        }
        if self.reap_batch == 0 {
            return Err(Error::InvalidConfig("reap_batch must be at least 1".into()));
        }
        Ok(())
    }
}

/// What one reaper call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ReapOutcome {
    /// In-flight values whose deadline had passed, put back onto the target list.
    pub returned: u64,
    /// Values on the claim lists of consumers whose lease ran out, put back onto the target list.
    pub unclaimed: u64,
    /// Attempt counters pruned for being untouched longer than the retention.
    pub pruned: u64,
    /// The earliest deadline still in flight.
    pub next_deadline_ms: Option<i64>,
}

/// A snapshot of delayq's own keys for a queue (one atomic script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReliableStats {
    /// Values taken by reliable consumers and not settled.
    pub in_flight: u64,
    /// Of those, the ones whose deadline has passed (the next reap gives them back).
    pub overdue: u64,
    /// Dead letters.
    pub dead: u64,
    /// Attempt counters kept.
    pub counters: u64,
    /// Malformed entries in quarantine.
    pub quarantined: u64,
    /// The earliest in-flight deadline.
    pub next_deadline_ms: Option<i64>,
}

/// What a settled delivery needs, shared by a consumer and its deliveries.
#[derive(Debug)]
struct Shared {
    client: Client,
    keys: QueueKeys,
    format: EntryFormat,
    clock: Clock,
    config: ReliableConfig,
    /// Ids of deliveries dropped unsettled, for the consumer to give back.
    returns: mpsc::UnboundedSender<String>,
}

/// A fresh random id for a pending entry, as `offer` makes them.
fn entry_id(format: EntryFormat) -> Value {
    match format {
        EntryFormat::Legacy => rand::random::<i64>().to_string().into(),
        _ => Value::Bytes(Bytes::copy_from_slice(&rand::random::<[u8; 8]>())),
    }
}

fn delay_ms(delay: Duration) -> Result<i64> {
    due_time(0, delay)
}

impl Shared {
    /// Gives delivery `id` back: after `delay`, or at once; `unprocessed` uncounts the attempt
    /// and puts the value at the head of the target list.
    async fn nack(&self, id: &str, delay: Duration, unprocessed: bool) -> Result<bool> {
        let delay = delay_ms(delay)?;
        let keys = &self.keys;
        let done: i64 = scripts::NACK
            .call(
                &self.client,
                keys.target(),
                &[
                    keys.target(),
                    keys.inflight(),
                    keys.inflight_data(),
                    keys.timeout(),
                    keys.order(),
                    keys.channel(),
                    keys.attempts(),
                    keys.attempts_seen(),
                    keys.settled(),
                ],
                vec![
                    self.clock.lua_now(),
                    delay.into(),
                    id.into(),
                    self.format.lua_flag().into(),
                    entry_id(self.format),
                    if unprocessed { "1" } else { "0" }.into(),
                ],
            )
            .await?;
        Ok(done == 1)
    }

    async fn ack(&self, id: &str) -> Result<bool> {
        let keys = &self.keys;
        let done: i64 = scripts::ACK
            .call(
                &self.client,
                keys.target(),
                &[
                    keys.inflight(),
                    keys.inflight_data(),
                    keys.attempts(),
                    keys.attempts_seen(),
                    keys.settled(),
                ],
                vec![id.into()],
            )
            .await?;
        Ok(done == 1)
    }

    async fn dead(&self, id: &str, attempts: u32, error: &str) -> Result<bool> {
        let keys = &self.keys;
        let header = dead::header(attempts, now_ms(), error);
        let done: i64 = scripts::DEAD
            .call(
                &self.client,
                keys.target(),
                &[
                    keys.inflight(),
                    keys.inflight_data(),
                    keys.attempts(),
                    keys.attempts_seen(),
                    keys.dead(),
                    keys.settled(),
                ],
                vec![
                    id.into(),
                    Value::Bytes(header.into()),
                    (self.config.dead_letter_limit as i64).into(),
                ],
            )
            .await?;
        Ok(done == 1)
    }

    async fn extend(&self, id: &str, visibility: Duration) -> Result<Option<i64>> {
        let ms = delay_ms(visibility)?;
        let keys = &self.keys;
        let reply: Value = scripts::EXTEND
            .call(
                &self.client,
                keys.target(),
                &[keys.inflight()],
                vec![self.clock.lua_now(), ms.into(), id.into()],
            )
            .await?;
        parse_score(&reply).map_err(|detail| Error::UnexpectedReply {
            context: "extend.lua",
            detail,
        })
    }
}

/// Runs the reaper once: in-flight values past their deadline go back onto the target list.
pub(crate) async fn reap(
    client: &Client,
    keys: &QueueKeys,
    clock: Clock,
    batch: usize,
    retention: Option<Duration>,
) -> Result<ReapOutcome> {
    let retention_ms = match retention {
        Some(keep) => delay_ms(keep)?.max(1),
        None => 0,
    };
    let reply: Value = scripts::REAP
        .call(
            client,
            keys.target(),
            &[
                keys.target(),
                keys.inflight(),
                keys.inflight_data(),
                keys.attempts(),
                keys.attempts_seen(),
                keys.claims(),
            ],
            vec![
                clock.lua_now(),
                (batch.max(1) as i64).into(),
                retention_ms.into(),
            ],
        )
        .await?;
    let bad = |detail: String| Error::UnexpectedReply {
        context: "reap.lua",
        detail,
    };
    let Value::Array(items) = reply else {
        return Err(bad(format!("{reply:?}")));
    };
    let [returned, pruned, head, lapsed] =
        <[Value; 4]>::try_from(items).map_err(|i| bad(format!("{} items", i.len())))?;
    let count = |v: Value| v.as_u64().ok_or_else(|| bad(format!("{v:?}")));
    let mut outcome = ReapOutcome {
        returned: count(returned)?,
        unclaimed: 0,
        pruned: count(pruned)?,
        next_deadline_ms: parse_score(&head).map_err(bad)?,
    };
    let lapsed = match lapsed {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        other => return Err(bad(format!("claims {other:?}"))),
    };
    for claim in lapsed {
        let claim = claim
            .as_string()
            .ok_or_else(|| bad("claim key is not a string".into()))?;
        outcome.unclaimed += unclaim(client, keys, clock, &claim, false).await?;
    }
    Ok(outcome)
}

/// Gives back a claim list's values when its lease ran out (or at once with `force`).
async fn unclaim(
    client: &Client,
    keys: &QueueKeys,
    clock: Clock,
    claim: &str,
    force: bool,
) -> Result<u64> {
    scripts::UNCLAIM
        .call(
            client,
            keys.target(),
            &[keys.target(), keys.claims(), claim],
            vec![clock.lua_now(), if force { "1" } else { "0" }.into()],
        )
        .await
}

/// The right to settle one in-flight value: [`ack`](Receipt::ack), [`nack`](Receipt::nack),
/// [`give_back`](Receipt::give_back), [`dead_letter`](Receipt::dead_letter), or
/// [`extend`](Receipt::extend) its deadline.
///
/// Dropping a receipt unsettled gives the value back for another attempt (counted), at the
/// consumer's next call; if the consumer is gone too, the reaper does it after the deadline.
#[derive(Debug)]
pub struct Receipt {
    shared: Arc<Shared>,
    id: String,
    raw: Bytes,
    attempt: u32,
    deadline_ms: i64,
    settled: bool,
}

impl Receipt {
    /// The delivery id (a member of `delayq_inflight:{NAME}`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The value's bytes.
    pub fn raw(&self) -> &Bytes {
        &self.raw
    }

    /// Which delivery of this value this is (1 for the first), counted by value bytes.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The visibility deadline, epoch ms (by the queue's [`Clock`]).
    pub fn deadline_ms(&self) -> i64 {
        self.deadline_ms
    }

    /// The work is done: forget the value. False when the value was no longer ours (its deadline
    /// passed and a reaper gave it back, so it may be processed again).
    ///
    /// # Errors
    ///
    /// A Redis error (the value then stays in flight and comes back after its deadline).
    pub async fn ack(mut self) -> Result<bool> {
        self.settled = true;
        self.shared.ack(&self.id).await
    }

    /// The attempt failed: give the value back, due again after `delay` (at once for zero).
    ///
    /// With a delay the value becomes an ordinary pending entry of the delayed queue (Java peers
    /// see it as pending, any scheduler transfers it); with none it goes back onto the tail of
    /// the target list. The attempt stays counted. False when the value was no longer ours.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`], or a Redis error (the value then comes back after its deadline).
    pub async fn nack(mut self, delay: Duration) -> Result<bool> {
        self.settled = true;
        self.shared.nack(&self.id, delay, false).await
    }

    /// Gives the value back unprocessed, onto the head of the target list, uncounting this
    /// attempt (for a graceful shutdown). False when the value was no longer ours.
    ///
    /// # Errors
    ///
    /// A Redis error (the value then comes back after its deadline).
    pub async fn give_back(mut self) -> Result<bool> {
        self.settled = true;
        self.shared.nack(&self.id, Duration::ZERO, true).await
    }

    /// Gives the value up: it moves to the dead-letter list with `error` and its attempt count.
    /// False when the value was no longer ours.
    ///
    /// # Errors
    ///
    /// A Redis error (the value then comes back after its deadline).
    pub async fn dead_letter(mut self, error: &str) -> Result<bool> {
        self.settled = true;
        self.shared.dead(&self.id, self.attempt, error).await
    }

    /// Pushes the deadline back to `visibility` from now (a heartbeat for long jobs). False when
    /// the value is no longer ours: a reaper gave it back and another consumer may have it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`] or a Redis error.
    pub async fn extend(&mut self, visibility: Duration) -> Result<bool> {
        match self.shared.extend(&self.id, visibility).await? {
            Some(deadline) => {
                self.deadline_ms = deadline;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

impl Drop for Receipt {
    fn drop(&mut self) {
        if !self.settled {
            // The consumer gives it back at its next call; if it is gone, the reaper does.
            let _ = self.shared.returns.send(std::mem::take(&mut self.id));
        }
    }
}

/// A value taken by a [`ReliableConsumer`], in flight until settled.
///
/// Settle it with [`ack`](Self::ack), [`nack`](Self::nack), [`give_back`](Self::give_back) or
/// [`dead_letter`](Self::dead_letter); see [`Receipt`] for what each does and for dropping it.
#[derive(Debug)]
pub struct Delivery<V> {
    value: Result<V>,
    receipt: Receipt,
}

impl<V> Delivery<V> {
    /// The decoded value, or `None` when the bytes did not decode (see
    /// [`decode_error`](Self::decode_error)).
    pub fn value(&self) -> Option<&V> {
        self.value.as_ref().ok()
    }

    /// Why the value did not decode (the bytes stay in flight; dead-letter them).
    pub fn decode_error(&self) -> Option<&Error> {
        self.value.as_ref().err()
    }

    /// The value's bytes.
    pub fn raw(&self) -> &Bytes {
        self.receipt.raw()
    }

    /// Which delivery of this value this is (1 for the first).
    pub fn attempt(&self) -> u32 {
        self.receipt.attempt()
    }

    /// The delivery id.
    pub fn id(&self) -> &str {
        self.receipt.id()
    }

    /// The visibility deadline, epoch ms.
    pub fn deadline_ms(&self) -> i64 {
        self.receipt.deadline_ms()
    }

    /// Splits into the decoded value and the receipt that settles it.
    pub fn into_parts(self) -> (Result<V>, Receipt) {
        (self.value, self.receipt)
    }

    /// See [`Receipt::ack`].
    ///
    /// # Errors
    ///
    /// As [`Receipt::ack`].
    pub async fn ack(self) -> Result<bool> {
        self.receipt.ack().await
    }

    /// See [`Receipt::nack`].
    ///
    /// # Errors
    ///
    /// As [`Receipt::nack`].
    pub async fn nack(self, delay: Duration) -> Result<bool> {
        self.receipt.nack(delay).await
    }

    /// See [`Receipt::give_back`].
    ///
    /// # Errors
    ///
    /// As [`Receipt::give_back`].
    pub async fn give_back(self) -> Result<bool> {
        self.receipt.give_back().await
    }

    /// See [`Receipt::dead_letter`].
    ///
    /// # Errors
    ///
    /// As [`Receipt::dead_letter`].
    pub async fn dead_letter(self, error: &str) -> Result<bool> {
        self.receipt.dead_letter(error).await
    }

    /// See [`Receipt::extend`].
    ///
    /// # Errors
    ///
    /// As [`Receipt::extend`].
    pub async fn extend(&mut self, visibility: Duration) -> Result<bool> {
        self.receipt.extend(visibility).await
    }
}

/// Takes values with acknowledgement: a value stays in Redis, in flight, until it is settled.
///
/// Made by [`DelayedQueue::reliable_consumer`]. Java consumers of the same queue keep using
/// `BLPOP`; they and reliable consumers share the target list. See the [module docs](self) for
/// how it works.
///
/// # Cancel safety
///
/// [`take`](Self::take) and [`take_timeout`](Self::take_timeout) are cancel safe in that no
/// value is ever lost: if the future is dropped after the take script ran but before its reply
/// arrived, the value is in flight with nobody holding it, and the reaper gives it back after
/// the visibility timeout.
///
/// # Examples
///
/// ```no_run
/// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
/// use std::time::Duration;
///
/// let consumer = queue.reliable_consumer().await?;
/// let delivery = consumer.take().await?;
/// match delivery.value() {
///     Some(order) if order.starts_with("order-") => {
///         // ... cancel the order ...
///         delivery.ack().await?;
///     }
///     _ => {
///         delivery.nack(Duration::from_secs(30)).await?;
///     }
/// }
/// consumer.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ReliableConsumer<C: Codec> {
    codec: Arc<C>,
    waiter: Client,
    /// This consumer's claim list, where its blocking wait puts a value.
    claim: String,
    shared: Arc<Shared>,
    returns: Mutex<mpsc::UnboundedReceiver<String>>,
    last_reap: Mutex<Option<Instant>>,
    /// Keeps the queue's scheduler lease while the consumer lives.
    _queue: DelayedQueue<C>,
}

impl<C: Codec> ReliableConsumer<C> {
    pub(crate) async fn new(queue: &DelayedQueue<C>, config: ReliableConfig) -> Result<Self> {
        config.validate()?;
        let waiter = queue.client().clone_new();
        crate::connect::init_client(&waiter).await?;
        let (tx, rx) = mpsc::unbounded_channel();
        Ok(ReliableConsumer {
            codec: queue.shared_codec(),
            waiter,
            claim: queue.keys().claim(&new_delivery_id()),
            shared: Arc::new(Shared {
                client: queue.client().clone(),
                keys: queue.keys().clone(),
                format: queue.entry_format(),
                clock: queue.clock(),
                config,
                returns: tx,
            }),
            returns: Mutex::new(rx),
            last_reap: Mutex::new(None),
            _queue: queue.clone(),
        })
    }

    /// The queue's target list name.
    pub fn name(&self) -> &str {
        self.shared.keys.target()
    }

    /// The consumer's settings.
    pub fn config(&self) -> &ReliableConfig {
        &self.shared.config
    }

    /// Waits for the next value and takes it.
    ///
    /// # Errors
    ///
    /// A Redis error. Values that do not decode are delivered, with
    /// [`Delivery::decode_error`] set, so that they can be dead-lettered.
    pub async fn take(&self) -> Result<Delivery<C::Value>> {
        loop {
            if let Some(delivery) = self.take_timeout(self.shared.config.wait_slice).await? {
                return Ok(delivery);
            }
        }
    }

    /// Takes the next value, waiting at most `timeout` (not at all for zero).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Option<Delivery<C::Value>>> {
        let until = Instant::now() + timeout;
        loop {
            self.housekeeping().await?;
            if let Some(delivery) = self.try_take(1).await?.pop() {
                return Ok(Some(delivery));
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.wait_ready(left.min(self.shared.config.wait_slice))
                .await?;
        }
    }

    /// Like [`take`](Self::take), but returns `None` as soon as `stop` is cancelled; only the
    /// blocking wait is cut short, never a take script in flight.
    pub(crate) async fn take_or_stop(
        &self,
        stop: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<Delivery<C::Value>>> {
        loop {
            if stop.is_cancelled() {
                return Ok(None);
            }
            self.housekeeping().await?;
            if let Some(delivery) = self.try_take(1).await?.pop() {
                return Ok(Some(delivery));
            }
            tokio::select! {
                biased;
                _ = stop.cancelled() => return Ok(None),
                waited = self.wait_ready(self.shared.config.wait_slice) => waited?,
            }
        }
    }

    /// Takes up to `max` values that are ready now, without waiting.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn try_take(&self, max: usize) -> Result<Vec<Delivery<C::Value>>> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let shared = &self.shared;
        let keys = &shared.keys;
        let visibility = delay_ms(shared.config.visibility)?;
        // The lease outlives a blocking wait and the take after it with a wide margin; a lease
        // that runs out while the consumer lives only sends its claimed value back to the list.
        let lease = delay_ms(shared.config.visibility + shared.config.wait_slice * 2)?;
        let mut args: Vec<Value> = vec![shared.clock.lua_now(), visibility.into(), lease.into()];
        args.extend((0..max).map(|_| Value::from(new_delivery_id())));
        let reply: Value = scripts::TAKE
            .call(
                &shared.client,
                keys.target(),
                &[
                    self.claim.as_str(),
                    keys.target(),
                    keys.inflight(),
                    keys.inflight_data(),
                    keys.attempts(),
                    keys.attempts_seen(),
                    keys.claims(),
                ],
                args,
            )
            .await?;
        self.parse_take(reply)
    }

    fn parse_take(&self, reply: Value) -> Result<Vec<Delivery<C::Value>>> {
        let bad = |detail: String| Error::UnexpectedReply {
            context: "take.lua",
            detail,
        };
        let Value::Array(items) = reply else {
            return Err(bad(format!("{reply:?}")));
        };
        let mut items = items.into_iter();
        let deadline_ms = items
            .next()
            .and_then(|v| v.as_i64())
            .ok_or_else(|| bad("no deadline".into()))?;
        let mut out = Vec::new();
        // Build every receipt before any error return, so that a bad item never drops values
        // that were taken (unsettled receipts are given back).
        let mut problem = None;
        while let (Some(id), Some(value), Some(attempt)) =
            (items.next(), items.next(), items.next())
        {
            let (Some(id), Some(raw)) = (id.as_string(), value.into_bytes()) else {
                problem = Some(bad("delivery id or value is not a string".into()));
                continue;
            };
            let attempt = attempt
                .as_u64()
                .map_or(u32::MAX, |a| u32::try_from(a).unwrap_or(u32::MAX));
            let receipt = Receipt {
                shared: self.shared.clone(),
                id,
                raw: raw.clone(),
                attempt,
                deadline_ms,
                settled: false,
            };
            out.push(Delivery {
                value: decode_value(&*self.codec, raw),
                receipt,
            });
        }
        match problem {
            Some(err) => Err(err),
            None => Ok(out),
        }
    }

    /// Blocks until a value arrives on the target list (or `slice` passes) and moves it onto this
    /// consumer's claim list, for the next take to register in flight.
    async fn wait_ready(&self, slice: Duration) -> Result<()> {
        let target = self.shared.keys.target();
        let secs = slice.as_secs_f64().max(0.01);
        let waited: std::result::Result<Value, _> =
            crate::connect::resend_refused("BLMOVE", || {
                self.waiter.blmove(
                    target,
                    self.claim.as_str(),
                    LMoveDirection::Left,
                    LMoveDirection::Right,
                    secs,
                )
            })
            .await;
        match waited {
            Ok(_) => Ok(()),
            // fred reports BLMOVE's nil reply (nothing arrived in time) as a timeout error; a
            // real timeout is just as harmless here: the caller tries to take and waits again.
            Err(err) if *err.kind() == fred::error::ErrorKind::Timeout => Ok(()),
            Err(err) => Err(Error::from_redis(target, err)),
        }
    }

    /// Gives back deliveries dropped unsettled, and reaps when it is time.
    async fn housekeeping(&self) -> Result<()> {
        self.flush_returns().await?;
        let Some(interval) = self.shared.config.reap_interval else {
            return Ok(());
        };
        let due = {
            let mut last = self.last_reap.lock().map_err(|_| Error::Closed)?;
            let now = Instant::now();
            if last.is_none_or(|at| now.duration_since(at) >= interval) {
                *last = Some(now);
                true
            } else {
                false
            }
        };
        if due {
            let outcome = self.reap().await?;
            if outcome.returned > 0 {
                tracing::warn!(
                    queue = self.name(),
                    returned = outcome.returned,
                    "in-flight values passed their visibility deadline; given back for redelivery"
                );
            }
        }
        Ok(())
    }

    /// Runs the reaper now (see [`DelayedQueue::reap_expired`]).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn reap(&self) -> Result<ReapOutcome> {
        let shared = &self.shared;
        reap(
            &shared.client,
            &shared.keys,
            shared.clock,
            shared.config.reap_batch,
            shared.config.attempts_retention,
        )
        .await
    }

    /// Gives back every delivery dropped unsettled so far; returns how many.
    ///
    /// # Errors
    ///
    /// A Redis error (the ones not given back come back after their deadline).
    pub async fn flush_returns(&self) -> Result<usize> {
        let ids: Vec<String> = {
            let mut rx = self.returns.lock().map_err(|_| Error::Closed)?;
            std::iter::from_fn(|| rx.try_recv().ok()).collect()
        };
        let mut given = 0;
        for id in &ids {
            if self.shared.nack(id, Duration::ZERO, false).await? {
                given += 1;
            }
        }
        if given > 0 {
            tracing::debug!(queue = self.name(), given, "dropped deliveries given back");
        }
        Ok(given)
    }

    /// Gives back dropped deliveries and anything on its claim list, and closes the consumer's
    /// waiting connection. Deliveries still held stay valid (they settle through the queue's
    /// client).
    pub async fn close(self) {
        if let Err(err) = self.flush_returns().await {
            tracing::warn!(queue = self.name(), error = %err, "could not give back dropped deliveries; the reaper will");
        }
        // Close the waiting connection first, so that no BLMOVE still in the server's queue can
        // claim a value after the claim list was emptied.
        let _ = self.waiter.quit().await;
        let shared = &self.shared;
        if let Err(err) = unclaim(
            &shared.client,
            &shared.keys,
            shared.clock,
            &self.claim,
            true,
        )
        .await
        {
            tracing::warn!(queue = self.name(), error = %err, "could not give back the claim list; the reaper will");
        }
    }
}

/// 16 random bytes as hex.
fn new_delivery_id() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reliable consumption, retries, dead letters, reschedule and quarantine (delayq only; Java
/// peers see none of these keys).
impl<C: Codec> DelayedQueue<C> {
    /// A [`ReliableConsumer`] with the default [`ReliableConfig`].
    ///
    /// # Errors
    ///
    /// No connection for the consumer's blocking waits.
    pub async fn reliable_consumer(&self) -> Result<ReliableConsumer<C>> {
        ReliableConsumer::new(self, ReliableConfig::default()).await
    }

    /// A [`ReliableConsumer`] with `config`.
    ///
    /// # Errors
    ///
    /// An invalid config, or no connection.
    pub async fn reliable_consumer_with(
        &self,
        config: ReliableConfig,
    ) -> Result<ReliableConsumer<C>> {
        ReliableConsumer::new(self, config).await
    }

    fn delay_arg(&self, delay: Duration) -> Result<i64> {
        // Refuse a due time that cannot be a score, by this host's clock.
        due_time(now_ms(), delay)?;
        delay_ms(delay)
    }

    /// Gives every pending entry equal to `value` the due time `delay` from now, in one script:
    /// an order's timeout can be pushed back (or brought forward) while schedulers run.
    ///
    /// Returns false when no equal entry is pending: it was never offered, was removed, or is
    /// already due and transferred (the scheduler won the race; the value is on the target list
    /// or taken). The entries keep their bytes and place in offer order; a Java peer sees the
    /// same entries with a new score.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`], [`Error::Encode`] or a Redis error.
    pub async fn reschedule(&self, value: &C::Value, delay: Duration) -> Result<bool> {
        let delay = self.delay_arg(delay)?;
        let encoded = encode_value(self.codec(), value)?;
        let keys = self.keys();
        let changed: i64 = scripts::RESCHEDULE
            .call(
                self.client(),
                keys.target(),
                &[keys.timeout(), keys.order(), keys.channel()],
                vec![
                    self.clock().lua_now(),
                    delay.into(),
                    self.entry_format().lua_flag().into(),
                    Value::Bytes(encoded.into()),
                ],
            )
            .await?;
        Ok(changed > 0)
    }

    /// Offers `value` due after `delay`, unless an equal value is pending: then that entry gets
    /// the new due time instead (and any further equal entries are removed), so there is never
    /// a second one. One script call. Returns true when an entry was replaced.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`], [`Error::Encode`] or a Redis error.
    pub async fn offer_unique(&self, value: &C::Value, delay: Duration) -> Result<bool> {
        let delay = self.delay_arg(delay)?;
        let encoded = encode_value(self.codec(), value)?;
        let keys = self.keys();
        let format = self.entry_format();
        let found: i64 = scripts::OFFER_UNIQUE
            .call(
                self.client(),
                keys.target(),
                &[
                    keys.target(),
                    keys.timeout(),
                    keys.order(),
                    keys.channel(),
                    keys.index(),
                ],
                vec![
                    self.clock().lua_now(),
                    delay.into(),
                    format.lua_flag().into(),
                    entry_id(format),
                    Value::Bytes(encoded.into()),
                ],
            )
            .await?;
        Ok(found > 0)
    }

    async fn list_range(&self, key: &str, limit: usize) -> Result<Vec<Bytes>> {
        let last = if limit == 0 { -1 } else { limit as i64 - 1 };
        let items: Vec<Value> = self
            .client()
            .lrange(key, 0, last)
            .await
            .map_err(|e| Error::from_redis(key, e))?;
        Ok(items.into_iter().filter_map(Value::into_bytes).collect())
    }

    async fn purge_list(&self, key: &str) -> Result<u64> {
        scripts::PURGE_LIST
            .call(self.client(), self.keys().target(), &[key], vec![])
            .await
    }

    /// The oldest `limit` dead letters (all for 0), oldest first.
    ///
    /// # Errors
    ///
    /// A Redis error. Records that do not parse or decode are reported in
    /// [`DeadLetter::value`], not skipped.
    pub async fn dead_letters(&self, limit: usize) -> Result<Vec<DeadLetter<C::Value>>> {
        let key = self.keys().dead();
        Ok(self
            .list_range(key, limit)
            .await?
            .into_iter()
            .map(|record| dead::dead_letter(key, record, |raw| decode_value(self.codec(), raw)))
            .collect())
    }

    /// Puts the oldest `limit` dead letters (all for 0) back into the queue, due after `delay`
    /// (straight onto the target list for zero), with fresh attempt counts. Records that do not
    /// parse stay. Returns how many were replayed; concurrent replays never replay one twice.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`] or a Redis error.
    pub async fn replay_dead_letters(&self, limit: usize, delay: Duration) -> Result<u64> {
        let delay = self.delay_arg(delay)?;
        let keys = self.keys();
        let format = self.entry_format();
        let mut args: Vec<Value> = vec![
            self.clock().lua_now(),
            delay.into(),
            format.lua_flag().into(),
        ];
        for record in self.list_range(keys.dead(), limit).await? {
            let Ok(parts) = dead::parse(&record) else {
                continue;
            };
            args.push(Value::Bytes(record));
            args.push(Value::Bytes(parts.value));
            args.push(entry_id(format));
        }
        if args.len() == 3 {
            return Ok(0);
        }
        scripts::DEAD_REPLAY
            .call(
                self.client(),
                keys.target(),
                &[
                    keys.target(),
                    keys.timeout(),
                    keys.order(),
                    keys.channel(),
                    keys.dead(),
                    keys.attempts(),
                    keys.attempts_seen(),
                ],
                args,
            )
            .await
    }

    /// Deletes every dead letter; returns how many there were.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn purge_dead_letters(&self) -> Result<u64> {
        self.purge_list(self.keys().dead()).await
    }

    /// The first `limit` quarantined entries (all for 0): malformed members the transfer or poll
    /// scripts took out of the queue, raw.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn quarantined(&self, limit: usize) -> Result<Vec<Bytes>> {
        self.list_range(self.keys().quarantine(), limit).await
    }

    /// Deletes every quarantined entry; returns how many there were.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn purge_quarantine(&self) -> Result<u64> {
        self.purge_list(self.keys().quarantine()).await
    }

    /// Runs the reaper once: in-flight values whose visibility deadline passed go back onto the
    /// target list (at most `batch`). Safe to run from any number of processes at once.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn reap_expired(&self, batch: usize) -> Result<ReapOutcome> {
        reap(
            self.client(),
            self.keys(),
            self.clock(),
            batch,
            ReliableConfig::default().attempts_retention,
        )
        .await
    }

    /// Counters of delayq's own keys (in flight, dead letters, quarantine), read atomically.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn reliable_stats(&self) -> Result<ReliableStats> {
        let keys = self.keys();
        let reply: Value = scripts::RELIABLE_STATS
            .call(
                self.client(),
                keys.target(),
                &[
                    keys.inflight(),
                    keys.dead(),
                    keys.attempts(),
                    keys.quarantine(),
                ],
                vec![self.clock().lua_now()],
            )
            .await?;
        let bad = |detail: String| Error::UnexpectedReply {
            context: "reliable_stats.lua",
            detail,
        };
        let Value::Array(items) = reply else {
            return Err(bad(format!("{reply:?}")));
        };
        let [in_flight, overdue, dead, counters, quarantined, head] =
            <[Value; 6]>::try_from(items).map_err(|i| bad(format!("{} items", i.len())))?;
        let count = |v: Value| v.as_u64().ok_or_else(|| bad(format!("{v:?}")));
        Ok(ReliableStats {
            in_flight: count(in_flight)?,
            overdue: count(overdue)?,
            dead: count(dead)?,
            counters: count(counters)?,
            quarantined: count(quarantined)?,
            next_deadline_ms: parse_score(&head).map_err(bad)?,
        })
    }
}
