//! `purge_list.lua`: one of delayq's own lists deleted.

use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;

script!(
    PURGE_LIST,
    "purge_list.lua",
    [Target, OwnList],
    untouched[Target]
);

/// Deletes `list` (the queue's dead letters or quarantine); returns how long it was.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, list: &str) -> Result<u64> {
    PURGE_LIST.call(queue).key(list).run(client).await
}
