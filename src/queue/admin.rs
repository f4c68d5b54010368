//! [`Admin`]: the operator's writes to a queue, and those of them on the queue's own keys
//! (pause, resume, one-off transfers, the quarantine).

use super::DelayedQueue;
use crate::codec::Codec;
use crate::redis::ops::transfer::{self, TransferOutcome};
use crate::transfer::TransferConfig;
use crate::{Error, Result};
use fred::interfaces::KeysInterface;
use fred::types::SetOptions;
use std::time::Duration;

/// What a one-off transfer did ([`Admin::transfer_due`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Transferred {
    /// Values pushed onto the target list.
    pub moved: u64,
    /// Malformed entries taken out to the quarantine list.
    pub quarantined: u64,
    /// Due time (epoch ms) of the earliest entry still pending.
    pub next_due_ms: Option<i64>,
    /// Entries found through the position index.
    pub found_by_index: u64,
    /// Entries found in the window at the head of the order list (the rest of the batch was
    /// found through the index or by `LREM` scans).
    pub found_at_head: u64,
    /// The time (epoch ms) the call decided what was due by: this process's clock, or the
    /// Redis server's with [`Clock::Server`](crate::Clock::Server).
    pub now_ms: i64,
    /// The Redis server's time (epoch µs) when the call began, with
    /// [`Clock::Server`](crate::Clock::Server).
    pub server_time_us: Option<i64>,
    /// The call heeded the pause flag (a scheduler's settings) and found the queue paused:
    /// nothing moved.
    pub paused: bool,
}

impl From<TransferOutcome> for Transferred {
    fn from(outcome: TransferOutcome) -> Self {
        Transferred {
            moved: outcome.moved,
            quarantined: outcome.quarantined,
            next_due_ms: outcome.next_due_ms,
            found_by_index: outcome.found_by_index,
            found_at_head: outcome.found_at_head,
            now_ms: outcome.now_ms,
            server_time_us: outcome.server_time_us,
            paused: outcome.paused,
        }
    }
}

/// The operator's writes to one queue: pause and resume its transfers, transfer due values now,
/// purge the quarantine, give back or reap in-flight values, replay or purge dead letters.
/// Made by `queue.admin()` (e.g. [`DelayedQueue::admin`]); borrows the queue. The reads are
/// [`Inspect`](crate::inspect::Inspect)'s.
///
/// # Examples
///
/// ```no_run
/// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> delayq::Result<()> {
/// queue.admin().pause().await?;
/// assert!(queue.inspect().is_paused().await?);
/// // ... due values stay pending ...
/// queue.admin().resume().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Admin<'a, Q> {
    pub(crate) queue: &'a Q,
}

impl<Q> Clone for Admin<'_, Q> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Q> Copy for Admin<'_, Q> {}

impl<'a, Q> Admin<'a, Q> {
    /// The writes of `queue`.
    pub(crate) fn of(queue: &'a Q) -> Self {
        Admin { queue }
    }
}

impl<C: Codec> Admin<'_, DelayedQueue<C>> {
    /// Pauses the queue: from now on, until [`resume`](Self::resume), no delayq scheduler (of
    /// any process) moves its due values onto the target list, and no delayq worker or
    /// [reliable consumer](crate::ReliableConsumer) takes its ready values (each reads the flag
    /// in the same script call that would move or take values, so none does after this
    /// returns; jobs already running finish and settle as usual, and the ready values stay
    /// ready). Offers, one-off transfers ([`transfer_due`](Self::transfer_due)) and the
    /// at-most-once [`Consumer`](crate::Consumer) go on. Java's schedulers and consumers do not
    /// know the flag and keep transferring and taking. The flag holds when it was set (epoch
    /// ms, this process's clock). True if the queue was not paused already (a second pause
    /// keeps the first one's time).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn pause(self) -> Result<bool> {
        let key = self.queue.keys().paused();
        let since = crate::time::now_ms().to_string();
        let set: Option<String> = self
            .queue
            .client()
            .set(key, since, None, Some(SetOptions::NX), false)
            .await
            .map_err(|e| Error::from_redis("SET", key, e))?;
        Ok(set.is_some())
    }

    /// Lets delayq's schedulers transfer the queue and its workers take from it again: they read
    /// the flag of a paused queue about every second, and then move what fell due meanwhile and
    /// take what is ready. True if it was paused.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn resume(self) -> Result<bool> {
        let key = self.queue.keys().paused();
        let deleted: u64 = self
            .queue
            .client()
            .del(key)
            .await
            .map_err(|e| Error::from_redis("DEL", key, e))?;
        Ok(deleted > 0)
    }

    /// Deletes every quarantined entry; returns how many there were.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn purge_quarantine(self) -> Result<u64> {
        let queue = self.queue;
        queue.purge_own_list(queue.keys().quarantine()).await
    }

    /// Runs one transfer now, as a scheduler would (by the queue's clock, even while the queue
    /// is paused), moving at most `batch_size` due entries (fewer when the call's time runs
    /// out: see [`TransferConfig::with_max_call_time`]).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn transfer_due(self, batch_size: usize) -> Result<Transferred> {
        let batch = batch_size.max(1);
        let config = TransferConfig::default()
            .with_batch_size(batch)
            .with_adaptive_batch(batch, Duration::from_millis(5));
        self.transfer_due_with(&config).await
    }

    /// Runs one transfer now with a scheduler's settings (batch size, position index) and the
    /// queue's clock and entry format; for tools and benchmarks that drive transfers themselves.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn transfer_due_with(self, config: &TransferConfig) -> Result<Transferred> {
        let queue = self.queue;
        let limits = config.limits(config.batch_size().max(1));
        let outcome =
            transfer::run(queue.client(), queue.spec(), limits, queue.pass_cost()).await?;
        Ok(outcome.into())
    }
}
