//! Durable writes: [`with_durability`](DelayedQueue::with_durability), and [`Writer`], the one
//! way a write goes on the right connection and waits for its confirmations.

use super::DelayedQueue;
use crate::codec::Codec;
use crate::durable::{Confirmer, Durability};
use crate::Result;
use fred::clients::Client;

/// Where a write goes, and what it waits for once done: see [`DelayedQueue::writer`].
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    client: &'a Client,
    confirm: Option<(&'a Confirmer, Durability)>,
}

impl Writer<'_> {
    /// The connection to send the write on.
    pub(crate) fn client(&self) -> &Client {
        self.client
    }

    /// After the write to `key` came back: waits for its confirmations, if any are wanted.
    pub(crate) async fn confirm(&self, key: &str) -> Result<()> {
        match self.confirm {
            Some((confirmer, durability)) => confirmer.confirm(durability, key).await,
            None => Ok(()),
        }
    }
}

impl<C: Codec> DelayedQueue<C> {
    /// This queue with writes that wait for `durability` (a cheap clone sharing everything
    /// else, the scheduler lease too): offers, [`offer_all`](Self::offer_all),
    /// [`offer_with_handle`](Self::offer_with_handle), [`offer_unique`](Self::offer_unique) and
    /// replays of dead letters. [`Durability::none`] gives plain writes.
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
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The connection for durable writes, opened once per queue.
    pub(super) async fn confirmer(&self) -> Result<&Confirmer> {
        self.inner
            .confirmer
            .get_or_try_init(|| Confirmer::connect(&self.inner.client))
            .await
    }

    /// Where this handle's next write goes: the queue's client for plain writes; for durable
    /// ones the confirmer's connection (after checking the server can give the durability),
    /// whose [`Writer::confirm`] then waits.
    pub(crate) async fn writer(&self) -> Result<Writer<'_>> {
        if self.durability.is_none() {
            return Ok(Writer {
                client: self.client(),
                confirm: None,
            });
        }
        let confirmer = self.confirmer().await?;
        confirmer.check(self.durability)?;
        Ok(Writer {
            client: confirmer.client(),
            confirm: Some((confirmer, self.durability)),
        })
    }
}
