//! Dead letters: values that failed every attempt, kept with their last error.
//!
//! Each dead letter is one member of the list `delayq_dead:{NAME}`, in this layout (all numbers
//! big-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 4 | magic `DQD1` |
//! | 4 | attempts made (u32) |
//! | 8 | when it died, epoch ms (i64) |
//! | 4 | length `e` of the error text (u32) |
//! | e | the last error, UTF-8 (at most [`MAX_ERROR_BYTES`]; see [`bounded_error`]) |
//! | rest | the value bytes, exactly as they were on the target list |
//!
//! The client builds the header; `dead.lua` appends the value bytes it holds, so the value never
//! travels through the client on the way to the list.

use crate::codec::{decode_value, Codec};
use crate::inspect::Inspect;
use crate::queue::{Admin, DelayedQueue};
use crate::redis::ops::dead_replay;
use crate::time::Delay;
use crate::{Error, Result};
use bytes::Bytes;
use fred::interfaces::ListInterface;
use std::sync::Arc;
use std::time::Duration;

const MAGIC: &[u8; 4] = b"DQD1";
const HEADER_LEN: usize = 4 + 4 + 8 + 4;

/// Longest error text kept in a dead letter, in bytes: a longer one keeps its start and its
/// end, cut in the middle (see [`bounded_error`]).
pub const MAX_ERROR_BYTES: usize = 8192;

/// Of an error cut by [`bounded_error`], the bytes at most kept from its start.
const KEPT_START: usize = 1024;

/// A value that failed every attempt, as stored in `delayq_dead:{NAME}`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DeadLetter<V> {
    /// The decoded value, or why it could not be decoded (or the record read).
    pub value: std::result::Result<V, Arc<Error>>,
    /// The value's bytes (empty when the record itself is malformed).
    pub raw: Bytes,
    /// Attempts made before it was given up.
    pub attempts: u32,
    /// The last attempt's error.
    pub error: String,
    /// When it was given up, epoch ms.
    pub dead_at_ms: i64,
    /// The whole record, as stored (what replay and purge match on).
    pub record: Bytes,
}

/// `error` as a dead letter keeps it: whole when it has at most [`MAX_ERROR_BYTES`] bytes;
/// else its first kilobyte (what failed) and its end (an error chain's root cause, the last
/// lines a command printed), cut at char boundaries, with a mark in between saying how many
/// bytes were left out. Never longer than [`MAX_ERROR_BYTES`].
///
/// ```
/// use delayq::reliable::{bounded_error, MAX_ERROR_BYTES};
///
/// assert_eq!(bounded_error("card declined"), "card declined");
/// let long = format!("job 7 failed: {}the real cause", "x".repeat(20_000));
/// let kept = bounded_error(&long);
/// assert!(kept.len() <= MAX_ERROR_BYTES);
/// assert!(kept.starts_with("job 7 failed: ") && kept.ends_with("the real cause"));
/// assert!(kept.contains("bytes left out"));
/// ```
pub fn bounded_error(error: &str) -> std::borrow::Cow<'_, str> {
    if error.len() <= MAX_ERROR_BYTES {
        return error.into();
    }
    let start = floor_boundary(error, KEPT_START);
    // The mark at its longest (the most bytes that can be left out), so the end fits with it.
    let mark = |left_out: usize| format!(" [\u{2026} {left_out} bytes left out \u{2026}] ");
    let room = MAX_ERROR_BYTES - start - mark(error.len()).len();
    let mut end = error.len() - room;
    while !error.is_char_boundary(end) {
        end += 1;
    }
    format!("{}{}{}", &error[..start], mark(end - start), &error[end..]).into()
}

/// The largest char boundary of `text` at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The record's header for a value given up after `attempts` with `error` (kept as
/// [`bounded_error`] says), at `dead_at_ms`.
pub(crate) fn header(attempts: u32, dead_at_ms: i64, error: &str) -> Vec<u8> {
    let error = bounded_error(error);
    let error = error.as_bytes();
    let mut out = Vec::with_capacity(HEADER_LEN + error.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&attempts.to_be_bytes());
    out.extend_from_slice(&dead_at_ms.to_be_bytes());
    // At most MAX_ERROR_BYTES, so it fits.
    out.extend_from_slice(&(error.len() as u32).to_be_bytes());
    out.extend_from_slice(error);
    out
}

/// The parts of a record: attempts, time, error, value bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) attempts: u32,
    pub(crate) dead_at_ms: i64,
    pub(crate) error: String,
    pub(crate) value: Bytes,
}

