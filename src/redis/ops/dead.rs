//! `dead.lua`: an in-flight value moved to the dead letters.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    DEAD,
    "dead.lua",
    [
        Target,
        Inflight,
        InflightData,
        Attempts,
        AttemptsSeen,
        Settled,
        Dead
    ],
    untouched[Target]
);

/// Dead-letters delivery `id` under the record `header` (the value bytes are appended on the
/// server), keeping at most `limit` dead letters (0: all); returns whether it was still in
/// flight, and how many of the oldest dead letters were trimmed.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    id: &str,
    header: Vec<u8>,
    limit: usize,
) -> Result<(bool, u64)> {
    let reply: Value = DEAD
        .call(queue)
        .arg(id)
        .arg(Value::Bytes(header.into()))
        .arg(i64::try_from(limit).unwrap_or(i64::MAX))
        .run(client)
        .await?;
    let [done, trimmed] = reply::fixed(reply, DEAD.name())?;
    Ok((
        reply::count(done, DEAD.name())? == 1,
        reply::count(trimmed, DEAD.name())?,
    ))
}
