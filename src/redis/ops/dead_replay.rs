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

/// Records replayed per call.
pub(crate) const RECORDS_PER_CALL: usize = 500;

/// Replays each `(record, value bytes)`, due after `delay` (straight onto the target list for
/// zero), looking for the records among the first `window` of the dead-letter list; returns how
/// many records were still there to replay. One call: give at most [`RECORDS_PER_CALL`].
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    delay: Delay,
    window: usize,
    records: Vec<(Bytes, Bytes)>,
) -> Result<u64> {
    if records.is_empty() {
        return Ok(0);
    }
    let marker = format!("delayq:dead-marker:{:016x}", rand::random::<u64>());
    DEAD_REPLAY
        .call(queue)
        .arg(delay.ms())
        .arg(marker)
        .arg(i64::try_from(window).unwrap_or(i64::MAX))
        .args(records.into_iter().flat_map(|(record, value)| {
            [
                Value::Bytes(record),
                Value::Bytes(value),
                queue.options.format.random_id(),
            ]
        }))
        .run(client)
        .await
}
