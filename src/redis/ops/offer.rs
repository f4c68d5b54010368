//! `offer.lua`: new entries, as Redisson's `offer` writes them.

use crate::entry::OfferHandle;
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

/// Entries offered per call: a long `offer_all` goes in calls of this many, so that no one call
/// holds Redis long (1,000 entries take about a millisecond).
pub(crate) const OFFERS_PER_CALL: usize = 1_000;

/// Offers each codec-encoded value due after its delay, [`OFFERS_PER_CALL`] to a call (atomic
/// only while they fit in one); returns how many entries were added. With the client's clock,
/// every call goes by the same instant, so the entries' due times keep the delays' order.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    entries: impl IntoIterator<Item = (Delay, Vec<u8>)>,
) -> Result<u64> {
    let entries: Vec<(Delay, Vec<u8>)> = entries.into_iter().collect();
    let now = queue.options.clock.now();
    let mut added = 0;
    for chunk in entries.chunks(OFFERS_PER_CALL) {
        let call = OFFER
            .call(queue)
            .at(now)
            .args(chunk.iter().flat_map(|(delay, value)| {
                [
                    delay.ms().into(),
                    queue.options.format.random_id(),
                    Value::Bytes(value.clone().into()),
                ]
            }));
        added += call.run::<u64, _>(client).await?;
    }
    Ok(added)
}

/// Offers one codec-encoded value due after `delay`; returns the new entry's handle.
pub(crate) async fn run_with_handle(
    client: &Client,
    queue: &QueueSpec,
    delay: Delay,
    value: Vec<u8>,
) -> Result<OfferHandle> {
    let (id, handle) = queue.options.format.new_id(value.len());
    let _: u64 = OFFER
        .call(queue)
        .arg(delay.ms())
        .arg(id)
        .arg(Value::Bytes(value.into()))
        .run(client)
        .await?;
    Ok(handle)
}
