//! `limit_reserve.lua`: a slot and a token of a sharded queue's own (queue-wide) limits,
//! reserved before a worker takes from a shard.

use crate::keys::LimitKeys;
use crate::redis::reply::{self, Decision};
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

/// Reserves for `id`, leased for `lease`, under the stored queue-wide limits (of `version`) of
/// the logical queue `queue`: [`Decision::Started`], [`Decision::Wait`], [`Decision::Stale`] or
/// [`Decision::Malformed`].
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    version: &str,
    lease: Delay,
    id: &str,
) -> Result<Decision> {
    let keys = LimitKeys::new(&queue.keys, "");
    let reply: Value = LIMIT_RESERVE
        .call(queue)
        .limit_keys(&keys)
        .arg(version)
        .arg(lease.ms())
        .arg(id)
        .run(client)
        .await?;
    reply::decision_reply(&reply, LIMIT_RESERVE.name())
}
