//! `limit_acquire.lua`: the slots and tokens of a value just taken, or the value held back.

use crate::keys::LimitKeys;
use crate::redis::reply::{self, Decision};
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    LIMIT_ACQUIRE,
    "limit_acquire.lua",
    [
        Target,
        Inflight,
        InflightData,
        Attempts,
        Limits,
        LimitSlots,
        LimitTat,
        LimitHeld,
        LimitBusy,
        LimitKeySlots,
        LimitParked
    ],
    untouched[Target]
);

/// Acquires for delivery `id` (key `key`, `""` for none) under the stored limits of `version`.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    version: &str,
    lease: Delay,
    id: &str,
    key: &str,
) -> Result<Decision> {
    let keys = LimitKeys::new(&queue.keys, key);
    let reply: Value = LIMIT_ACQUIRE
        .call(queue)
        .limit_keys(&keys)
        .arg(version)
        .arg(lease.ms())
        .arg(id)
        .arg(key)
        .run(client)
        .await?;
    reply::decision_reply(&reply, LIMIT_ACQUIRE.name())
}
