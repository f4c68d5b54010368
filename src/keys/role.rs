//! The Redis types of the keys scripts declare.

/// The Redis type a key role holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
    /// A list.
    List,
    /// A sorted set.
    Zset,
    /// A hash.
    Hash,
    /// A pub/sub channel (not a key in the keyspace; never type-checked).
    Channel,
    /// A key whose existence is all that counts (never type-checked).
    Flag,
}

impl KeyKind {
    /// The name `TYPE` returns, as the scripts' guard compares it.
    pub(crate) fn redis_type(self) -> &'static str {
        match self {
            KeyKind::List => "list",
            KeyKind::Zset => "zset",
            KeyKind::Hash => "hash",
            KeyKind::Channel => "channel",
            KeyKind::Flag => "any",
        }
    }
}
