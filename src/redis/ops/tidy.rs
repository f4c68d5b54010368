//! `tidy.lua`: delayq's indexes of a queue dropped when its order list is gone (a Java delete,
//! clear or expiry), or given the list's time to live.

use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;

script!(
    TIDY,
    "tidy.lua",
    [Target, Order, Index, Values],
    untouched[Target]
);

/// Drops the queue's indexes when its order list is empty (else they follow its time to
/// live); how many were deleted.
pub(crate) async fn run(client: &Client, queue: &QueueSpec) -> Result<u64> {
    TIDY.call(queue).run(client).await
}
