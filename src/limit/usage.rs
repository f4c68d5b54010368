//! [`StoredLimits`], the door `queue.limits()` returns: the calls that store, read and clear a
//! queue's limits, and [`LimitUsage`], what they hold now.

use super::{from_fields, stored, Limits};
use crate::codec::Codec;
use crate::queue::DelayedQueue;
use crate::redis::ops::{limit_set, limit_usage};
use crate::Result;
use fred::interfaces::{HashesInterface, KeysInterface};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How many keys [`StoredLimits::usage`] names.
const TOP_KEYS: usize = 10;

/// What a queue's limits hold now (by the server's clock).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LimitUsage {
    /// Queue-wide slots held (leases not yet run out).
    pub slots_held: u64,
    /// Keys with slots held.
    pub keys_busy: u64,
    /// Keys with values held back.
    pub keys_held: u64,
    /// Values held back, over the first 1,000 keys held back (all of them when there are no
    /// more keys than that).
    pub values_held: u64,
    /// The keys with the most values held back (at most 10), most first.
    pub top_held: Vec<(String, u64)>,
    /// When the queue-wide rate has its next token, if it has none now.
    pub next_token_at: Option<SystemTime>,
}

/// The limits of one queue: [`set`](Self::set), [`get`](Self::get), [`clear`](Self::clear),
/// and what they hold now ([`usage`](Self::usage)). Made by `queue.limits()` (e.g.
/// [`DelayedQueue::limits`]); borrows the queue.
#[derive(Debug)]
pub struct StoredLimits<'a, Q> {
    queue: &'a Q,
}

impl<Q> Clone for StoredLimits<'_, Q> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Q> Copy for StoredLimits<'_, Q> {}

impl<'a, Q> StoredLimits<'a, Q> {
    /// The limits of `queue`.
    pub(crate) fn of(queue: &'a Q) -> Self {
        StoredLimits { queue }
    }

    /// The queue these limits are of.
    pub(crate) fn queue(self) -> &'a Q {
        self.queue
    }
}

/// **Door: limits across processes** (see [`StoredLimits`]).
impl<C: Codec> DelayedQueue<C> {
    /// The queue's limits across processes, stored in Redis and enforced by its workers: see
    /// [`StoredLimits`] and the [`limit`](crate::limit) module.
    pub fn limits(&self) -> StoredLimits<'_, DelayedQueue<C>> {
        StoredLimits::of(self)
    }

    /// The stored limits and their version token.
    pub(crate) async fn limits_versioned(&self) -> Result<Option<(Limits, String)>> {
        let key = self.keys().limits();
        let read = self
            .client()
            .hgetall::<std::collections::HashMap<String, String>, _>(key.as_str())
            .await
            .map_err(|e| crate::Error::from_redis("HGETALL", &key, e));
        let fields: Vec<(String, String)> = match read {
            Ok(fields) => fields.into_iter().collect(),
            // A key of another type (a hand-made `SET`): Redis's reply names no type, so the
            // error says which was found (workers then take nothing from the queue).
            Err(crate::Error::WrongType { key, detail }) => {
                let found: String = self
                    .client()
                    .r#type(key.as_str())
                    .await
                    .map_err(|e| crate::Error::from_redis("TYPE", &key, e))?;
                let detail = format!("{detail} (delayq: key '{key}' is a {found}, not a hash)");
                return Err(crate::Error::WrongType { key, detail });
            }
            Err(err) => return Err(err),
        };
        if fields.is_empty() {
            return Ok(None);
        }
        from_fields(&key, fields).map(Some)
    }
}

impl<C: Codec> StoredLimits<'_, DelayedQueue<C>> {
    /// The queue's limits, if any are stored; [`Error::MalformedLimits`](crate::Error::MalformedLimits)
    /// for a hash delayq did not write (an unknown field, a value that is not a number).
    pub async fn get(self) -> Result<Option<Limits>> {
        Ok(self
            .queue
            .limits_versioned()
            .await?
            .map(|(limits, _)| limits))
    }

    /// Stores the queue's limits (validated first; nothing is stored when they are refused).
    /// Running workers apply them at their next take (a worker that had no limits, within a
    /// second); keys held back are tried again under the new limits at once, and when no
    /// per-key limit remains their values go back to the head of the target list.
    pub async fn set(self, limits: &Limits) -> Result<()> {
        limits.validate()?;
        let fields = stored::to_fields(limits);
        limit_set::run(
            self.queue.client(),
            self.queue.spec(),
            Some(fields),
            limits.per_key(),
        )
        .await?;
        Ok(())
    }

    /// Clears the queue's limits; whether any were stored. Values held back go back to the head
    /// of the target list (each key's oldest first); workers are unlimited from their next take.
    pub async fn clear(self) -> Result<bool> {
        let outcome = limit_set::run(self.queue.client(), self.queue.spec(), None, false).await?;
        Ok(outcome.existed)
    }

    /// What the limits hold now: slots, busy keys, values held back (the most held keys named),
    /// the next token of the queue-wide rate.
    pub async fn usage(self) -> Result<LimitUsage> {
        let reply = limit_usage::run(self.queue.client(), self.queue.spec(), TOP_KEYS).await?;
        let next_token_at = reply
            .next_token_ms
            .filter(|tat| *tat > reply.now_ms)
            .map(|tat| UNIX_EPOCH + Duration::from_millis(tat as u64));
        Ok(LimitUsage {
            slots_held: reply.slots_held,
            keys_busy: reply.keys_busy,
            keys_held: reply.keys_held,
            values_held: reply.values_held,
            top_held: reply.top,
            next_token_at,
        })
    }
}
