//! The names of a queue's recurring schedules: the zset by next occurrence, a hash per
//! schedule.

use super::{item_key, legacy_item_key, prefix_name, QueueKeys, SCHEDULED_PREFIX};

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
    /// value, revision, next and last occurrence (fields in `docs/schedules.md`). In `ID`, `%`
    /// is written `%25` and `:` is written `%3A` (the rule of every key one per business key),
    /// so that the schedule `orders:s` of the queue `NAME` and the schedule `s` of the queue
    /// `{NAME}:orders` have a hash each.
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.schedule("nightly"), "delayq_schedule:{orders}:nightly");
    /// assert_eq!(keys.schedule("eu:50%"), "delayq_schedule:{orders}:eu%3A50%25");
    /// let tagged = delayq::QueueKeys::new("{orders}:eu");
    /// assert_eq!(tagged.schedule("50%"), "delayq_schedule:{orders}:eu:50%25");
    /// ```
    pub fn schedule(&self, id: &str) -> String {
        item_key(&self.schedule_prefix, id)
    }

    /// The name of the hash of the schedule `id` before issue 38 (the id as it is), when it is
    /// not [`schedule`](Self::schedule)'s: reading the schedule moves a hash found there to
    /// its name now, unless the name is another schedule's now (`lua/schedule_adopt.lua`).
    pub(crate) fn schedule_legacy(&self, id: &str) -> Option<String> {
        legacy_item_key(&self.schedule_prefix, id)
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

    /// Before issue 38 both were `delayq_schedule:{t1}:orders:s`.
    #[test]
    fn an_id_with_a_colon_names_no_hash_of_the_queue_named_after_the_tag() {
        let plain = super::QueueKeys::new("t1");
        let tagged = super::QueueKeys::new("{t1}:orders");
        assert_eq!(
            plain.schedule("orders:s"),
            "delayq_schedule:{t1}:orders%3As"
        );
        assert_eq!(tagged.schedule("s"), "delayq_schedule:{t1}:orders:s");
        assert_eq!(
            plain.schedule_legacy("orders:s").as_deref(),
            Some("delayq_schedule:{t1}:orders:s")
        );
        assert_eq!(plain.schedule_legacy("nightly"), None);
    }
}
