//! The names of what delayq's processes keep about themselves: a queue's per-minute activity
//! counts, and the registry of live workers and schedulers.

use super::{
    prefix_name, QueueKeys, ACTIVITY_PREFIX, DISCOVERING_PREFIX, LIVE_PREFIX, PROCS_PREFIX,
};

/// The hash tag of the registry of discovering processes, which serve no one queue.
const DISCOVERING_TAG: &str = "delayq";

impl QueueKeys {
    /// delayq's counts of the queue's activity in the ten minutes from `first_minute`
    /// (minutes since the epoch, a multiple of ten): a hash `M:moved`, `M:taken`, `M:acked`,
    /// `M:retried`, `M:dead` → count in the minute `first_minute + M`
    /// (`delayq_activity:{NAME}:FIRST_MINUTE`), expiring after the history kept.
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.activity(29_000_000), "delayq_activity:{orders}:29000000");
    /// ```
    pub fn activity(&self, first_minute: i64) -> String {
        activity_key(self.target(), first_minute)
    }

    /// delayq's counts of the queue's activity in the ten UTC days from `first_day` (days
    /// since the epoch, a multiple of ten): a hash `D:moved`, `D:taken`, `D:acked`,
    /// `D:retried`, `D:dead` → count in the day `first_day + D`
    /// (`delayq_activity:{NAME}:day:FIRST_DAY`), expiring 90 days after its last day.
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.activity_days(20_420), "delayq_activity:{orders}:day:20420");
    /// ```
    pub fn activity_days(&self, first_day: i64) -> String {
        activity_days_key(self.target(), first_day)
    }

    /// `delayq_activity:{NAME}`, which every minute's and day's key extends.
    pub(crate) fn activity_prefix(&self) -> String {
        prefix_name(ACTIVITY_PREFIX, self.target())
    }

    /// delayq's zset of the live workers and schedulers serving the queue by name: a record of
    /// the process → when it expires, epoch ms (`delayq_procs:{NAME}`).
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.processes(), "delayq_procs:{orders}");
    /// ```
    pub fn processes(&self) -> String {
        processes_key(self.target())
    }
}

/// [`QueueKeys::activity`] of the queue `queue`, without deriving the queue's other keys.
pub(crate) fn activity_key(queue: &str, first_minute: i64) -> String {
    format!("{}:{first_minute}", prefix_name(ACTIVITY_PREFIX, queue))
}

/// [`QueueKeys::activity_days`] of the queue `queue`.
pub(crate) fn activity_days_key(queue: &str, first_day: i64) -> String {
    format!("{}:day:{first_day}", prefix_name(ACTIVITY_PREFIX, queue))
}

/// [`QueueKeys::processes`] of the queue `queue`.
pub(crate) fn processes_key(queue: &str) -> String {
    prefix_name(PROCS_PREFIX, queue)
}

/// The zset of the live schedulers that find their queues by discovery, whose records name
/// their globs (`delayq_discovering:{delayq}`): a discovering scheduler scans every key, so
/// its rights cover this one, while a process serving named queues needs no key outside
/// theirs.
pub(crate) fn discovering_processes() -> String {
    prefix_name(DISCOVERING_PREFIX, DISCOVERING_TAG)
}

/// The zset of every live delayq process, each record naming the queues the process serves
/// (`delayq_live:{delayq}`): what a console lists every worker by in one read, whatever the
/// number of queues. A process whose rights do not reach it writes only its queues' registries.
pub(crate) fn live_processes() -> String {
    prefix_name(LIVE_PREFIX, DISCOVERING_TAG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_and_activity_keys_are_named_after_the_queue() {
        assert_eq!(discovering_processes(), "delayq_discovering:{delayq}");
        assert_eq!(live_processes(), "delayq_live:{delayq}");
        assert_eq!(QueueKeys::new("{o}:eu").processes(), "delayq_procs:{o}:eu");
        assert_eq!(
            QueueKeys::new("{o}:eu").activity(7),
            "delayq_activity:{o}:eu:7"
        );
        assert_eq!(
            QueueKeys::new("{o}:eu").activity_days(20),
            "delayq_activity:{o}:eu:day:20"
        );
    }
}
