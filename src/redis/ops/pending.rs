//! `pending.lua`: the first pending entries with their due times.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use bytes::Bytes;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    PENDING,
    "pending.lua",
    [Target, Timeout, Order, Channel],
    untouched[Target]
);

/// The first `limit` entries (all for 0) in offer order, each with its score (`None` when the
/// entry has no zset member).
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    limit: usize,
) -> Result<Vec<(Bytes, Option<i64>)>> {
    let name = PENDING.name();
    let reply: Value = PENDING
        .call(queue)
        .arg(i64::try_from(limit).unwrap_or(i64::MAX))
        .run(client)
        .await?;
    let Value::Array(items) = reply else {
        return Err(crate::Error::UnexpectedReply {
            context: name,
            detail: format!("{reply:?}"),
        });
    };
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut items = items.into_iter();
    while let (Some(entry), Some(score)) = (items.next(), items.next()) {
        out.push((reply::bytes(entry, name)?, reply::score(&score, name)?));
    }
    Ok(out)
}
