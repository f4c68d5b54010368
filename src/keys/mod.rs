//! Redisson's key and channel names for a delayed queue.

mod dedup;
mod found;
mod limit;
mod observe;
mod replicas;
mod role;
mod schedule;
mod shard;

pub use found::glob_match;
pub(crate) use found::{every_channel, every_queue_key};
pub(crate) use limit::LimitKeys;
pub(crate) use observe::{
    activity_days_key, activity_key, discovering_processes, live_processes, processes_key,
};
pub(crate) use replicas::replicas_record;
pub(crate) use role::{KeyKind, KeyRole};
pub(crate) use schedule::scheduled_queues;
pub(crate) use shard::shard_name;
pub use shard::{logical_queue, shard_count_key};

/// Prefix of the timeout zset (`redisson_delay_queue_timeout:{NAME}`).
const TIMEOUT_PREFIX: &str = "redisson_delay_queue_timeout";
/// Prefix of the order list (`redisson_delay_queue:{NAME}`).
const ORDER_PREFIX: &str = "redisson_delay_queue";
/// Prefix of the pub/sub channel (`redisson_delay_queue_channel:{NAME}`).
const CHANNEL_PREFIX: &str = "redisson_delay_queue_channel";
/// Prefix of delayq's own quarantine list for malformed entries (not a Redisson key).
const QUARANTINE_PREFIX: &str = "delayq_quarantine";
/// Prefix of delayq's pause flag (not a Redisson key; Java schedulers ignore it).
const PAUSED_PREFIX: &str = "delayq_paused";
/// How often delayq's schedulers and workers look at a paused queue's flag again (each of
/// their calls reads it: a scheduler's transfer, a worker's take), so a resume takes effect
/// within about this long.
pub(crate) const PAUSED_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);
/// Prefix of delayq's in-flight zset of the reliable consumer (delivery id → deadline ms).
const INFLIGHT_PREFIX: &str = "delayq_inflight";
/// Prefix of delayq's in-flight hash (delivery id → value bytes).
const INFLIGHT_DATA_PREFIX: &str = "delayq_inflight_data";
/// Prefix of delayq's attempt counters (value bytes → deliveries so far).
const ATTEMPTS_PREFIX: &str = "delayq_attempts";
/// Prefix of delayq's zset of when each attempt counter was last touched (for pruning).
const ATTEMPTS_SEEN_PREFIX: &str = "delayq_attempts_seen";
/// Prefix of delayq's zset of deliveries settled in the last minute (delivery id → when).
const SETTLED_PREFIX: &str = "delayq_settled";
/// Prefix of delayq's dead-letter list.
const DEAD_PREFIX: &str = "delayq_dead";
/// Prefix of delayq's zset of reliable consumers' claim lists (claim list → lease deadline ms).
const CLAIMS_PREFIX: &str = "delayq_claims";
/// Prefix of one reliable consumer's claim list (followed by `:` and the consumer's id).
const CLAIM_PREFIX: &str = "delayq_claim";
/// Prefix of delayq's position index of the order list (not a Redisson key).
const INDEX_PREFIX: &str = "delayq_index";
/// Prefix of delayq's value index of the pending entries (not a Redisson key).
const VALUES_PREFIX: &str = "delayq_values";
/// Prefix of the shard count a sharded queue is recorded with (not a Redisson key).
const SHARDS_PREFIX: &str = "delayq_shards";
/// Prefix of delayq's activity counts of a queue (followed by `:` and the minute, or `:day:`
/// and the day).
const ACTIVITY_PREFIX: &str = "delayq_activity";
/// Prefix of delayq's zset of the live processes serving a queue (record → deadline ms).
const PROCS_PREFIX: &str = "delayq_procs";
/// Prefix of delayq's zset of a queue's recurring schedules (schedule id → next occurrence ms).
const SCHEDULES_PREFIX: &str = "delayq_schedules";
/// Prefix of one recurring schedule's hash (followed by `:` and the schedule's id).
const SCHEDULE_PREFIX: &str = "delayq_schedule";
/// Prefix of delayq's zset of the live processes that find queues by discovery.
const DISCOVERING_PREFIX: &str = "delayq_discovering";
/// Prefix of delayq's zset of every live process, with the queues each serves.
const LIVE_PREFIX: &str = "delayq_live";
/// Prefix of delayq's set of the queues that have recurring schedules (one for the server).
const SCHEDULED_PREFIX: &str = "delayq_scheduled";
/// Prefix of a dedup key's mapping to its entry (followed by `:` and the business key, as
/// [`item_key`] writes it).
const DEDUP_PREFIX: &str = "delayq_dedup";

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
    inflight: String,
    inflight_data: String,
    attempts: String,
    attempts_seen: String,
    settled: String,
    dead: String,
    claims: String,
    claim_prefix: String,
    index: String,
    values: String,
    paused: String,
    schedules: String,
    schedule_prefix: String,
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
            inflight: prefix_name(INFLIGHT_PREFIX, &target),
            inflight_data: prefix_name(INFLIGHT_DATA_PREFIX, &target),
            attempts: prefix_name(ATTEMPTS_PREFIX, &target),
            attempts_seen: prefix_name(ATTEMPTS_SEEN_PREFIX, &target),
            settled: prefix_name(SETTLED_PREFIX, &target),
            dead: prefix_name(DEAD_PREFIX, &target),
            claims: prefix_name(CLAIMS_PREFIX, &target),
            claim_prefix: prefix_name(CLAIM_PREFIX, &target),
            index: prefix_name(INDEX_PREFIX, &target),
            values: prefix_name(VALUES_PREFIX, &target),
            paused: prefix_name(PAUSED_PREFIX, &target),
            schedules: prefix_name(SCHEDULES_PREFIX, &target),
            schedule_prefix: prefix_name(SCHEDULE_PREFIX, &target),
            target,
        }
    }

    /// The other queue name whose delayed-queue keys are these same keys, if any: `a` for the
    /// name `{a}` (Redisson's `prefixName` wraps a name in braces only when it has none, so
    /// both give `redisson_delay_queue_timeout:{a}`). Two such queues share their pending
    /// entries but not their target lists: a value offered to one may be moved to the other's.
    ///
    /// ```
    /// use delayq::QueueKeys;
    ///
    /// assert_eq!(QueueKeys::new("{orders}").alias(), Some("orders"));
    /// assert_eq!(QueueKeys::new("orders").alias(), None);
    /// assert_eq!(QueueKeys::new("{orders}:eu").alias(), None);
    /// assert_eq!(QueueKeys::new("{a}b}").alias(), Some("a}b"));
    /// ```
    pub fn alias(&self) -> Option<&str> {
        let inner = self.target.strip_prefix('{')?.strip_suffix('}')?;
        (!inner.is_empty() && !inner.contains('{')).then_some(inner)
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

    /// delayq's pause flag (`delayq_paused:{NAME}`): while the key exists, delayq's schedulers
    /// leave the queue alone and its workers and reliable consumers take none of its values
    /// (Redisson's own schedulers and Java's consumers do not know it and go on).
    ///
    /// # Examples
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.paused(), "delayq_paused:{orders}");
    /// ```
    pub fn paused(&self) -> &str {
        &self.paused
    }

    /// delayq's zset of values taken by a reliable consumer and not yet acknowledged: delivery
    /// id → visibility deadline in epoch ms (`delayq_inflight:{NAME}`).
    pub fn inflight(&self) -> &str {
        &self.inflight
    }

    /// delayq's hash of in-flight values: delivery id → value bytes
    /// (`delayq_inflight_data:{NAME}`).
    pub fn inflight_data(&self) -> &str {
        &self.inflight_data
    }

    /// delayq's attempt counters: value bytes → deliveries so far (`delayq_attempts:{NAME}`).
    pub fn attempts(&self) -> &str {
        &self.attempts
    }

    /// delayq's zset of when each attempt counter was last touched, so stale counters can be
    /// pruned (`delayq_attempts_seen:{NAME}`).
    pub fn attempts_seen(&self) -> &str {
        &self.attempts_seen
    }

    /// delayq's zset of deliveries acked, nacked or dead-lettered in the last minute: delivery id
    /// → server time in epoch ms (`delayq_settled:{NAME}`), so that a settle call sent again
    /// after a dropped connection reports its own earlier success.
    pub fn settled(&self) -> &str {
        &self.settled
    }

    /// delayq's dead-letter list (`delayq_dead:{NAME}`).
    pub fn dead(&self) -> &str {
        &self.dead
    }

    /// delayq's zset of reliable consumers' claim lists, scored by lease deadline in epoch ms
    /// (`delayq_claims:{NAME}`).
    pub fn claims(&self) -> &str {
        &self.claims
    }

    /// The claim list of the reliable consumer `consumer` (`delayq_claim:{NAME}:CONSUMER`),
    /// where its blocking wait puts a value before the value is registered in flight.
    pub fn claim(&self, consumer: &str) -> String {
        format!("{}:{consumer}", self.claim_prefix)
    }

    /// delayq's position index of the order list (`delayq_index:{NAME}`), which lets a transfer
    /// find due entries without scanning the list; rebuilt whenever it is found stale.
    pub fn index(&self) -> &str {
        &self.index
    }

    /// delayq's value index of the pending entries (`delayq_values:{NAME}`, a hash): finds the
    /// entries carrying a value, or an offer's handle, without reading the order list; kept up
    /// to date by the calls that use it and the queue's scheduler, checked on every use.
    pub fn values(&self) -> &str {
        &self.values
    }
}

