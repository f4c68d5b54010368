//! The crate's one error type, and the one place where Redis's replies are classified.

use crate::entry::EntryError;
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
        /// The key (when Redis did not say which, the queue's target list).
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
    #[error("malformed delayed-queue entry ({} bytes) in {key}", entry.len())]
    MalformedEntry {
        /// The key it was read from.
        key: String,
        /// The raw entry.
        entry: Bytes,
        /// What is wrong with it.
        source: EntryError,
    },

    /// A member of the dead-letter list is not a record delayq wrote.
    #[error("malformed dead letter ({} bytes) in {key}: {reason}", record.len())]
    MalformedDeadLetter {
        /// The dead-letter list.
        key: String,
        /// The raw record.
        record: Bytes,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// The stored limits hash of a queue is not one delayq wrote (a field it does not know, a
    /// number that does not parse or is out of range, limits that do not validate): workers
    /// take nothing from the queue until the limits are stored again or cleared.
    #[error("malformed limits in {key}: {reason}")]
    MalformedLimits {
        /// The limits hash.
        key: String,
        /// What is wrong with it, naming the field.
        reason: String,
    },

    /// Redis refused a command because of its own state or this user's rights: out of memory,
    /// no permission, busy with a script, a read-only replica, loading, master down.
    #[error("redis refused {command} on {key}: {refusal} ({detail})")]
    Refused {
        /// Why.
        refusal: Refusal,
        /// The command or script (`"BLPOP"`, `"offer.lua"`).
        command: &'static str,
        /// The key it was for (for a script, the queue's target list).
        key: String,
        /// What Redis said.
        detail: String,
    },

    /// A TLS connection could not be set up: the server's certificate was not accepted, or the
    /// server did not accept this client.
    #[error("TLS with {server} failed: {failure}")]
    Tls {
        /// Why, in a sentence; each kind's docs name the [`TlsOptions`](crate::TlsOptions)
        /// setting that helps.
        failure: TlsFailure,
        /// The server(s) dialled, `host:port`.
        server: String,
        /// What the TLS library reported, for logs.
        detail: String,
    },

    /// A value longer than the server takes in one argument (its `proto-max-bulk-len`); refused
    /// before anything is sent, since Redis would read it whole and then drop the connection.
    #[error(
        "the value is {len} bytes, more than this Redis server takes in one argument \
         (proto-max-bulk-len {limit} bytes); nothing was sent"
    )]
    ValueTooLarge {
        /// The encoded value's length.
        len: usize,
        /// The server's limit.
        limit: u64,
    },

    /// A durable write ([`Durability`](crate::Durability)) whose confirmations did not come in
    /// time. The value **was written** on the master, but fewer replicas (or no AOF fsync)
    /// confirmed it than asked: it may or may not survive a failover. Not a success, and not a
    /// failure to write either: treat the outcome as unknown (check before writing it again,
    /// or write it again if a duplicate is harmless).
    #[error(
        "the value was written on the master but not confirmed: {acked_replicas} of \
         {wanted_replicas} replicas acknowledged it{aof} within {timeout:?}; it may or may not \
         survive a failover",
        aof = match (wanted_local_aof, local_aof) {
            (true, false) => " and the master's AOF did not confirm it",
            _ => "",
        }
    )]
    NotConfirmed {
        /// Replicas the write waited for.
        wanted_replicas: u32,
        /// Replicas that acknowledged it (0 also when the wait could not run on the write's
        /// connection: dropped, or replaced by a reconnection).
        acked_replicas: u32,
        /// Whether the write waited for the master's AOF.
        wanted_local_aof: bool,
        /// Whether the master's AOF confirmed it.
        local_aof: bool,
        /// How long the write waited.
        timeout: std::time::Duration,
    },

    /// A delay that is negative or does not fit Redisson's millisecond timestamps.
    #[error("invalid delay: {0}")]
    InvalidDelay(String),

    /// A configuration value that cannot work.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),

    /// A recurring schedule that cannot be kept: a bad cron expression or time zone, an
    /// interval of zero, an end before its start, an id that is empty.
    #[error("invalid schedule: {0}")]
    InvalidSchedule(String),

    /// Limits that cannot work ([`Limits`](crate::limit::Limits)): a count or rate of 0, or a
    /// key rule that does not compile. (A stored hash that delayq did not write is
    /// [`MalformedLimits`](Self::MalformedLimits).)
    #[error("invalid limits: {0}")]
    InvalidLimits(String),

    /// No recurring schedule of that id on the queue.
    #[error("no schedule {id:?} on queue {queue:?}")]
    NoSuchSchedule {
        /// The queue.
        queue: String,
        /// The schedule's id.
        id: String,
    },

    /// Redis answered with something this crate did not expect.
    #[error("unexpected reply from {context}: {detail}")]
    UnexpectedReply {
        /// Which call it was.
        context: &'static str,
        /// What came back.
        detail: String,
    },

    /// The process's signal handlers could not be installed (a worker stopping on SIGTERM).
    #[error("cannot listen for signals")]
    Signal(#[source] std::io::Error),

    /// The queue, scheduler or consumer was shut down.
    #[error("closed")]
    Closed,
}

