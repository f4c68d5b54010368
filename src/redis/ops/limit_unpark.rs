//! `limit_unpark.lua`: the oldest value of a due key held back, taken into flight.

use crate::keys::LimitKeys;
use crate::redis::reply::{self, Decision, Taken};
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use fred::clients::Client;
use fred::prelude::Value;
use std::time::Duration;

script!(
    LIMIT_UNPARK,
    "limit_unpark.lua",
    [
        Target,
        Paused,
        Inflight,
        InflightData,
        Attempts,
        AttemptsSeen,
        Limits,
        LimitSlots,
        LimitTat,
        LimitHeld,
        LimitBusy
    ],
    untouched[Target]
);

/// The most due keys one call looks at.
const KEYS_PER_CALL: i64 = 16;

/// What the script did.
#[derive(Debug)]
pub(crate) enum Unparked {
    /// A value of limit key `key` taken into flight, with its slots and tokens granted at
    /// `admitted_ms` (the Redis server's clock, epoch ms).
    Taken {
        deadline_ms: i64,
        admitted_ms: i64,
        key: String,
        taken: Taken,
    },
    /// No key held back is due: the next one is in the duration given (`None`: none held).
    NoneDue(Option<Duration>),
    /// The queue is paused ([`Admin::pause`](crate::admin::Admin::pause)); nothing was taken.
    Paused,
    /// Anything else the limit scripts answer (a queue-wide wait, stale or malformed limits).
    Other(Decision),
}

/// Takes the oldest value of a due key held back as delivery `id` (its first parts: the
/// script appends the attempt).
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    version: &str,
    lease: Delay,
    id: &str,
) -> Result<Unparked> {
    let name = LIMIT_UNPARK.name();
    let keys = LimitKeys::new(&queue.keys, "");
    let reply: Value = LIMIT_UNPARK
        .call(queue)
        .limit_keys(&keys)
        .arg(version)
        .arg(lease.ms())
        .arg(id)
        .arg(queue.keys.limit_parked_prefix())
        .arg(queue.keys.limit_key_slots_prefix())
        .arg(KEYS_PER_CALL)
        .run(client)
        .await?;
    let code = match &reply {
        Value::Array(items) if reply::is_paused(items) => return Ok(Unparked::Paused),
        Value::Array(items) => items.first().and_then(Value::as_i64),
        _ => None,
    };
    match code {
        Some(1) => {
            let [_, deadline, admitted, key, id, value, attempt] = reply::fixed(reply, name)?;
            Ok(Unparked::Taken {
                deadline_ms: reply::score(&deadline, name)?.unwrap_or(0),
                admitted_ms: reply::score(&admitted, name)?.unwrap_or(0),
                key: String::from_utf8_lossy(&reply::bytes(key, name)?).into_owned(),
                taken: reply::taken(id, value, attempt, name)?,
            })
        }
        Some(5) => {
            let [_, next] = reply::fixed(reply, name)?;
            let next = reply::score(&next, name)?;
            Ok(Unparked::NoneDue(
                next.map(|ms| Duration::from_millis(ms.max(0) as u64)),
            ))
        }
        _ => reply::decision_reply(&reply, name).map(Unparked::Other),
    }
}
