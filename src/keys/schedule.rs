//! The names of a queue's recurring schedules: the zset by next occurrence, a hash per
//! schedule.

use super::{prefix_name, QueueKeys, SCHEDULED_PREFIX};

/// The hash tag of the registry of queues with schedules, which serves no one queue.
const SCHEDULED_TAG: &str = "delayq";

impl QueueKeys {
    /// delayq's zset of the queue's recurring schedules: schedule id → its next occurrence in
    /// epoch ms, `+inf` while paused or ended (`delayq_schedules:{NAME}`). Firing reads it by
    /// score, so only the schedules that are due cost anything.
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.schedules(), "delayq_schedules:{orders}");
    /// ```
    pub fn schedules(&self) -> &str {
        &self.schedules
    }

    /// The hash of the recurring schedule `id` (`delayq_schedule:{NAME}:ID`): its definition,
    /// value, revision, next and last occurrence (fields in `docs/schedules.md`).
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.schedule("nightly"), "delayq_schedule:{orders}:nightly");
    /// ```
    pub fn schedule(&self, id: &str) -> String {
        format!("{}:{id}", self.schedule_prefix)
    }
}

/// delayq's set of the names of the queues that have recurring schedules
/// (`delayq_scheduled:{delayq}`), one for the server (in a Cluster, on one slot): a firing
/// process reads it once a tick, so a queue without schedules costs no read of its own.
pub(crate) fn scheduled_queues() -> String {
    prefix_name(SCHEDULED_PREFIX, SCHEDULED_TAG)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_registry_of_scheduled_queues_is_one_key() {
        assert_eq!(super::scheduled_queues(), "delayq_scheduled:{delayq}");
    }
}
