//! `offer_dedup.lua`: an offer under a business key, deduplicated within a window (throttle or
//! debounce), its reply read into a [`Reply`].

use crate::entry::OfferHandle;
use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::{Error, Result};
use fred::clients::Client;
use fred::prelude::Value;

script!(
    OFFER_DEDUP,
    "offer_dedup.lua",
    [Target, Timeout, Order, Channel, Index, Values, Dedup],
    untouched[Target]
);

/// What a deduplicated offer did (`DedupOutcome` in `queue/dedup.rs` is its public form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Offered: no entry of the key was pending within its window.
    Offered,
    /// Dropped: the key's pending entry stays (throttle).
    Kept,
    /// The key's pending entry was replaced (debounce).
    Replaced,
}

/// The reply of one deduplicated offer: what it did, the key's pending entry and its due time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reply {
    pub(crate) decision: Decision,
    pub(crate) handle: OfferHandle,
    pub(crate) due_ms: i64,
}

/// One deduplicated offer: `value` (codec-encoded) due after `delay`, its business key's
/// mapping at `mapping`, open for `window_ms`.
#[derive(Debug)]
pub(crate) struct DedupOffer<'a> {
    pub(crate) mapping: &'a str,
    /// `throttle` or `debounce`, as the script takes it.
    pub(crate) mode: &'static str,
    pub(crate) window_ms: i64,
    pub(crate) delay: Delay,
    pub(crate) value: Vec<u8>,
    /// Whether the offer waits for replicas: a kept one then writes too, for the wait to cover.
    pub(crate) confirmed: bool,
}

/// Sends one deduplicated offer and reads what it did.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    offer: DedupOffer<'_>,
) -> Result<Reply> {
    let (id, _) = queue.options.format.new_id(offer.value.len());
    let reply = OFFER_DEDUP
        .call(queue)
        .key(offer.mapping)
        .arg(offer.delay.ms())
        .arg(id)
        .arg(Value::Bytes(offer.value.into()))
        .arg(offer.mode)
        .arg(offer.window_ms)
        .value_index()
        .arg(if offer.confirmed { "1" } else { "0" })
        .run_indexed(client)
        .await?;
    let name = OFFER_DEDUP.name();
    let [what, handle, due] = reply::fixed(Value::Array(reply), name)?;
    let handle = reply::bytes(handle, name)?;
    let handle = <[u8; 9]>::try_from(handle.as_ref())
        .map(OfferHandle::from_bytes)
        .map_err(|_| Error::UnexpectedReply {
            context: name,
            detail: format!("handle {handle:?}"),
        })?;
    let due_ms = reply::score(&due, name)?.unwrap_or_default();
    let decision = match reply::bytes(what, name)?.as_ref() {
        b"offered" => Decision::Offered,
        b"kept" => Decision::Kept,
        b"replaced" => Decision::Replaced,
        other => {
            return Err(Error::UnexpectedReply {
                context: name,
                detail: format!("outcome {other:?}"),
            })
        }
    };
    Ok(Reply {
        decision,
        handle,
        due_ms,
    })
}
