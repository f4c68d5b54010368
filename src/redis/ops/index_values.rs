//! `index_values.lua`: the value index brought up to date ahead of lookups, by the queue's
//! scheduler when its transfer found the index behind the order list (a lookup indexes only a
//! bounded share itself; see [`ScriptCall::run_indexed`](crate::redis::script::ScriptCall)).

use crate::redis::script::{script, QueueSpec, VALUE_INDEX_CHUNK};
use crate::Result;
use fred::clients::Client;

script!(
    INDEX_VALUES,
    "index_values.lua",
    [Target, Timeout, Order, Values],
    untouched[Target]
);

/// Calls one catch-up makes at most (a few ms of Redis time each).
const CALLS_PER_CATCH_UP: usize = 8;

/// How long a scheduler waits before the next catch-up while the index is still behind, so
/// that building a long queue's index takes a share of Redis's time, not all of it.
const CATCH_UP_PAUSE_MS: i64 = 100;

/// Whether the value index covers the whole order list after at most [`CALLS_PER_CATCH_UP`]
/// calls (an index that does not exist is not started).
async fn catch_up(client: &Client, queue: &QueueSpec) -> Result<bool> {
    for _ in 0..CALLS_PER_CATCH_UP {
        let complete: i64 = INDEX_VALUES
            .call(queue)
            .arg(VALUE_INDEX_CHUNK as i64)
            .run(client)
            .await?;
        if complete == 1 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A scheduler's catch-up after a transfer (at `now_ms`) that found the value index behind:
/// when to look at the queue again, `head` (the earliest due time), or sooner while the index
/// is still behind. A failure only leaves the index to the lookups, and is logged.
pub(crate) async fn keep_up(
    client: &Client,
    queue: &QueueSpec,
    head: Option<i64>,
    now_ms: i64,
) -> Option<i64> {
    let again = now_ms.saturating_add(CATCH_UP_PAUSE_MS);
    match catch_up(client, queue).await {
        Ok(true) => head,
        Ok(false) => Some(head.map_or(again, |due| due.min(again))),
        Err(error) => {
            tracing::warn!(queue = queue.keys.target(), %error, "could not bring the value index up to date");
            head
        }
    }
}