impl QueueKeys {
    /// The key of `role`, or `None` for the roles given per call.
    pub(crate) fn of(&self, role: KeyRole) -> Option<&str> {
        use KeyRole::*;
        Some(match role {
            Target => self.target(),
            Timeout => self.timeout(),
            Order => self.order(),
            Channel => self.channel(),
            Quarantine => self.quarantine(),
            Index => self.index(),
            Values => self.values(),
            Paused => self.paused(),
            Inflight => self.inflight(),
            InflightData => self.inflight_data(),
            Attempts => self.attempts(),
            AttemptsSeen => self.attempts_seen(),
            Settled => self.settled(),
            Dead => self.dead(),
            Claims => self.claims(),
            Schedules => self.schedules(),
            Claim | Schedule | Destination | OwnList | Dedup => return None,
            Limits | LimitSlots | LimitTat | LimitHeld | LimitBusy | LimitKeySlots
            | LimitParked => return None,
        })
    }
}

impl QueueKeys {
    /// The keys of [`KeyRole::QUEUE`] the queue owns ([`KeyRole::owned`]), in that order.
    pub(crate) fn owned(&self) -> impl Iterator<Item = &str> {
        KeyRole::QUEUE
            .into_iter()
            .filter(|role| role.owned())
            .filter_map(|role| self.of(role))
    }

