//! `poll_last_offer_first.lua`: the last pending value moved to the head of another list
//! (Redisson's `pollLastAndOfferFirstTo`).

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use bytes::Bytes;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    POLL_LAST_OFFER_FIRST,
    "poll_last_offer_first.lua",
    [
        Target,
        Timeout,
        Order,
        Channel,
        Quarantine,
        Index,
        Values,
        Destination
    ],
    untouched[Target]
);

/// Moves the last pending value onto the head of `destination` and returns it.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    destination: &str,
) -> Result<Option<Bytes>> {
    let reply: Value = POLL_LAST_OFFER_FIRST
        .call(queue)
        .key(destination)
        .run(client)
        .await?;
    reply::opt_bytes(reply, POLL_LAST_OFFER_FIRST.name())
}
