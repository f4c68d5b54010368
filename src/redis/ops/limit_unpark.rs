//! `limit_unpark.lua`: the oldest value of a due key held back, taken into flight.

use super::limit_acquire::{parse, Acquired, LimitArgs};
use crate::keys::LimitKeys;
use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use bytes::Bytes;
use fred::clients::Client;
use fred::prelude::Value;
use std::time::Duration;

script!(
    LIMIT_UNPARK,
    "limit_unpark.lua",
    [
        Target,
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
    /// A value taken into flight under delivery id given, with its slots and tokens granted at
    /// `admitted_ms` (the Redis server's clock, epoch ms).
    Taken {
        deadline_ms: i64,
        raw: Bytes,
        attempt: u32,
        key: String,
        admitted_ms: i64,
    },
    /// No key held back is due: the next one is in the duration given (`None`: none held).
    NoneDue(Option<Duration>),
    /// Anything else the limit scripts answer (a queue-wide wait, stale limits).
    Other(Acquired),
}

/// Takes the oldest value of a due key held back as delivery `id`.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    version: &str,
    lease: Delay,
    id: &str,
    args: LimitArgs,
) -> Result<Unparked> {
    let name = LIMIT_UNPARK.name();
    let keys = LimitKeys::new(&queue.keys, "");
    let reply: Value = LIMIT_UNPARK
        .call(queue)
        .limit_keys(&keys)
        .arg(version)
        .arg(lease.ms())
        .arg(id)
        .args(args.into_iter().map(Value::from))
        .arg(queue.keys.limit_parked_prefix())
        .arg(queue.keys.limit_key_slots_prefix())
        .arg(KEYS_PER_CALL)
        .run(client)
        .await?;
    let code = match &reply {
        Value::Array(items) => items.first().and_then(Value::as_i64),
        _ => None,
    };
    match code {
        Some(1) => {
            let [_, deadline, raw, attempt, key, admitted] = reply::fixed(reply, name)?;
            Ok(Unparked::Taken {
                deadline_ms: reply::score(&deadline, name)?.unwrap_or(0),
                raw: reply::bytes(raw, name)?,
                attempt: u32::try_from(reply::count(attempt, name)?).unwrap_or(u32::MAX),
                key: String::from_utf8_lossy(&reply::bytes(key, name)?).into_owned(),
                admitted_ms: reply::score(&admitted, name)?.unwrap_or(0),
            })
        }
        Some(5) => {
            let [_, next] = reply::fixed(reply, name)?;
            let next = reply::score(&next, name)?;
            Ok(Unparked::NoneDue(
                next.map(|ms| Duration::from_millis(ms.max(0) as u64)),
            ))
        }
        _ => parse(reply, name).map(Unparked::Other),
    }
}
