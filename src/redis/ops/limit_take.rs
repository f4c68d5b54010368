//! `limit_take.lua`: take.lua under queue-wide limits: values each with its slot and token,
//! as many as the limits and the worker's free permits allow.

use crate::keys::LimitKeys;
use crate::redis::reply::{self, Decision, Taken, WaitFor};
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::{Error, Result};
use fred::clients::Client;
use fred::prelude::Value;
use std::time::Duration;

script!(
    LIMIT_TAKE,
    "limit_take.lua",
    [
        Target,
        Paused,
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

/// What a take under the limits goes by: the version of the limits the worker read (the
/// script reads their numbers from the stored hash), and how many values it may take.
#[derive(Debug, Clone)]
pub(crate) struct TakeGate {
    pub(crate) version: String,
    pub(crate) most: usize,
}

/// What the script did.
#[derive(Debug)]
pub(crate) enum LimitedTake {
    /// Values taken (none when none was ready or the limits refused the first), each with its
    /// slot and token granted at `admitted_ms` (the Redis server's clock, epoch ms).
    Taken {
        deadline_ms: i64,
        admitted_ms: i64,
        taken: Vec<Taken>,
        /// An item that could not be read (its value stays in flight until the reaper).
        unreadable: Option<Error>,
        /// The limits refused one more value: how long until they may allow one.
        refused: Option<(Duration, WaitFor)>,
    },
    /// The limits changed or are malformed; nothing was taken.
    Limited(Decision),
    /// The queue is paused ([`Admin::pause`](crate::admin::Admin::pause)); nothing was taken.
    Paused,
}

/// Takes up to `ids.len()` values (one delivery id each: its first parts, the script appends
/// the attempt) under `version`, renewing the lease on the `claim` list.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    claim: &str,
    visibility: Delay,
    lease: Delay,
    version: &str,
    ids: Vec<String>,
) -> Result<LimitedTake> {
    let name = LIMIT_TAKE.name();
    let keys = LimitKeys::new(&queue.keys, "");
    let reply: Value = LIMIT_TAKE
        .call(queue)
        .key(claim)
        .limit_keys(&keys)
        .arg(visibility.ms())
        .arg(lease.ms())
        .arg(version)
        .args(ids.into_iter().map(Value::from))
        .run(client)
        .await?;
    parse(reply, name)
}

fn parse(reply: Value, name: &'static str) -> Result<LimitedTake> {
    let Value::Array(items) = reply else {
        return Err(Error::UnexpectedReply {
            context: name,
            detail: format!("{reply:?}"),
        });
    };
    if reply::is_paused(&items) {
        return Ok(LimitedTake::Paused);
    }
    if items.len() < 4 {
        let reply = Value::Array(items);
        return reply::decision_reply(&reply, name).map(LimitedTake::Limited);
    }
    let mut items = items.into_iter();
    let (wait, why, deadline, admitted) = (
        items.next().unwrap_or(Value::Null),
        items.next().unwrap_or(Value::Null),
        items.next().unwrap_or(Value::Null),
        items.next().unwrap_or(Value::Null),
    );
    let (wait, why) = reply::wait_for(&wait, &why, name)?;
    let (taken, unreadable) = reply::taken_list(items, name);
    Ok(LimitedTake::Taken {
        deadline_ms: reply::score(&deadline, name)?.unwrap_or(0),
        admitted_ms: reply::score(&admitted, name)?.unwrap_or(0),
        taken,
        unreadable,
        refused: (!wait.is_zero()).then_some((wait, why)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_refusals_and_stale_limits() {
        let int = Value::Integer;
        let text = |t: &str| Value::String(t.into());
        let reply = Value::Array(vec![
            int(12),
            text("slot"),
            int(5_000),
            int(1_000),
            text("a"),
            Value::Bytes("va".into()),
            int(1),
        ]);
        let LimitedTake::Taken { taken, refused, .. } = parse(reply, "t").unwrap() else {
            panic!("not a take");
        };
        assert_eq!(taken.len(), 1);
        assert_eq!(refused, Some((Duration::from_millis(12), WaitFor::Slot)));
        let stale = parse(Value::Array(vec![int(3)]), "t").unwrap();
        assert!(matches!(stale, LimitedTake::Limited(Decision::Stale)));
        let bad = parse(Value::Array(vec![int(8), text("rate_count")]), "t").unwrap();
        assert!(matches!(bad, LimitedTake::Limited(Decision::Malformed(f)) if f == "rate_count"));
        let paused = parse(Value::Array(vec![int(9)]), "t").unwrap();
        assert!(matches!(paused, LimitedTake::Paused));
    }
}
