//! The names of a queue's recurring schedules: the zset by next occurrence, a hash per
//! schedule.

use super::QueueKeys;

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
