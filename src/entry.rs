//! Packing of pending entries, as Redisson's scripts build them with Lua's `struct` library.
//!
//! Current format (Redisson 3.21.1 and later), `struct.pack('Bc0Lc0', 8, id, #value, value)`:
//!
//! | bytes | content |
//! |---|---|
//! | 1 | length of the random id (always 8) |
//! | 8 | random id |
//! | 8 | length of the value, little-endian `unsigned long` |
//! | n | the encoded value |
//!
//! Legacy format (Redisson before 3.21.1), `struct.pack('dLc0', random, #value, value)`: an
//! 8-byte little-endian double, the 8-byte length, the value.
//!
//! The total length tells the two apart (`1 + 8 + 8 + n` against `8 + 8 + n`, with the length
//! field matching); in the rare case where both readings fit, the queue's configured format wins.
//! Entries are packed on the Redis server (`lua/lib/entry.lua`), so that the bytes are exactly the
//! server's own `struct.pack` output; this module reads them, and packs them for tests and tools
//! that write entries by hand.

/// Which entry packing a queue writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum EntryFormat {
    /// `Bc0Lc0` with an 8-byte random id: Redisson 3.21.1 and later.
    #[default]
    Current,
    /// `dLc0` with a random double: Redisson 2.7.0/3.2.0 up to 3.21.0.
    Legacy,
}

impl EntryFormat {
    /// The second argument of every script: `0` (current) or `1` (legacy), the format new
    /// entries are written in and the reading preferred for an entry that fits both.
    pub(crate) fn to_arg(self) -> fred::types::Value {
        match self {
            EntryFormat::Current => "0",
            EntryFormat::Legacy => "1",
        }
        .into()
    }

    /// A fresh random id for a new entry, as the scripts pack it: 8 random bytes (current), or
    /// a random long as decimal text that Lua turns into the double (legacy; Redisson before
    /// 3.21.1 sent the same).
    pub(crate) fn random_id(self) -> fred::types::Value {
        match self {
            EntryFormat::Current => {
                fred::types::Value::Bytes(bytes::Bytes::copy_from_slice(&rand::random::<[u8; 8]>()))
            }
            EntryFormat::Legacy => rand::random::<i64>().to_string().into(),
        }
    }

    /// A fresh random id for a new entry of a `value_len`-byte value, and the handle of the
    /// entry it makes (see [`OfferHandle`]).
    pub(crate) fn new_id(self, value_len: usize) -> (fred::types::Value, OfferHandle) {
        match self {
            EntryFormat::Current => {
                let id = rand::random::<[u8; 8]>();
                let mut handle = [0u8; HANDLE_LEN];
                handle[0] = 8;
                handle[1..].copy_from_slice(&id);
                (
                    fred::types::Value::Bytes(bytes::Bytes::copy_from_slice(&id)),
                    OfferHandle(handle),
                )
            }
            EntryFormat::Legacy => {
                let id = rand::random::<i64>();
                // Lua turns the decimal text into the nearest double, as `as f64` does.
                let mut handle = [0u8; HANDLE_LEN];
                handle[..8].copy_from_slice(&(id as f64).to_le_bytes());
                handle[8] = (value_len as u64).to_le_bytes()[0];
                (id.to_string().into(), OfferHandle(handle))
            }
        }
    }
}

/// Bytes of an [`OfferHandle`].
const HANDLE_LEN: usize = 9;

/// The handle of one offered entry: the entry's id, which no other pending entry shares, so that
/// [`DelayedQueue::cancel`](crate::DelayedQueue::cancel) and
/// [`DelayedQueue::reschedule_by_id`](crate::DelayedQueue::reschedule_by_id) act on exactly that
/// entry, whatever its value.
///
/// It is the entry's first 9 bytes: the id-length byte and the 8 random bytes of a current entry,
/// or the random double and the first byte of the value length of a legacy one. It prints as 18
/// hex digits and parses back from them, to be stored with whatever the entry is about (an
/// order, a session); it stays valid while the entry is pending, on any client of the queue.
///
/// ```
/// use delayq::entry::{pack, OfferHandle};
///
/// let entry = pack(&[1, 2, 3, 4, 5, 6, 7, 8], b"order-42");
/// let handle = OfferHandle::of_entry(&entry).unwrap();
/// assert_eq!(handle.to_string(), "080102030405060708");
/// assert_eq!("080102030405060708".parse::<OfferHandle>().unwrap(), handle);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OfferHandle([u8; HANDLE_LEN]);

