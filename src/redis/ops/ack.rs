//! `ack.lua`: an in-flight value is done.

use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;

script!(
    ACK,
    "ack.lua",
    [
        Target,
        Inflight,
        InflightData,
        Attempts,
        AttemptsSeen,
        Settled
    ],
    untouched[Target]
);

/// Acknowledges delivery `id`; false when it was no longer in flight.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, id: &str) -> Result<bool> {
    let done: i64 = ACK.call(queue).arg(id).run(client).await?;
    Ok(done == 1)
}
