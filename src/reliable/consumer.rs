//! [`ReliableConsumer`]: takes values into flight, waits for the target list without taking
//! from it, gives back dropped deliveries and runs the reaper.

use super::config::ReliableConfig;
use super::delivery::{Delivery, Receipt};
use super::delivery_id::fresh as fresh_delivery_id;
use super::reaper;
use super::reaper::ReapOutcome;
use super::settle::SettleCtx;
use crate::codec::{decode_value, Codec};
use crate::keys::PAUSED_RECHECK;
use crate::queue::DelayedQueue;
use crate::redis::ops::limit_take::{self, LimitedTake, TakeGate};
use crate::redis::ops::take;
use crate::redis::reply::Decision;
use crate::redis::resend_refused;
use crate::time::{now_ms, Delay};
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::{ClientLike, ListInterface};
use fred::prelude::Value;
use fred::types::lists::LMoveDirection;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Takes values with acknowledgement: a value stays in Redis, in flight, until it is settled.
///
/// Made by [`DelayedQueue::reliable_consumer`]. Java consumers of the same queue keep using
/// `BLPOP`; they and reliable consumers share the target list. See the
/// [module docs](crate::reliable) for how it works.
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
    /// The connection the blocking waits run on (none for a consumer that only polls, as a
    /// worker over several queues uses them).
    waiter: Option<Client>,
    /// This consumer's claim list, where its blocking wait puts a value.
    claim: String,
    ctx: Arc<SettleCtx>,
    returns: Mutex<mpsc::UnboundedReceiver<String>>,
    last_reap: Mutex<Option<Instant>>,
    /// Keeps the queue's scheduler lease while the consumer lives.
    _queue: DelayedQueue<C>,
}

/// What a take under limits brought.
#[derive(Debug)]
pub(crate) enum GatedTake<V> {
    /// A value taken without limits.
    Value(Delivery<V>),
    /// Values taken under a gate, in take order, each with its slot and token, granted at the
    /// time given (the Redis server's clock, epoch ms).
    Granted(Vec<Delivery<V>>, i64),
    /// The limits refused (nothing taken), changed, or are malformed.
    Limited(Decision),
    /// The queue is paused ([`Admin::pause`](crate::admin::Admin::pause)): nothing taken.
    Paused,
}

/// What a take that waits for nothing found.
#[derive(Debug)]
pub(crate) enum Found<V> {
    /// The values taken (none when none was ready).
    Values(Vec<Delivery<V>>),
    /// The queue is paused ([`Admin::pause`](crate::admin::Admin::pause)): nothing taken.
    Paused,
}

