//! Bounded reads of a queue's lists for the dashboard: each member's first bytes and its whole
//! length, never the whole value (a 16 MiB value would otherwise be sent, and turned into JSON,
//! on every refresh).

use crate::text_codec::TextCodec;
use bytes::Bytes;
use delayq::codec::Codec;
use delayq::entry::{unpack_head, EntryFormat};
use delayq::fred::clients::Client;
use delayq::fred::interfaces::LuaInterface;
use delayq::fred::types::Value;
use serde_json::json;

/// Bytes of a value shown.
pub(super) const PREVIEW: usize = 256;
/// Bytes of a pending entry read: its longest header (a 255-byte id) and the preview.
const ENTRY_HEAD: usize = 1 + 255 + 8 + PREVIEW;
/// Bytes of a dead letter read: its header, its longest error and the preview.
const DEAD_HEAD: usize = 20 + delayq::reliable::MAX_ERROR_BYTES + PREVIEW;

/// For the members `ARGV[1]`..`ARGV[2]` of the list `KEYS[1]`: the first `ARGV[3]` bytes, the
/// whole length, and (with `KEYS[2]`, the timeout zset) the member's score there. The members
/// are copied inside Redis only; the reply holds the heads.
const HEADS: &str = r"
local items = redis.call('LRANGE', KEYS[1], ARGV[1], ARGV[2])
local out = {}
for i, item in ipairs(items) do
  local score = false
  if KEYS[2] then score = redis.call('ZSCORE', KEYS[2], item) end
  out[i] = {string.sub(item, 1, tonumber(ARGV[3])), #item, score}
end
return out
";

/// One member's first bytes, its length and its score in the zset given.
struct Head {
    bytes: Bytes,
    len: u64,
    score: Option<f64>,
}

/// `count` members of `list` from `offset`, each read up to `head` bytes; with `zset`, their
/// scores in it.
async fn heads(
    client: &Client,
    list: &str,
    zset: Option<&str>,
    offset: usize,
    count: usize,
    head: usize,
) -> anyhow::Result<Vec<Head>> {
    let mut keys = vec![list.to_owned()];
    keys.extend(zset.map(str::to_owned));
    let last = offset + count.max(1) - 1;
    let args = vec![offset.to_string(), last.to_string(), head.to_string()];
    let reply: Value = client.eval(HEADS, keys, args).await?;
    let Value::Array(items) = reply else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Value::Array(mut parts) = item else {
            anyhow::bail!("an unexpected reply from the preview script");
        };
        parts.resize(3, Value::Null);
        let score = parts[2].as_f64();
        out.push(Head {
            bytes: parts[0]
                .as_bytes()
                .map(Bytes::copy_from_slice)
                .unwrap_or_default(),
            len: parts[1].as_u64().unwrap_or(0),
            score,
        });
    }
    Ok(out)
}

/// A value's preview as JSON: `value` (decoded when whole, else its first bytes as text, or hex
/// when they are not text), `len` (bytes) and `cut` (whether `value` is only its start).
fn shown(codec: &TextCodec, value: &[u8], len: u64) -> serde_json::Value {
    let cut = (value.len() as u64) < len;
    let start = &value[..value.len().min(PREVIEW)];
    let text = match cut {
        false => codec.decode(value).ok(),
        true => None,
    };
    let text = text.unwrap_or_else(|| match std::str::from_utf8(start) {
        Ok(text) => text.to_owned(),
        // Cut inside a character: the text before it.
        Err(err) if err.error_len().is_none() => {
            String::from_utf8_lossy(&start[..err.valid_up_to()]).into_owned()
        }
        Err(_) => hex(start),
    });
    json!({ "value": text, "len": len, "cut": cut || value.len() > PREVIEW })
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Pending entries in offer order from `offset`: due time, handle and preview.
pub(super) async fn pending(
    client: &Client,
    codec: &TextCodec,
    keys: &delayq::QueueKeys,
    format: EntryFormat,
    offset: usize,
    count: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let read = heads(
        client,
        keys.order(),
        Some(keys.timeout()),
        offset,
        count,
        ENTRY_HEAD,
    );
    Ok(read
        .await?
        .into_iter()
        .map(|head| {
            let due_ms = head.score.map(|s| s as i64);
            match unpack_head(&head.bytes, head.len, format) {
                Ok(entry) => {
                    let header = (head.bytes.len() - entry.value.len()) as u64;
                    let mut row = shown(codec, entry.value, head.len - header);
                    row["due_ms"] = json!(due_ms);
                    row["handle"] = json!(hex(entry.id));
                    row
                }
                Err(err) => json!({
                    "due_ms": due_ms,
                    "value": hex(&head.bytes[..head.bytes.len().min(PREVIEW)]),
                    "len": head.len,
                    "cut": head.len > PREVIEW as u64,
                    "error": format!("not an entry: {err}"),
                }),
            }
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
    let read = heads(client, keys.dead(), None, offset, count, DEAD_HEAD).await?;
    Ok(read
        .into_iter()
        .map(|head| {
            let header = head.bytes.len() as u64;
            let letter = delayq::reliable::dead_letter(keys.dead(), head.bytes, |_| Ok(()));
            let value_len = head.len - (header - letter.raw.len() as u64);
            let mut row = shown(codec, &letter.raw, value_len);
            row["attempts"] = json!(letter.attempts);
            row["error"] = json!(letter.error);
            row["dead_at_ms"] = json!(letter.dead_at_ms);
            row
        })
        .collect())
}

/// Quarantined entries from `offset`: their length and first bytes in hex.
pub(super) async fn quarantine(
    client: &Client,
    keys: &delayq::QueueKeys,
    offset: usize,
    count: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let read = heads(client, keys.quarantine(), None, offset, count, PREVIEW).await?;
    Ok(read
        .into_iter()
        .map(|head| json!({ "len": head.len, "hex": hex(&head.bytes), "cut": head.len > PREVIEW as u64 }))
        .collect())
}
