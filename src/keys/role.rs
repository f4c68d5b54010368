//! The keys scripts declare, by what they hold ([`KeyRole`]), and their Redis types
//! ([`KeyKind`]).

/// The Redis type a key role holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
    /// A list.
    List,
    /// A sorted set.
    Zset,
    /// A hash.
    Hash,
    /// A string.
    String,
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
            KeyKind::String => "string",
            KeyKind::Channel => "channel",
            KeyKind::Flag => "any",
        }
    }
}

/// A key a Lua script declares, by what it holds. Scripts declare their keys in this order
/// (`KEYS[1]` is always the target list; the Redisson keys follow, then delayq's own, then the
/// keys given per call), and `src/redis/script.rs` builds every KEYS list from these roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum KeyRole {
    /// The target list `NAME`.
    Target,
    /// The timeout zset.
    Timeout,
    /// The order list.
    Order,
    /// The channel (declared as a key so that a Cluster routes the call to the queue's slot).
    Channel,
    /// delayq's quarantine list.
    Quarantine,
    /// delayq's position index (zset).
    Index,
    /// delayq's value index (hash).
    Values,
    /// delayq's pause flag (any type: only whether it exists counts).
    Paused,
    /// delayq's in-flight zset.
    Inflight,
    /// delayq's in-flight hash.
    InflightData,
    /// delayq's attempt counters (hash).
    Attempts,
    /// delayq's zset of when counters were touched.
    AttemptsSeen,
    /// delayq's zset of recently settled deliveries.
    Settled,
    /// delayq's dead-letter list.
    Dead,
    /// delayq's zset of claim-list leases.
    Claims,
    /// delayq's zset of recurring schedules by next occurrence.
    Schedules,
    /// Given per call: one recurring schedule's hash.
    Schedule,
    /// Given per call: one reliable consumer's claim list.
    Claim,
    /// Given per call: a list outside the queue (in its slot).
    Destination,
    /// Given per call: one of the queue's own lists (dead letters or quarantine).
    OwnList,
    /// Given per call: a dedup key's mapping (string).
    Dedup,
    /// Given per call: the queue's stored limits (hash).
    Limits,
    /// Given per call: the queue-wide slots held (zset).
    LimitSlots,
    /// Given per call: the rate limits' theoretical arrival times (zset).
    LimitTat,
    /// Given per call: the keys with values held back (zset).
    LimitHeld,
    /// Given per call: the keys with slots held (zset).
    LimitBusy,
    /// Given per call: one key's slots held (zset).
    LimitKeySlots,
    /// Given per call: one key's values held back (list).
    LimitParked,
}

impl KeyRole {
    /// Every key and channel of one queue, one name each, in the order scripts declare them:
    /// the one list [`DelayedQueue::delete`](crate::DelayedQueue::delete),
    /// [`expire`](crate::DelayedQueue::expire), [`check`](crate::inspect::Inspect::check) and
    /// [`QueueKeys::acl_selectors`] take theirs from. Not in it: the claim lists, one per
    /// reliable consumer, named in the claim leases ([`KeyRole::Claims`]), and the keys given per
    /// call.
    pub(crate) const QUEUE: [KeyRole; 15] = {
        use KeyRole::*;
        [
            Target,
            Timeout,
            Order,
            Channel,
            Quarantine,
            Index,
            Values,
            Paused,
            Inflight,
            InflightData,
            Attempts,
            AttemptsSeen,
            Settled,
            Dead,
            Claims,
        ]
    };

    /// Whether the key belongs to the delayed queue, so that it is deleted with it and given
    /// its time to live. Not the target list (the consumers' list, which Java's `delete` and
    /// `expire` leave alone too), the channel (not a key) or a key given per call.
    pub(crate) fn owned(self) -> bool {
        use KeyRole::*;
        match self {
            Target | Channel | Destination | OwnList | Schedules | Schedule | Dedup => false,
            Limits | LimitSlots | LimitTat | LimitHeld | LimitBusy | LimitKeySlots
            | LimitParked => false,
            Timeout | Order | Quarantine | Index | Values | Paused | Inflight | InflightData
            | Attempts | AttemptsSeen | Settled | Dead | Claims | Claim => true,
        }
    }

    /// What the key holds.
    pub(crate) fn kind(self) -> KeyKind {
        use KeyRole::*;
        match self {
            Target | Order | Quarantine | Dead | Claim | Destination | OwnList | LimitParked => {
                KeyKind::List
            }
            Timeout | Index | Inflight | AttemptsSeen | Settled | Claims | Schedules
            | LimitSlots | LimitTat | LimitHeld | LimitBusy | LimitKeySlots => KeyKind::Zset,
            InflightData | Attempts | Values | Schedule | Limits => KeyKind::Hash,
            Channel => KeyKind::Channel,
            Paused => KeyKind::Flag,
            Dedup => KeyKind::String,
        }
    }

    /// The key's name pattern, as the Lua headers write it (`{NAME}` for a plain name).
    #[cfg(test)]
    pub(crate) fn pattern(self) -> &'static str {
        use KeyRole::*;
        match self {
            Target => "NAME",
            Timeout => "redisson_delay_queue_timeout:{NAME}",
            Order => "redisson_delay_queue:{NAME}",
            Channel => "redisson_delay_queue_channel:{NAME}",
            Quarantine => "delayq_quarantine:{NAME}",
            Index => "delayq_index:{NAME}",
            Values => "delayq_values:{NAME}",
            Paused => "delayq_paused:{NAME}",
            Inflight => "delayq_inflight:{NAME}",
            InflightData => "delayq_inflight_data:{NAME}",
            Attempts => "delayq_attempts:{NAME}",
            AttemptsSeen => "delayq_attempts_seen:{NAME}",
            Settled => "delayq_settled:{NAME}",
            Dead => "delayq_dead:{NAME}",
            Claims => "delayq_claims:{NAME}",
            Claim => "delayq_claim:{NAME}:CONSUMER",
            Schedules => "delayq_schedules:{NAME}",
            Schedule => "delayq_schedule:{NAME}:ID",
            Destination => "DESTINATION",
            OwnList => "LIST",
            Dedup => "delayq_dedup:{NAME}:KEY",
            Limits => "delayq_limits:{NAME}",
            LimitSlots => "delayq_limit_slots:{NAME}",
            LimitTat => "delayq_limit_tat:{NAME}",
            LimitHeld => "delayq_limit_held:{NAME}",
            LimitBusy => "delayq_limit_busy:{NAME}",
            LimitKeySlots => "delayq_limit_key:{NAME}:KEY",
            LimitParked => "delayq_limit_parked:{NAME}:KEY",
        }
    }
}
