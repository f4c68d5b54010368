//! Pages of a queue's lists as previews, for dashboards: each member's first bytes and its whole
//! length, read one member per command so that no command copies more than one big value.

use super::DelayedQueue;
use crate::codec::Codec;
use crate::inspect::{Inspect, Preview, PreviewList};
use crate::{Error, Result};
use bytes::Bytes;
use fred::interfaces::{HashesInterface, ListInterface, SortedSetsInterface};

impl<C: Codec> Inspect<'_, DelayedQueue<C>> {
    /// Up to `count` members of `list` from rank `first`, `shown` bytes of each with its whole
    /// length.
    ///
    /// Redis has no command that reads part of a list or zset member, so each member is read
    /// whole, by a command of its own, one after the other: Redis is held for one member's copy
    /// at a time (about 7 ms for 16 MiB), where a range read copies the whole page in one
    /// command (65 ms for ten 16 MiB values), and a script is slower still (a member copied into
    /// Lua: 35-130 ms for 16 MiB). Only the preview leaves this call.
    ///
    /// # Errors
    ///
    /// A Redis error, or a key of the wrong type.
    pub async fn previews(
        self,
        list: PreviewList,
        first: usize,
        count: usize,
        shown: usize,
    ) -> Result<Vec<Preview>> {
        let keys = self.queue.keys();
        let client = self.queue.client();
        let mut page = Vec::with_capacity(count.min(1024));
        for rank in first..first.saturating_add(count) {
            let rank = i64::try_from(rank).unwrap_or(i64::MAX);
            let member = match list {
                PreviewList::Pending | PreviewList::InFlight => {
                    let zset = match list {
                        PreviewList::Pending => keys.timeout(),
                        _ => keys.inflight(),
                    };
                    let mut one: Vec<(Bytes, f64)> = client
                        .zrange(zset, rank, rank, None, false, None, true)
                        .await
                        .map_err(|e| Error::from_redis("ZRANGE", zset, e))?;
                    let Some((member, score)) = one.pop() else {
                        break;
                    };
                    let at_ms = Some(score as i64);
                    if list == PreviewList::Pending {
                        Preview::of(None, at_ms, Some(member), shown)
                    } else {
                        let data = keys.inflight_data();
                        let value: Option<Bytes> = client
                            .hget(data, member.as_ref())
                            .await
                            .map_err(|e| Error::from_redis("HGET", data, e))?;
                        let id = String::from_utf8_lossy(&member).into_owned();
                        Preview::of(Some(id), at_ms, value, shown)
                    }
                }
                PreviewList::Ready | PreviewList::Dead | PreviewList::Quarantine => {
                    let key = match list {
                        PreviewList::Ready => keys.target(),
                        PreviewList::Dead => keys.dead(),
                        _ => keys.quarantine(),
                    };
                    let member: Option<Bytes> = client
                        .lindex(key, rank)
                        .await
                        .map_err(|e| Error::from_redis("LINDEX", key, e))?;
                    let Some(member) = member else { break };
                    Preview::of(None, None, Some(member), shown)
                }
            };
            page.push(member);
        }
        Ok(page)
    }
}
