//! Redisson's key and channel names for a delayed queue.

/// Prefix of the timeout zset (`redisson_delay_queue_timeout:{NAME}`).
const TIMEOUT_PREFIX: &str = "redisson_delay_queue_timeout";
/// Prefix of the order list (`redisson_delay_queue:{NAME}`).
const ORDER_PREFIX: &str = "redisson_delay_queue";
/// Prefix of the pub/sub channel (`redisson_delay_queue_channel:{NAME}`).
const CHANNEL_PREFIX: &str = "redisson_delay_queue_channel";
/// Prefix of delayq's own quarantine list for malformed entries (not a Redisson key).
const QUARANTINE_PREFIX: &str = "delayq_quarantine";
/// Prefix of delayq's position index of the order list (not a Redisson key).
const INDEX_PREFIX: &str = "delayq_index";

/// The keys of one delayed queue, derived from the destination queue's name.
///
/// Java: `RedissonDelayedQueue` builds the same names with `prefixName`: `prefix + ":{" + NAME +
/// "}"`, or `prefix + ":" + NAME` when `NAME` already contains `{`. All keys share one cluster
/// slot with the target list `NAME`.
///
/// # Examples
///
/// ```
/// use delayq::QueueKeys;
///
/// let keys = QueueKeys::new("orders");
/// assert_eq!(keys.target(), "orders");
/// assert_eq!(keys.timeout(), "redisson_delay_queue_timeout:{orders}");
/// assert_eq!(keys.order(), "redisson_delay_queue:{orders}");
/// assert_eq!(keys.channel(), "redisson_delay_queue_channel:{orders}");
///
/// let tagged = QueueKeys::new("{orders}:eu");
/// assert_eq!(tagged.timeout(), "redisson_delay_queue_timeout:{orders}:eu");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QueueKeys {
    target: String,
    timeout: String,
    order: String,
    channel: String,
    quarantine: String,
    index: String,
}

impl QueueKeys {
    /// Derives the keys for the destination queue `name` (the raw name, after any Java `NameMapper`).
    pub fn new(name: impl Into<String>) -> QueueKeys {
        let target = name.into();
        QueueKeys {
            timeout: prefix_name(TIMEOUT_PREFIX, &target),
            order: prefix_name(ORDER_PREFIX, &target),
            channel: prefix_name(CHANNEL_PREFIX, &target),
            quarantine: prefix_name(QUARANTINE_PREFIX, &target),
            index: prefix_name(INDEX_PREFIX, &target),
            target,
        }
    }

    /// The destination list consumers take from (`NAME`).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The zset of pending entries scored by due time in epoch milliseconds.
    pub fn timeout(&self) -> &str {
        &self.timeout
    }

    /// The list of pending entries in offer order.
    pub fn order(&self) -> &str {
        &self.order
    }

    /// The channel on which a new earliest due time is published.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// delayq's list of malformed entries taken out of the queue (`delayq_quarantine:{NAME}`).
    pub fn quarantine(&self) -> &str {
        &self.quarantine
    }

    /// delayq's position index of the order list (`delayq_index:{NAME}`), which lets a transfer
    /// find due entries without scanning the list; rebuilt whenever it is found stale.
    pub fn index(&self) -> &str {
        &self.index
    }
}

/// Redisson's `prefixName` rule.
fn prefix_name(prefix: &str, name: &str) -> String {
    if name.contains('{') {
        format!("{prefix}:{name}")
    } else {
        format!("{prefix}:{{{name}}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_without_braces_get_a_hash_tag() {
        let keys = QueueKeys::new("q");
        assert_eq!(keys.timeout(), "redisson_delay_queue_timeout:{q}");
        assert_eq!(keys.order(), "redisson_delay_queue:{q}");
        assert_eq!(keys.channel(), "redisson_delay_queue_channel:{q}");
        assert_eq!(keys.quarantine(), "delayq_quarantine:{q}");
        assert_eq!(keys.index(), "delayq_index:{q}");
    }

    #[test]
    fn names_with_a_brace_are_used_as_they_are() {
        for name in ["{q}", "a{b}c", "a{b"] {
            let keys = QueueKeys::new(name);
            assert_eq!(keys.target(), name);
            assert_eq!(keys.order(), format!("redisson_delay_queue:{name}"));
        }
    }
}
