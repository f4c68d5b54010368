//! The crate's one error type.

use bytes::Bytes;
use std::error::Error as StdError;

/// A boxed error from a codec, kept whole so `source()` chains work.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// Result with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in delayq.
///
/// Redis errors keep fred's error as the source. Codec errors keep the codec's own error, and a
/// decode error also carries the raw bytes that could not be decoded, so a value already taken off
/// Redis is never lost because of a codec mismatch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A Redis command or connection failed.
    #[error("redis error: {0}")]
    Redis(#[from] fred::error::Error),

    /// A Lua script failed on the server (other than NOSCRIPT, which is handled).
    #[error("script {name} failed: {source}")]
    Script {
        /// The script's file name under `lua/`.
        name: &'static str,
        /// The error Redis returned.
        source: fred::error::Error,
    },

    /// A key holds a value of another Redis type than the queue expects.
    #[error("key {key:?} holds the wrong kind of value ({detail})")]
    WrongType {
        /// The key, or the queue name when the exact key is not known.
        key: String,
        /// What Redis said.
        detail: String,
    },

    /// A value could not be encoded by the queue's codec.
    #[error("{codec} codec could not encode the value: {source}")]
    Encode {
        /// The codec's name.
        codec: &'static str,
        /// The codec's own error.
        source: BoxError,
    },

    /// Bytes could not be decoded by the queue's codec.
    #[error("{codec} codec could not decode {} bytes: {source}", raw.len())]
    Decode {
        /// The codec's name.
        codec: &'static str,
        /// The bytes as they were on Redis, so the caller can keep or re-queue them.
        raw: Bytes,
        /// The codec's own error.
        source: BoxError,
    },

    /// A member of the timeout set or order list is not a valid `Bc0Lc0` or `dLc0` entry.
    #[error("malformed delayed-queue entry ({} bytes) in {key}: {reason}", entry.len())]
    MalformedEntry {
        /// The key it was read from.
        key: String,
        /// The raw entry.
        entry: Bytes,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A delay that is negative or does not fit Redisson's millisecond timestamps.
    #[error("invalid delay: {0}")]
    InvalidDelay(String),

    /// A configuration value that cannot work.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),

    /// Redis answered with something this crate did not expect.
    #[error("unexpected reply from {context}: {detail}")]
    UnexpectedReply {
        /// Which call it was.
        context: &'static str,
        /// What came back.
        detail: String,
    },

    /// The queue, scheduler or consumer was shut down.
    #[error("closed")]
    Closed,
}

impl Error {
    /// True when the error comes from a dropped or failing connection; retrying later may work.
    pub fn is_connection_error(&self) -> bool {
        use fred::error::ErrorKind;
        match self {
            Error::Redis(e) | Error::Script { source: e, .. } => matches!(
                e.kind(),
                ErrorKind::IO | ErrorKind::Canceled | ErrorKind::Timeout | ErrorKind::Routing
            ),
            _ => false,
        }
    }

    /// True for codec errors (encode or decode).
    pub fn is_codec_error(&self) -> bool {
        matches!(self, Error::Encode { .. } | Error::Decode { .. })
    }

    /// Maps a fred error from a command on `key`, recognising WRONGTYPE.
    pub(crate) fn from_redis(key: &str, err: fred::error::Error) -> Error {
        if is_wrongtype(&err) {
            Error::WrongType {
                key: key.to_owned(),
                detail: err.details().to_string(),
            }
        } else {
            Error::Redis(err)
        }
    }

    /// Maps a fred error from a script call, recognising WRONGTYPE.
    pub(crate) fn from_script(name: &'static str, queue: &str, err: fred::error::Error) -> Error {
        if is_wrongtype(&err) {
            Error::WrongType {
                key: queue.to_owned(),
                detail: err.details().to_string(),
            }
        } else if matches!(
            err.kind(),
            fred::error::ErrorKind::IO
                | fred::error::ErrorKind::Canceled
                | fred::error::ErrorKind::Timeout
        ) {
            Error::Redis(err)
        } else {
            Error::Script { name, source: err }
        }
    }
}

fn is_wrongtype(err: &fred::error::Error) -> bool {
    err.details().contains("WRONGTYPE")
}
