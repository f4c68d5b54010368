//! `remove.lua`: pending entries removed by value (Redisson's `remove`, `removeAll`,
//! `retainAll`), found through the value index.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    REMOVE,
    "remove.lua",
    [Target, Timeout, Order, Channel, Index, Values],
    untouched[Target]
);

/// Values sent per `removeAll` call.
const VALUES_PER_CALL: usize = 1_000;

/// Order-list elements the removals of one `removeAll` call may scan (about 3 ms of Redis time
/// at 10 ns an element); a call that reaches it stops after its current value, and the rest
/// goes in the next call.
const SCAN_BUDGET: usize = 300_000;

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
///
/// [`RemoveMode::All`] with many values, or values many entries carry, takes several calls (each
/// bounded; see [`SCAN_BUDGET`]): it is atomic only while it fits in one.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    mode: RemoveMode,
    values: Vec<Vec<u8>>,
) -> Result<u64> {
    let mut removed = 0;
    let mut rest: &[Vec<u8>] = &values;
    loop {
        let sent = match mode {
            RemoveMode::All => &rest[..rest.len().min(VALUES_PER_CALL)],
            RemoveMode::First | RemoveMode::Retain => rest,
        };
        let reply = REMOVE
            .call(queue)
            .arg(mode.to_arg())
            .value_index()
            .arg(SCAN_BUDGET as i64)
            .args(sent.iter().map(|v| Value::Bytes(v.clone().into())))
            .run_indexed(client)
            .await?;
        let [count, done] = reply::fixed(Value::Array(reply), REMOVE.name())?;
        removed += reply::count(count, REMOVE.name())?;
        let done = reply::count(done, REMOVE.name())? as usize;
        if mode != RemoveMode::All || done >= rest.len() {
            return Ok(removed);
        }
        // A call that stopped part-way through a value removed at least one of its entries:
        // the value goes again, for its remaining entries.
        rest = &rest[done..];
    }
}
