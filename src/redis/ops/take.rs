//! `take.lua`: values moved from the target list (or the consumer's claim list) into flight.

use crate::redis::reply::{self, Taken};
use crate::redis::script::{script, QueueSpec};
use crate::time::Delay;
use crate::{Error, Result};
use fred::clients::Client;
use fred::prelude::Value;

script!(
    TAKE,
    "take.lua",
    [
        Target,
        Paused,
        Inflight,
        InflightData,
        Attempts,
        AttemptsSeen,
        Claims,
        Claim
    ]
);

/// What a take call returned.
#[derive(Debug)]
pub(crate) struct TakeReply {
    /// The visibility deadline of every value taken, epoch ms.
    pub(crate) deadline_ms: i64,
    /// The queue is paused ([`Admin::pause`](crate::admin::Admin::pause)): nothing was taken.
    pub(crate) paused: bool,
    /// The values, in the order taken.
    pub(crate) taken: Vec<Taken>,
    /// An item of the reply that could not be read; its value stays in flight and a reaper
    /// gives it back after the deadline. The others are still returned, so that none is
    /// dropped unsettled.
    pub(crate) unreadable: Option<Error>,
}

/// Takes one value per id in `ids` (fewer when fewer are ready), renewing the lease on the
/// consumer's `claim` list. Each of `ids` is a fresh id's first parts: the script appends the
/// attempt ([`DeliveryOrigin`](crate::reliable::DeliveryOrigin)).
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    claim: &str,
    visibility: Delay,
    lease: Delay,
    ids: Vec<String>,
) -> Result<TakeReply> {
    let reply: Value = TAKE
        .call(queue)
        .key(claim)
        .arg(visibility.ms())
        .arg(lease.ms())
        .args(ids.into_iter().map(Value::from))
        .run(client)
        .await?;
    parse(reply)
}

fn parse(reply: Value) -> Result<TakeReply> {
    let name = TAKE.name();
    let bad = |detail: &str| Error::UnexpectedReply {
        context: name,
        detail: detail.to_owned(),
    };
    let Value::Array(items) = reply else {
        return Err(bad("not an array"));
    };
    let mut items = items.into_iter();
    let deadline_ms = items
        .next()
        .and_then(|v| v.as_i64())
        .ok_or_else(|| bad("no deadline"))?;
    let paused = items
        .next()
        .and_then(|v| v.as_i64())
        .ok_or_else(|| bad("no pause flag"))?
        == 1;
    let (taken, unreadable) = reply::taken_list(items, name);
    Ok(TakeReply {
        deadline_ms,
        paused,
        taken,
        unreadable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_item_keeps_the_others() {
        let reply = Value::Array(vec![
            Value::Integer(1_000),
            Value::Integer(0),
            Value::String("a".into()),
            Value::Bytes("va".into()),
            Value::Integer(2),
            Value::Array(vec![]),
            Value::Bytes("vb".into()),
            Value::Integer(1),
            Value::String("c".into()),
            Value::Bytes("vc".into()),
            Value::Integer(1),
        ]);
        let reply = parse(reply).unwrap();
        assert_eq!(reply.deadline_ms, 1_000);
        assert!(!reply.paused);
        let ids: Vec<&str> = reply.taken.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(reply.taken[0].attempt, 2);
        assert!(reply.unreadable.is_some());
        let paused = parse(Value::Array(vec![Value::Integer(1_000), Value::Integer(1)])).unwrap();
        assert!(paused.paused && paused.taken.is_empty());
    }
}