/// Reads a record; never panics on any input.
pub(crate) fn parse(record: &Bytes) -> std::result::Result<Record, &'static str> {
    let bytes = record.as_ref();
    if bytes.len() < HEADER_LEN {
        return Err("shorter than a dead-letter header");
    }
    if &bytes[..4] != MAGIC {
        return Err("no DQD1 magic: not a delayq dead letter");
    }
    let word = |at: usize| -> [u8; 4] { [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]] };
    let attempts = u32::from_be_bytes(word(4));
    let mut time = [0u8; 8];
    time.copy_from_slice(&bytes[8..16]);
    let dead_at_ms = i64::from_be_bytes(time);
    let error_len = u32::from_be_bytes(word(16)) as usize;
    let error_end = HEADER_LEN
        .checked_add(error_len)
        .filter(|end| *end <= bytes.len())
        .ok_or("error length runs past the record")?;
    let error = String::from_utf8_lossy(&bytes[HEADER_LEN..error_end]).into_owned();
    Ok(Record {
        attempts,
        dead_at_ms,
        error,
        value: record.slice(error_end..),
    })
}

/// Reads a dead-letter record as stored in `delayq_dead:{NAME}` (of the queue whose dead-letter
/// list is `key`), decoding its value with `decode`: for tools that read the list themselves (a
/// dashboard's page of it). A record that does not parse is reported in [`DeadLetter::value`].
pub fn dead_letter<V>(
    key: &str,
    record: Bytes,
    decode: impl FnOnce(Bytes) -> Result<V>,
) -> DeadLetter<V> {
    match parse(&record) {
        Ok(parts) => DeadLetter {
            value: decode(parts.value.clone()).map_err(Arc::new),
            raw: parts.value,
            attempts: parts.attempts,
            error: parts.error,
            dead_at_ms: parts.dead_at_ms,
            record,
        },
        Err(reason) => DeadLetter {
            value: Err(Arc::new(Error::MalformedDeadLetter {
                key: key.to_owned(),
                record: record.clone(),
                reason,
            })),
            raw: Bytes::new(),
            attempts: 0,
            error: String::new(),
            dead_at_ms: 0,
            record,
        },
    }
}

/// The dead-letter listing (delayq only).
impl<C: Codec> Inspect<'_, DelayedQueue<C>> {
    /// The oldest `limit` dead letters (all for 0), oldest first.
    ///
    /// # Errors
    ///
    /// A Redis error. Records that do not parse or decode are reported in
    /// [`DeadLetter::value`], not skipped.
    pub async fn dead_letters(self, limit: usize) -> Result<Vec<DeadLetter<C::Value>>> {
        let key = self.queue.keys().dead();
        Ok(self
            .queue
            .own_list(key, limit)
            .await?
            .into_iter()
            .map(|record| dead_letter(key, record, |raw| decode_value(self.queue.codec(), raw)))
            .collect())
    }
}

/// Dead letters replayed and purged (delayq only).
impl<C: Codec> Admin<'_, DelayedQueue<C>> {
    /// Puts the oldest `limit` dead letters (all for 0) back into the queue, due after `delay`
    /// (straight onto the target list for zero), with fresh attempt counts. Records that do not
    /// parse stay. Returns how many were replayed; concurrent replays never replay one twice.
    ///
    /// Goes 500 records to a call (each call reads only the head of the dead-letter list), so a
    /// long replay never holds Redis long; a failure part-way leaves the calls before it done.
    ///
    /// With a [`durability`](DelayedQueue::with_durability), each call waits for its
    /// confirmations; [`Error::NotConfirmed`] then means the records of that call were replayed
    /// on the master (and the calls before it confirmed) but not confirmed.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`] or a Redis error.
    pub async fn replay_dead_letters(self, limit: usize, delay: Duration) -> Result<u64> {
        let delay = Delay::checked(delay)?;
        let mut left = if limit == 0 { usize::MAX } else { limit };
        // Records that do not parse stay at the head, ahead of the next page.
        let (mut kept_ahead, mut replayed) = (0, 0);
        while left > 0 {
            let page = left.min(dead_replay::RECORDS_PER_CALL);
            let raw = self
                .queue
                .own_list_from(self.queue.keys().dead(), kept_ahead, page)
                .await?;
            let read = raw.len();
            let records: Vec<(Bytes, Bytes)> = raw
                .into_iter()
                .filter_map(|record| parse(&record).ok().map(|parts| (record, parts.value)))
                .collect();
            kept_ahead += read - records.len();
            // Where they were, plus as many again for records that came in between.
            let window = kept_ahead + 2 * records.len();
            replayed += self.queue.replay_records(delay, window, records).await?;
            left = left.saturating_sub(read);
            if read < page {
                break;
            }
        }
        Ok(replayed)
    }

    /// Puts the one dead letter `record` (exactly as stored: [`DeadLetter::record`]) back into
    /// the queue with a fresh attempt count, due after `delay`, if it is still within the first
    /// `within` records of the list; true when it was replayed (false: replayed, purged or
    /// trimmed meanwhile, or not delayq's record). What an operator's "retry this one" does.
    ///
    /// With a [`durability`](DelayedQueue::with_durability), each call waits for its
    /// confirmations; [`Error::NotConfirmed`] then means the records of that call were replayed
    /// on the master (and the calls before it confirmed) but not confirmed.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`] or a Redis error.
    pub async fn replay_dead_letter(
        self,
        record: &Bytes,
        within: usize,
        delay: Duration,
    ) -> Result<bool> {
        let delay = Delay::checked(delay)?;
        let Ok(parts) = parse(record) else {
            return Ok(false);
        };
        let records = vec![(record.clone(), parts.value)];
        Ok(self
            .queue
            .replay_records(delay, within + 1, records)
            .await?
            > 0)
    }

    /// Deletes the one dead letter `record` (exactly as stored: [`DeadLetter::record`], or any
    /// member of the list); true when it was there.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn delete_dead_letter(self, record: &Bytes) -> Result<bool> {
        let key = self.queue.keys().dead();
        let removed: u64 = self
            .queue
            .client()
            .lrem(key, 1, record.clone())
            .await
            .map_err(|e| Error::from_redis("LREM", key, e))?;
        Ok(removed > 0)
    }

    /// Deletes every dead letter; returns how many there were.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn purge_dead_letters(self) -> Result<u64> {
        self.queue.purge_own_list(self.queue.keys().dead()).await
    }
}

