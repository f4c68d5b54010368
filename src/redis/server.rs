//! What a Redis server says about itself that matters to a delayed queue: its version, whether
//! it evicts keys under memory pressure, whether it persists, and what this user may do.

use crate::error::ReplyKind;
use fred::clients::Client;
use fred::interfaces::ClientLike;
use fred::prelude::Value;
use fred::types::{ClusterHash, CustomCommand};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

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

/// The server's clock (`TIME`) in epoch ms, or `None` when it cannot be read.
pub(crate) async fn time_ms(client: &Client) -> Option<i64> {
    let reply: Vec<String> = client
        .custom(
            CustomCommand::new_static("TIME", ClusterHash::Random, false),
            Vec::<String>::new(),
        )
        .await
        .ok()?;
    let seconds: i64 = reply.first()?.parse().ok()?;
    let micros: i64 = reply.get(1)?.parse().ok()?;
    Some(seconds * 1000 + micros / 1000)
}

/// The field `name` of `INFO section`, or `None` when INFO is refused or has no such field.
pub(crate) async fn info_field(client: &Client, section: &str, name: &str) -> Option<String> {
    info(client, section)
        .await?
        .into_iter()
        .find_map(|(k, v)| (k == name).then_some(v))
}

/// Redis's default `proto-max-bulk-len`: 512 MB.
pub(crate) const DEFAULT_BULK_LIMIT: u64 = 512 * 1024 * 1024;

/// The lowest `proto-max-bulk-len` Redis accepts (1 MB): shorter values always fit.
pub(crate) const MIN_BULK_LIMIT: u64 = 1024 * 1024;

/// The longest argument the server takes (`CONFIG GET proto-max-bulk-len`). When CONFIG is
/// refused (an ACL, a managed service that renames it) or says nothing, Redis's default, said
/// only at debug level; a connection error is returned.
pub(crate) async fn bulk_limit(client: &Client) -> crate::Result<u64> {
    let reply: Result<Value, _> = client
        .custom(
            CustomCommand::new_static("CONFIG", ClusterHash::Random, false),
            vec!["GET", "proto-max-bulk-len"],
        )
        .await;
    let said = match reply {
        Ok(Value::Array(items)) => items.get(1).and_then(Value::as_u64),
        Ok(Value::Map(map)) => map.inner().values().next().and_then(Value::as_u64),
        Ok(_) => None,
        Err(err) if crate::error::classify(&err) == ReplyKind::Connection => {
            return Err(crate::Error::from_redis(
                "CONFIG",
                "proto-max-bulk-len",
                err,
            ))
        }
        Err(err) => {
            tracing::debug!(error = %err, "CONFIG GET proto-max-bulk-len refused");
            None
        }
    };
    Ok(said.unwrap_or_else(|| {
        tracing::debug!(
            limit = DEFAULT_BULK_LIMIT,
            "the server's proto-max-bulk-len is not readable; assuming Redis's default"
        );
        DEFAULT_BULK_LIMIT
    }))
}

/// True for a policy under which Redis may delete keys to free memory: every policy but
/// `noeviction` (the `volatile-*` ones take keys with a time to live, which an `expire` gives a
/// queue's keys).
pub(crate) fn evicts(policy: &str) -> bool {
    policy != "noeviction"
}

/// Logs a warning when the server may evict a queue's keys: under memory pressure pending
/// values, values in flight and dead letters would vanish without an error. The watch it
/// returns remembers the policy seen, for a daemon that reads it again (see [`EvictionWatch`]).
pub(crate) async fn warn_if_evicting(client: &Client, what: &str, queue: &str) -> EvictionWatch {
    let mut watch = EvictionWatch::default();
    watch.observe(maxmemory_policy(client).await, what, queue);
    watch
}

/// The server's `maxmemory-policy` as last read, so that a daemon reading it again says each
/// change once: a warning when it becomes one that evicts keys (a later `CONFIG SET`), a note
/// when it no longer does.
#[derive(Debug, Default)]
pub(crate) struct EvictionWatch {
    seen: Option<String>,
    unreadable_said: bool,
}

impl EvictionWatch {
    /// Takes in a policy just read (`None`: not readable).
    pub(crate) fn observe(&mut self, policy: Option<String>, what: &str, queue: &str) {
        let Some(policy) = policy else {
            if !std::mem::replace(&mut self.unreadable_said, true) {
                tracing::debug!(
                    queue,
                    "{what}: the server's maxmemory-policy is not readable"
                );
            }
            return;
        };
        if self.seen.as_deref() == Some(policy.as_str()) {
            return;
        }
        let before = self.seen.replace(policy.clone());
        if evicts(&policy) {
            tracing::warn!(
                queue,
                maxmemory_policy = %policy,
                "{what}: this Redis may evict keys under memory pressure (maxmemory-policy \
                 {policy}); pending values could vanish without an error: use noeviction for \
                 delayed queues"
            );
        } else if before.as_deref().is_some_and(evicts) {
            tracing::info!(
                queue,
                maxmemory_policy = %policy,
                "{what}: this Redis no longer evicts keys (maxmemory-policy {policy})"
            );
        }
    }
}

/// A task that reads the server's `maxmemory-policy` again every so often, for a daemon that
/// runs no scheduler group (whose task has its own check); [`shutdown`](Self::shutdown) or a
/// drop stops it.
#[derive(Debug)]
pub(crate) struct ServerCheck {
    stop: CancellationToken,
    join: JoinHandle<()>,
}

impl ServerCheck {
    /// Reads the policy every `every` from now on, telling `watch` (the start's reading) each
    /// time, so that each change is said once.
    pub(crate) fn spawn(
        client: Client,
        every: Duration,
        mut watch: EvictionWatch,
        what: &'static str,
        queue: String,
    ) -> ServerCheck {
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let join = tokio::spawn(async move {
            loop {
                let policy = tokio::select! {
                    biased;
                    _ = stopped.cancelled() => return,
                    policy = async {
                        tokio::time::sleep(every).await;
                        maxmemory_policy(&client).await
                    } => policy,
                };
                watch.observe(policy, what, &queue);
            }
        });
        ServerCheck { stop, join }
    }

    /// Stops the task and waits for it.
    pub(crate) async fn shutdown(mut self) {
        self.stop.cancel();
        let _ = (&mut self.join).await;
    }
}

impl Drop for ServerCheck {
    fn drop(&mut self) {
        self.stop.cancel();
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
