//! `reschedule.lua`: a new due time for the pending entries carrying a value, or for the entry
//! with an id, found through the value index.

use crate::entry::OfferHandle;
use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    RESCHEDULE,
    "reschedule.lua",
    [Target, Timeout, Order, Channel, Values],
    untouched[Target]
);

/// Which entries to reschedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Which {
    /// Every entry carrying this codec-encoded value.
    Value(Vec<u8>),
    /// The entry an offer returned this handle for.
    Id(OfferHandle),
}

/// Gives the entries `which` names the due time `delay` from now; returns how many.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    delay: Delay,
    which: Which,
) -> Result<u64> {
    let (kind, key) = match which {
        Which::Value(value) => ("value", value),
        Which::Id(handle) => ("id", handle.as_bytes().to_vec()),
    };
    let reply = RESCHEDULE
        .call(queue)
        .arg(delay.ms())
        .arg(kind)
        .arg(Value::Bytes(key.into()))
        .value_index()
        .run_indexed(client)
        .await?;
    let [changed] = reply::fixed(Value::Array(reply), RESCHEDULE.name())?;
    reply::count(changed, RESCHEDULE.name())
}