impl<C: Codec> DelayedQueue<C> {
    /// One `dead_replay.lua` call, on this handle's [`writer`](DelayedQueue::writer): confirmed
    /// as its durability asks when it replayed any.
    pub(crate) async fn replay_records(
        &self,
        delay: Delay,
        window: usize,
        records: Vec<(Bytes, Bytes)>,
    ) -> Result<u64> {
        let writer = self.writer().await?;
        let replayed =
            dead_replay::run(writer.client(), self.spec(), delay, window, records).await?;
        if replayed > 0 {
            writer.confirm(self.name()).await?;
        }
        Ok(replayed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut record = header(3, 1_767_225_600_123, "boom: payment API said 503");
        record.extend_from_slice(b"order-42");
        let parsed = parse(&Bytes::from(record)).unwrap();
        assert_eq!(parsed.attempts, 3);
        assert_eq!(parsed.dead_at_ms, 1_767_225_600_123);
        assert_eq!(parsed.error, "boom: payment API said 503");
        assert_eq!(parsed.value.as_ref(), b"order-42");
    }

    #[test]
    fn long_errors_are_cut_on_a_char_boundary() {
        let error = "é".repeat(MAX_ERROR_BYTES); // 2 bytes each
        let record = Bytes::from(header(1, 0, &error));
        let parsed = parse(&record).unwrap();
        assert!(parsed.error.len() <= MAX_ERROR_BYTES);
        let (start, end) = parsed.error.split_once(" [\u{2026} ").unwrap();
        assert!(start.chars().all(|c| c == 'é'), "{start}");
        let (mark, end) = end.split_once(" \u{2026}] ").unwrap();
        assert!(end.chars().all(|c| c == 'é'), "{end}");
        let left_out = error.len() - start.len() - end.len();
        assert_eq!(mark, format!("{left_out} bytes left out"));
        assert!(parsed.value.is_empty());
    }

    #[test]
    fn a_long_error_keeps_its_start_and_its_end_within_the_bound() {
        // Every length around the bound, with 1- to 4-byte characters at the cuts.
        for filler in ["x", "é", "€", "😀"] {
            for extra in 0..8 {
                let error = format!(
                    "head:{}:tail",
                    filler.repeat((MAX_ERROR_BYTES - 10) / filler.len() + extra)
                );
                let kept = bounded_error(&error);
                assert!(kept.len() <= MAX_ERROR_BYTES, "{} > bound", kept.len());
                assert!(kept.starts_with("head:") && kept.ends_with(":tail"));
                if error.len() <= MAX_ERROR_BYTES {
                    assert_eq!(kept, error);
                } else {
                    assert!(kept.contains("bytes left out"), "{filler} {extra}");
                }
            }
        }
        let huge = "z".repeat(1 << 20);
        assert!(bounded_error(&huge).len() <= MAX_ERROR_BYTES);
    }

    #[test]
    fn malformed_records_are_refused_without_panicking() {
        assert!(parse(&Bytes::from_static(b"")).is_err());
        assert!(parse(&Bytes::from_static(b"DQD1\0\0\0\x01")).is_err());
        let mut wrong_magic = header(1, 0, "x");
        wrong_magic[0] = b'X';
        assert!(parse(&Bytes::from(wrong_magic)).is_err());
        let mut too_long = header(1, 0, "");
        too_long[16..20].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse(&Bytes::from(too_long)).is_err());
        // Every prefix of a good record either parses or is refused; none panics.
        let mut good = header(2, 5, "err");
        good.extend_from_slice(b"value");
        for end in 0..=good.len() {
            let _ = parse(&Bytes::copy_from_slice(&good[..end]));
        }
        let letter = dead_letter("k", Bytes::from_static(b"junk"), |raw| Ok(raw.len()));
        assert!(letter.value.is_err());
    }
}
