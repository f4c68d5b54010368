//! `schedule_set.lua`: one recurring schedule's definition written and indexed.

use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    SCHEDULE_SET,
    "schedule_set.lua",
    [Target, Schedules, Schedule],
    untouched[Target]
);

/// Writes the schedule `id` as `fields` (the definition's hash fields) with its next occurrence
/// `next_ms`, if its stored revision is `expected` (`None`: whatever is stored). Returns the
/// new revision, or `None` when the revision was another.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    id: &str,
    expected: Option<u64>,
    next_ms: Option<i64>,
    fields: Vec<(&'static str, Value)>,
) -> Result<Option<u64>> {
    let hash = queue.keys.schedule(id);
    let call = SCHEDULE_SET
        .call(queue)
        .key(&hash)
        .arg(id)
        .arg(expected.map(|rev| rev.to_string()).unwrap_or_default())
        .arg(next_ms.map(|ms| ms.to_string()).unwrap_or_default())
        .args(fields.into_iter().flat_map(|(f, v)| [f.into(), v]));
    let rev: i64 = call.run(client).await?;
    Ok(u64::try_from(rev).ok())
}
