//! `dead_replay.lua`: dead letters put back into the queue.

use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use bytes::Bytes;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    DEAD_REPLAY,
    "dead_replay.lua",
    [
        Target,
        Timeout,
        Order,
        Channel,
        Attempts,
        AttemptsSeen,
        Dead
    ]
);

/// Replays each `(record, value bytes)`, due after `delay` (straight onto the target list for
/// zero); returns how many records were still there to replay.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    delay: Delay,
    records: Vec<(Bytes, Bytes)>,
) -> Result<u64> {
    if records.is_empty() {
        return Ok(0);
    }
    DEAD_REPLAY
        .call(queue)
        .arg(delay.ms())
        .args(records.into_iter().flat_map(|(record, value)| {
            [
                Value::Bytes(record),
                Value::Bytes(value),
                queue.format.random_id(),
            ]
        }))
        .run(client)
        .await
}
