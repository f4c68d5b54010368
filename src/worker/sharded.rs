//! [`ShardedQueue::worker`]: one worker over every shard of a sharded queue.

use super::{HandlerError, Job, WorkerBuilder};
use crate::codec::Codec;
use crate::queue::ShardedQueue;
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
        WorkerBuilder::over(self.shards().to_vec(), concurrency, handler)
    }
}
