//! The names of a queue's limits and of what enforcing them keeps: all in the queue's slot
//! (`{NAME}`), all delayq's own (Java peers never read them).

use super::{item_key, prefix_name, KeyRole, QueueKeys};

/// Prefix of the hash of a queue's limits.
const LIMITS_PREFIX: &str = "delayq_limits";
/// Prefix of the zset of queue-wide slots held (delivery id → lease end ms).
const SLOTS_PREFIX: &str = "delayq_limit_slots";
/// Prefix of the zset of rate state (`q` or `k:KEY` → theoretical arrival time ms).
const TAT_PREFIX: &str = "delayq_limit_tat";
/// Prefix of the zset of keys with values held back (key → when to try it again ms).
const HELD_PREFIX: &str = "delayq_limit_held";
/// Prefix of the zset of keys with slots held (key → latest lease end ms).
const BUSY_PREFIX: &str = "delayq_limit_busy";
/// Prefix of one key's slots (followed by `:` and the key, as `item_key` writes it).
const KEY_SLOTS_PREFIX: &str = "delayq_limit_key";
/// Prefix of one key's values held back (followed by `:` and the key, as `item_key` writes it).
const PARKED_PREFIX: &str = "delayq_limit_parked";

impl QueueKeys {
    /// delayq's hash of the queue's limits (`delayq_limits:{NAME}`; fields in
    /// [`Limits`](crate::limit::Limits)' docs).
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.limits(), "delayq_limits:{orders}");
    /// ```
    pub fn limits(&self) -> String {
        prefix_name(LIMITS_PREFIX, self.target())
    }

    /// The list of values held back for the limit key `key`
    /// (`delayq_limit_parked:{NAME}:KEY`), oldest first; `%` and `:` in `key` written `%25`
    /// and `%3A`, as in [`dedup`](Self::dedup).
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.limit_parked("acme"), "delayq_limit_parked:{orders}:acme");
    /// assert_eq!(keys.limit_parked("eu:acme"), "delayq_limit_parked:{orders}:eu%3Aacme");
    /// ```
    pub fn limit_parked(&self, key: &str) -> String {
        item_key(&self.limit_parked_prefix(), key)
    }

    /// The zset of the slots the limit key `key` holds (`delayq_limit_key:{NAME}:KEY`,
    /// delivery id → lease end ms); `key` written as in [`limit_parked`](Self::limit_parked).
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.limit_key_slots("eu:acme"), "delayq_limit_key:{orders}:eu%3Aacme");
    /// ```
    pub fn limit_key_slots(&self, key: &str) -> String {
        item_key(&self.limit_key_slots_prefix(), key)
    }

    /// The zset of the rates' state (`delayq_limit_tat:{NAME}`): `q` (the queue-wide rate) or
    /// `k:KEY` (a limit key's) → its theoretical arrival time, epoch ms (GCRA: a start is
    /// granted once the time reaches it); `p:KEY` → `+inf` while that key is paused
    /// ([`StoredLimits::pause_key`](crate::limit::StoredLimits::pause_key)).
    ///
    /// ```
    /// assert_eq!(delayq::QueueKeys::new("orders").limit_rate_state(), "delayq_limit_tat:{orders}");
    /// ```
    pub fn limit_rate_state(&self) -> String {
        prefix_name(TAT_PREFIX, self.target())
    }

    /// The zset of the limit keys with values held back (`delayq_limit_held:{NAME}`, key →
    /// when to try it again, epoch ms).
    ///
    /// ```
    /// assert_eq!(delayq::QueueKeys::new("orders").limit_held(), "delayq_limit_held:{orders}");
    /// ```
    pub fn limit_held(&self) -> String {
        prefix_name(HELD_PREFIX, self.target())
    }

    /// The zset of the limit keys with slots held (`delayq_limit_busy:{NAME}`, key → its
    /// latest lease end, epoch ms; entries run out are removed lazily).
    ///
    /// ```
    /// assert_eq!(delayq::QueueKeys::new("orders").limit_busy(), "delayq_limit_busy:{orders}");
    /// ```
    pub fn limit_busy(&self) -> String {
        prefix_name(BUSY_PREFIX, self.target())
    }

    pub(crate) fn limit_parked_prefix(&self) -> String {
        prefix_name(PARKED_PREFIX, self.target())
    }

    pub(crate) fn limit_key_slots_prefix(&self) -> String {
        prefix_name(KEY_SLOTS_PREFIX, self.target())
    }

    /// The queue's limit keys that are one per queue: its stored limits, the slots held, the
    /// rate state, the keys held back and the keys busy (what
    /// [`delete`](crate::DelayedQueue::delete), [`expire`](crate::DelayedQueue::expire),
    /// `check` and [`acl_selectors`](QueueKeys::acl_selectors) cover besides the per-key
    /// ones, named by [`limit_item_prefixes`](Self::limit_item_prefixes)).
    pub(crate) fn limit_queue_keys(&self) -> [String; 5] {
        let keys = LimitKeys::new(self, "");
        [keys.limits, keys.slots, keys.tat, keys.held, keys.busy]
    }

    /// The prefixes of the limit keys one per limit key (its slots, its values held back),
    /// each followed by `:` and the limit key.
    pub(crate) fn limit_item_prefixes(&self) -> [String; 2] {
        [self.limit_key_slots_prefix(), self.limit_parked_prefix()]
    }
}

/// Every key a limit script may be given, for one queue and one limit key (the empty key when
/// the value has none).
#[derive(Debug, Clone)]
pub(crate) struct LimitKeys {
    pub(crate) limits: String,
    pub(crate) slots: String,
    pub(crate) tat: String,
    pub(crate) held: String,
    pub(crate) busy: String,
    pub(crate) key_slots: String,
    pub(crate) parked: String,
}

impl LimitKeys {
    /// The keys of the queue `keys` for the limit key `key`.
    pub(crate) fn new(keys: &QueueKeys, key: &str) -> LimitKeys {
        LimitKeys {
            limits: keys.limits(),
            slots: prefix_name(SLOTS_PREFIX, keys.target()),
            tat: keys.limit_rate_state(),
            held: keys.limit_held(),
            busy: keys.limit_busy(),
            key_slots: keys.limit_key_slots(key),
            parked: keys.limit_parked(key),
        }
    }

    /// The key of a limit role.
    pub(crate) fn of(&self, role: KeyRole) -> Option<&str> {
        Some(match role {
            KeyRole::Limits => &self.limits,
            KeyRole::LimitSlots => &self.slots,
            KeyRole::LimitTat => &self.tat,
            KeyRole::LimitHeld => &self.held,
            KeyRole::LimitBusy => &self.busy,
            KeyRole::LimitKeySlots => &self.key_slots,
            KeyRole::LimitParked => &self.parked,
            _ => return None,
        })
    }
}
