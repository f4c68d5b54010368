//! `nack.lua`: an in-flight value given back for another attempt.

use crate::redis::script::{lua_bool, script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;

script!(
    NACK,
    "nack.lua",
    [
        Target,
        Timeout,
        Order,
        Channel,
        Inflight,
        InflightData,
        Attempts,
        AttemptsSeen,
        Settled
    ]
);

/// Gives delivery `id` back: due after `delay` as a new pending entry, or at once onto the
/// target list; `unprocessed` uncounts the attempt and puts the value at the head. False when it
/// was no longer in flight.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    id: &str,
    delay: Delay,
    unprocessed: bool,
) -> Result<bool> {
    let done: i64 = NACK
        .call(queue)
        .arg(delay.ms())
        .arg(id)
        .arg(queue.options.format.random_id())
        .arg(lua_bool(unprocessed))
        .run(client)
        .await?;
    Ok(done == 1)
}
