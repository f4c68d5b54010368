//! The in-flight deliveries of a queue as a console lists them: ids and deadlines only (what
//! each id says of its process, start and attempt comes with it), never the values.

use super::delivery_id::DeliveryOrigin;
use crate::codec::Codec;
use crate::inspect::Inspect;
use crate::queue::DelayedQueue;
use crate::{Error, Result};
use fred::interfaces::SortedSetsInterface;
use fred::types::Value;
use serde::Serialize;

/// One delivery in flight, as its member of `delayq_inflight:{NAME}` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct InFlightDelivery {
    /// The delivery id.
    pub id: String,
    /// Its visibility deadline, epoch ms.
    pub deadline_ms: i64,
    /// Who took it, when, which attempt (read from the id).
    #[serde(flatten)]
    pub origin: DeliveryOrigin,
}

/// A page of a queue's in-flight deliveries and how many there are in all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct InFlightPage {
    /// How many deliveries are in flight.
    pub total: u64,
    /// The first of them, nearest deadline first.
    pub deliveries: Vec<InFlightDelivery>,
}

/// The in-flight deliveries (delayq only).
impl<C: Codec> Inspect<'_, DelayedQueue<C>> {
    /// Up to `count` in-flight deliveries, nearest deadline first, and how many there are:
    /// their ids and deadlines, no value read. One pipelined round trip of two commands
    /// (`ZCARD`, `ZRANGE … WITHSCORES`), whatever the values' sizes.
    ///
    /// # Errors
    ///
    /// A Redis error, or the in-flight key holding another type.
    pub async fn in_flight(self, count: usize) -> Result<InFlightPage> {
        let key = self.queue.keys().inflight();
        if count == 0 {
            return Ok(InFlightPage::default());
        }
        let pipeline = self.queue.client().pipeline();
        let _: std::result::Result<(), _> = pipeline.zcard(key).await;
        let last = i64::try_from(count).unwrap_or(i64::MAX) - 1;
        let _: std::result::Result<(), _> =
            pipeline.zrange(key, 0, last, None, false, None, true).await;
        let mut replies = pipeline.try_all::<Value>().await.into_iter();
        let mut next = |command: &'static str| {
            replies
                .next()
                .unwrap_or(Ok(Value::Null))
                .map_err(|e| Error::from_redis(command, key, e))
        };
        let total = next("ZCARD")?.as_u64().unwrap_or(0);
        let deliveries = pairs(next("ZRANGE")?)
            .into_iter()
            .map(|(id, deadline_ms)| InFlightDelivery {
                origin: DeliveryOrigin::of(&id),
                id,
                deadline_ms,
            })
            .collect();
        Ok(InFlightPage { total, deliveries })
    }
}

/// The members and scores of a `ZRANGE … WITHSCORES` reply (flat pairs or, in RESP3, nested).
fn pairs(reply: Value) -> Vec<(String, i64)> {
    let Value::Array(items) = reply else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut items = items.into_iter();
    while let Some(item) = items.next() {
        let (member, score) = match item {
            Value::Array(pair) if pair.len() == 2 => {
                let mut pair = pair.into_iter();
                (pair.next(), pair.next())
            }
            member => (Some(member), items.next()),
        };
        let member = member.and_then(|m| m.as_string());
        if let (Some(id), Some(score)) = (member, score.and_then(|s| s.as_f64())) {
            found.push((id, score as i64));
        }
    }
    found
}