/// Why Redis refused a command ([`Error::Refused`]), from the code its reply starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// `OOM`: `maxmemory` is reached and the policy does not evict (noeviction).
    OutOfMemory,
    /// `NOPERM`: this ACL user may not run the command or use the key or channel.
    NoPermission,
    /// `BUSY`: a script runs longer than the busy threshold; nothing else runs until it ends.
    Busy,
    /// `READONLY`: the server is a replica (a failover moved the master).
    ReadOnly,
    /// `LOADING`: the server is loading its data set after a restart.
    Loading,
    /// `MASTERDOWN`: a replica lost its master and refuses stale reads.
    MasterDown,
    /// `NOREPLICAS`: too few replicas for `min-replicas-to-write`.
    NoReplicas,
    /// `MISCONF`: the server cannot persist (a failed RDB save) and refuses writes.
    Misconfigured,
}

impl Refusal {
    /// The refusal a reply's error code means, if any.
    fn of(details: &str) -> Option<Refusal> {
        let code = details.split_whitespace().next().unwrap_or("");
        Some(match code {
            "OOM" => Refusal::OutOfMemory,
            "NOPERM" => Refusal::NoPermission,
            "BUSY" => Refusal::Busy,
            "READONLY" => Refusal::ReadOnly,
            "LOADING" => Refusal::Loading,
            "MASTERDOWN" => Refusal::MasterDown,
            "NOREPLICAS" => Refusal::NoReplicas,
            "MISCONF" => Refusal::Misconfigured,
            _ => return None,
        })
    }

    /// True when the refusal ends by itself (a script ends, a restart finishes loading, a
    /// failover completes); false when someone has to act (memory, permissions, persistence).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            Refusal::Busy
                | Refusal::ReadOnly
                | Refusal::Loading
                | Refusal::MasterDown
                | Refusal::NoReplicas
        )
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::OutOfMemory => "out of memory (maxmemory reached, nothing evictable)",
            Refusal::NoPermission => "no permission for this ACL user",
            Refusal::Busy => "busy running a script",
            Refusal::ReadOnly => "read-only replica",
            Refusal::Loading => "still loading its data",
            Refusal::MasterDown => "master down",
            Refusal::NoReplicas => "not enough replicas",
            Refusal::Misconfigured => "cannot persist (MISCONF)",
        })
    }
}

/// Why a TLS connection failed ([`Error::Tls`]), read from what rustls reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The server's certificate does not lead to a CA this client trusts: trust the CA that
    /// signed it with [`TlsOptions::ca_file`](crate::TlsOptions::ca_file).
    UnknownIssuer,
    /// The server's certificate does not carry the host name dialled (say, the server is
    /// reached by IP address): give a name it carries with
    /// [`TlsOptions::server_name`](crate::TlsOptions::server_name).
    WrongName,
    /// The server's certificate has expired or is not valid yet (or this host's clock is off).
    Expired,
    /// The server's certificate is not acceptable for another reason.
    BadServerCertificate,
    /// The server requires a client certificate and none was given:
    /// [`TlsOptions::client_cert`](crate::TlsOptions::client_cert).
    ClientCertificateRequired,
    /// The server refused the client certificate (not signed by a CA it trusts, expired, ...).
    ClientCertificateRefused,
}

impl TlsFailure {
    /// The failure a fred error's text shows, if it is one: fred keeps rustls's error only as
    /// text (`Custom { kind: InvalidData, error: InvalidCertificate(UnknownIssuer) }`).
    fn of(details: &str) -> Option<TlsFailure> {
        let has = |marker: &str| details.contains(marker);
        Some(if has("UnknownIssuer") {
            TlsFailure::UnknownIssuer
        } else if has("NotValidForName") {
            TlsFailure::WrongName
        } else if has("InvalidCertificate(Expired") || has("InvalidCertificate(NotValidYet") {
            TlsFailure::Expired
        } else if has("InvalidCertificate(") {
            TlsFailure::BadServerCertificate
        } else if has("AlertReceived(CertificateRequired)") {
            TlsFailure::ClientCertificateRequired
        } else if has("AlertReceived(BadCertificate)")
            || has("AlertReceived(UnknownCA)")
            || has("AlertReceived(CertificateUnknown)")
            || has("AlertReceived(CertificateExpired)")
            || has("AlertReceived(UnsupportedCertificate)")
        {
            TlsFailure::ClientCertificateRefused
        } else {
            return None;
        })
    }
}

