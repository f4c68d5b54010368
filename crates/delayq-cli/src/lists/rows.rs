//! Pages of a queue's lists as rows, each value as a preview: its first bytes and its whole
//! length, never the whole value (a 16 MiB value would otherwise be turned into JSON and sent to
//! the browser on every refresh). The dashboard's API answers these rows, and the CLI's list
//! commands print them.

use crate::text_codec::{encode_hex, TextCodec};
use delayq::entry::{unpack_head, EntryFormat};
use delayq::inspect::{Preview, PreviewList};
use delayq::{DelayedQueue, OfferHandle};
use serde_json::json;

/// Bytes of a value shown.
pub(crate) const PREVIEW: usize = 256;

/// Bytes of each member read for a row: a value up to this long is decoded whole with the
/// queue's codec (a longer one is decoded from its start, or shown as text or hex), and a dead
/// letter's header and the start of its value fit in it.
pub(crate) const READ: usize = 16 * 1024;

/// Room for a pending entry's header (id length, id of up to 255 bytes, value length) ahead of
/// its value's first [`READ`] bytes.
pub(crate) const ENTRY_HEADER: usize = 1 + 255 + 8;

/// The longest header of a dead-letter record (magic, attempts, time, error length, error).
pub(crate) const DEAD_HEADER: usize = 4 + 4 + 8 + 4 + delayq::reliable::MAX_ERROR_BYTES;

/// `count` previews of `list` from `offset`, `shown` bytes of each: Redis copies one member per
/// command, and only the preview goes on to the browser (see [`Inspect::previews`](delayq::inspect::Inspect::previews)).
pub(crate) async fn page(
    queue: &DelayedQueue<TextCodec>,
    list: PreviewList,
    offset: usize,
    count: usize,
    shown: usize,
) -> anyhow::Result<Vec<Preview>> {
    Ok(queue
        .inspect()
        .previews(list, offset, count.max(1), shown)
        .await?)
}

/// A value `len` bytes long that starts with `value` as JSON: `value` (decoded, or its first
/// bytes as text, or hex when they are not text, cut to `limit` bytes), `len` (bytes), `cut`
/// (whether `value` is only its start), and when it decoded, `codec` (the one that read it: the
/// queue's, or the one `--codec auto` recognised) and `class` (the Java class its bytes name,
/// if any).
pub(crate) fn shown(codec: &TextCodec, value: &[u8], len: u64, limit: usize) -> serde_json::Value {
    let decoded = codec.describe(value).ok();
    let start = &value[..value.len().min(limit)];
    let text = match &decoded {
        Some(decoded) => {
            let mut cut = decoded.text.len().min(limit);
            while !decoded.text.is_char_boundary(cut) {
                cut -= 1;
            }
            decoded.text[..cut].to_owned()
        }
        None => match std::str::from_utf8(start) {
            Ok(text) => text.to_owned(),
            // Cut inside a character: the text before it.
            Err(err) if err.error_len().is_none() => {
                String::from_utf8_lossy(&start[..err.valid_up_to()]).into_owned()
            }
            Err(_) => encode_hex(start),
        },
    };
    let mut row = json!({ "value": text, "len": len, "cut": len > limit as u64 });
    if let Some(decoded) = decoded {
        row["codec"] = decoded.codec.into();
        if let Some(class) = decoded.class {
            row["class"] = class.into();
        }
    }
    row
}

/// Bytes that are no value (a malformed entry, a quarantined one) as JSON: their length `len`
/// and first `limit` bytes in hex, from `head`, their start.
pub(crate) fn shown_raw(head: &[u8], len: u64, limit: usize) -> serde_json::Value {
    let cut = len > limit as u64;
    json!({ "len": len, "hex": encode_hex(&head[..head.len().min(limit)]), "cut": cut })
}

/// A dead letter's name for the actions on it, which tells it from the records around it (they
/// may move up the list between the page and the action).
pub(crate) fn record_id(record: &[u8]) -> String {
    record_id_of(&record[..record.len().min(READ)], record.len() as u64)
}

/// [`record_id`] of a record `len` bytes long that starts with `head`: FNV-1a of its length
/// and first [`READ`] bytes (which hold its attempts, time of death and error), so a page
/// names a record without reading it whole.
pub(crate) fn record_id_of(head: &[u8], len: u64) -> String {
    let head = &head[..head.len().min(READ)];
    let hash = len
        .to_le_bytes()
        .iter()
        .chain(head)
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{hash:016x}")
}

/// Pending entries, next due first, from `offset` (by rank in the timeout zset: no walk over
/// the entries before it): due time, handle and preview of `limit` bytes.
pub(crate) async fn pending(
    queue: &DelayedQueue<TextCodec>,
    format: EntryFormat,
    offset: usize,
    count: usize,
    limit: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let codec = queue.inspect().codec();
    let read = READ.max(limit) + ENTRY_HEADER;
    let page = page(queue, PreviewList::Pending, offset, count, read).await?;
    Ok(page
        .iter()
        .map(|member| pending_row(codec, format, member, limit))
        .collect())
}

