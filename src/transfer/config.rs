//! The scheduler's settings, in two halves: [`GroupConfig`] for what one scheduler group does
//! for all its queues (the safety sweep, how many transfers at once), [`TransferConfig`] for
//! how each queue's transfers size their calls and back off.

use crate::observe::ObserveConfig;
use crate::recurring::FiringConfig;
use crate::redis::ops::transfer::TransferLimits;
use crate::{Error, Result};
use std::time::Duration;

/// Settings of a scheduler group, for all its queues: the safety sweep and how many queues
/// transfer at once. Set with the `with_*` methods, read with the methods of the same name.
///
/// One group serves every queue handle of one client (see
/// [`DelayedQueueBuilder::group_config`](crate::DelayedQueueBuilder::group_config)): the first
/// handle's settings start it, and a later handle that asks for others is warned about.
///
/// # Examples
///
/// ```
/// use delayq::GroupConfig;
/// use std::time::Duration;
///
/// let config = GroupConfig::default()
///     .with_sweep_interval(Duration::from_millis(500))
///     .with_max_concurrent_transfers(4);
/// assert_eq!(config.sweep_budget(), 200);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupConfig {
    sweep_interval: Option<Duration>,
    sweep_budget: u32,
    max_concurrent_transfers: usize,
    server_check: Option<Duration>,
    observe: ObserveConfig,
    schedules: Option<FiringConfig>,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            sweep_interval: Some(Duration::from_secs(1)),
            sweep_budget: 200,
            max_concurrent_transfers: 8,
            server_check: Some(Duration::from_secs(60)),
            observe: ObserveConfig::default(),
            schedules: Some(FiringConfig::default()),
        }
    }
}

impl GroupConfig {
    /// Sets (or, with `None`, turns off) the safety sweep: the shortest time between two looks
    /// at a queue's head, whatever messages say (a group looks at most
    /// [`sweep_budget`](Self::with_sweep_budget) queues a second).
    /// Default: 1 s.
    #[must_use]
    pub fn with_sweep_interval(mut self, interval: impl Into<Option<Duration>>) -> Self {
        self.sweep_interval = interval.into();
        self
    }

    /// Sets how many queues per second the safety sweep may look at (one `ZRANGE` each): a
    /// group of 10,000 queues looks at each every 50 s by default, one of a few every
    /// [`sweep_interval`](Self::with_sweep_interval). Default: 200.
    #[must_use]
    pub fn with_sweep_budget(mut self, queues_per_second: u32) -> Self {
        self.sweep_budget = queues_per_second;
        self
    }

    /// Sets how many queues of the group may transfer at once (each transfer is one script
    /// call at a time on the shared connection). Default: 8.
    #[must_use]
    pub fn with_max_concurrent_transfers(mut self, transfers: usize) -> Self {
        self.max_concurrent_transfers = transfers;
        self
    }

    /// Sets how often the group reads the server's `maxmemory-policy` again after its start
    /// (`None`: only at the start), to warn once when a later `CONFIG SET` makes it one that
    /// evicts keys (pending values could then vanish). Default: every minute.
    #[must_use]
    pub fn with_server_check(mut self, interval: impl Into<Option<Duration>>) -> Self {
        self.server_check = interval.into();
        self
    }

    /// How often the server's `maxmemory-policy` is read again (`None`: only at the start).
    pub fn server_check(&self) -> Option<Duration> {
        self.server_check
    }

    /// The safety sweep's interval (`None`: off).
    pub fn sweep_interval(&self) -> Option<Duration> {
        self.sweep_interval
    }

    /// How many queues per second the safety sweep may look at.
    pub fn sweep_budget(&self) -> u32 {
        self.sweep_budget
    }

    /// How many queues of the group may transfer at once.
    pub fn max_concurrent_transfers(&self) -> usize {
        self.max_concurrent_transfers
    }

    /// Sets what the group keeps in Redis about itself: the per-minute counts of values moved,
    /// and its registry record (both on by default; [`ObserveConfig::off`] keeps nothing).
    #[must_use]
    pub fn with_observe(mut self, observe: ObserveConfig) -> Self {
        self.observe = observe;
        self
    }

    /// What the group keeps in Redis about itself.
    pub fn observe(&self) -> ObserveConfig {
        self.observe
    }

    /// Sets how the group fires the recurring schedules of its queues
    /// ([`Schedules`](crate::Schedules)), or, with `None`, that it does not (on by default:
    /// every process that transfers a queue takes part in firing its schedules, each occurrence
    /// offered once whoever fires it).
    #[must_use]
    pub fn with_schedules(mut self, firing: impl Into<Option<FiringConfig>>) -> Self {
        self.schedules = firing.into();
        self
    }

    /// How the group fires recurring schedules; `None`: it does not.
    pub fn schedules(&self) -> Option<FiringConfig> {
        self.schedules
    }

