//! `remove.lua`: pending entries removed by value (Redisson's `remove`, `removeAll`,
//! `retainAll`).

use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    REMOVE,
    "remove.lua",
    [Target, Timeout, Order, Channel, Index],
    untouched[Target]
);

/// Which entries a removal takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RemoveMode {
    /// The first entry equal to the value.
    First,
    /// Every entry equal to one of the values.
    All,
    /// Every entry equal to none of the values.
    Retain,
}

impl RemoveMode {
    fn to_arg(self) -> Value {
        match self {
            RemoveMode::First => "first",
            RemoveMode::All => "all",
            RemoveMode::Retain => "retain",
        }
        .into()
    }
}

/// Removes entries by their codec-encoded values; returns how many were removed.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    mode: RemoveMode,
    values: Vec<Vec<u8>>,
) -> Result<u64> {
    REMOVE
        .call(queue)
        .arg(mode.to_arg())
        .args(values.into_iter().map(|v| Value::Bytes(v.into())))
        .run(client)
        .await
}
