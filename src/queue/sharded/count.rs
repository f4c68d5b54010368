//! The number of shards a sharded queue is recorded with in Redis ([`shard_count_key`]). Every
//! handle checks its count against it when it is built: a handle with another count would
//! leave values where nobody looks (a worker over 3 of a queue's 4 shards never takes shard
//! 3's values; a producer over 5 offers to a shard the workers over 4 never serve).

use crate::keys::shard_count_key;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::KeysInterface;
use fred::types::SetOptions;

/// The most shards a sharded queue may have, and the most its layout before may have had.
/// Every shard is a queue with its own scheduler share and subscription; far beyond a
/// Cluster's masters more shards only cost memory and calls.
pub const MAX_SHARDS: usize = 1024;

/// `Ok` when `shards` is a shard count a queue may have (`1..=MAX_SHARDS`); else the
/// [`Error::InvalidConfig`] that says so, naming `what` the number is.
pub(super) fn check_range(shards: usize, what: &str) -> Result<()> {
    if (1..=MAX_SHARDS).contains(&shards) {
        return Ok(());
    }
    Err(Error::InvalidConfig(format!(
        "{what} must be between 1 and {MAX_SHARDS}, not {shards}"
    )))
}

/// Checks the count of a handle of the sharded queue `name` against the recorded one, and
/// records it on first use. A handle with `layout` shards alone needs `layout` recorded. While
/// the number of shards changes (`previous` given) the count before stays recorded until the
/// old layout has drained ([`record_layout`]), so either count is accepted; on first use the
/// count before is recorded, since that is the layout the queue's values are in.
pub(super) async fn agree(
    client: &Client,
    name: &str,
    layout: usize,
    previous: Option<usize>,
) -> Result<()> {
    let key = shard_count_key(name);
    let first = previous.unwrap_or(layout);
    // SET NX, then GET: a key deleted in between (an operator's reset) is set again.
    for _ in 0..3 {
        let set: Option<String> = client
            .set(&key, first, None, Some(SetOptions::NX), false)
            .await
            .map_err(|e| Error::from_redis("SET", &key, e))?;
        if set.is_some() {
            return Ok(());
        }
        let Some(recorded) = recorded(client, &key).await? else {
            continue;
        };
        if recorded == layout || Some(recorded) == previous {
            return Ok(());
        }
        return Err(mismatch(name, recorded, layout, previous));
    }
    Err(Error::InvalidConfig(format!(
        "{key} keeps disappearing while the shard count is recorded"
    )))
}

/// Records `layout` as the count of the sharded queue `name` once its layout before
/// (`previous` shards) has drained; `Ok` when it already was.
pub(super) async fn record_layout(
    client: &Client,
    name: &str,
    layout: usize,
    previous: usize,
) -> Result<()> {
    let key = shard_count_key(name);
    match recorded(client, &key).await? {
        Some(recorded) if recorded == layout => Ok(()),
        Some(recorded) if recorded == previous => {
            let _: Option<String> = client
                .set(&key, layout, None, Some(SetOptions::XX), false)
                .await
                .map_err(|e| Error::from_redis("SET", &key, e))?;
            tracing::info!(
                queue = name,
                shards = layout,
                previous,
                "the layout before has drained; the queue is recorded with its new shard count"
            );
            Ok(())
        }
        Some(recorded) => Err(mismatch(name, recorded, layout, Some(previous))),
        None => agree(client, name, layout, None).await,
    }
}

/// The count recorded at `key`, `None` when nothing is.
async fn recorded(client: &Client, key: &str) -> Result<Option<usize>> {
    let text: Option<String> = client
        .get(key)
        .await
        .map_err(|e| Error::from_redis("GET", key, e))?;
    text.map(|text| {
        text.parse().map_err(|_| {
            Error::InvalidConfig(format!(
                "{key} holds {text:?}, not a shard count (delete it to record the count again)"
            ))
        })
    })
    .transpose()
}

/// The refusal of a handle whose count disagrees with the recorded one, with both numbers and
/// the way to change the count.
fn mismatch(name: &str, recorded: usize, layout: usize, previous: Option<usize>) -> Error {
    let given = match previous {
        None => format!("this handle has {layout}"),
        Some(previous) => {
            format!("this handle has {layout} (changing the count from {previous})")
        }
    };
    Error::InvalidConfig(format!(
        "the sharded queue {name} has {recorded} shards (recorded in {key}), {given}: handles \
         with different counts leave values in shards nobody serves; use {recorded} shards, or \
         change the count as docs/sharding.md says, with the count before given \
         (previous_shards({recorded}), CLI --previous-shards {recorded})",
        key = shard_count_key(name)
    ))
}
