//! `schedule_fire.lua`: occurrences of one recurring schedule offered, and the schedule
//! advanced, only if it still stands where the caller read it.

use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;

script!(
    SCHEDULE_FIRE,
    "schedule_fire.lua",
    [Target, Timeout, Order, Channel, Schedules, Schedule],
    untouched[Target]
);

/// Where the caller read the schedule: the compare-and-set the script checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadAt {
    /// The schedule's revision.
    pub(crate) rev: u64,
    /// Its next occurrence, epoch ms.
    pub(crate) next_ms: i64,
}

/// Offers one entry of the schedule's value due at each of `occurrences` (ascending) and moves
/// its next occurrence to `then_ms` (`None`: ended), if the schedule `id` still stands at
/// `read`. `None` when it did not (another process fired it, or it was changed or removed).
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    id: &str,
    read: ReadAt,
    occurrences: &[i64],
    then_ms: Option<i64>,
) -> Result<Option<u64>> {
    let hash = queue.keys.schedule(id);
    let call = SCHEDULE_FIRE
        .call(queue)
        .key(&hash)
        .arg(id)
        .arg(read.rev.to_string())
        .arg(read.next_ms.to_string())
        .arg(then_ms.map(|ms| ms.to_string()).unwrap_or_default())
        .args(
            occurrences
                .iter()
                .flat_map(|ms| [ms.to_string().into(), queue.options.format.random_id()]),
        );
    let offered: i64 = call.run(client).await?;
    Ok(u64::try_from(offered).ok())
}
