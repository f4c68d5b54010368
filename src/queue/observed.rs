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
    /// # async fn ex(queue: delayq::DelayedQueue) -> Result<(), delayq::Error> {
    /// let hour = queue.activity(60).await?;
    /// let failed: u64 = hour.iter().map(|minute| minute.failed()).sum();
    /// # Ok(()) }
    /// ```
    pub async fn activity(&self, minutes: usize) -> Result<Vec<MinuteActivity>> {
        observe::read_activity(self.client(), self.keys(), minutes, now_ms()).await
    }

    /// The live delayq workers and schedulers serving this queue (by name, or by a discovery
    /// glob that takes it), from their registry records.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn processes(&self) -> Result<Vec<ProcessInfo>> {
        let mut all = observe::processes(self.client()).await?;
        all.retain(|process| process.serves(self.name()));
        Ok(all)
    }
}
