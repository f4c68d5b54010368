//! `limit_take.lua`: take.lua under queue-wide limits: a value with its slot and token, or none.

use super::limit_acquire::{parse, Acquired, LimitArgs};
use crate::keys::LimitKeys;
use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::Result;
use bytes::Bytes;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    LIMIT_TAKE,
    "limit_take.lua",
    [
        Target,
        Inflight,
        InflightData,
        Attempts,
        AttemptsSeen,
        Claims,
        Claim,
        Limits,
        LimitSlots,
        LimitTat
    ]
);

/// The limits a take goes by: their version and their arguments.
#[derive(Debug, Clone)]
pub(crate) struct TakeGate {
    pub(crate) version: String,
    pub(crate) args: LimitArgs,
}

/// What the script did.
#[derive(Debug)]
pub(crate) enum LimitedTake {
    /// A value taken, with its slot and token granted at `admitted_ms` (the Redis server's
    /// clock, epoch ms).
    Taken {
        deadline_ms: i64,
        id: String,
        raw: Bytes,
        attempt: u32,
        admitted_ms: i64,
    },
    /// Nothing ready.
    Empty,
    /// The limits refused (a wait) or changed.
    Limited(Acquired),
}

/// Takes one value as delivery `id` under `gate`, renewing the lease on the `claim` list.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    claim: &str,
    visibility: Delay,
    lease: Delay,
    gate: &TakeGate,
    id: String,
) -> Result<LimitedTake> {
    let name = LIMIT_TAKE.name();
    let keys = LimitKeys::new(&queue.keys, "");
    let reply: Value = LIMIT_TAKE
        .call(queue)
        .key(claim)
        .limit_keys(&keys)
        .arg(visibility.ms())
        .arg(lease.ms())
        .arg(gate.version.as_str())
        .arg(id)
        .args(gate.args.into_iter().map(Value::from))
        .run(client)
        .await?;
    let code = match &reply {
        Value::Array(items) => items.first().and_then(Value::as_i64),
        _ => None,
    };
    match code {
        Some(1) => {
            let [_, deadline, id, raw, attempt, admitted] = reply::fixed(reply, name)?;
            Ok(LimitedTake::Taken {
                deadline_ms: reply::score(&deadline, name)?.unwrap_or(0),
                id: String::from_utf8_lossy(&reply::bytes(id, name)?).into_owned(),
                raw: reply::bytes(raw, name)?,
                attempt: u32::try_from(reply::count(attempt, name)?).unwrap_or(u32::MAX),
                admitted_ms: reply::score(&admitted, name)?.unwrap_or(0),
            })
        }
        Some(6) => Ok(LimitedTake::Empty),
        _ => parse(reply, name).map(LimitedTake::Limited),
    }
}
