//! `limit_set.lua`: a queue's limits stored or cleared, the keys held back made due again.

use crate::keys::LimitKeys;
use crate::redis::reply;
use crate::redis::script::{lua_bool, script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(LIMIT_SET, "limit_set.lua", [Target, Limits, LimitHeld]);

/// What storing or clearing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LimitSetOutcome {
    /// Whether limits were stored before.
    pub(crate) existed: bool,
    /// Values held back that went back to the target list (no per-key limits remain).
    pub(crate) moved_back: u64,
}

/// Stores `fields` (or clears the limits when `None`); `per_key` says whether per-key limits
/// remain.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    fields: Option<Vec<(String, String)>>,
    per_key: bool,
) -> Result<LimitSetOutcome> {
    let keys = LimitKeys::new(&queue.keys, "");
    let mode = if fields.is_some() { "set" } else { "clear" };
    let pairs = fields
        .into_iter()
        .flatten()
        .flat_map(|(f, v)| [f.into(), v.into()]);
    let reply: Value = LIMIT_SET
        .call(queue)
        .limit_keys(&keys)
        .arg(mode)
        .arg(lua_bool(per_key))
        .arg(queue.keys.limit_parked_prefix())
        .args(pairs)
        .run(client)
        .await?;
    let [existed, moved] = reply::fixed(reply, LIMIT_SET.name())?;
    Ok(LimitSetOutcome {
        existed: reply::count(existed, LIMIT_SET.name())? > 0,
        moved_back: reply::count(moved, LIMIT_SET.name())?,
    })
}