    /// Every key of the queue in the keyspace but the claim lists (named in the claim leases) and
    /// the dedup keys' mappings, target list and Redisson's first: what its memory is summed over.
    ///
    /// ```
    /// let keys = delayq::QueueKeys::new("orders");
    /// assert_eq!(keys.stored()[..2], ["orders", "redisson_delay_queue_timeout:{orders}"]);
    /// assert!(!keys.stored().contains(&keys.channel()));
    /// ```
    pub fn stored(&self) -> Vec<&str> {
        KeyRole::QUEUE
            .into_iter()
            .filter(|role| role.kind() != KeyKind::Channel)
            .filter_map(|role| self.of(role))
            .collect()
    }

    /// Whether `key` is named like one of this queue's claim lists (a member of the claim
    /// leases that is not, never names a key delayq touches).
    pub(crate) fn is_claim(&self, key: &str) -> bool {
        key.strip_prefix(self.claim_prefix.as_str())
            .and_then(|rest| rest.strip_prefix(':'))
            .is_some_and(|consumer| !consumer.is_empty())
    }

    /// The `ACL SETUSER` selectors of everything the queue uses: `~KEY` for each of its keys
    /// (the channel too, which scripts declare as a key to be routed to the queue's slot), its
    /// registries of processes and schedules, `~` patterns for its claim lists, activity buckets
    /// and schedules' hashes, `&CHANNEL` for its channel; glob characters of the name escaped.
    ///
    /// # Examples
    ///
    /// ```
    /// let rules = delayq::QueueKeys::new("orders").acl_selectors();
    /// assert_eq!(rules[0], "~orders");
    /// assert!(rules.contains(&"~delayq_paused:{orders}".to_owned()));
    /// assert!(rules.contains(&"~delayq_claim:{orders}:*".to_owned()));
    /// assert_eq!(rules.last().unwrap(), "&redisson_delay_queue_channel:{orders}");
    /// ```
    pub fn acl_selectors(&self) -> Vec<String> {
        let mut rules: Vec<String> = KeyRole::QUEUE
            .into_iter()
            .filter_map(|role| self.of(role))
            .map(|key| format!("~{}", glob_escape(key)))
            .collect();
        rules.push(format!("~{}:*", glob_escape(&self.claim_prefix)));
        rules.push(format!("~{}:*", glob_escape(&self.activity_prefix())));
        rules.push(format!("~{}", glob_escape(&self.processes())));
        rules.push(format!("~{}", glob_escape(self.schedules())));
        rules.push(format!("~{}:*", glob_escape(&self.schedule_prefix)));
        rules.push(format!("~{}:*", glob_escape(&self.dedup_prefix())));
        for key in self.limit_queue_keys() {
            rules.push(format!("~{}", glob_escape(&key)));
        }
        for prefix in self.limit_item_prefixes() {
            rules.push(format!("~{}:*", glob_escape(&prefix)));
        }
        rules.push(format!("&{}", glob_escape(self.channel())));
        rules
    }

