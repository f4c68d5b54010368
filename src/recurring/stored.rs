//! Reading one schedule's hash, taken from its name before issue 38 when it is still there.

use super::spec::ScheduleInfo;
use crate::redis::ops::schedule_adopt;
use crate::redis::script::QueueSpec;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::HashesInterface;
use fred::prelude::Value;
use std::collections::HashMap;

/// The schedule `id` as stored, or `None`. A schedule whose id holds `:` or `%` and that has no
/// hash under its name is looked for under its name before issue 38, and moved from there
/// first (`lua/schedule_adopt.lua`): an ordinary id costs one `HGETALL`, as before.
pub(super) async fn read(
    client: &Client,
    queue: &QueueSpec,
    id: &str,
) -> Result<Option<ScheduleInfo>> {
    let mut fields = hash(client, queue, id).await?;
    if fields.is_empty() && schedule_adopt::run(client, queue, id).await? {
        fields = hash(client, queue, id).await?;
    }
    ScheduleInfo::from_fields(id, fields)
}

/// Moves the hash of the schedule `id` from its name before issue 38, if it is there and is
/// this schedule's, so that a change or a removal finds it under its name now.
pub(super) async fn adopt(client: &Client, queue: &QueueSpec, id: &str) -> Result<()> {
    schedule_adopt::run(client, queue, id).await.map(drop)
}

async fn hash(client: &Client, queue: &QueueSpec, id: &str) -> Result<HashMap<String, Value>> {
    let key = queue.keys.schedule(id);
    client
        .hgetall(&key)
        .await
        .map_err(|e| Error::from_redis("HGETALL", &key, e))
}
