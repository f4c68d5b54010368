//! What a Redis server says about itself that matters to a delayed queue: its version, whether
//! it evicts keys under memory pressure, whether it persists, and what this user may do.

use fred::clients::Client;
use fred::interfaces::ClientLike;
use fred::prelude::Value;
use fred::types::{ClusterHash, CustomCommand};

/// `CONFIG GET maxmemory-policy`, else the `maxmemory_policy` of `INFO memory` (an ACL user
/// may have INFO without CONFIG), or `None` when the server says neither (both refused,
/// renamed on a managed service, or a connection error).
pub(crate) async fn maxmemory_policy(client: &Client) -> Option<String> {
    let reply: Option<Value> = client
        .custom(
            CustomCommand::new_static("CONFIG", ClusterHash::Random, false),
            vec!["GET", "maxmemory-policy"],
        )
        .await
        .ok();
    let configured = match reply {
        Some(Value::Array(items)) => items.get(1).and_then(Value::as_string),
        Some(Value::Map(map)) => map.inner().values().next().and_then(Value::as_string),
        _ => None,
    };
    match configured {
        Some(policy) => Some(policy),
        None => info_field(client, "memory", "maxmemory_policy").await,
    }
}

/// The field `name` of `INFO section`, or `None` when INFO is refused or has no such field.
pub(crate) async fn info_field(client: &Client, section: &str, name: &str) -> Option<String> {
    info(client, section)
        .await?
        .into_iter()
        .find_map(|(k, v)| (k == name).then_some(v))
}

/// True for a policy under which Redis may delete keys to free memory: every policy but
/// `noeviction` (the `volatile-*` ones take keys with a time to live, which an `expire` gives a
/// queue's keys).
pub(crate) fn evicts(policy: &str) -> bool {
    policy != "noeviction"
}

/// Logs a warning when the server may evict a queue's keys: under memory pressure pending
/// values, values in flight and dead letters would vanish without an error.
pub(crate) async fn warn_if_evicting(client: &Client, what: &str, queue: &str) {
    match maxmemory_policy(client).await {
        Some(policy) if evicts(&policy) => tracing::warn!(
            queue,
            maxmemory_policy = %policy,
            "{what}: this Redis may evict keys under memory pressure (maxmemory-policy {policy}); \
             pending values could vanish without an error: use noeviction for delayed queues"
        ),
        Some(_) => {}
        None => tracing::debug!(
            queue,
            "{what}: the server's maxmemory-policy is not readable"
        ),
    }
}

/// The fields of `INFO SECTION` as (name, value) pairs.
pub(crate) async fn info(client: &Client, section: &str) -> Option<Vec<(String, String)>> {
    let text: String = client
        .custom(
            CustomCommand::new_static("INFO", ClusterHash::Random, false),
            vec![section],
        )
        .await
        .ok()?;
    Some(
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_noeviction_keeps_every_key() {
        assert!(!evicts("noeviction"));
        for policy in [
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "volatile-lru",
            "volatile-ttl",
        ] {
            assert!(evicts(policy), "{policy}");
        }
    }
}
