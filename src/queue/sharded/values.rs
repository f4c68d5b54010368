//! [`ShardedQueue`]'s operations on one value or entry: the value is encoded once, its bytes
//! pick the shard, and the shard runs the byte-level operation its own public method runs.

use super::{shard_of, ShardedHandle, ShardedQueue};
use crate::codec::{encode_value, Codec};
use crate::queue::DelayedQueue;
use crate::redis::ops::remove::RemoveMode;
use crate::redis::ops::reschedule::Which;
use crate::time::Delay;
use crate::{Error, Result};
use futures::future::join_all;
use std::borrow::Borrow;
use std::time::Duration;

impl<C: Codec> ShardedQueue<C> {
    pub(super) fn encode(&self, value: &C::Borrowed) -> Result<Vec<u8>> {
        encode_value(self.codec(), value)
    }

    /// The shard of the current layout for a value encoded as `encoded`.
    fn home(&self, encoded: &[u8]) -> (usize, &DelayedQueue<C>) {
        let index = shard_of(encoded, self.inner.layout);
        (index, &self.inner.shards[index])
    }

    /// The shard a handle names, if this queue has it.
    fn shard(&self, index: usize) -> Result<&DelayedQueue<C>> {
        self.inner.shards.get(index).ok_or_else(|| {
            Error::InvalidConfig(format!(
                "queue {} has no shard {index} (it has {})",
                self.name(),
                self.inner.shards.len()
            ))
        })
    }

    /// The shard `value` goes to (the current layout's).
    ///
    /// # Errors
    ///
    /// [`Error::Encode`].
    pub fn shard_for(&self, value: &C::Borrowed) -> Result<usize> {
        Ok(self.home(&self.encode(value)?).0)
    }

    /// The shards to look for a value encoded as `encoded` in: its shard, then its shard in the
    /// layout before when that is another one.
    fn lookup_shards(&self, encoded: &[u8]) -> Vec<&DelayedQueue<C>> {
        let (index, home) = self.home(encoded);
        let mut shards = vec![home];
        if let Some(previous) = self.inner.previous {
            let old = shard_of(encoded, previous);
            if old != index {
                shards.push(&self.inner.shards[old]);
            }
        }
        shards
    }

    /// Offers `value`, due after `delay`, to its shard.
    ///
    /// Java: `RDelayedQueue#offer(e, delay, unit)` on the shard of the value.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::offer`].
    pub async fn offer(&self, value: &C::Borrowed, delay: Duration) -> Result<()> {
        let delay = Delay::checked(delay)?;
        let value = self.encode(value)?;
        self.home(&value)
            .1
            .offer_encoded(vec![(delay, value)])
            .await
    }

    /// Offers several values, grouped by shard, the shards' calls at once.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::offer_all`]: nothing is written when any delay or value is refused;
    /// when a shard's call fails, the other shards' calls still run to their end (each
    /// confirmed on its master, with a durability) and keep their values; the first error is
    /// returned.
    pub async fn offer_all(&self, items: &[(C::Value, Duration)]) -> Result<()> {
        let mut groups: Vec<Vec<(Delay, Vec<u8>)>> = vec![Vec::new(); self.inner.layout];
        for (value, delay) in items {
            let delay = Delay::checked(*delay)?;
            let value = self.encode(value.borrow())?;
            groups[self.home(&value).0].push((delay, value));
        }
        // Every shard's values are checked before any shard's call goes out.
        let all = groups.iter().flatten().map(|(_, value)| value.as_slice());
        self.inner.shards[0].check_sizes(all).await?;
        let calls = groups
            .into_iter()
            .zip(&self.inner.shards)
            .filter(|(group, _)| !group.is_empty())
            .map(|(group, shard)| shard.offer_encoded(group));
        // Every shard's call runs to its end (and a durable one to its confirmation), even when
        // another's fails: stopping them half-way would leave their outcome unknown.
        let outcomes = join_all(calls).await;
        outcomes.into_iter().collect::<Result<Vec<()>>>().map(drop)
    }

    /// Offers `value` to its shard and returns the entry's handle with the shard.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::offer_with_handle`].
    pub async fn offer_with_handle(
        &self,
        value: &C::Borrowed,
        delay: Duration,
    ) -> Result<ShardedHandle> {
        let delay = Delay::checked(delay)?;
        let value = self.encode(value)?;
        let (index, shard) = self.home(&value);
        let handle = shard.offer_with_handle_encoded(delay, value).await?;
        Ok(ShardedHandle::new(index, handle))
    }

    /// Removes the pending entry of `handle` from its shard; see [`DelayedQueue::cancel`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a shard this queue does not have, or a Redis error.
    pub async fn cancel(&self, handle: &ShardedHandle) -> Result<bool> {
        self.shard(handle.shard())?.cancel(handle.handle()).await
    }

    /// Gives the entry of `handle` the due time `delay` from now; see
    /// [`DelayedQueue::reschedule_by_id`].
    ///
    /// # Errors
    ///
    /// As [`cancel`](Self::cancel), or [`Error::InvalidDelay`].
    pub async fn reschedule_by_id(&self, handle: &ShardedHandle, delay: Duration) -> Result<bool> {
        let shard = self.shard(handle.shard())?;
        shard.reschedule_by_id(handle.handle(), delay).await
    }

    /// Removes the first pending entry equal to `value` from its shard.
    ///
    /// Java: `RDelayedQueue#remove(o)` on the value's shard.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::remove`].
    pub async fn remove(&self, value: &C::Borrowed) -> Result<bool> {
        let value = self.encode(value)?;
        for shard in self.lookup_shards(&value) {
            if shard
                .remove_encoded(RemoveMode::First, vec![value.clone()])
                .await?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether a value equal to `value` is pending, in its shard.
    ///
    /// Java: `RDelayedQueue#contains(o)` on the value's shard.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::contains`].
    pub async fn contains(&self, value: &C::Borrowed) -> Result<bool> {
        let value = self.encode(value)?;
        for shard in self.lookup_shards(&value) {
            if shard.contains_encoded(vec![value.clone()]).await?.0 > 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Gives every pending entry equal to `value` the due time `delay` from now; see
    /// [`DelayedQueue::reschedule`].
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::reschedule`].
    pub async fn reschedule(&self, value: &C::Borrowed, delay: Duration) -> Result<bool> {
        let delay = Delay::checked(delay)?;
        let value = self.encode(value)?;
        let mut any = false;
        for shard in self.lookup_shards(&value) {
            any |= shard
                .reschedule_encoded(delay, Which::Value(value.clone()))
                .await?;
        }
        Ok(any)
    }

    /// Offers `value` unless an equal value is pending (then that entry gets the new due
    /// time); see [`DelayedQueue::offer_unique`]. While the number of shards changes, an equal
    /// value pending in its old shard is rescheduled there instead.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::offer_unique`].
    pub async fn offer_unique(&self, value: &C::Borrowed, delay: Duration) -> Result<bool> {
        let delay = Delay::checked(delay)?;
        let value = self.encode(value)?;
        let shards = self.lookup_shards(&value);
        if let Some(old) = shards.get(1) {
            let which = Which::Value(value.clone());
            if old.reschedule_encoded(delay, which).await? {
                return Ok(true);
            }
        }
        shards[0].offer_unique_encoded(delay, value).await
    }
}
