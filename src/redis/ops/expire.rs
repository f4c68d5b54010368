//! `expire.lua`: a time to live on the pending entries' keys (Redisson's `expire`,
//! `clearExpire`).

use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    EXPIRE,
    "expire.lua",
    [
        Target,
        Timeout,
        Order,
        Channel,
        Quarantine,
        Index,
        Values,
        Inflight,
        InflightData,
        Attempts,
        AttemptsSeen,
        Dead,
        Claims
    ],
    untouched[Target]
);

/// A time to live, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ttl {
    /// Expire after this many milliseconds (positive).
    Millis(i64),
    /// Remove any time to live.
    Persist,
}

/// Sets or clears the time to live; returns how many of the zset and order list changed.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, ttl: Ttl) -> Result<u64> {
    let arg: Value = match ttl {
        Ttl::Millis(ms) => ms.into(),
        Ttl::Persist => "persist".into(),
    };
    EXPIRE.call(queue).arg(arg).run(client).await
}
