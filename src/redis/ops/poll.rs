//! `poll.lua`: entries taken off the head of the order list, due or not (Redisson's `poll`).

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use bytes::Bytes;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    POLL,
    "poll.lua",
    [Target, Timeout, Order, Channel, Quarantine, Index, Values],
    untouched[Target]
);

/// Takes up to `limit` values (malformed entries on the way are quarantined).
pub(crate) async fn run(client: &Client, queue: &QueueSpec, limit: usize) -> Result<Vec<Bytes>> {
    let reply: Value = POLL
        .call(queue)
        .arg(i64::try_from(limit).unwrap_or(i64::MAX))
        .run(client)
        .await?;
    reply::bytes_list(reply, POLL.name())
}
