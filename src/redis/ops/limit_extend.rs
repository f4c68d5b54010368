//! `limit_extend.lua`: a limited job's heartbeat, its deadline and its slots' leases pushed
//! back in one call.

use crate::keys::LimitKeys;
use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    LIMIT_EXTEND,
    "limit_extend.lua",
    [Target, Inflight, LimitSlots, LimitBusy, LimitKeySlots],
    untouched[Target]
);

/// Sets delivery `id`'s deadline and its slots' leases (key `key`, `""` for none) to
/// `visibility` from now; the new deadline, or `None` when it was no longer in flight.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    id: &str,
    key: &str,
    visibility: Delay,
) -> Result<Option<i64>> {
    let keys = LimitKeys::new(&queue.keys, key);
    let reply: Value = LIMIT_EXTEND
        .call(queue)
        .limit_keys(&keys)
        .arg(visibility.ms())
        .arg(id)
        .arg(key)
        .run(client)
        .await?;
    reply::score(&reply, LIMIT_EXTEND.name())
}