impl std::fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsFailure::UnknownIssuer => {
                "the server's certificate is not signed by a CA this client trusts"
            }
            TlsFailure::WrongName => {
                "the server's certificate does not carry the name this client expected"
            }
            TlsFailure::Expired => "the server's certificate has expired or is not valid yet",
            TlsFailure::BadServerCertificate => "the server's certificate is not acceptable",
            TlsFailure::ClientCertificateRequired => "the server requires a client certificate",
            TlsFailure::ClientCertificateRefused => "the server refused the client certificate",
        })
    }
}

impl Error {
    /// A failed connection to `server` as [`Error::Tls`] when TLS is why, else as
    /// [`from_redis`](Self::from_redis) maps it.
    pub(crate) fn from_connect(server: &str, err: fred::error::Error) -> Error {
        match TlsFailure::of(err.details()) {
            Some(failure) => Error::Tls {
                failure,
                server: server.to_owned(),
                detail: err.details().to_string(),
            },
            None => Error::from_redis("connect", server, err),
        }
    }

    /// True when the error comes from a dropped or failing connection; retrying later may work.
    pub fn is_connection_error(&self) -> bool {
        match self {
            Error::Tls { .. } => true,
            Error::Redis(e) | Error::Script { source: e, .. } => {
                classify(e) == ReplyKind::Connection
            }
            _ => false,
        }
    }

    /// True for codec errors (encode or decode).
    pub fn is_codec_error(&self) -> bool {
        matches!(self, Error::Encode { .. } | Error::Decode { .. })
    }

    /// True when trying again later may work without anyone acting: a connection error, a
    /// Cluster slot still moving (`TRYAGAIN`, too many redirections), or a refusal that ends by
    /// itself ([`Refusal::is_transient`]). False for a key of the wrong type, no permission, out
    /// of memory, a bad value or configuration.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Refused { refusal, .. } => refusal.is_transient(),
            Error::Redis(e) | Error::Script { source: e, .. } => {
                matches!(classify(e), ReplyKind::Connection | ReplyKind::Migrating)
            }
            _ => false,
        }
    }

    /// Maps a fred error from the command `command` on `key`.
    pub(crate) fn from_redis(command: &'static str, key: &str, err: fred::error::Error) -> Error {
        match classify(&err) {
            ReplyKind::WrongType => wrong_type(key, err),
            ReplyKind::Refused(refusal) => Error::Refused {
                refusal,
                command,
                key: key.to_owned(),
                detail: err.details().to_string(),
            },
            _ => Error::Redis(err),
        }
    }

    /// Maps a fred error from the script `name` run for the queue whose target list is `queue`.
    pub(crate) fn from_script(name: &'static str, queue: &str, err: fred::error::Error) -> Error {
        match classify(&err) {
            ReplyKind::WrongType => wrong_type(queue, err),
            ReplyKind::Refused(refusal) => Error::Refused {
                refusal,
                command: name,
                key: queue.to_owned(),
                detail: err.details().to_string(),
            },
            ReplyKind::Connection => Error::Redis(err),
            _ => Error::Script { name, source: err },
        }
    }
}

/// A WRONGTYPE reply as [`Error::WrongType`], naming the key delayq's guard named
/// (`lua/lib/guard.lua`), or `fallback` for a plain Redis WRONGTYPE.
fn wrong_type(fallback: &str, err: fred::error::Error) -> Error {
    let detail = err.details().to_string();
    let key = guarded_key(&detail).unwrap_or(fallback).to_owned();
    Error::WrongType { key, detail }
}

/// The key in delayq's guard message `... (delayq: key 'KEY' is a T, not a U)`.
fn guarded_key(detail: &str) -> Option<&str> {
    let start = detail.find("(delayq: key '")? + "(delayq: key '".len();
    let end = detail.rfind("' is a ")?;
    (end >= start).then(|| &detail[start..end])
}

/// What a failed command means to delayq.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyKind {
    /// `NOSCRIPT`: the script cache lacks the script; load it and send again.
    NoScript,
    /// `WRONGTYPE`: a key holds another type.
    WrongType,
    /// Refused because a Cluster slot is moving (`TRYAGAIN`, or a `MOVED`/`ASK` redirection
    /// fred did not follow): the command did not run, sending it again is safe.
    Migrating,
    /// Redis refused the command for a reason of its own state or the user's rights.
    Refused(Refusal),
    /// The connection failed, dropped or timed out: the command may or may not have run.
    Connection,
    /// Anything else.
    Other,
}

