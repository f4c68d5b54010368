//! `limit_reserve.lua`: a slot and a token of a sharded queue's own (queue-wide) limits,
//! reserved before a worker takes from a shard.

use super::limit_acquire::{self, Acquired};
use crate::keys::LimitKeys;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    LIMIT_RESERVE,
    "limit_reserve.lua",
    [Target, Limits, LimitSlots, LimitTat, LimitBusy, LimitKeySlots],
    untouched[Target, LimitBusy, LimitKeySlots]
);

/// The queue-wide limits a reservation goes by, as stored (`version`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueWide<'a> {
    pub(crate) version: &'a str,
    /// The concurrency cap (0: none).
    pub(crate) cap: i64,
    /// The rate: starts per period (0: none).
    pub(crate) rate_count: i64,
    pub(crate) rate_period_ms: i64,
}

/// Reserves for `id`, leased for `lease`, under `limits` of the logical queue `queue`:
/// [`Acquired::Started`], [`Acquired::Wait`] or [`Acquired::Stale`].
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    limits: QueueWide<'_>,
    lease: Delay,
    id: &str,
) -> Result<Acquired> {
    let keys = LimitKeys::new(&queue.keys, "");
    let queue_wide = [
        limits.cap,
        limits.rate_count,
        limits.rate_period_ms,
        0,
        0,
        0,
    ];
    let reply: Value = LIMIT_RESERVE
        .call(queue)
        .limit_keys(&keys)
        .arg(limits.version)
        .arg(lease.ms())
        .arg(id)
        .args(queue_wide.into_iter().map(Value::from))
        .run(client)
        .await?;
    limit_acquire::parse(reply, LIMIT_RESERVE.name())
}