/// A pending entry read as `member` as JSON: due time, handle and its value shown up to `limit`
/// bytes.
pub(crate) fn pending_row(
    codec: &TextCodec,
    format: EntryFormat,
    member: &Preview,
    limit: usize,
) -> serde_json::Value {
    let len = member.len.unwrap_or_default();
    let mut row = match unpack_head(&member.head, len, format) {
        Ok(entry) => {
            let value_len = len - (member.head.len() - entry.value.len()) as u64;
            let mut row = shown(codec, entry.value, value_len, limit);
            let handle = OfferHandle::of_entry(&member.head).map(|h| h.to_string());
            row["handle"] = json!(handle);
            row
        }
        Err(err) => {
            let mut row = shown_raw(&member.head, len, limit);
            row["error"] = json!(format!("not an entry: {err}"));
            row
        }
    };
    row["due_ms"] = json!(member.at_ms);
    row
}

/// Values on the target list, from its head (the next one taken) at `offset`, previews of
/// `limit` bytes.
pub(crate) async fn ready(
    queue: &DelayedQueue<TextCodec>,
    offset: usize,
    count: usize,
    limit: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let page = page(queue, PreviewList::Ready, offset, count, READ.max(limit)).await?;
    let codec = queue.inspect().codec();
    Ok(page
        .iter()
        .map(|member| shown(codec, &member.head, member.len.unwrap_or_default(), limit))
        .collect())
}

/// Values taken by reliable consumers and not yet acknowledged, nearest deadline first, from
/// `offset`: delivery id, deadline, what the id says (`process`, `attempt`, `started_ms`; null
/// for an id of the earlier form) and preview of `limit` bytes.
pub(crate) async fn in_flight(
    queue: &DelayedQueue<TextCodec>,
    offset: usize,
    count: usize,
    limit: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let page = page(queue, PreviewList::InFlight, offset, count, READ.max(limit)).await?;
    let codec = queue.inspect().codec();
    Ok(page
        .iter()
        .map(|member| {
            let mut row = match member.len {
                Some(len) => shown(codec, &member.head, len, limit),
                None => json!({ "error": "its value is gone (acknowledged meanwhile?)" }),
            };
            delivery_fields(&mut row, member.id.as_deref().unwrap_or(""), member.at_ms);
            row
        })
        .collect())
}

/// A delivery's fields in its row: `id`, `deadline_ms`, and what the id says (`process`,
/// `attempt`, `started_ms`; null for an id of the earlier form).
pub(crate) fn delivery_fields(row: &mut serde_json::Value, id: &str, deadline_ms: Option<i64>) {
    let origin = delayq::reliable::DeliveryOrigin::of(id);
    row["id"] = json!(id);
    row["deadline_ms"] = json!(deadline_ms);
    row["process"] = json!(origin.process);
    row["attempt"] = json!(origin.attempt);
    row["started_ms"] = json!(origin.started_ms);
}

/// Dead letters, oldest first, from `offset`: id, attempts, error, time and preview of `limit`
/// bytes.
pub(crate) async fn dead(
    queue: &DelayedQueue<TextCodec>,
    offset: usize,
    count: usize,
    limit: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    // A record's header (attempts, time, error) comes before its value: room for it too.
    let read = READ.max(limit.saturating_add(DEAD_HEADER));
    let page = page(queue, PreviewList::Dead, offset, count, read).await?;
    Ok(page
        .iter()
        .map(|member| dead_row(queue, member, limit))
        .collect())
}

/// A dead-letter record read as `member` as JSON: id, attempts, error, time and its value shown
/// up to `limit` bytes; a record delayq did not write: its bytes and why it does not read.
pub(crate) fn dead_row(
    queue: &DelayedQueue<TextCodec>,
    member: &Preview,
    limit: usize,
) -> serde_json::Value {
    let (codec, key) = (queue.inspect().codec(), queue.keys().dead());
    let len = member.len.unwrap_or_default();
    let letter = delayq::reliable::dead_letter(key, member.head.clone(), |_| Ok(()));
    match letter.value {
        Ok(()) => {
            let header = member.head.len() - letter.raw.len();
            let mut row = shown(codec, &letter.raw, len - header as u64, limit);
            row["id"] = json!(record_id_of(&member.head, len));
            row["attempts"] = json!(letter.attempts);
            row["error"] = json!(letter.error);
            row["dead_at_ms"] = json!(letter.dead_at_ms);
            row
        }
        // Not delayq's record: its bytes, and why it does not read.
        Err(err) => {
            let mut row = shown_raw(&member.head, len, limit);
            row["malformed"] = json!(err.to_string());
            row
        }
    }
}

/// Quarantined entries from `offset`: their length and first `limit` bytes in hex.
pub(crate) async fn quarantine(
    queue: &DelayedQueue<TextCodec>,
    offset: usize,
    count: usize,
    limit: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let page = page(queue, PreviewList::Quarantine, offset, count, limit).await?;
    Ok(page
        .iter()
        .map(|member| shown_raw(&member.head, member.len.unwrap_or_default(), limit))
        .collect())
}
