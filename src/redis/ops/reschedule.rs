//! `reschedule.lua`: a new due time for every pending entry equal to a value.

use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    RESCHEDULE,
    "reschedule.lua",
    [Target, Timeout, Order, Channel],
    untouched[Target]
);

/// Gives every pending entry whose value is `value` (codec-encoded) the due time `delay` from
/// now; returns how many.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    delay: Delay,
    value: Vec<u8>,
) -> Result<u64> {
    RESCHEDULE
        .call(queue)
        .arg(delay.ms())
        .arg(Value::Bytes(value.into()))
        .run(client)
        .await
}
