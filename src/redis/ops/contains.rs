//! `contains.lua`: which values are pending (Redisson's `contains`, `containsAll`), looked up in
//! the value index.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    CONTAINS,
    "contains.lua",
    [Target, Timeout, Order, Channel, Values],
    untouched[Target]
);

/// Values looked up per call.
const VALUES_PER_CALL: usize = 1_000;

/// How many of the distinct codec-encoded `values` are pending; counting stops after the first
/// call (of [`VALUES_PER_CALL`] values) that found one missing, so a result below
/// `values.len()` says only that not all are pending.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, values: Vec<Vec<u8>>) -> Result<u64> {
    let mut found = 0;
    for chunk in values.chunks(VALUES_PER_CALL) {
        let reply = CONTAINS
            .call(queue)
            .value_index()
            .args(chunk.iter().map(|v| Value::Bytes(v.clone().into())))
            .run_indexed(client)
            .await?;
        let [count] = reply::fixed(Value::Array(reply), CONTAINS.name())?;
        let count = reply::count(count, CONTAINS.name())?;
        found += count;
        if count < chunk.len() as u64 {
            break;
        }
    }
    Ok(found)
}
