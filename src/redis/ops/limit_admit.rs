//! `limit_admit.lua`: a batch of values just taken, settled under per-key limits in one call.

use super::limit_acquire::{Acquired, LimitArgs, WaitFor};
use crate::keys::LimitKeys;
use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::{Error, Result};
use fred::clients::Client;
use fred::prelude::Value;
use std::time::Duration;

script!(
    LIMIT_ADMIT,
    "limit_admit.lua",
    [
        Target,
        Inflight,
        InflightData,
        Attempts,
        Limits,
        LimitSlots,
        LimitTat,
        LimitHeld,
        LimitBusy
    ]
);

/// What became of one value of the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// Started, held back or no longer in flight (never [`Acquired::Wait`] nor `Stale`).
    Settled(Acquired),
    /// Given back to the head of the target list: no permit was left, or the queue-wide
    /// limits refused.
    GivenBack,
}

/// The answer for a whole batch.
#[derive(Debug)]
pub(crate) enum Batch {
    /// The limits changed since the worker read them; nothing was done.
    Stale,
    /// One outcome per value, in the order given; and, when the queue-wide limits refused a
    /// start, how long until they may allow one.
    Done(Vec<Admitted>, Option<(Duration, WaitFor)>),
}

/// Settles `values` (delivery id, limit key or `""`), in take order, under the limits `args`
/// of `version`; at most `permits` of them start.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    version: &str,
    lease: Delay,
    args: LimitArgs,
    permits: usize,
    values: &[(&str, &str)],
) -> Result<Batch> {
    let name = LIMIT_ADMIT.name();
    let keys = LimitKeys::new(&queue.keys, "");
    let pairs = values
        .iter()
        .flat_map(|(id, key)| [Value::from(*id), Value::from(*key)]);
    let reply: Value = LIMIT_ADMIT
        .call(queue)
        .limit_keys(&keys)
        .arg(version)
        .arg(lease.ms())
        .args(args.into_iter().map(Value::from))
        .arg(queue.keys.limit_parked_prefix())
        .arg(queue.keys.limit_key_slots_prefix())
        .arg(permits as i64)
        .args(pairs)
        .run(client)
        .await?;
    parse(reply, name, values.len())
}

fn parse(reply: Value, name: &'static str, count: usize) -> Result<Batch> {
    let bad = |reply: &Value| Error::UnexpectedReply {
        context: name,
        detail: format!("{reply:?}"),
    };
    let Value::Array(items) = &reply else {
        return Err(bad(&reply));
    };
    if items.len() == 1 && items[0].as_i64() == Some(3) {
        return Ok(Batch::Stale);
    }
    if items.len() != 2 + 3 * count {
        return Err(bad(&reply));
    }
    let ms = |v: &Value| -> Result<i64> { Ok(reply::score(v, name)?.unwrap_or(0)) };
    let wait = ms(&items[0])?;
    let refused = (wait > 0).then(|| {
        let why = match items[1].as_str().as_deref() {
            Some("slot") => WaitFor::Slot,
            _ => WaitFor::Token,
        };
        (Duration::from_millis(wait as u64), why)
    });
    let mut out = Vec::with_capacity(count);
    for one in items[2..].chunks(3) {
        let a = ms(&one[1])?;
        out.push(match one[0].as_i64() {
            Some(1) => Admitted::Settled(Acquired::Started { admitted_ms: a }),
            Some(2) => Admitted::Settled(Acquired::HeldBack {
                wait: Duration::from_millis(a.max(0) as u64),
                first: one[2].as_i64() == Some(1),
            }),
            Some(4) => Admitted::Settled(Acquired::Gone),
            Some(7) => Admitted::GivenBack,
            _ => return Err(bad(&reply)),
        });
    }
    Ok(Batch::Done(out, refused))
}
