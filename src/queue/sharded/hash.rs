//! Shard choice and handles: the JDK's `CRC32` of a value's encoded bytes, and
//! [`ShardedHandle`] (an entry's handle with its shard).

use crate::entry::OfferHandle;

/// The CRC-32 table of the IEEE polynomial (reflected, `0xEDB88320`), as `java.util.zip.CRC32`.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
};

/// `java.util.zip.CRC32` of `bytes` (`getValue()`).
fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |crc, &b| {
        CRC_TABLE[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8)
    })
}

/// The shard of a value whose encoded bytes are `encoded`, in a layout of `shards` shards: the
/// JDK's CRC32 of the bytes modulo `shards` (0 for no shards).
///
/// Java, with the JDK alone: `CRC32 crc = new CRC32(); crc.update(bytes); int shard = (int)
/// (crc.getValue() % shards);`, where `bytes` is what the Redisson codec writes for the value
/// (`codec.getValueEncoder().encode(value)`).
///
/// ```
/// // "123456789" is CRC-32's check string: its CRC is 0xCBF43926.
/// assert_eq!(delayq::shard_of(b"123456789", 1 << 16), 0x3926);
/// assert_eq!(delayq::shard_of(b"order-17", 12), delayq::shard_of(b"order-17", 12));
/// ```
pub fn shard_of(encoded: &[u8], shards: usize) -> usize {
    match shards {
        0 => 0,
        n => (u64::from(crc32(encoded)) % n as u64) as usize,
    }
}

/// An offered entry's handle with its shard, from [`ShardedQueue::offer_with_handle`](crate::ShardedQueue::offer_with_handle), for
/// [`cancel`](crate::ShardedQueue::cancel) and [`reschedule_by_id`](crate::ShardedQueue::reschedule_by_id). Prints as
/// `SHARD:HANDLE` (`3:0801…`) and parses back from it.
///
/// ```
/// use delayq::ShardedHandle;
///
/// let handle: ShardedHandle = "3:080102030405060708".parse().unwrap();
/// assert_eq!(handle.shard(), 3);
/// assert_eq!(handle.to_string(), "3:080102030405060708");
/// assert!("3".parse::<ShardedHandle>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardedHandle {
    shard: usize,
    handle: OfferHandle,
}

impl ShardedHandle {
    /// The handle of entry `handle` in shard `shard`.
    pub fn new(shard: usize, handle: OfferHandle) -> ShardedHandle {
        ShardedHandle { shard, handle }
    }

    /// The shard the entry is in.
    pub fn shard(&self) -> usize {
        self.shard
    }

    /// The entry's handle within its shard.
    pub fn handle(&self) -> &OfferHandle {
        &self.handle
    }
}

impl std::fmt::Display for ShardedHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.shard, self.handle)
    }
}

/// Text that is not a [`ShardedHandle`] (`SHARD:HANDLE`, a number and 18 hex digits).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a sharded handle is SHARD:HANDLE, a shard number and 18 hex digits")]
pub struct ParseShardedHandleError;

impl std::str::FromStr for ShardedHandle {
    type Err = ParseShardedHandleError;

    fn from_str(text: &str) -> std::result::Result<ShardedHandle, ParseShardedHandleError> {
        let (shard, handle) = text.split_once(':').ok_or(ParseShardedHandleError)?;
        Ok(ShardedHandle {
            shard: shard.parse().map_err(|_| ParseShardedHandleError)?,
            handle: handle.parse().map_err(|_| ParseShardedHandleError)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_the_jdks() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        // The check value every CRC-32 (IEEE) table lists for this sentence.
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }

    #[test]
    fn shards_spread_and_stay_put() {
        let mut counts = [0usize; 12];
        for i in 0..12_000 {
            counts[shard_of(format!("order-{i}").as_bytes(), 12)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (800..1200).contains(&c)),
            "{counts:?}"
        );
        // jshell: CRC32 c = new CRC32(); c.update("order-17".getBytes(UTF_8)); c.getValue() % 12
        assert_eq!(shard_of(b"order-17", 12), 8);
        assert_eq!(shard_of(b"x", 1), 0);
        assert_eq!(shard_of(b"x", 0), 0);
    }

    #[test]
    fn handles_round_trip() {
        let handle: ShardedHandle = "11:080102030405060708".parse().unwrap();
        assert_eq!(handle.shard(), 11);
        assert_eq!(handle.to_string().parse::<ShardedHandle>().unwrap(), handle);
        for bad in [
            "",
            ":",
            "x:080102030405060708",
            "1:0801",
            "-1:080102030405060708",
        ] {
            assert!(bad.parse::<ShardedHandle>().is_err(), "{bad}");
        }
    }
}
