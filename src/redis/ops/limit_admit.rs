//! `limit_admit.lua`: a batch of values just taken, settled under per-key limits in one call.

use crate::keys::LimitKeys;
use crate::redis::reply::{self, Decision, WaitFor};
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// Started, held back or no longer in flight (never [`Decision::Wait`] nor `Stale`).
    Settled(Decision),
    /// Given back to the head of the target list: no permit was left, or the queue-wide
    /// limits refused.
    GivenBack,
}

/// The answer for a whole batch.
#[derive(Debug)]
pub(crate) enum Batch {
    /// The limits changed since the worker read them, or are malformed; nothing was done.
    Limited(Decision),
    /// One outcome per value, in the order given; and, when the queue-wide limits refused a
    /// start, how long until they may allow one.
    Done(Vec<Admitted>, Option<(Duration, WaitFor)>),
}

/// Settles `values` (delivery id, limit key or `""`), in take order, under the stored limits
/// of `version`; at most `permits` of them start.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    version: &str,
    lease: Delay,
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
    if items.len() != 2 + 3 * count {
        return match reply::decision_reply(&reply, name)? {
            limited @ (Decision::Stale | Decision::Malformed(_)) => Ok(Batch::Limited(limited)),
            _ => Err(bad(&reply)),
        };
    }
    let (wait, why) = reply::wait_for(&items[0], &items[1], name)?;
    let refused = (!wait.is_zero()).then_some((wait, why));
    let mut out = Vec::with_capacity(count);
    for one in items[2..].chunks(3) {
        out.push(match one[0].as_i64() {
            Some(7) => Admitted::GivenBack,
            code @ Some(1 | 2 | 4) => {
                Admitted::Settled(reply::decision(code, one.get(1), one.get(2), name)?)
            }
            _ => return Err(bad(&reply)),
        });
    }
    Ok(Batch::Done(out, refused))
}
