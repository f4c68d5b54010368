//! `extend.lua`: an in-flight value's deadline pushed back (a heartbeat).

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(EXTEND, "extend.lua", [Target, Inflight], untouched[Target]);

/// Sets delivery `id`'s deadline to `visibility` from now; the new deadline, or `None` when it
/// was no longer in flight.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    id: &str,
    visibility: Delay,
) -> Result<Option<i64>> {
    let reply: Value = EXTEND
        .call(queue)
        .arg(visibility.ms())
        .arg(id)
        .run(client)
        .await?;
    reply::score(&reply, EXTEND.name())
}
