//! `offer.lua`: new entries, as Redisson's `offer` writes them.

use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    OFFER,
    "offer.lua",
    [Target, Timeout, Order, Channel],
    untouched[Target]
);

/// Offers each codec-encoded value due after its delay, in one call; returns how many entries
/// were added.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    entries: impl IntoIterator<Item = (Delay, Vec<u8>)>,
) -> Result<u64> {
    let call = OFFER
        .call(queue)
        .args(entries.into_iter().flat_map(|(delay, value)| {
            [
                delay.ms().into(),
                queue.format.random_id(),
                Value::Bytes(value.into()),
            ]
        }));
    if call.arg_count() == 2 {
        return Ok(0);
    }
    call.run(client).await
}
