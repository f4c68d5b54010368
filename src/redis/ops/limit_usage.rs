//! `limit_usage.lua`: what a queue's limits hold now.

use crate::keys::LimitKeys;
use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    LIMIT_USAGE,
    "limit_usage.lua",
    [Target, LimitSlots, LimitTat, LimitHeld, LimitBusy],
    untouched[Target]
);

/// The most keys held back whose values are counted in one call.
const COUNTED_KEYS: i64 = 1_000;

/// The script's answer, as read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct UsageReply {
    pub(crate) now_ms: i64,
    pub(crate) slots_held: u64,
    pub(crate) keys_busy: u64,
    pub(crate) keys_held: u64,
    pub(crate) values_held: u64,
    pub(crate) keys_counted: u64,
    pub(crate) next_token_ms: Option<i64>,
    pub(crate) top: Vec<(String, u64)>,
}

/// Reads the usage, naming at most `top` keys.
pub(crate) async fn run(client: &Client, queue: &QueueSpec, top: usize) -> Result<UsageReply> {
    let name = LIMIT_USAGE.name();
    let keys = LimitKeys::new(&queue.keys, "");
    let reply: Value = LIMIT_USAGE
        .call(queue)
        .limit_keys(&keys)
        .arg(queue.keys.limit_parked_prefix())
        .arg(COUNTED_KEYS)
        .arg(top as i64)
        .run(client)
        .await?;
    let Value::Array(items) = reply else {
        return Err(crate::Error::UnexpectedReply {
            context: name,
            detail: format!("{reply:?}"),
        });
    };
    let mut items = items.into_iter();
    let mut next = || items.next().unwrap_or(Value::Null);
    let now_ms = reply::score(&next(), name)?.unwrap_or(0);
    let slots_held = reply::count(next(), name)?;
    let keys_busy = reply::count(next(), name)?;
    let keys_held = reply::count(next(), name)?;
    let values_held = reply::count(next(), name)?;
    let next_token_ms = reply::score(&next(), name)?;
    let mut top = Vec::new();
    loop {
        let (key, count) = (next(), next());
        if key.is_null() {
            break;
        }
        let key = String::from_utf8_lossy(&reply::bytes(key, name)?).into_owned();
        top.push((key, reply::count(count, name)?));
    }
    Ok(UsageReply {
        now_ms,
        slots_held,
        keys_busy,
        keys_held,
        values_held,
        keys_counted: keys_held.min(COUNTED_KEYS as u64),
        next_token_ms,
        top,
    })
}
