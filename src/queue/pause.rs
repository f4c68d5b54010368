//! Pausing a sharded queue: delayq's pause flag (`delayq_paused:{NAME}`) on every shard, which
//! every delayq scheduler's transfer and every worker's take reads in the same script call that
//! would move or take values. A queue's own flag is [`Admin::pause`](crate::admin::Admin::pause)'s.

use super::ShardedQueue;
use crate::codec::Codec;
use crate::Result;
use futures::future::try_join_all;

impl<C: Codec> ShardedQueue<C> {
    /// Pauses every shard: its transfers and its workers' takes (see
    /// [`Admin::pause`](crate::admin::Admin::pause)). True
    /// if any shard was not paused already.
    ///
    /// # Errors
    ///
    /// A Redis error (the shards before it are paused).
    pub async fn pause(&self) -> Result<bool> {
        let paused = try_join_all(self.shards().iter().map(|shard| shard.admin().pause())).await?;
        Ok(paused.contains(&true))
    }

    /// Lets every shard be transferred and taken from again (see
    /// [`Admin::resume`](crate::admin::Admin::resume)). True if any shard
    /// was paused.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn resume(&self) -> Result<bool> {
        let resumed =
            try_join_all(self.shards().iter().map(|shard| shard.admin().resume())).await?;
        Ok(resumed.contains(&true))
    }

    /// Whether any shard is paused (all of them are after [`pause`](Self::pause)).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn is_paused(&self) -> Result<bool> {
        let paused = try_join_all(
            self.shards()
                .iter()
                .map(|shard| shard.inspect().is_paused()),
        )
        .await?;
        Ok(paused.contains(&true))
    }
}
