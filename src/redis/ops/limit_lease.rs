//! `limit_lease.lua`: a job's slots renewed with its heartbeats, or released when it settles.

use crate::keys::LimitKeys;
use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    LIMIT_LEASE,
    "limit_lease.lua",
    [
        Target,
        LimitSlots,
        LimitHeld,
        LimitBusy,
        LimitKeySlots,
        LimitParked
    ],
    untouched[Target]
);

/// Renews (`Some(lease)`) or releases (`None`) the slots of delivery `id` (key `key`, `""` for
/// none); whether it held any.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    id: &str,
    key: &str,
    renew: Option<Delay>,
) -> Result<bool> {
    let keys = LimitKeys::new(&queue.keys, key);
    let mode = if renew.is_some() { "renew" } else { "release" };
    let reply: Value = LIMIT_LEASE
        .call(queue)
        .limit_keys(&keys)
        .arg(mode)
        .arg(id)
        .arg(key)
        .arg(renew.map_or(0, |lease| lease.ms()))
        .run(client)
        .await?;
    Ok(reply::count(reply, LIMIT_LEASE.name())? > 0)
}
