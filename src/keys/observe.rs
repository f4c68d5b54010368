//! The names of what delayq's processes keep about themselves: a queue's per-minute activity
//! counts, and the registry of live workers and schedulers.

use super::{prefix_name, QueueKeys, ACTIVITY_PREFIX, PROCS_PREFIX, PROC_PREFIX};

/// The hash tag of the process registry: one slot for every process's record, whatever
/// queues it serves, so that the registry costs the same at one queue or ten thousand.
const REGISTRY_TAG: &str = "delayq";

impl QueueKeys {
    /// delayq's counts of the queue's activity in the minute `minute` (minutes since the
    /// epoch): a hash `moved`, `taken`, `acked`, `retried`, `dead` → count
    /// (`delayq_activity:{NAME}:MINUTE`), expiring after the history kept.
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.activity(29_000_000), "delayq_activity:{orders}:29000000");
    /// ```
    pub fn activity(&self, minute: i64) -> String {
        activity_key(self.target(), minute)
    }

    /// `delayq_activity:{NAME}`, which every minute's key extends.
    pub(crate) fn activity_prefix(&self) -> String {
        prefix_name(ACTIVITY_PREFIX, self.target())
    }
}

/// [`QueueKeys::activity`] of the queue `queue`, without deriving the queue's other keys.
pub(crate) fn activity_key(queue: &str, minute: i64) -> String {
    format!("{}:{minute}", prefix_name(ACTIVITY_PREFIX, queue))
}

/// The zset of live delayq processes: process id → when its record expires, epoch ms
/// (`delayq_procs:{delayq}`).
pub(crate) fn process_index() -> String {
    prefix_name(PROCS_PREFIX, REGISTRY_TAG)
}

/// The record of the process `id`, a hash (`delayq_proc:{delayq}:ID`).
pub(crate) fn process_record(id: &str) -> String {
    format!("{}:{id}", prefix_name(PROC_PREFIX, REGISTRY_TAG))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_keys_share_one_slot() {
        assert_eq!(process_index(), "delayq_procs:{delayq}");
        assert_eq!(process_record("h-1"), "delayq_proc:{delayq}:h-1");
        assert_eq!(
            QueueKeys::new("{o}:eu").activity(7),
            "delayq_activity:{o}:eu:7"
        );
    }
}
