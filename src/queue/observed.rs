//! What the queue's workers and schedulers keep about it: its activity by minute, and the live
//! processes serving it.

use super::DelayedQueue;
use crate::codec::Codec;
use crate::observe::{self, MinuteActivity, ProcessInfo};
use crate::time::now_ms;
use crate::Result;

impl<C: Codec> DelayedQueue<C> {
    /// The queue's activity in each of the last `minutes` minutes (at most a day), oldest
    /// first, the current minute last: values moved by schedulers, taken by workers, jobs
    /// acked, retried and dead-lettered, as every delayq process serving the queue counted them
    /// (see [`ObserveConfig`](crate::ObserveConfig)). A process writes its counts every few
    /// seconds, so the current minute trails by that much. One pipelined round trip.
    ///
    /// # Errors
    ///
    /// A Redis error, or a bucket key holding another type.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
    /// let hour = queue.activity(60).await?;
    /// let failed: u64 = hour.iter().map(|minute| minute.failed()).sum();
    /// # Ok(()) }
    /// ```
    pub async fn activity(&self, minutes: usize) -> Result<Vec<MinuteActivity>> {
        observe::read_activity(self.client(), self.keys(), minutes, now_ms()).await
    }

    /// The live delayq workers and schedulers serving this queue, by kind then id: those
    /// serving it by name, and schedulers whose discovery globs take it (see
    /// [`ObserveConfig`](crate::ObserveConfig)). One pipelined round trip.
    ///
    /// # Errors
    ///
    /// A Redis error, or the registry key holding another type.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
    /// for process in queue.processes().await? {
    ///     println!("{} {} on {} (pid {})", process.kind, process.id, process.host, process.pid);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn processes(&self) -> Result<Vec<ProcessInfo>> {
        observe::list_processes(self.client(), self.name(), now_ms()).await
    }
}
