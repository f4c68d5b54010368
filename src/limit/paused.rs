//! Pausing one key of a queue's per-key limits: [`StoredLimits::pause_key`],
//! [`resume_key`](StoredLimits::resume_key), [`key_paused`](StoredLimits::key_paused). The flag
//! is member `p:KEY` of the rate zset (`delayq_limit_tat:{NAME}`), scored `+inf` so that the
//! trim of old arrival times never drops it; `lua/lib/limit.lua` makes a paused key wait, so
//! every worker on the Redis holds its values back and starts none of them.

use super::StoredLimits;
use crate::codec::Codec;
use crate::queue::DelayedQueue;
use crate::Result;
use fred::interfaces::SortedSetsInterface;
use fred::types::sorted_sets::Ordering;
use fred::types::SetOptions;

/// What the rate zset's member that flags a key as paused starts with (then the key).
const PAUSED_PREFIX: &str = "p:";

fn paused_member(key: &str) -> String {
    format!("{PAUSED_PREFIX}{key}")
}

impl<C: Codec> StoredLimits<'_, DelayedQueue<C>> {
    /// Pauses limit key `key`: from now no worker starts a value of it (deliveries under way
    /// finish); its values are held back on its list until [`resume_key`](Self::resume_key).
    /// Only per-key limits read the flag: a queue without them starts the key's values.
    /// Whether the key was not paused already.
    pub async fn pause_key(self, key: &str) -> Result<bool> {
        let tat = self.queue().keys().limit_rate_state();
        let added: i64 = self
            .queue()
            .client()
            .zadd(
                tat.as_str(),
                None,
                None,
                false,
                false,
                (f64::INFINITY, paused_member(key)),
            )
            .await
            .map_err(|e| crate::Error::from_redis("ZADD", &tat, e))?;
        Ok(added > 0)
    }

    /// Resumes limit key `key`: its values held back are tried again at once. Whether it was
    /// paused.
    pub async fn resume_key(self, key: &str) -> Result<bool> {
        let keys = self.queue().keys();
        let tat = keys.limit_rate_state();
        let client = self.queue().client();
        let removed: i64 = client
            .zrem(tat.as_str(), paused_member(key))
            .await
            .map_err(|e| crate::Error::from_redis("ZREM", &tat, e))?;
        // Held back while paused, scored for a later look: due now (only when held).
        let held = keys.limit_held();
        let _: i64 = client
            .zadd(
                held.as_str(),
                Some(SetOptions::XX),
                Some(Ordering::LessThan),
                false,
                false,
                (crate::time::now_ms() as f64, key),
            )
            .await
            .map_err(|e| crate::Error::from_redis("ZADD", &held, e))?;
        Ok(removed > 0)
    }

    /// Whether limit key `key` is paused.
    pub async fn key_paused(self, key: &str) -> Result<bool> {
        let tat = self.queue().keys().limit_rate_state();
        let score: Option<f64> = self
            .queue()
            .client()
            .zscore(tat.as_str(), paused_member(key))
            .await
            .map_err(|e| crate::Error::from_redis("ZSCORE", &tat, e))?;
        Ok(score.is_some())
    }

    /// The paused limit keys (at most `limit`), in no set order.
    pub async fn paused_keys(self, limit: usize) -> Result<Vec<String>> {
        let tat = self.queue().keys().limit_rate_state();
        let members: Vec<String> = self
            .queue()
            .client()
            .zrangebyscore(
                tat.as_str(),
                "+inf",
                "+inf",
                false,
                Some((0, limit.try_into().unwrap_or(i64::MAX))),
            )
            .await
            .map_err(|e| crate::Error::from_redis("ZRANGEBYSCORE", &tat, e))?;
        Ok(members
            .into_iter()
            .filter_map(|m| m.strip_prefix(PAUSED_PREFIX).map(str::to_owned))
            .collect())
    }
}
