//! `offer_unique.lua`: an offer that never adds a second equal entry, found through the value
//! index.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    OFFER_UNIQUE,
    "offer_unique.lua",
    [Target, Timeout, Order, Channel, Index, Values],
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
    let reply = OFFER_UNIQUE
        .call(queue)
        .arg(delay.ms())
        .arg(queue.options.format.random_id())
        .arg(Value::Bytes(value.into()))
        .value_index()
        .run_indexed(client)
        .await?;
    let [found] = reply::fixed(Value::Array(reply), OFFER_UNIQUE.name())?;
    reply::count(found, OFFER_UNIQUE.name())
}
