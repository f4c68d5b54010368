//! [`ShardedQueue::worker`]: one worker over every shard of a sharded queue, and the limits of
//! the sharded queue as a whole, which its workers enforce ([`ShardedQueue::limits`]).

use super::{HandlerError, Job, WorkerBuilder};
use crate::codec::Codec;
use crate::limit::{LimitUsage, Limits, StoredLimits};
use crate::queue::ShardedQueue;
use crate::{Error, Result};
use std::future::Future;

impl<C: Codec> ShardedQueue<C> {
    /// A worker over every shard this handle serves (those of the layout before too, while the
    /// number of shards changes): [`DelayedQueue::worker`](crate::DelayedQueue::worker) on the
    /// first shard, [`with_queue`](WorkerBuilder::with_queue) for each other, so the shards are
    /// served in turn, one value each, with acknowledgements, retries and dead letters per
    /// shard. [`Job::queue`] names the shard a value came from.
    ///
    /// ```no_run
    /// # async fn ex(queue: delayq::ShardedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
    /// let stats = queue
    ///     .worker(8, |job: delayq::Job<String>| async move {
    ///         println!("{} from shard {}", job.value(), job.queue());
    ///         Ok::<(), delayq::JobError>(())
    ///     })
    ///     .stop_on_signal()
    ///     .run()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn worker<F, Fut, E>(&self, concurrency: usize, handler: F) -> WorkerBuilder<C, F>
    where
        F: Fn(Job<C::Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: HandlerError,
        C::Value: 'static,
    {
        let mut builder = WorkerBuilder::over(self.shards().to_vec(), concurrency, handler);
        builder.logical = Some(self.logical().clone());
        builder
    }

    /// The limits of the sharded queue as a whole: a concurrency cap and a rate across every
    /// shard and every worker of it, in every process, which its workers enforce (see
    /// [`StoredLimits`] and [`crate::limit`] for what they mean). Stored as the logical name's
    /// hash `delayq_limits:{NAME}`, in the slot of the tag `NAME`; a worker over the shards
    /// reserves a slot and a token there before each take, holds it while the job runs (renewed
    /// with its heartbeats) and releases it when the job settles (see `docs/sharding.md`).
    /// Workers apply new limits within a second.
    ///
    /// Per-key limits stay each shard's own (a key's values are spread over the shards by
    /// their bytes): set them on the shards, through [`shards`](Self::shards).
    pub fn limits(&self) -> StoredLimits<'_, ShardedQueue<C>> {
        StoredLimits::of(self)
    }
}

/// **Door: limits across processes**, of a sharded queue as a whole.
impl<C: Codec> StoredLimits<'_, ShardedQueue<C>> {
    /// Stores the limits (validated first; nothing is stored when they are refused).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidLimits`](crate::Error::InvalidLimits) as [`Limits::validate`], or
    /// [`Error::InvalidConfig`] for per-key limits (nothing is stored); or a Redis error.
    pub async fn set(self, limits: &Limits) -> Result<()> {
        let queue = self.queue();
        if limits.per_key() || limits.key.is_some() {
            return Err(Error::InvalidConfig(format!(
                "the limits of the sharded queue {} as a whole are queue-wide (a concurrency cap, \
                 a rate); per-key limits are each shard's own: set them on the shards",
                queue.name()
            )));
        }
        queue.logical().limits().set(limits).await
    }

    /// The limits, if any are stored.
    ///
    /// # Errors
    ///
    /// As [`StoredLimits::get`] of a queue.
    pub async fn get(self) -> Result<Option<Limits>> {
        self.queue().logical().limits().get().await
    }

    /// Clears the limits; whether any were stored.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn clear(self) -> Result<bool> {
        self.queue().logical().limits().clear().await
    }

    /// What the limits hold now (`slots_held`: reservations of the queue's workers;
    /// `next_token_at`).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn usage(self) -> Result<LimitUsage> {
        self.queue().logical().limits().usage().await
    }
}
