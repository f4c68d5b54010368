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
    let hash = queue.keys.schedule(id);
    let existed: i64 = SCHEDULE_REMOVE
        .call(queue)
        .key(&hash)
        .arg(id)
        .run(client)
        .await?;
    Ok(existed == 1)
}
