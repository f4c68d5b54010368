//! `offer_unique.lua`: an offer that never adds a second equal entry.

use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    OFFER_UNIQUE,
    "offer_unique.lua",
    [Target, Timeout, Order, Channel, Index],
    untouched[Target]
);

/// Offers `value` (codec-encoded) due after `delay`, or gives an equal pending entry that due
/// time instead; returns how many equal entries were pending.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    delay: Delay,
    value: Vec<u8>,
) -> Result<u64> {
    OFFER_UNIQUE
        .call(queue)
        .arg(delay.ms())
        .arg(queue.format.random_id())
        .arg(Value::Bytes(value.into()))
        .run(client)
        .await
}