/// 16 random bytes as hex: a consumer's id.
fn random_id() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl<C: Codec> ReliableConsumer<C> {
    pub(super) async fn new(queue: &DelayedQueue<C>, config: ReliableConfig) -> Result<Self> {
        config.validate()?;
        let waiter = queue.client().clone_new();
        crate::redis::init_client(&waiter).await?;
        Ok(Self::with_waiter(queue, config, Some(waiter)))
    }

    /// A consumer without a connection of its own for blocking waits: it takes what is ready
    /// ([`try_take`](Self::try_take)) and its [`take`](Self::take) polls.
    pub(crate) fn polling(queue: &DelayedQueue<C>, config: ReliableConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self::with_waiter(queue, config, None))
    }

    fn with_waiter(
        queue: &DelayedQueue<C>,
        config: ReliableConfig,
        waiter: Option<Client>,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        ReliableConsumer {
            codec: queue.shared_codec(),
            waiter,
            claim: queue.keys().claim(&random_id()),
            ctx: Arc::new(SettleCtx {
                client: queue.client().clone(),
                queue: queue.spec().clone(),
                config,
                durable: queue.durable_writes().clone(),
                durability: queue.durability(),
                returns: tx,
            }),
            returns: Mutex::new(rx),
            last_reap: Mutex::new(None),
            _queue: queue.clone(),
        }
    }

    /// The queue's name (its target list).
    pub fn name(&self) -> &str {
        self.ctx.queue.keys.target()
    }

    /// The client its scripts run on.
    pub(crate) fn client(&self) -> &Client {
        &self.ctx.client
    }

    /// The consumer's settings.
    pub fn config(&self) -> &ReliableConfig {
        &self.ctx.config
    }

    /// Waits for the next value and takes it. While the queue is
    /// [paused](crate::admin::Admin::pause) nothing is taken: the wait goes on, looking at the
    /// pause flag again about every second.
    ///
    /// # Errors
    ///
    /// A Redis error. Values that do not decode are delivered, with
    /// [`Delivery::decode_error`] set, so that they can be dead-lettered.
    pub async fn take(&self) -> Result<Delivery<C::Value>> {
        loop {
            if let Some(delivery) = self.take_timeout(self.config().wait_slice()).await? {
                return Ok(delivery);
            }
        }
    }

    /// Takes the next value, waiting at most `timeout` (not at all for zero). While the queue
    /// is [paused](crate::admin::Admin::pause) nothing is taken.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Option<Delivery<C::Value>>> {
        let until = Instant::now() + timeout;
        loop {
            self.housekeeping().await?;
            let found = self.take_now(1).await?;
            let paused = matches!(found, Found::Paused);
            if let Found::Values(mut taken) = found {
                if let Some(delivery) = taken.pop() {
                    return Ok(Some(delivery));
                }
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            match paused {
                // No blocking wait: it would claim a value only for the take to give it back.
                true => tokio::time::sleep(left.min(PAUSED_RECHECK)).await,
                false => {
                    self.wait_ready(left.min(self.config().wait_slice()))
                        .await?
                }
            }
        }
    }

    /// Like [`take`](Self::take), but returns `None` as soon as `stop` is cancelled (only the
    /// blocking wait is cut short, never a take script in flight), or once `until` has passed:
    /// the blocking waits end by then, so none is left running on the connection. Under a
    /// `gate` (queue-wide limits) a value is taken only with its slot and token; the limits'
    /// refusal is returned instead. A paused queue returns [`GatedTake::Paused`] at once (the
    /// caller waits before it looks again).
    pub(crate) async fn take_or_stop(
        &self,
        stop: &CancellationToken,
        until: Option<tokio::time::Instant>,
        gate: Option<&TakeGate>,
    ) -> Result<Option<GatedTake<C::Value>>> {
        loop {
            if stop.is_cancelled() {
                return Ok(None);
            }
            self.housekeeping().await?;
            let taken = match gate {
                None => match self.take_now(1).await? {
                    Found::Values(mut taken) => taken.pop().map(GatedTake::Value),
                    Found::Paused => Some(GatedTake::Paused),
                },
                Some(gate) => self.try_take_gated(gate).await?,
            };
            if taken.is_some() {
                return Ok(taken);
            }
            let mut slice = self.config().wait_slice();
            if let Some(until) = until {
                let left = until.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                slice = slice.min(left.max(Duration::from_millis(10)));
            }
            tokio::select! {
                biased;
                _ = stop.cancelled() => return Ok(None),
                waited = self.wait_ready(slice) => waited?,
            }
        }
    }

    /// Values with their slots and tokens (up to the gate's `most`), the limits' refusal, or
    /// `None` when nothing is ready.
    async fn try_take_gated(&self, gate: &TakeGate) -> Result<Option<GatedTake<C::Value>>> {
        let config = self.config();
        let visibility = Delay::span(config.visibility())?;
        let lease = Delay::span(config.visibility() + config.wait_slice() * 2)?;
        let (client, queue) = (&self.ctx.client, &self.ctx.queue);
        let ids = (0..gate.most.max(1))
            .map(|_| fresh_delivery_id(now_ms()))
            .collect();
        let reply = limit_take::run(
            client,
            queue,
            &self.claim,
            visibility,
            lease,
            &gate.version,
            ids,
        );
        let (deadline_ms, admitted_ms, taken, unreadable, refused) = match reply.await? {
            LimitedTake::Limited(decision) => return Ok(Some(GatedTake::Limited(decision))),
            LimitedTake::Paused => return Ok(Some(GatedTake::Paused)),
            LimitedTake::Taken {
                deadline_ms,
                admitted_ms,
                taken,
                unreadable,
                refused,
            } => (deadline_ms, admitted_ms, taken, unreadable, refused),
        };
        // Every receipt is built before an unreadable item is reported (see `try_take`).
        let deliveries: Vec<_> = taken
            .into_iter()
            .map(|t| self.adopt(t.id, t.raw, t.attempt, deadline_ms))
            .collect();
        if let Some(err) = unreadable {
            return Err(err);
        }
        Ok(match (deliveries.is_empty(), refused) {
            (false, _) => Some(GatedTake::Granted(deliveries, admitted_ms)),
            (true, Some((wait, why))) => Some(GatedTake::Limited(Decision::Wait(wait, why))),
            (true, None) => None,
        })
    }

    /// Takes up to `max` values that are ready now, without waiting; none while the queue is
    /// [paused](crate::admin::Admin::pause).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn try_take(&self, max: usize) -> Result<Vec<Delivery<C::Value>>> {
        Ok(match self.take_now(max).await? {
            Found::Values(taken) => taken,
            Found::Paused => Vec::new(),
        })
    }

    /// Takes up to `max` values that are ready now, without waiting, or finds the queue paused.
    pub(crate) async fn take_now(&self, max: usize) -> Result<Found<C::Value>> {
        if max == 0 {
            return Ok(Found::Values(Vec::new()));
        }
        let config = self.config();
        let visibility = Delay::span(config.visibility())?;
        // The lease outlives a blocking wait and the take after it with a wide margin; a lease
        // that runs out while the consumer lives only sends its claimed value back to the list.
        let lease = Delay::span(config.visibility() + config.wait_slice() * 2)?;
        let ids = (0..max).map(|_| fresh_delivery_id(now_ms())).collect();
        let reply = take::run(
            &self.ctx.client,
            &self.ctx.queue,
            &self.claim,
            visibility,
            lease,
            ids,
        )
        .await?;
        if reply.paused {
            return Ok(Found::Paused);
        }
        // Every receipt is built before an unreadable item is reported, so that no value taken
        // is dropped unsettled (an unsettled receipt is given back).
        let deliveries = reply
            .taken
            .into_iter()
            .map(|taken| {
                let receipt = Receipt::new(
                    self.ctx.clone(),
                    taken.id,
                    taken.raw.clone(),
                    taken.attempt,
                    reply.deadline_ms,
                );
                Delivery::new(decode_value(&*self.codec, taken.raw), receipt)
            })
            .collect();
        match reply.unreadable {
            Some(err) => Err(err),
            None => Ok(Found::Values(deliveries)),
        }
    }

    /// The delivery of a value another script took into flight for this consumer's queue (the
    /// worker's limits take held-back values that way), settled like any other.
    pub(crate) fn adopt(
        &self,
        id: String,
        raw: bytes::Bytes,
        attempt: u32,
        deadline_ms: i64,
    ) -> Delivery<C::Value> {
        let receipt = Receipt::new(self.ctx.clone(), id, raw.clone(), attempt, deadline_ms);
        Delivery::new(decode_value(&*self.codec, raw), receipt)
    }

    /// Blocks until a value arrives on the target list (or `slice` passes) and moves it onto this
    /// consumer's claim list, for the next take to register in flight.
    async fn wait_ready(&self, slice: Duration) -> Result<()> {
        let target = self.name();
        let Some(waiter) = &self.waiter else {
            // A polling consumer waits a slice, then looks again.
            tokio::time::sleep(slice.min(Duration::from_millis(100))).await;
            return Ok(());
        };
        let secs = slice.as_secs_f64().max(0.01);
        let waited: std::result::Result<Value, _> = resend_refused("BLMOVE", || {
            waiter.blmove(
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
            Err(err) => Err(Error::from_redis("BLMOVE", target, err)),
        }
    }

    /// Gives back deliveries dropped unsettled, and reaps when it is time.
    pub(crate) async fn housekeeping(&self) -> Result<()> {
        self.flush_returns().await?;
        let Some(interval) = self.config().reap_interval() else {
            return Ok(());
        };
        let due = {
            let mut last = self
                .last_reap
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
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

    /// Runs the reaper now (see [`Admin::reap_expired`](crate::admin::Admin::reap_expired)).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn reap(&self) -> Result<ReapOutcome> {
        let config = self.config();
        reaper::reap(
            &self.ctx.client,
            &self.ctx.queue,
            config.reap_batch(),
            config.attempts_retention(),
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
            let mut rx = self.returns.lock().unwrap_or_else(PoisonError::into_inner);
            std::iter::from_fn(|| rx.try_recv().ok()).collect()
        };
        let mut given = 0;
        for id in &ids {
            if self.ctx.nack(id, Duration::ZERO, false).await? {
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
        if let Some(waiter) = &self.waiter {
            let _ = waiter.quit().await;
        }
        if let Err(err) =
            reaper::unclaim(&self.ctx.client, &self.ctx.queue, &self.claim, true).await
        {
            tracing::warn!(queue = self.name(), error = %err, "could not give back the claim list; the reaper will");
        }
    }
}
