//! [`Preview`] and [`PreviewList`]: pages of a queue's lists, each member's first bytes and its
//! whole length.

use bytes::Bytes;

/// Which of a queue's lists [`Inspect::previews`](super::Inspect) reads.
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

/// One member of a page of [`Inspect::previews`](super::Inspect).
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

impl Preview {
    pub(crate) fn of(
        id: Option<String>,
        at_ms: Option<i64>,
        member: Option<Bytes>,
        shown: usize,
    ) -> Self {
        Preview {
            id,
            at_ms,
            len: member.as_ref().map(|m| m.len() as u64),
            head: member.map_or_else(Bytes::new, |m| m.slice(..m.len().min(shown))),
        }
    }
}
