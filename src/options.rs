//! [`QueueOptions`]: what every handle of one queue reads and writes its entries by.

use crate::entry::EntryFormat;
use crate::time::Clock;

/// How a queue's entries are packed and whose clock says when they are due: the settings
/// every handle of one queue must share. Taken by
/// [`DelayedQueueBuilder`](crate::DelayedQueueBuilder),
/// [`ShardedQueueBuilder`](crate::ShardedQueueBuilder),
/// [`SchedulerBuilder`](crate::SchedulerBuilder), [`Discovery`](crate::Discovery) and
/// [`SchedulerGroup::add_with`](crate::SchedulerGroup::add_with).
///
/// # Examples
///
/// ```
/// use delayq::{Clock, EntryFormat, QueueOptions};
///
/// let options = QueueOptions::default()
///     .format(EntryFormat::Legacy)
///     .clock(Clock::Server);
/// assert_eq!(options.format, EntryFormat::Legacy);
/// assert_eq!(QueueOptions::default().clock, Clock::Client);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct QueueOptions {
    /// The entry packing to write: [`EntryFormat::Current`] (default) for Redisson 3.21.1 and
    /// later, [`EntryFormat::Legacy`] when older Java peers share the queue. Also the reading
    /// preferred for an entry that fits both (by the queue, its schedulers and consumers).
    pub format: EntryFormat,
    /// Whose clock stamps due times and decides what is due: [`Clock::Client`] (default, as
    /// Redisson) or [`Clock::Server`] (the Redis server's `TIME`; see [`Clock`] for the
    /// trade-off with Java peers).
    pub clock: Clock,
}

impl QueueOptions {
    /// Sets the entry packing (see [`QueueOptions::format`](#structfield.format)).
    /// Default: [`EntryFormat::Current`].
    #[must_use]
    pub const fn format(mut self, format: EntryFormat) -> Self {
        self.format = format;
        self
    }

    /// Sets whose clock goes (see [`QueueOptions::clock`](#structfield.clock)).
    /// Default: [`Clock::Client`].
    #[must_use]
    pub const fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }
}
