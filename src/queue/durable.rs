//! Durable writes: [`with_durability`](DelayedQueue::with_durability), and the
//! [`Writer`] of this handle's next write.

use super::DelayedQueue;
use crate::codec::Codec;
use crate::durable::{Durability, DurableWrites, Writer};
use crate::Result;

/// **Durable writes**: this handle with writes that wait for replicas or the append-only file.
impl<C: Codec> DelayedQueue<C> {
    /// This queue with writes that wait for `durability` (a cheap clone sharing everything
    /// else, the scheduler lease too): offers, [`offer_all`](Self::offer_all),
    /// [`offer_with_handle`](Self::offer_with_handle), [`offer_unique`](Self::offer_unique),
    /// replays of dead letters, and the dead letters of the reliable consumers and workers made
    /// from the returned handle. [`Durability::none`] gives plain writes.
    ///
    /// A durable write returns:
    /// - `Ok` once the master has the value **and** the confirmations asked for came;
    /// - [`Error::NotConfirmed`](crate::Error::NotConfirmed) when the master has the value but
    ///   the confirmations did not come within the timeout: the outcome is unknown (the value
    ///   may or may not survive a failover), never a success;
    /// - any other error when the write itself failed, as a plain write would (a connection
    ///   error may still mean the master got it, as always), or
    ///   [`Error::InvalidConfig`](crate::Error::InvalidConfig) before anything is written when
    ///   the server cannot give the durability (an AOF wait without `WAITAOF`).
    ///
    /// Durable writes go on a connection of their own, opened on the first one; concurrent
    /// writes share their waits (one `WAIT` confirms every write its connection made before).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> delayq::Result<()> {
    /// use delayq::{Durability, Error};
    /// use std::time::Duration;
    ///
    /// let durable = queue.with_durability(Durability::replicas(1).timeout(Duration::from_secs(1)));
    /// match durable.offer("order-42", Duration::from_secs(900)).await {
    ///     Ok(()) => {}                                   // on the master and one replica
    ///     Err(Error::NotConfirmed { .. }) => {}          // on the master; unknown after a failover
    ///     Err(other) => return Err(other),               // not written (or unknown, as ever)
    /// }
    /// # Ok(()) }
    /// ```
    pub fn with_durability(&self, durability: Durability) -> DelayedQueue<C> {
        DelayedQueue {
            inner: self.inner.clone(),
            durability,
        }
    }

    /// What this handle's writes wait for.
    pub(crate) fn durability(&self) -> Durability {
        self.durability
    }

    /// The queue's durable-write connection (opened on first use), shared with its reliable
    /// consumers.
    pub(crate) fn durable_writes(&self) -> &DurableWrites {
        &self.inner.durable
    }

    /// Where this handle's next write goes, and what it then waits for.
    pub(crate) async fn writer(&self) -> Result<Writer<'_>> {
        self.inner.durable.writer(self.durability).await
    }
}
