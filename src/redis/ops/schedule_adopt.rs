//! `schedule_adopt.lua`: one recurring schedule's hash moved from its name before issue 38.

use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;

script!(
    SCHEDULE_ADOPT,
    "schedule_adopt.lua",
    [Target, Schedules, Schedule, Schedule],
    untouched[Target]
);

/// Moves the hash of the schedule `id` from its name before issue 38 to its name now, when
/// the two differ (the id holds `:` or `%`), no hash has the name now, and the old name is this
/// schedule's (no other schedule's now); true when it did.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, id: &str) -> Result<bool> {
    let Some(legacy) = queue.keys.schedule_legacy(id) else {
        return Ok(false);
    };
    let hash = queue.keys.schedule(id);
    let moved: i64 = SCHEDULE_ADOPT
        .call(queue)
        .key(&hash)
        .key(&legacy)
        .arg(id)
        .run(client)
        .await?;
    Ok(moved == 1)
}
