//! A page of a queue's lists for the dashboard, each value as a preview: its first bytes and
//! its whole length, never the whole value (a 16 MiB value would otherwise be turned into JSON
//! and sent to the browser on every refresh).

use crate::text_codec::{encode_hex, TextCodec};
use bytes::Bytes;
use delayq::entry::{unpack, EntryFormat};
use delayq::fred::clients::Client;
use delayq::fred::interfaces::HashesInterface;
use delayq::fred::interfaces::{ListInterface, SortedSetsInterface};
use delayq::OfferHandle;
use serde_json::json;

/// Bytes of a value shown in a list's row.
pub(super) const PREVIEW: usize = 256;

/// `count` members of `list` from `offset`.
///
/// Redis has no command that reads part of a list member, so a big value on the page is read
/// whole (copying it is what Redis spends on it); only its preview leaves this process.
pub(super) async fn list_page(
    client: &Client,
    list: &str,
    offset: usize,
    count: usize,
) -> anyhow::Result<Vec<Bytes>> {
    let last = offset + count.max(1) - 1;
    Ok(client.lrange(list, offset as i64, last as i64).await?)
}

/// `count` members of the sorted set `zset` with their scores from rank `offset`.
pub(super) async fn zset_page<M: delayq::fred::types::FromValue>(
    client: &Client,
    zset: &str,
    offset: usize,
    count: usize,
) -> anyhow::Result<Vec<(M, f64)>> {
    let last = offset + count.max(1) - 1;
    let range = (offset as i64, last as i64);
    Ok(client
        .zrange(zset, range.0, range.1, None, false, None, true)
        .await?)
}

/// A value's preview as JSON: `value` (decoded, or its first bytes as text, or hex when they are
/// not text, cut to `limit` bytes), `len` (bytes), `cut` (whether `value` is only its start),
/// and when it decoded, `codec` (the one that read it: the queue's, or the one `--codec auto`
/// recognised) and `class` (the Java class its bytes name, if any).
pub(super) fn shown(codec: &TextCodec, value: &[u8], limit: usize) -> serde_json::Value {
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
    let mut row = json!({ "value": text, "len": value.len(), "cut": value.len() > limit });
    if let Some(decoded) = decoded {
        row["codec"] = decoded.codec.into();
        if let Some(class) = decoded.class {
            row["class"] = class.into();
        }
    }
    row
}

/// Bytes that are no value (a malformed entry, a quarantined one) as JSON: their length and
/// first `limit` bytes in hex.
pub(super) fn shown_raw(bytes: &[u8], limit: usize) -> serde_json::Value {
    let cut = bytes.len() > limit;
    json!({ "len": bytes.len(), "hex": encode_hex(&bytes[..bytes.len().min(limit)]), "cut": cut })
}

/// A dead letter's name for the actions on it: FNV-1a of its bytes, which tells it from the
/// records around it (they may move up the list between the page and the action).
pub(super) fn record_id(record: &[u8]) -> String {
    let hash = record.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// Pending entries, next due first, from `offset` (by rank in the timeout zset: no walk over
/// the entries before it): due time, handle and preview.
pub(super) async fn pending(
    client: &Client,
    codec: &TextCodec,
    keys: &delayq::QueueKeys,
    format: EntryFormat,
    offset: usize,
    count: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let page: Vec<(Bytes, f64)> = zset_page(client, keys.timeout(), offset, count).await?;
    Ok(page
        .into_iter()
        .map(|(entry, score)| pending_row(codec, format, &entry, score, PREVIEW))
        .collect())
}

/// A pending entry (`entry`, due at `score`) as JSON: due time, handle and its value shown up
/// to `limit` bytes.
pub(super) fn pending_row(
    codec: &TextCodec,
    format: EntryFormat,
    entry: &[u8],
    score: f64,
    limit: usize,
) -> serde_json::Value {
    let mut row = match unpack(entry, format) {
        Ok(unpacked) => {
            let mut row = shown(codec, unpacked.value, limit);
            let handle = OfferHandle::of_entry(entry).map(|h| h.to_string());
            row["handle"] = json!(handle);
            row
        }
        Err(err) => {
            let mut row = shown_raw(entry, limit);
            row["error"] = json!(format!("not an entry: {err}"));
            row
        }
    };
    row["due_ms"] = json!(score as i64);
    row
}

/// Values on the target list, from its head (the next one taken) at `offset`.
pub(super) async fn ready(
    client: &Client,
    codec: &TextCodec,
    keys: &delayq::QueueKeys,
    offset: usize,
    count: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let page = list_page(client, keys.target(), offset, count).await?;
    Ok(page
        .iter()
        .map(|value| shown(codec, value, PREVIEW))
        .collect())
}

/// Values taken by reliable consumers and not yet acknowledged, nearest deadline first, from
/// `offset`: delivery id, deadline and preview.
pub(super) async fn in_flight(
    client: &Client,
    codec: &TextCodec,
    keys: &delayq::QueueKeys,
    offset: usize,
    count: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let page: Vec<(String, f64)> = zset_page(client, keys.inflight(), offset, count).await?;
    if page.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<&str> = page.iter().map(|(id, _)| id.as_str()).collect();
    let values: Vec<Option<Bytes>> = client.hmget(keys.inflight_data(), ids).await?;
    Ok(page
        .iter()
        .zip(values)
        .map(|((id, deadline), value)| {
            let mut row = match value {
                Some(value) => shown(codec, &value, PREVIEW),
                None => json!({ "error": "its value is gone (acknowledged meanwhile?)" }),
            };
            row["id"] = json!(id);
            row["deadline_ms"] = json!(*deadline as i64);
            row
        })
        .collect())
}

/// Dead letters, oldest first, from `offset`: attempts, error, time and preview.
pub(super) async fn dead(
    client: &Client,
    codec: &TextCodec,
    keys: &delayq::QueueKeys,
    offset: usize,
    count: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let page = list_page(client, keys.dead(), offset, count).await?;
    Ok(page
        .into_iter()
        .map(|record| dead_row(codec, keys, record, PREVIEW))
        .collect())
}

/// A dead-letter record as JSON: id, attempts, error, time and its value shown up to `limit`
/// bytes; a record delayq did not write: its bytes and why it does not read.
pub(super) fn dead_row(
    codec: &TextCodec,
    keys: &delayq::QueueKeys,
    record: Bytes,
    limit: usize,
) -> serde_json::Value {
    let letter = delayq::reliable::dead_letter(keys.dead(), record, |_| Ok(()));
    match letter.value {
        Ok(()) => {
            let mut row = shown(codec, &letter.raw, limit);
            row["id"] = json!(record_id(&letter.record));
            row["attempts"] = json!(letter.attempts);
            row["error"] = json!(letter.error);
            row["dead_at_ms"] = json!(letter.dead_at_ms);
            row
        }
        Err(err) => {
            let mut row = shown_raw(&letter.record, limit);
            row["malformed"] = json!(err.to_string());
            row
        }
    }
}

/// Quarantined entries from `offset`: their length and first bytes in hex.
pub(super) async fn quarantine(
    client: &Client,
    keys: &delayq::QueueKeys,
    offset: usize,
    count: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let page = list_page(client, keys.quarantine(), offset, count).await?;
    Ok(page.iter().map(|entry| shown_raw(entry, PREVIEW)).collect())
}
