//! Pages of a queue's lists as previews, for dashboards: each member's first bytes and its whole
//! length, read so that no Redis call copies more than one big member or returns one whole.

use super::DelayedQueue;
use crate::codec::Codec;
use crate::redis::ops::preview::{self, Source};
use crate::Result;
use bytes::Bytes;

/// Which of a queue's lists [`DelayedQueue::previews`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PreviewList {
    /// The timeout zset, next due first: members are packed entries (read them with
    /// [`unpack_head`](crate::entry::unpack_head)).
    Pending,
    /// The target list, from its head (the next value taken).
    Ready,
    /// The in-flight deliveries, nearest deadline first, with their values.
    InFlight,
    /// The dead-letter records, oldest first.
    Dead,
    /// The quarantined entries.
    Quarantine,
}

/// One member of a page of [`DelayedQueue::previews`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Preview {
    /// The delivery id (in-flight deliveries).
    pub id: Option<String>,
    /// The due time (pending entries) or deadline (in-flight deliveries), epoch ms.
    pub at_ms: Option<i64>,
    /// The member's (or the delivery's value's) whole length in bytes; `None` for a delivery
    /// whose value is gone (settled between the reads).
    pub len: Option<u64>,
    /// Its first bytes.
    pub head: Bytes,
}

impl<C: Codec> DelayedQueue<C> {
    /// Up to `count` members of `list` from rank `first`, `shown` bytes of each with its whole
    /// length. Read in calls that each stop after about a MiB of members, so a page of big
    /// values holds Redis for one value's copy at a time, and none is sent whole.
    ///
    /// # Errors
    ///
    /// A Redis error, or a key of the wrong type.
    pub async fn previews(
        &self,
        list: PreviewList,
        first: usize,
        count: usize,
        shown: usize,
    ) -> Result<Vec<Preview>> {
        let keys = self.keys();
        let source = match list {
            PreviewList::Pending => Source::Pending,
            PreviewList::InFlight => Source::InFlight,
            PreviewList::Ready => Source::List(keys.target()),
            PreviewList::Dead => Source::List(keys.dead()),
            PreviewList::Quarantine => Source::List(keys.quarantine()),
        };
        let mut page = Vec::with_capacity(count.min(1024));
        while page.len() < count {
            let (members, cut) = preview::run(
                self.client(),
                self.spec(),
                source,
                first + page.len(),
                count - page.len(),
                shown,
            )
            .await?;
            page.extend(members.into_iter().map(|m| Preview {
                id: m.id.map(|id| String::from_utf8_lossy(&id).into_owned()),
                at_ms: m.score,
                len: m.head.as_ref().map(|(len, _)| *len),
                head: m.head.map(|(_, head)| head).unwrap_or_default(),
            }));
            if !cut {
                break;
            }
        }
        Ok(page)
    }
}
