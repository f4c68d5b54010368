//! `schedule_remove.lua`: one recurring schedule removed.

use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;

script!(
    SCHEDULE_REMOVE,
    "schedule_remove.lua",
    [Target, Schedules, Schedule],
    untouched[Target]
);

/// Removes the schedule `id`; true when it existed.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, id: &str) -> Result<bool> {
    call(client, queue, id, false).await
}

/// Removes the member `id` of the schedules zset if its hash is gone (a ghost, which no
/// firing can advance); true when it did. A schedule set meanwhile keeps its member.
pub(crate) async fn run_ghost(client: &Client, queue: &QueueSpec, id: &str) -> Result<bool> {
    call(client, queue, id, true).await
}

async fn call(client: &Client, queue: &QueueSpec, id: &str, ghost_only: bool) -> Result<bool> {
    let hash = queue.keys.schedule(id);
    let removed: i64 = SCHEDULE_REMOVE
        .call(queue)
        .key(&hash)
        .arg(id)
        .arg(if ghost_only { "1" } else { "0" })
        .run(client)
        .await?;
    Ok(removed == 1)
}
