//! `limit_acquire.lua`: the slots and tokens of a value just taken, or the value held back.

use crate::keys::LimitKeys;
use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::{Error, Result};
use fred::clients::Client;
use fred::prelude::Value;
use std::time::Duration;

script!(
    LIMIT_ACQUIRE,
    "limit_acquire.lua",
    [
        Target,
        Inflight,
        InflightData,
        Attempts,
        Limits,
        LimitSlots,
        LimitTat,
        LimitHeld,
        LimitBusy,
        LimitKeySlots,
        LimitParked
    ],
    untouched[Target]
);

/// Why a start waits for the queue-wide limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitFor {
    /// A slot of the concurrency cap.
    Slot,
    /// A token of the rate.
    Token,
}

impl WaitFor {
    /// The metrics label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            WaitFor::Slot => "slot",
            WaitFor::Token => "token",
        }
    }
}

/// What the script did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Acquired {
    /// The job may start: its slots and tokens were granted at `admitted_ms` (the Redis
    /// server's clock, epoch ms).
    Started { admitted_ms: i64 },
    /// The queue-wide limits refuse for now; try again after the wait.
    Wait(Duration, WaitFor),
    /// The value was held back on its key's list; `first` when the key was not held before.
    HeldBack { wait: Duration, first: bool },
    /// The limits changed since the worker read them.
    Stale,
    /// The delivery is no longer in flight.
    Gone,
}

/// The limits as the scripts take them: cap, rate count, rate period ms, key cap, key rate
/// count, key rate period ms (0 for none).
pub(crate) type LimitArgs = [i64; 6];

/// Acquires for delivery `id` (key `key`, `""` for none) under the limits `args` of `version`.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    version: &str,
    lease: Delay,
    id: &str,
    args: LimitArgs,
    key: &str,
) -> Result<Acquired> {
    let keys = LimitKeys::new(&queue.keys, key);
    let reply: Value = LIMIT_ACQUIRE
        .call(queue)
        .limit_keys(&keys)
        .arg(version)
        .arg(lease.ms())
        .arg(id)
        .args(args.into_iter().map(Value::from))
        .arg(key)
        .run(client)
        .await?;
    parse(reply, LIMIT_ACQUIRE.name())
}

/// Reads `{ code, ... }`, the shape the limit scripts share for codes 0, 2, 3 and 4 (and 1 of
/// `limit_acquire.lua`: `{ 1, granted ms }`).
pub(crate) fn parse(reply: Value, name: &'static str) -> Result<Acquired> {
    let bad = |reply: &Value| Error::UnexpectedReply {
        context: name,
        detail: format!("{reply:?}"),
    };
    let Value::Array(items) = &reply else {
        return Err(bad(&reply));
    };
    let ms = |i: usize| -> Result<Duration> {
        let ms = items
            .get(i)
            .map(|v| reply::score(v, name))
            .transpose()?
            .flatten();
        Ok(Duration::from_millis(ms.unwrap_or(0).max(0) as u64))
    };
    let admitted_ms = || -> Result<i64> {
        let ms = items.get(1).map(|v| reply::score(v, name)).transpose()?;
        ms.flatten().ok_or_else(|| bad(&reply))
    };
    Ok(match items.first().and_then(Value::as_i64) {
        Some(1) => Acquired::Started {
            admitted_ms: admitted_ms()?,
        },
        Some(0) => {
            let why = match items.get(2).and_then(Value::as_str).as_deref() {
                Some("slot") => WaitFor::Slot,
                _ => WaitFor::Token,
            };
            Acquired::Wait(ms(1)?, why)
        }
        Some(2) => Acquired::HeldBack {
            wait: ms(1)?,
            first: items.get(2).and_then(Value::as_i64) == Some(1),
        },
        Some(3) => Acquired::Stale,
        Some(4) => Acquired::Gone,
        _ => return Err(bad(&reply)),
    })
}