    pub(crate) fn validate(&self) -> Result<()> {
        self.observe.validate()?;
        if let Some(firing) = &self.schedules {
            firing.validate()?;
        }
        if self.max_concurrent_transfers == 0 || self.sweep_budget == 0 {
            return Err(Error::InvalidConfig(
                "max_concurrent_transfers and sweep_budget must be at least 1".into(),
            ));
        }
        if self.sweep_interval == Some(Duration::ZERO) || self.server_check == Some(Duration::ZERO)
        {
            return Err(Error::InvalidConfig(
                "sweep_interval and server_check must be positive (or None)".into(),
            ));
        }
        Ok(())
    }
}

/// Settings of one queue's transfers: batch sizes, the position index, the time budget of a
/// call, the backoff after a failure. Set with the `with_*` methods, read with the methods of
/// the same name.
///
/// The entry format and the clock are the queue's ([`QueueOptions`](crate::QueueOptions)); the
/// sweep and concurrency are the group's ([`GroupConfig`]).
///
/// # Examples
///
/// ```
/// use delayq::TransferConfig;
/// use std::time::Duration;
///
/// let config = TransferConfig::default()
///     .with_adaptive_batch(10_000, Duration::from_millis(5))
///     .with_max_call_time(Duration::from_millis(15));
/// assert_eq!(config.batch_size(), 100);
/// assert_eq!(config.max_batch_size(), 10_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferConfig {
    batch_size: usize,
    max_batch_size: usize,
    target_call_time: Duration,
    max_call_time: Duration,
    index_threshold: usize,
    index_chunk: usize,
    scan_budget: usize,
    max_backoff: Duration,
}

impl Default for TransferConfig {
    fn default() -> Self {
        TransferConfig {
            batch_size: 100,
            max_batch_size: 100,
            target_call_time: Duration::from_millis(5),
            max_call_time: Duration::from_millis(20),
            index_threshold: 1_000,
            index_chunk: 50_000,
            scan_budget: 200_000,
            max_backoff: Duration::from_secs(5),
        }
    }
}

