//! The names of a queue's dedup keys: one string per business key, mapping it to the pending
//! entry its last offer made.

use super::{item_key, prefix_name, QueueKeys, DEDUP_PREFIX};

impl QueueKeys {
    /// The mapping of the business key `key` to its pending entry
    /// (`delayq_dedup:{NAME}:KEY`, a string holding the entry's bytes, expiring at the end of
    /// its window), in the queue's slot whatever `key` holds: the queue's hash tag comes first.
    /// A `%` in `key` is written `%25` and a `:` `%3A`, so that no business key of this queue
    /// names a key of the queue `{NAME}:…` (see `docs/dedup.md`).
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.dedup("order-42"), "delayq_dedup:{orders}:order-42");
    /// assert_eq!(keys.dedup("{x}"), "delayq_dedup:{orders}:{x}");
    /// assert_eq!(keys.dedup("eu:42%"), "delayq_dedup:{orders}:eu%3A42%25");
    /// ```
    pub fn dedup(&self, key: &str) -> String {
        item_key(&self.dedup_prefix(), key)
    }

    /// `delayq_dedup:{NAME}`, which every dedup key's mapping extends.
    pub(crate) fn dedup_prefix(&self) -> String {
        prefix_name(DEDUP_PREFIX, self.target())
    }
}
