//! `limit_ack.lua`: an in-flight value is done, and its job's slots are released, in one call.

use crate::keys::LimitKeys;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;

script!(
    LIMIT_ACK,
    "limit_ack.lua",
    [
        Target,
        Inflight,
        InflightData,
        Attempts,
        AttemptsSeen,
        Settled,
        LimitSlots,
        LimitHeld,
        LimitBusy,
        LimitKeySlots,
        LimitParked
    ],
    untouched[Target]
);

/// Acknowledges delivery `id` and releases its slots (key `key`, `""` for none); false when
/// it was no longer in flight.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, id: &str, key: &str) -> Result<bool> {
    let keys = LimitKeys::new(&queue.keys, key);
    let done: i64 = LIMIT_ACK
        .call(queue)
        .limit_keys(&keys)
        .arg(id)
        .arg(key)
        .run(client)
        .await?;
    Ok(done == 1)
}