impl TransferConfig {
    /// Sets the entries a script call moves (Redisson: 100; the default), and the largest batch
    /// unless that is larger. By default a call moves at most this many, exactly as Redisson's
    /// scheduler does; [`with_adaptive_batch`](Self::with_adaptive_batch) lets calls grow.
    #[must_use]
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self.max_batch_size = self.max_batch_size.max(batch_size);
        self
    }

    /// Lets batches grow up to `max` (by default they do not: at most 100 entries a call, as in
    /// Redisson) while calls stay near `target_call_time` (default 5 ms): after each call the batch is scaled by the target over the call's time (by
    /// at most 2x either way, never below [`batch_size`](Self::batch_size); a call that found
    /// fewer entries due than its batch never grows it).
    ///
    /// On a long order list with due entries all over it, a call also grows its own batch, up to
    /// `max`, while its time budget allows: the one pass over the list that removes the batch
    /// costs the same for one entry as for thousands (see
    /// [`with_max_call_time`](Self::with_max_call_time)).
    #[must_use]
    pub fn with_adaptive_batch(mut self, max: usize, target_call_time: Duration) -> Self {
        self.max_batch_size = max;
        self.target_call_time = target_call_time;
        self
    }

    /// Sets the order-list length from which transfers use delayq's position index
    /// (`delayq_index:{NAME}`) instead of one `LREM` scan per entry; 0 turns it off.
    /// Default: 1,000.
    #[must_use]
    pub fn with_index_threshold(mut self, threshold: usize) -> Self {
        self.index_threshold = threshold;
        self
    }

    /// Sets the most order-list entries added to the position index by one call (default
    /// 50,000; a call also stops indexing after half its time, see
    /// [`with_max_call_time`](Self::with_max_call_time)).
    #[must_use]
    pub fn with_index_chunk(mut self, chunk: usize) -> Self {
        self.index_chunk = chunk;
        self
    }

    /// Sets the most list elements one call may scan with `LREM` for entries the index cannot
    /// place yet, while the index is in use (a batch ends early, in due order, when this runs
    /// out).
    /// Default: 200,000.
    #[must_use]
    pub fn with_scan_budget(mut self, elements: usize) -> Self {
        self.scan_budget = elements;
        self
    }

    /// Sets the time budget of one transfer call (default 20 ms): a call takes no further entry
    /// once the time it has spent plus the expected pass over the order list (and the writes
    /// still to come) reaches it, so Redis keeps answering other clients. A call always moves at
    /// least one due entry, and when the pass alone takes more than half the budget (about 10 ns
    /// an element: a list of millions on a slow machine) the call takes about twice the pass
    /// instead. With [`with_adaptive_batch`](Self::with_adaptive_batch), a call catching up on
    /// a long list with due entries all over it runs for about the whole budget.
    #[must_use]
    pub fn with_max_call_time(mut self, budget: Duration) -> Self {
        self.max_call_time = budget;
        self
    }

    /// Sets the longest wait before retrying after a failed transfer (the wait starts at
    /// 100 ms and doubles).
    /// Default: 5 s.
    #[must_use]
    pub fn with_max_backoff(mut self, max_backoff: Duration) -> Self {
        self.max_backoff = max_backoff;
        self
    }

    /// Entries moved by one script call; with a larger
    /// [`max_batch_size`](Self::max_batch_size), the starting and smallest batch.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Largest batch when batches grow adaptively (equal to the batch size: no growth).
    pub fn max_batch_size(&self) -> usize {
        self.max_batch_size
    }

    /// How long one transfer call should hold Redis at most, for adaptive batches.
    pub fn target_call_time(&self) -> Duration {
        self.target_call_time
    }

    /// The time budget of one transfer call.
    pub fn max_call_time(&self) -> Duration {
        self.max_call_time
    }

    /// Order-list length from which the position index is used (0: never).
    pub fn index_threshold(&self) -> usize {
        self.index_threshold
    }

    /// Most order-list entries added to the position index by one call.
    pub fn index_chunk(&self) -> usize {
        self.index_chunk
    }

    /// Most list elements one call may scan for entries the index cannot place.
    pub fn scan_budget(&self) -> usize {
        self.scan_budget
    }

    /// The longest wait before retrying after a failed transfer.
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// The batch size a scheduler uses after a call of `batch` that moved `taken` entries in
    /// `took`: with adaptive batches, `batch` scaled by the target time over `took` (between
    /// half and double), not grown after a call that found fewer than `batch` entries due,
    /// always within `batch_size..=max_batch_size`. Public for tools and benchmarks that drive
    /// transfers themselves (`queue.admin().transfer_due_with`) the way a scheduler does.
    pub(crate) fn next_batch(&self, batch: usize, taken: u64, took: Duration) -> usize {
        if self.max_batch_size <= self.batch_size {
            return self.batch_size;
        }
        let ratio =
            (self.target_call_time.as_secs_f64() / took.as_secs_f64().max(1e-6)).clamp(0.5, 2.0);
        if ratio > 1.0 && usize::try_from(taken).unwrap_or(usize::MAX) < batch {
            return batch;
        }
        ((batch as f64 * ratio) as usize).clamp(self.batch_size, self.max_batch_size)
    }

    /// What one transfer call of `batch` entries may do.
    pub(crate) fn limits(&self, batch: usize) -> TransferLimits {
        TransferLimits {
            batch,
            index_threshold: self.index_threshold,
            index_chunk: self.index_chunk,
            scan_budget: self.scan_budget,
            max_batch: self.max_batch_size.max(batch),
            budget: self.max_call_time,
            heed_pause: false,
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.batch_size == 0 || self.max_batch_size < self.batch_size {
            return Err(Error::InvalidConfig(
                "batch_size must be at least 1 and max_batch_size at least batch_size".into(),
            ));
        }
        if self.index_chunk == 0 {
            return Err(Error::InvalidConfig(
                "index_chunk must be at least 1".into(),
            ));
        }
        if self.max_call_time.is_zero() {
            return Err(Error::InvalidConfig(
                "max_call_time must be positive".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_adapt_within_bounds() {
        let fixed = TransferConfig::default().with_adaptive_batch(100, Duration::from_millis(5));
        assert_eq!(fixed.next_batch(100, 100, Duration::ZERO), 100);
        // By default a call moves at most 100, as Redisson's scheduler does.
        let default = TransferConfig::default();
        assert_eq!(default.max_batch_size(), 100);
        assert_eq!(default.next_batch(100, 100, Duration::from_millis(1)), 100);
        assert_eq!(default.next_batch(100, 100, Duration::from_millis(50)), 100);
        let adaptive =
            TransferConfig::default().with_adaptive_batch(1_000, Duration::from_millis(8));
        let next = |batch, taken, ms| adaptive.next_batch(batch, taken, Duration::from_millis(ms));
        assert_eq!(next(100, 100, 1), 200);
        assert_eq!(next(800, 800, 1), 1_000);
        assert_eq!(next(800, 10, 1), 800);
        // Scaled by target / took: 8 ms / 10 ms.
        assert_eq!(next(800, 800, 10), 640);
        assert_eq!(next(400, 400, 5), 640);
        // At most halved, never below the base size.
        assert_eq!(next(800, 800, 100), 400);
        assert_eq!(next(150, 150, 9), 133);
        assert_eq!(next(150, 150, 20), 100);
    }

    #[test]
    fn config_is_checked() {
        assert!(TransferConfig::default()
            .with_batch_size(0)
            .validate()
            .is_err());
        assert!(TransferConfig::default()
            .with_index_chunk(0)
            .validate()
            .is_err());
        assert!(GroupConfig::default()
            .with_sweep_interval(Duration::ZERO)
            .validate()
            .is_err());
        assert!(TransferConfig::default()
            .with_max_call_time(Duration::ZERO)
            .validate()
            .is_err());
        assert!(GroupConfig::default()
            .with_sweep_interval(None)
            .validate()
            .is_ok());
        assert!(GroupConfig::default()
            .with_max_concurrent_transfers(0)
            .validate()
            .is_err());
    }
}
