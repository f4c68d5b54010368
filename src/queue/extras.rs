//! delayq's own producer operations (not in Redisson): reschedule, unique offers, handles,
//! and the queue's own lists that the inspect and admin doors read and purge.

use super::DelayedQueue;
use crate::codec::Codec;
use crate::entry::OfferHandle;
use crate::redis::ops::reschedule::Which;
use crate::redis::ops::{cancel, purge_list};
use crate::redis::reply;
use crate::time::Delay;
use crate::{Error, Result};
use bytes::Bytes;
use fred::interfaces::ListInterface;
use fred::prelude::Value;
use std::time::Duration;

/// **delayq's own offers**: offers with a handle, unique offers, cancelling and rescheduling
/// (not in Redisson; Java peers see ordinary entries).
impl<C: Codec> DelayedQueue<C> {
    /// Gives every pending entry equal to `value` the due time `delay` from now, in one script:
    /// an order's timeout can be pushed back (or brought forward) while schedulers run.
    ///
    /// Returns false when no equal entry is pending: it was never offered, was removed, or is
    /// already due and transferred (the scheduler won the race; the value is on the target list
    /// or taken). The entries keep their bytes and place in offer order; a Java peer sees the
    /// same entries with a new score. They are found in the value index (see
    /// [`remove`](Self::remove)), not by reading the order list.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`], [`Error::Encode`] or a Redis error.
    pub async fn reschedule(&self, value: &C::Borrowed, delay: Duration) -> Result<bool> {
        let delay = Delay::checked(delay)?;
        let value = self.encode(value)?;
        self.reschedule_encoded(delay, Which::Value(value)).await
    }

    /// Offers `value`, due after `delay`, like [`offer`](Self::offer), and returns the new
    /// entry's [`OfferHandle`], for [`cancel`](Self::cancel) and
    /// [`reschedule_by_id`](Self::reschedule_by_id) to act on exactly this entry later (however
    /// many entries carry an equal value).
    ///
    /// # Errors
    ///
    /// As [`offer`](Self::offer).
    pub async fn offer_with_handle(
        &self,
        value: &C::Borrowed,
        delay: Duration,
    ) -> Result<OfferHandle> {
        let delay = Delay::checked(delay)?;
        let value = self.encode(value)?;
        self.offer_with_handle_encoded(delay, value).await
    }

    /// Removes the pending entry of `handle`, without looking at its value; true when it was
    /// pending (false: it was transferred, polled, removed or cancelled already).
    ///
    /// Found through the value index, like [`remove`](Self::remove): the entry leaves the order
    /// list by a scan from the end nearer to it, and the timeout zset.
    ///
    /// # Errors
    ///
    /// A Redis error.
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name(), handle = %handle))]
    pub async fn cancel(&self, handle: &OfferHandle) -> Result<bool> {
        cancel::run(self.client(), self.spec(), handle).await
    }

    /// Gives the pending entry of `handle` the due time `delay` from now, without looking at
    /// its value; false when it is no longer pending. Like [`reschedule`](Self::reschedule), the
    /// entry keeps its bytes and its place in offer order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`] or a Redis error.
    pub async fn reschedule_by_id(&self, handle: &OfferHandle, delay: Duration) -> Result<bool> {
        let delay = Delay::checked(delay)?;
        self.reschedule_encoded(delay, Which::Id(*handle)).await
    }

    /// Offers `value` due after `delay`, unless an equal value is pending: then that entry gets
    /// the new due time instead (and any further equal entries are removed), so there is never
    /// a second one. One script call once the value index covers the queue (more, each short,
    /// while it is behind: see [`remove`](Self::remove)). Returns true when an entry was
    /// replaced.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`], [`Error::Encode`] or a Redis error.
    pub async fn offer_unique(&self, value: &C::Borrowed, delay: Duration) -> Result<bool> {
        let delay = Delay::checked(delay)?;
        let value = self.encode(value)?;
        self.offer_unique_encoded(delay, value).await
    }

    /// The first `limit` members (all for 0) of one of the queue's own lists.
    pub(crate) async fn own_list(&self, key: &str, limit: usize) -> Result<Vec<Bytes>> {
        self.own_list_from(key, 0, limit).await
    }

    /// `limit` members (all for 0) of one of the queue's own lists, from position `start`.
    pub(crate) async fn own_list_from(
        &self,
        key: &str,
        start: usize,
        limit: usize,
    ) -> Result<Vec<Bytes>> {
        let first = i64::try_from(start).unwrap_or(i64::MAX);
        let last = if limit == 0 {
            -1
        } else {
            first.saturating_add(i64::try_from(limit).unwrap_or(i64::MAX) - 1)
        };
        let items: Value = self
            .client()
            .lrange(key, first, last)
            .await
            .map_err(|e| Error::from_redis("LRANGE", key, e))?;
        reply::bytes_list(items, "LRANGE")
    }

    /// Deletes one of the queue's own lists; returns how long it was.
    pub(crate) async fn purge_own_list(&self, key: &str) -> Result<u64> {
        purge_list::run(self.client(), self.spec(), key).await
    }
}
