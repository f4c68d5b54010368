//! `contains.lua`: which values are pending (Redisson's `contains`, `containsAll`).

use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    CONTAINS,
    "contains.lua",
    [Target, Timeout, Order, Channel],
    untouched[Target]
);

/// How many of the distinct codec-encoded `values` are pending.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, values: Vec<Vec<u8>>) -> Result<u64> {
    CONTAINS
        .call(queue)
        .args(values.into_iter().map(|v| Value::Bytes(v.into())))
        .run(client)
        .await
}
