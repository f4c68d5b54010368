//! `preview.lua`: a page of one of a queue's lists as previews, one big member per call at most.

use crate::redis::reply;
use crate::redis::script::{script, QueueSpec};
use crate::Result;
use bytes::Bytes;
use fred::clients::Client;
use fred::prelude::Value;

script!(
    PREVIEW,
    "preview.lua",
    [Target, Timeout, Inflight, InflightData, OwnList],
    untouched[Target]
);

/// Bytes of members one call reads before it stops (after the member that reaches it): small
/// members are read many to a call, a big one alone.
const BUDGET: i64 = 1 << 20;

/// Which list a page is read from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source<'a> {
    /// A list of the queue (its target list, dead letters or quarantine).
    List(&'a str),
    /// The timeout zset: pending entries, next due first.
    Pending,
    /// The in-flight zset, nearest deadline first, with each delivery's value.
    InFlight,
}

/// One member of a page: its id and score (in-flight deliveries; scores of pending entries),
/// and its length and first bytes (`None` for an in-flight delivery whose value is gone).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member {
    pub(crate) id: Option<Bytes>,
    pub(crate) score: Option<i64>,
    pub(crate) head: Option<(u64, Bytes)>,
}

/// Up to `count` members from rank `first`, `shown` bytes of each; fewer when the call's budget
/// ran out (the caller asks again from where it stopped) or the list ended.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    source: Source<'_>,
    first: usize,
    count: usize,
    shown: usize,
) -> Result<(Vec<Member>, bool)> {
    let name = PREVIEW.name();
    let (what, list) = match source {
        Source::List(list) => ("list", list),
        Source::Pending => ("pending", queue.keys.target()),
        Source::InFlight => ("in_flight", queue.keys.target()),
    };
    let reply: Value = PREVIEW
        .call(queue)
        .key(list)
        .arg(what)
        .arg(i64::try_from(first).unwrap_or(i64::MAX))
        .arg(i64::try_from(count).unwrap_or(i64::MAX))
        .arg(i64::try_from(shown).unwrap_or(i64::MAX))
        .arg(BUDGET)
        .run(client)
        .await?;
    let Value::Array(items) = reply else {
        return Err(crate::Error::UnexpectedReply {
            context: name,
            detail: format!("{reply:?}"),
        });
    };
    let mut items = items.into_iter();
    let cut = items.next().and_then(|v| v.as_u64()) == Some(1);
    let mut out = Vec::with_capacity(items.len() / 4);
    while let (Some(id), Some(score), Some(len), Some(head)) =
        (items.next(), items.next(), items.next(), items.next())
    {
        let head = match reply::opt_bytes(head, name)? {
            Some(bytes) => Some((reply::count(len, name)?, bytes)),
            None => None,
        };
        out.push(Member {
            id: reply::opt_bytes(id, name)?,
            score: reply::score(&score, name)?,
            head,
        });
    }
    Ok((out, cut))
}
