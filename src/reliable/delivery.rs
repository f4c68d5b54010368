//! [`Receipt`] and [`Delivery`]: the right to settle one in-flight value.

use super::settle::SettleCtx;
use crate::{Error, Result};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

/// The right to settle one in-flight value: [`ack`](Receipt::ack), [`nack`](Receipt::nack),
/// [`give_back`](Receipt::give_back), [`dead_letter`](Receipt::dead_letter), or
/// [`extend`](Receipt::extend) its deadline.
///
/// Dropping a receipt unsettled gives the value back for another attempt (counted), at the
/// consumer's next call; if the consumer is gone too, the reaper does it after the deadline.
#[derive(Debug)]
pub struct Receipt {
    ctx: Arc<SettleCtx>,
    id: String,
    raw: Bytes,
    attempt: u32,
    deadline_ms: i64,
    settled: bool,
    /// The limit key of the slots the job holds under its queue's limits (`""` for a value
    /// without a key), when it holds any: its heartbeats renew them and settling releases them.
    slots: Option<String>,
    /// When the limits granted those slots and tokens (the Redis server's clock, epoch ms).
    admitted_ms: Option<i64>,
}

impl Receipt {
    /// The receipt of a value just taken into flight.
    pub(super) fn new(
        ctx: Arc<SettleCtx>,
        id: String,
        raw: Bytes,
        attempt: u32,
        deadline_ms: i64,
    ) -> Receipt {
        Receipt {
            ctx,
            id,
            raw,
            attempt,
            deadline_ms,
            settled: false,
            slots: None,
            admitted_ms: None,
        }
    }

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

    /// The visibility deadline, epoch ms (by the queue's [`Clock`](crate::Clock)).
    pub fn deadline_ms(&self) -> i64 {
        self.deadline_ms
    }

    /// The work is done: forget the value. False when the value was no longer ours (its deadline
    /// passed and a reaper gave it back, so it may be processed again).
    ///
    /// # Errors
    ///
    /// A Redis error (the value then stays in flight and comes back after its deadline). A
    /// call cut off by a dropped connection is sent again (up to 4 times over 1.5 s; a second
    /// run finds the first one's record and reports its success); only when Redis stays out of
    /// reach through all of them is the outcome unknown: acked, or back after its deadline.
    pub async fn ack(mut self) -> Result<bool> {
        self.settled = true;
        self.ctx.ack(&self.id, self.slots.as_deref()).await
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
        let nacked = self.ctx.nack(&self.id, delay, false).await;
        self.ctx.release(&self.id, self.slots.as_deref()).await;
        nacked
    }

    /// Gives the value back unprocessed, onto the head of the target list, uncounting this
    /// attempt (for a graceful shutdown). False when the value was no longer ours.
    ///
    /// # Errors
    ///
    /// A Redis error (the value then comes back after its deadline).
    pub async fn give_back(mut self) -> Result<bool> {
        self.settled = true;
        let given = self.ctx.nack(&self.id, Duration::ZERO, true).await;
        self.ctx.release(&self.id, self.slots.as_deref()).await;
        given
    }

    /// Gives the value up: it moves to the dead-letter list with `error` and its attempt count.
    /// False when the value was no longer ours. With a queue handle of some
    /// [`durability`](crate::DelayedQueue::with_durability), the move then waits for it.
    ///
    /// # Errors
    ///
    /// A Redis error (the value then comes back after its deadline), or
    /// [`Error::NotConfirmed`](crate::Error::NotConfirmed): moved on the master, not confirmed.
    pub async fn dead_letter(mut self, error: &str) -> Result<bool> {
        self.settled = true;
        let dead = self.ctx.dead(&self.id, self.attempt, error).await;
        self.ctx.release(&self.id, self.slots.as_deref()).await;
        dead
    }

    /// Pushes the deadline back to `visibility` from now (a heartbeat for long jobs). False when
    /// the value is no longer ours: a reaper gave it back and another consumer may have it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`] or a Redis error.
    pub async fn extend(&mut self, visibility: Duration) -> Result<bool> {
        match self
            .ctx
            .extend(&self.id, visibility, self.slots.as_deref())
            .await?
        {
            Some(deadline) => {
                self.deadline_ms = deadline;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

impl Receipt {
    /// Notes that the job holds slots under its queue's limits for the limit key `key`,
    /// granted at `admitted_ms` (the Redis server's clock, epoch ms): its heartbeats renew
    /// their leases, and settling releases them (an ack in the same call).
    pub(crate) fn hold_slots(&mut self, key: String, admitted_ms: i64) {
        self.slots = Some(key);
        self.admitted_ms = Some(admitted_ms);
    }

    /// When the queue's limits granted this job its slots and tokens (the Redis server's
    /// clock, epoch ms); `None` when it holds none.
    pub(crate) fn admitted_ms(&self) -> Option<i64> {
        self.admitted_ms
    }
}

impl Drop for Receipt {
    fn drop(&mut self) {
        if !self.settled {
            // The consumer gives it back at its next call; if it is gone, the reaper does.
            let _ = self.ctx.returns.send(std::mem::take(&mut self.id));
        }
    }
}

/// A value taken by a [`ReliableConsumer`](crate::ReliableConsumer), in flight until settled.
///
/// Settle it with [`ack`](Self::ack), [`nack`](Self::nack), [`give_back`](Self::give_back) or
/// [`dead_letter`](Self::dead_letter); see [`Receipt`] for what each does and for dropping it.
#[derive(Debug)]
pub struct Delivery<V> {
    value: Result<V>,
    receipt: Receipt,
}

impl<V> Delivery<V> {
    /// A delivery of `value` (decoded, or why not) settled through `receipt`.
    pub(super) fn new(value: Result<V>, receipt: Receipt) -> Delivery<V> {
        Delivery { value, receipt }
    }

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

    /// Drops the delivery as settled: a script has already moved its value out of flight (the
    /// worker's limits held it back), so there is nothing to give back.
    pub(crate) fn forget(mut self) {
        self.receipt.settled = true;
    }

    /// See [`Receipt::hold_slots`].
    pub(crate) fn hold_slots(&mut self, key: String, admitted_ms: i64) {
        self.receipt.hold_slots(key, admitted_ms);
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