    /// The prefixes of the queue's keys that are one per business or limit key: the dedup
    /// mappings, one limit key's slots and its values held back (each followed by `:KEY`).
    pub(crate) fn item_prefixes(&self) -> [String; 3] {
        let [slots, parked] = self.limit_item_prefixes();
        [self.dedup_prefix(), slots, parked]
    }

    /// A glob for one `SCAN` (on the queue's node: it holds the queue's hash tag) that finds
    /// every key of [`item_prefixes`](Self::item_prefixes), among other keys of the queue
    /// [`is_item`](Self::is_item) tells apart: `delayq_*:{NAME}:*`.
    pub(crate) fn item_glob(&self) -> String {
        let tagged = prefix_name("", &self.target);
        format!("delayq_*{}:*", glob_escape(&tagged))
    }

    /// Whether `key` is one of the queue's keys one per business or limit key: one of
    /// [`item_prefixes`](Self::item_prefixes), `:`, and a suffix without `:` (as
    /// [`item_key`] writes it). A suffix with a `:` names a key of another queue, one whose
    /// name starts with this queue's hash tag (`{NAME}:orders`).
    pub(crate) fn is_item(&self, key: &str) -> bool {
        self.item_prefixes().iter().any(|prefix| {
            key.strip_prefix(prefix.as_str())
                .and_then(|rest| rest.strip_prefix(':'))
                .is_some_and(|suffix| !suffix.contains(ITEM_SEPARATOR))
        })
    }
}

/// What separates a key's prefix, the queue's tagged name and a business or limit key.
const ITEM_SEPARATOR: char = ':';