impl OfferHandle {
    /// The handle of a raw pending entry (as [`Inspect::pending`](crate::inspect::Inspect)
    /// tools or a Java peer see it); `None` when it is too short to be an entry.
    pub fn of_entry(entry: &[u8]) -> Option<OfferHandle> {
        if entry.len() < 16 {
            return None;
        }
        let mut bytes = [0u8; HANDLE_LEN];
        bytes.copy_from_slice(&entry[..HANDLE_LEN]);
        Some(OfferHandle(bytes))
    }

    /// The handle from its 9 bytes.
    pub fn from_bytes(bytes: [u8; HANDLE_LEN]) -> OfferHandle {
        OfferHandle(bytes)
    }

    /// Its 9 bytes.
    pub fn as_bytes(&self) -> &[u8; HANDLE_LEN] {
        &self.0
    }
}

impl std::fmt::Display for OfferHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

/// Text that is not an [`OfferHandle`] (18 hex digits).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an offer handle is 18 hex digits")]
pub struct ParseHandleError;

impl std::str::FromStr for OfferHandle {
    type Err = ParseHandleError;

    fn from_str(text: &str) -> Result<OfferHandle, ParseHandleError> {
        if text.len() != HANDLE_LEN * 2 || !text.is_ascii() {
            return Err(ParseHandleError);
        }
        let mut bytes = [0u8; HANDLE_LEN];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte =
                u8::from_str_radix(&text[i * 2..i * 2 + 2], 16).map_err(|_| ParseHandleError)?;
        }
        Ok(OfferHandle(bytes))
    }
}

/// One pending entry, read from its raw bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The format it was packed in.
    pub format: EntryFormat,
    /// The random part: the id bytes (current) or the double's 8 bytes (legacy).
    pub id: &'a [u8],
    /// The encoded value.
    pub value: &'a [u8],
}

/// Why bytes are not an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// Shorter than the smallest entry (16 bytes).
    #[error("too short to be an entry")]
    TooShort,
    /// Neither format's length fields agree with the total length.
    #[error("length fields do not match the entry's size")]
    LengthMismatch,
}

const LEN_FIELD: usize = 8;

fn read_len(raw: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; LEN_FIELD] = raw.get(at..at + LEN_FIELD)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// `raw` read as a current-format entry that is `total` bytes long (`raw` may be only its start:
/// then `value` is only the value's start).
fn as_current(raw: &[u8], total: u64) -> Option<Entry<'_>> {
    let id_len = usize::from(*raw.first()?);
    let len_at = 1 + id_len;
    let value_len = read_len(raw, len_at)?;
    let value_at = len_at + LEN_FIELD;
    let expected = u64::try_from(value_at).ok()?.checked_add(value_len)?;
    (expected == total).then(|| Entry {
        format: EntryFormat::Current,
        id: &raw[1..len_at],
        value: &raw[value_at..],
    })
}

/// `raw` read as a legacy-format entry that is `total` bytes long, as [`as_current`].
fn as_legacy(raw: &[u8], total: u64) -> Option<Entry<'_>> {
    let value_len = read_len(raw, 8)?;
    let value_at = 8 + LEN_FIELD;
    let expected = (value_at as u64).checked_add(value_len)?;
    (expected == total).then(|| Entry {
        format: EntryFormat::Legacy,
        id: &raw[..8],
        value: &raw[value_at..],
    })
}

/// Reads an entry in either format; `prefer` breaks the rare tie where both readings fit.
///
/// # Examples
///
/// ```
/// use delayq::entry::{unpack, EntryFormat};
///
/// let raw = [8, 1, 2, 3, 4, 5, 6, 7, 8, 3, 0, 0, 0, 0, 0, 0, 0, b'a', b'b', b'c'];
/// let entry = unpack(&raw, EntryFormat::Current).unwrap();
/// assert_eq!(entry.value, b"abc");
/// assert_eq!(entry.format, EntryFormat::Current);
/// assert!(unpack(&raw[..19], EntryFormat::Current).is_err());
/// ```
pub fn unpack(raw: &[u8], prefer: EntryFormat) -> Result<Entry<'_>, EntryError> {
    unpack_head(raw, raw.len() as u64, prefer)
}

