//! Pausing a queue's transfers: delayq's pause flag (`delayq_paused:{NAME}`, one per shard of a
//! sharded queue), which every delayq scheduler's transfer reads in the same script call that
//! would move values.

use super::{DelayedQueue, ShardedQueue};
use crate::codec::Codec;
use crate::{Error, Result};
use fred::interfaces::KeysInterface;
use fred::types::SetOptions;
use futures::future::try_join_all;

impl<C: Codec> DelayedQueue<C> {
    /// Pauses the queue's transfers: from now on no delayq scheduler (of any process) moves its
    /// due values onto the target list, until [`resume`](Self::resume); offers, consumers and
    /// one-off transfers (`transfer_due`) go on. Java's schedulers do not know the flag and keep
    /// transferring. The flag holds when it was set (epoch ms, this process's clock). True if
    /// the queue was not paused already (a second pause keeps the first one's time).
    ///
    /// # Errors
    ///
    /// A Redis error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> delayq::Result<()> {
    /// queue.pause().await?;
    /// assert!(queue.is_paused().await?);
    /// // ... due values stay pending ...
    /// queue.resume().await?;
    /// # Ok(()) }
    /// ```
    pub async fn pause(&self) -> Result<bool> {
        let key = self.keys().paused();
        let since = crate::time::now_ms().to_string();
        let set: Option<String> = self
            .client()
            .set(key, since, None, Some(SetOptions::NX), false)
            .await
            .map_err(|e| Error::from_redis("SET", key, e))?;
        Ok(set.is_some())
    }

    /// Lets delayq's schedulers transfer the queue again: they read the flag of a paused queue
    /// about every second, and then move what fell due meanwhile. True if it was paused.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn resume(&self) -> Result<bool> {
        let key = self.keys().paused();
        let deleted: u64 = self
            .client()
            .del(key)
            .await
            .map_err(|e| Error::from_redis("DEL", key, e))?;
        Ok(deleted > 0)
    }

    /// Whether the queue's transfers are paused (see [`pause`](Self::pause)).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn is_paused(&self) -> Result<bool> {
        let key = self.keys().paused();
        let exists: u64 = self
            .client()
            .exists(key)
            .await
            .map_err(|e| Error::from_redis("EXISTS", key, e))?;
        Ok(exists > 0)
    }
}

impl<C: Codec> ShardedQueue<C> {
    /// Pauses the transfers of every shard (see [`DelayedQueue::pause`]). True if any shard was
    /// not paused already.
    ///
    /// # Errors
    ///
    /// A Redis error (the shards before it are paused).
    pub async fn pause(&self) -> Result<bool> {
        let paused = try_join_all(self.shards().iter().map(DelayedQueue::pause)).await?;
        Ok(paused.contains(&true))
    }

    /// Lets every shard be transferred again (see [`DelayedQueue::resume`]). True if any shard
    /// was paused.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn resume(&self) -> Result<bool> {
        let resumed = try_join_all(self.shards().iter().map(DelayedQueue::resume)).await?;
        Ok(resumed.contains(&true))
    }

    /// Whether any shard's transfers are paused (all of them are after [`pause`](Self::pause)).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn is_paused(&self) -> Result<bool> {
        let paused = try_join_all(self.shards().iter().map(DelayedQueue::is_paused)).await?;
        Ok(paused.contains(&true))
    }
}