/// The key one per business or limit key `item` under `prefix` (`delayq_dedup:{NAME}`,
/// `delayq_limit_parked:{NAME}`, ...): `PREFIX:ITEM`, with `%` written `%25` and `:` written
/// `%3A` in `ITEM`, so that nothing after the prefix holds a `:` and no queue's key is also
/// a key of a queue named `{NAME}:…` (whose keys start with the same `PREFIX:{NAME}:`). An
/// item without `%` or `:` keeps its name. `lua/lib/item.lua`'s `delayq_item_key` writes the
/// same names for the limit scripts that find a key's list by the key. Public as
/// `delayq::names::item_key` for the gateway's keys one per id.
///
/// ```
/// use delayq::names::item_key;
///
/// assert_eq!(item_key("delayq_dedup:{orders}", "k-17"), "delayq_dedup:{orders}:k-17");
/// assert_eq!(item_key("delayq_dedup:{orders}", "eu:50%"), "delayq_dedup:{orders}:eu%3A50%25");
/// ```
pub fn item_key(prefix: &str, item: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1 + item.len());
    out.push_str(prefix);
    out.push(ITEM_SEPARATOR);
    for c in item.chars() {
        match c {
            '%' => out.push_str("%25"),
            ITEM_SEPARATOR => out.push_str("%3A"),
            c => out.push(c),
        }
    }
    out
}

/// The name delayq gave the key of `item` under `prefix` before issue 38 (`PREFIX:ITEM`, the
/// item as it is), when it is not the name [`item_key`] gives now: a recurring schedule's hash
/// is taken from it ([`QueueKeys::schedule_legacy`]); `lua/lib/item.lua`'s `delayq_item_list`
/// takes the values held back under it, and [`QueueKeys::is_item`] no longer finds it.
pub(crate) fn legacy_item_key(prefix: &str, item: &str) -> Option<String> {
    item.contains(['%', ITEM_SEPARATOR])
        .then(|| format!("{prefix}{ITEM_SEPARATOR}{item}"))
}

