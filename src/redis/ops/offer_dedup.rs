//! `offer_dedup.lua`: an offer under a business key, deduplicated within a window (throttle or
//! debounce), its reply read into a [`DedupOutcome`].

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

/// What a deduplicated offer does while the key's entry is pending and its window open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DedupMode {
    /// The first offer's entry stays as it is; later offers are dropped.
    Throttle,
    /// Each offer replaces the pending entry (value and due time) and starts the window again.
    Debounce,
}

impl DedupMode {
    fn to_arg(self) -> &'static str {
        match self {
            DedupMode::Throttle => "throttle",
            DedupMode::Debounce => "debounce",
        }
    }
}

/// What a deduplicated offer did, with the handle and due time of the key's pending entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DedupOutcome {
    /// No entry of the key was pending within its window: this offer's value was offered.
    Offered {
        /// The new entry.
        handle: OfferHandle,
        /// Its due time, epoch ms.
        due_ms: i64,
    },
    /// Throttle: the key's entry is pending within its window; it stays and this offer was
    /// dropped.
    Kept {
        /// The pending entry (made by an earlier offer).
        handle: OfferHandle,
        /// Its due time, epoch ms (unchanged).
        due_ms: i64,
    },
    /// Debounce: the key's pending entry was replaced by this offer's value, due after this
    /// offer's delay.
    Replaced {
        /// The new entry (the replaced one is gone).
        handle: OfferHandle,
        /// Its due time, epoch ms.
        due_ms: i64,
    },
}

impl DedupOutcome {
    /// The handle of the key's pending entry after the offer.
    pub fn handle(&self) -> OfferHandle {
        match *self {
            DedupOutcome::Offered { handle, .. }
            | DedupOutcome::Kept { handle, .. }
            | DedupOutcome::Replaced { handle, .. } => handle,
        }
    }

    /// The due time of the key's pending entry after the offer, epoch ms.
    pub fn due_ms(&self) -> i64 {
        match *self {
            DedupOutcome::Offered { due_ms, .. }
            | DedupOutcome::Kept { due_ms, .. }
            | DedupOutcome::Replaced { due_ms, .. } => due_ms,
        }
    }

    /// What happened, in one word: `offered`, `kept` or `replaced`.
    pub fn as_str(&self) -> &'static str {
        match self {
            DedupOutcome::Offered { .. } => "offered",
            DedupOutcome::Kept { .. } => "kept",
            DedupOutcome::Replaced { .. } => "replaced",
        }
    }

    /// Whether this offer's value is now pending (offered or replaced; false: dropped).
    pub fn is_pending(&self) -> bool {
        !matches!(self, DedupOutcome::Kept { .. })
    }
}

/// One deduplicated offer: `value` (codec-encoded) due after `delay`, its business key's
/// mapping at `mapping`, open for `window_ms`.
#[derive(Debug)]
pub(crate) struct DedupOffer<'a> {
    pub(crate) mapping: &'a str,
    pub(crate) mode: DedupMode,
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
) -> Result<DedupOutcome> {
    let (id, _) = queue.options.format.new_id(offer.value.len());
    let reply = OFFER_DEDUP
        .call(queue)
        .key(offer.mapping)
        .arg(offer.delay.ms())
        .arg(id)
        .arg(Value::Bytes(offer.value.into()))
        .arg(offer.mode.to_arg())
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
    match reply::bytes(what, name)?.as_ref() {
        b"offered" => Ok(DedupOutcome::Offered { handle, due_ms }),
        b"kept" => Ok(DedupOutcome::Kept { handle, due_ms }),
        b"replaced" => Ok(DedupOutcome::Replaced { handle, due_ms }),
        other => Err(Error::UnexpectedReply {
            context: name,
            detail: format!("outcome {other:?}"),
        }),
    }
}
