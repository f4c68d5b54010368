//! A dead letter by its id (what its row shows, [`record_id`]): found near the position a page
//! showed it at, then retried (back onto the target list with a fresh attempt count) or
//! deleted, through the library's [`Admin`](delayq::admin::Admin) calls on the whole record.
//! The dashboard's `POST .../dead/{at}/{id}/{retry,delete}` and `delayq dead retry|delete` both
//! come here.

use super::rows::{self, record_id, record_id_of, READ};
use super::{locate, WINDOW};
use crate::text_codec::TextCodec;
use bytes::Bytes;
use delayq::fred::clients::Client;
use delayq::fred::interfaces::ListInterface;
use delayq::inspect::{Preview, PreviewList};
use delayq::DelayedQueue;

/// The dead letter `id` of `queue`, read at position `at` (or from the head when not given),
/// its first `shown` bytes: looked for from `WINDOW` positions nearer the head than `at`, since
/// records leave the list only from the head; with its position now.
pub(crate) async fn locate_dead(
    queue: &DelayedQueue<TextCodec>,
    at: Option<usize>,
    id: &str,
    shown: usize,
) -> anyhow::Result<Option<(usize, Preview)>> {
    let start = at.map_or(0, |at| (at + 1).saturating_sub(WINDOW));
    // The id is made from a record's first READ bytes: read at least those.
    let shown = shown.max(READ);
    let read = |offset, count| rows::page(queue, PreviewList::Dead, offset, count, shown);
    let is_it = |member: &Preview| record_id_of(&member.head, member.len.unwrap_or_default()) == id;
    locate(start, read, is_it).await
}

/// Puts the dead letter `id` (read at `at`) back onto the target list with a fresh attempt
/// count; false when it is not there (retried, deleted or trimmed meanwhile).
pub(crate) async fn retry(
    client: &Client,
    queue: &DelayedQueue<TextCodec>,
    at: Option<usize>,
    id: &str,
) -> anyhow::Result<bool> {
    let Some((now_at, record)) = record(client, queue, at, id).await? else {
        return Ok(false);
    };
    Ok(queue
        .admin()
        .replay_dead_letter(&record, now_at + 1, std::time::Duration::ZERO)
        .await?)
}

/// Deletes the dead letter `id` (read at `at`); false when it is not there.
pub(crate) async fn delete(
    client: &Client,
    queue: &DelayedQueue<TextCodec>,
    at: Option<usize>,
    id: &str,
) -> anyhow::Result<bool> {
    let Some((_, record)) = record(client, queue, at, id).await? else {
        return Ok(false);
    };
    Ok(queue.admin().delete_dead_letter(&record).await?)
}

/// The whole dead-letter record `id` of `queue` (read at `at`) and where it is now: found by
/// its first bytes (one record per command, at most a window of them), then read whole by its
/// position, the one command that copies it; `None` when it is gone, or moved between the two
/// reads.
async fn record(
    client: &Client,
    queue: &DelayedQueue<TextCodec>,
    at: Option<usize>,
    id: &str,
) -> anyhow::Result<Option<(usize, Bytes)>> {
    // Records only leave the head (replays, trimming), so it is at `at` or nearer the head.
    let Some((now_at, _)) = locate_dead(queue, at, id, READ).await? else {
        return Ok(None);
    };
    let record: Option<Bytes> = client.lindex(queue.keys().dead(), now_at as i64).await?;
    Ok(record
        .filter(|record| record_id(record) == id)
        .map(|record| (now_at, record)))
}