/// `text` as a glob that matches only itself.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
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
        assert_eq!(keys.inflight(), "delayq_inflight:{q}");
        assert_eq!(keys.inflight_data(), "delayq_inflight_data:{q}");
        assert_eq!(keys.settled(), "delayq_settled:{q}");
        assert_eq!(keys.attempts(), "delayq_attempts:{q}");
        assert_eq!(keys.attempts_seen(), "delayq_attempts_seen:{q}");
        assert_eq!(keys.dead(), "delayq_dead:{q}");
        assert_eq!(keys.claims(), "delayq_claims:{q}");
        assert_eq!(keys.claim("c1"), "delayq_claim:{q}:c1");
        assert_eq!(
            QueueKeys::new("{o}:eu").claim("c1"),
            "delayq_claim:{o}:eu:c1"
        );
        assert_eq!(keys.index(), "delayq_index:{q}");
        assert_eq!(keys.values(), "delayq_values:{q}");
    }

    /// The one list is in KEYS order, names each key once, and its patterns are the names
    /// `QueueKeys` derives.
    #[test]
    fn the_queue_list_is_ordered_and_names_what_queue_keys_derives() {
        let mut sorted = KeyRole::QUEUE.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, KeyRole::QUEUE);
        let keys = QueueKeys::new("NAME");
        for role in KeyRole::QUEUE {
            let key = keys.of(role).unwrap();
            assert_eq!(key, role.pattern());
        }
        let owned: Vec<&str> = keys.owned().collect();
        assert!(!owned.contains(&"NAME"));
        assert!(!owned.contains(&keys.channel()));
        assert!(owned.contains(&keys.paused()) && owned.contains(&keys.settled()));
        assert_eq!(owned.len(), KeyRole::QUEUE.len() - 2);
    }

    #[test]
    fn claim_lists_are_told_apart_from_other_keys() {
        let keys = QueueKeys::new("q");
        assert!(keys.is_claim("delayq_claim:{q}:c1"));
        assert!(!keys.is_claim("delayq_claim:{q}:"));
        assert!(!keys.is_claim("delayq_claim:{q}"));
        assert!(!keys.is_claim("delayq_claim:{qq}:c1"));
        assert!(!keys.is_claim("another-app"));
    }

    #[test]
    fn acl_selectors_escape_glob_characters() {
        let rules = QueueKeys::new("a*b").acl_selectors();
        assert_eq!(rules[0], "~a\\*b");
        assert!(rules.contains(&"~delayq_claim:{a\\*b}:*".to_owned()));
        assert!(rules.contains(&"~delayq_activity:{a\\*b}:*".to_owned()));
        assert!(rules.contains(&"~delayq_procs:{a\\*b}".to_owned()));
        assert!(rules.contains(&"~delayq_schedule:{a\\*b}:*".to_owned()));
        assert_eq!(rules.len(), KeyRole::QUEUE.len() + 14);
    }

    #[test]
    fn acl_selectors_cover_the_limit_and_dedup_keys() {
        let keys = QueueKeys::new("q");
        let rules = keys.acl_selectors();
        let limit = limit::LimitKeys::new(&keys, "acme");
        for role in [
            KeyRole::Limits,
            KeyRole::LimitSlots,
            KeyRole::LimitTat,
            KeyRole::LimitHeld,
            KeyRole::LimitBusy,
        ] {
            let key = limit.of(role).unwrap();
            assert!(rules.contains(&format!("~{key}")), "{key}: {rules:?}");
        }
        for (key, prefix) in [
            (limit.key_slots.as_str(), "delayq_limit_key:{q}"),
            (limit.parked.as_str(), "delayq_limit_parked:{q}"),
            (&keys.dedup("k"), "delayq_dedup:{q}"),
        ] {
            assert!(key.starts_with(prefix));
            assert!(rules.contains(&format!("~{prefix}:*")), "{key}: {rules:?}");
            assert!(keys.is_item(key), "{key}");
        }
        assert_eq!(keys.item_glob(), "delayq_*:{q}:*");
        assert_eq!(QueueKeys::new("{o}:eu").item_glob(), "delayq_*:{o}:eu:*");
        for other in [
            "delayq_schedule:{q}:s",
            "delayq_claim:{q}:c",
            "delayq_dedup:{q}",
        ] {
            assert!(!keys.is_item(other), "{other}");
        }
    }

    /// A queue's keys one per business or limit key never name a key of the queue named
    /// `{NAME}:…` (issue 38): `%` and `:` of the item are escaped, and `is_item` takes only
    /// suffixes without `:`.
    #[test]
    fn item_keys_of_a_queue_and_of_a_queue_under_its_tag_are_apart() {
        let (plain, tagged) = (QueueKeys::new("t1"), QueueKeys::new("{t1}:orders"));
        assert_eq!(plain.dedup("orders:k"), "delayq_dedup:{t1}:orders%3Ak");
        assert_eq!(tagged.dedup("k"), "delayq_dedup:{t1}:orders:k");
        assert!(!plain.is_item(&tagged.dedup("k")));
        assert!(!plain.is_item(&tagged.limit_parked("k")));
        assert!(!plain.is_item(&limit::LimitKeys::new(&tagged, "k").key_slots));
        assert!(plain.is_item(&plain.dedup("orders:k")));
        assert!(tagged.is_item(&tagged.dedup("k")) && tagged.is_item(&tagged.dedup("a:b")));
        // Escaping is one-to-one: no two items share a name.
        let items = ["a:b", "a%3Ab", "a%b", "a%25b", "%", ":", "%3A", "", "ab"];
        let names: std::collections::BTreeSet<String> =
            items.iter().map(|item| plain.dedup(item)).collect();
        assert_eq!(names.len(), items.len());
        assert_eq!(plain.dedup("a%b"), "delayq_dedup:{t1}:a%25b");
        assert_eq!(
            plain.limit_parked("plain-key_1"),
            "delayq_limit_parked:{t1}:plain-key_1"
        );
        assert_eq!(legacy_item_key("p", "a:b").as_deref(), Some("p:a:b"));
        assert_eq!(legacy_item_key("p", "ab"), None);
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