/// Classifies a fred error (fred has no kinds for NOSCRIPT, WRONGTYPE or TRYAGAIN; Redis's reply
/// starts with the code).
pub(crate) fn classify(err: &fred::error::Error) -> ReplyKind {
    use fred::error::ErrorKind;
    let details = err.details();
    if details.starts_with("NOSCRIPT") {
        ReplyKind::NoScript
    } else if details.contains("WRONGTYPE") {
        ReplyKind::WrongType
    } else if let Some(refusal) = Refusal::of(details) {
        ReplyKind::Refused(refusal)
    } else if details.starts_with("TRYAGAIN")
        || (*err.kind() == ErrorKind::Routing && details.starts_with("Too many redirections"))
    {
        ReplyKind::Migrating
    } else if matches!(
        err.kind(),
        ErrorKind::IO
            | ErrorKind::Canceled
            | ErrorKind::Timeout
            | ErrorKind::Routing
            | ErrorKind::Sentinel
    ) {
        ReplyKind::Connection
    } else {
        ReplyKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fred::error::{Error as FredError, ErrorKind};

    #[test]
    fn replies_are_classified_once() {
        let kind = |k, text: &str| classify(&FredError::new(k, text.to_owned()));
        assert_eq!(
            kind(ErrorKind::Unknown, "NOSCRIPT No matching script"),
            ReplyKind::NoScript
        );
        assert_eq!(
            kind(
                ErrorKind::Unknown,
                "ERR Error running script: WRONGTYPE Operation"
            ),
            ReplyKind::WrongType
        );
        assert_eq!(
            kind(ErrorKind::Unknown, "TRYAGAIN Multiple keys"),
            ReplyKind::Migrating
        );
        assert_eq!(
            kind(ErrorKind::Routing, "Too many redirections."),
            ReplyKind::Migrating
        );
        assert_eq!(kind(ErrorKind::Routing, "no node"), ReplyKind::Connection);
        assert_eq!(kind(ErrorKind::IO, "reset"), ReplyKind::Connection);
        assert_eq!(
            kind(
                ErrorKind::Unknown,
                "OOM command not allowed when used memory > 'maxmemory'."
            ),
            ReplyKind::Refused(Refusal::OutOfMemory)
        );
        assert_eq!(
            kind(
                ErrorKind::Unknown,
                "NOPERM this user has no permissions to access one"
            ),
            ReplyKind::Refused(Refusal::NoPermission)
        );
        assert_eq!(
            kind(ErrorKind::Unknown, "BUSY Redis is busy running a script."),
            ReplyKind::Refused(Refusal::Busy)
        );
        assert_eq!(
            kind(ErrorKind::Unknown, "ERR unknown command"),
            ReplyKind::Other
        );
    }

    #[test]
    fn a_slot_still_moving_is_transient() {
        // The scheduler retries a transient error within 100 ms (doubling); any other waits its
        // longest backoff. A slot migration that outlasts the resends is still passing by itself.
        let redis = |k, text: &str| Error::Redis(FredError::new(k, text.to_owned()));
        assert!(redis(ErrorKind::Routing, "Too many redirections.").is_transient());
        assert!(redis(ErrorKind::Unknown, "TRYAGAIN Multiple keys").is_transient());
        assert!(redis(ErrorKind::IO, "reset").is_transient());
        assert!(!redis(ErrorKind::Unknown, "ERR unknown command").is_transient());
        assert!(!redis(ErrorKind::Unknown, "WRONGTYPE Operation").is_transient());
    }

    #[test]
    fn refusals_name_the_command_and_key() {
        let err = FredError::new(
            ErrorKind::Unknown,
            "OOM command not allowed when used memory > 'maxmemory'.",
        );
        let err = Error::from_script("offer.lua", "orders", err);
        assert_eq!(
            err.to_string(),
            "redis refused offer.lua on orders: out of memory (maxmemory reached, nothing \
             evictable) (OOM command not allowed when used memory > 'maxmemory'.)"
        );
        assert!(!err.is_transient());
        let busy = FredError::new(ErrorKind::Unknown, "BUSY x");
        assert!(Error::from_redis("BLPOP", "orders", busy).is_transient());
    }

    #[test]
    fn wrong_type_names_the_guarded_key() {
        let err = FredError::new(
            ErrorKind::Unknown,
            "WRONGTYPE Operation against a key holding the wrong kind of value (delayq: key \
             'delayq_dead:{q}' is a string, not a list)",
        );
        match Error::from_script("dead.lua", "q", err) {
            Error::WrongType { key, .. } => assert_eq!(key, "delayq_dead:{q}"),
            other => panic!("{other:?}"),
        }
        let plain = FredError::new(ErrorKind::Unknown, "WRONGTYPE Operation against a key");
        match Error::from_redis("LLEN", "q", plain) {
            Error::WrongType { key, .. } => assert_eq!(key, "q"),
            other => panic!("{other:?}"),
        }
    }
}
