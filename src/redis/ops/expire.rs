//! `expire.lua`: a time to live on the queue's keys (Redisson's `expire`, `clearExpire`).

use crate::keys::KeyRole;
use crate::redis::script::{LuaScript, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;
use std::sync::LazyLock;

/// The target list, declared to route the call to the queue's slot, then every key the queue
/// owns, in [`KeyRole::QUEUE`] order.
static ROLES: LazyLock<Vec<KeyRole>> = LazyLock::new(|| {
    KeyRole::QUEUE
        .into_iter()
        .filter(|role| *role == KeyRole::Target || role.owned())
        .collect()
});

pub(crate) static EXPIRE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(
        "expire.lua",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/expire.lua")),
        &ROLES,
        &[KeyRole::Target],
    )
});

/// A time to live, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ttl {
    /// Expire after this many milliseconds (positive).
    Millis(i64),
    /// Remove any time to live.
    Persist,
}

/// Sets or clears the time to live; returns how many of the zset and order list changed.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, ttl: Ttl) -> Result<u64> {
    let arg: Value = match ttl {
        Ttl::Millis(ms) => ms.into(),
        Ttl::Persist => "persist".into(),
    };
    EXPIRE.call(queue).arg(arg).run(client).await
}
