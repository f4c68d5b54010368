//! The names of a sharded queue: its shards' queue names and the key of its recorded number
//! of shards.

use super::{prefix_name, SHARDS_PREFIX};

/// The string key holding the number of shards the sharded queue `name` is spread over
/// (`delayq_shards:{NAME}`): every handle of the queue checks its count against it. The key is
/// in the slot of the tag `NAME` (a sharded queue's name has no braces), apart from the shards'
/// slots, and the ACL pattern `~*{NAME}*` covers it.
///
/// ```
/// assert_eq!(delayq::names::shard_count_key("orders"), "delayq_shards:{orders}");
/// ```
pub fn shard_count_key(name: &str) -> String {
    prefix_name(SHARDS_PREFIX, name)
}

/// The Redisson queue name of shard `shard` of the sharded queue `name`: `NAME:{SHARD}`.
pub(crate) fn shard_name(name: &str, shard: usize) -> String {
    format!("{name}:{{{shard}}}")
}

/// The sharded queue a shard's queue name belongs to (`orders` for `orders:{3}`), or `None`
/// when `name` is not a shard's (a sharded queue's own name has no braces).
///
/// ```
/// assert_eq!(delayq::names::logical_queue("orders:{3}"), Some("orders"));
/// assert_eq!(delayq::names::logical_queue("orders"), None);
/// assert_eq!(delayq::names::logical_queue("{orders}:{3}"), None);
/// ```
pub fn logical_queue(name: &str) -> Option<&str> {
    let (logical, shard) = name.strip_suffix('}')?.rsplit_once(":{")?;
    let numbered = !shard.is_empty() && shard.bytes().all(|b| b.is_ascii_digit());
    (numbered && !logical.is_empty() && !logical.contains(['{', '}'])).then_some(logical)
}
