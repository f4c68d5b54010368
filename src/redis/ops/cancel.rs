//! `cancel.lua`: the pending entry with an id removed, found through the value index.

use crate::entry::OfferHandle;
use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    CANCEL,
    "cancel.lua",
    [Target, Timeout, Order, Channel, Index, Values],
    untouched[Target]
);

/// Removes the entry an offer returned `handle` for; true when it was pending.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, handle: &OfferHandle) -> Result<bool> {
    let reply = CANCEL
        .call(queue)
        .arg(Value::Bytes(handle.as_bytes().to_vec().into()))
        .value_index()
        .run_indexed(client)
        .await?;
    let [removed] = reply::fixed(Value::Array(reply), CANCEL.name())?;
    Ok(reply::count(removed, CANCEL.name())? > 0)
}