/// Reads the start `head` of an entry that is `total` bytes long, as [`unpack`] reads a whole
/// one: the returned `value` is the part of the value inside `head`, and the value is
/// `total - (head.len() - value.len())` bytes long. `head` must hold the entry's length fields
/// (the first 264 bytes always do).
///
/// # Examples
///
/// ```
/// use delayq::entry::{unpack_head, EntryFormat};
///
/// let raw = [8, 1, 2, 3, 4, 5, 6, 7, 8, 3, 0, 0, 0, 0, 0, 0, 0, b'a', b'b', b'c'];
/// let entry = unpack_head(&raw[..18], 20, EntryFormat::Current).unwrap();
/// assert_eq!(entry.value, b"a");
/// ```
pub fn unpack_head(head: &[u8], total: u64, prefer: EntryFormat) -> Result<Entry<'_>, EntryError> {
    if total < 16 || head.len() < 16 {
        return Err(EntryError::TooShort);
    }
    let (first, second) = match prefer {
        EntryFormat::Current => (as_current(head, total), as_legacy(head, total)),
        EntryFormat::Legacy => (as_legacy(head, total), as_current(head, total)),
    };
    first.or(second).ok_or(EntryError::LengthMismatch)
}

/// Packs a current-format entry (`Bc0Lc0`), as Redisson's offer script does on the server.
pub fn pack(id: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + id.len() + LEN_FIELD + value.len());
    // Lua's struct writes the low byte of the id length, as `B` does.
    out.push(id.len() as u8);
    out.extend_from_slice(id);
    out.extend_from_slice(&(value.len() as u64).to_le_bytes());
    out.extend_from_slice(value);
    out
}

/// Packs a legacy-format entry (`dLc0`) around the random double `random`.
pub fn pack_legacy(random: f64, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + value.len());
    out.extend_from_slice(&random.to_le_bytes());
    out.extend_from_slice(&(value.len() as u64).to_le_bytes());
    out.extend_from_slice(value);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spec_example_bytes() {
        let packed = pack(&[1, 2, 3, 4, 5, 6, 7, 8], b"abc");
        assert_eq!(
            packed,
            [8, 1, 2, 3, 4, 5, 6, 7, 8, 3, 0, 0, 0, 0, 0, 0, 0, 0x61, 0x62, 0x63]
        );
        let long = pack(&[0; 8], &[0u8; 300]);
        assert_eq!(&long[9..17], &[0x2c, 0x01, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn legacy_entries_are_detected() {
        let raw = pack_legacy(-1234567.0, b"hello");
        let entry = unpack(&raw, EntryFormat::Current).unwrap();
        assert_eq!(entry.format, EntryFormat::Legacy);
        assert_eq!(entry.value, b"hello");
        assert_eq!(entry.id, &(-1234567.0f64).to_le_bytes());
    }

    #[test]
    fn ambiguous_entry_follows_preference() {
        // Legacy: 8-byte double whose first byte is 8 and whose last byte is 1, length 1, value 0.
        // Read as current: id length 8, id = bytes 1..9, length field = bytes 9..17 = 0, no value.
        let mut raw = vec![8, 0, 0, 0, 0, 0, 0, 1];
        raw.extend_from_slice(&1u64.to_le_bytes());
        raw.push(0);
        assert_eq!(raw.len(), 17);
        let current = unpack(&raw, EntryFormat::Current).unwrap();
        let legacy = unpack(&raw, EntryFormat::Legacy).unwrap();
        assert_eq!(current.format, EntryFormat::Current);
        assert_eq!(current.value, b"");
        assert_eq!(legacy.format, EntryFormat::Legacy);
        assert_eq!(legacy.value, [0]);
    }

    #[test]
    fn malformed_entries_are_errors() {
        assert_eq!(unpack(b"", EntryFormat::Current), Err(EntryError::TooShort));
        let mut bad = pack(&[9; 8], b"abc");
        bad.push(0);
        assert_eq!(
            unpack(&bad, EntryFormat::Current),
            Err(EntryError::LengthMismatch)
        );
        let mut huge = pack(&[9; 8], b"abc");
        huge[9..17].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(unpack(&huge, EntryFormat::Current).is_err());
    }

    proptest! {
        #[test]
        fn unpack_never_panics(raw in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = unpack(&raw, EntryFormat::Current);
            let _ = unpack(&raw, EntryFormat::Legacy);
        }

        #[test]
        fn pack_then_unpack(id in proptest::array::uniform8(any::<u8>()), value in proptest::collection::vec(any::<u8>(), 0..300)) {
            let raw = pack(&id, &value);
            let entry = unpack(&raw, EntryFormat::Current).unwrap();
            prop_assert_eq!(entry.value, &value[..]);
            prop_assert_eq!(entry.id, &id[..]);
        }
    }
}
