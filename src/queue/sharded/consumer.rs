//! [`ShardedConsumer`]: at-most-once takes over every shard's target list.

use super::hash::shard_of;
use super::ShardedQueue;
use crate::codec::{decode_value, encode_value, Codec};
use crate::consumer::push_front;
use crate::redis::{reply, resend_refused};
use crate::{Error, Result};
use fred::interfaces::ListInterface;
use fred::prelude::Value;
use std::borrow::Borrow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Takes due values off the target lists of a [`ShardedQueue`]'s shards, one shard after the
/// other (`LPOP` on the queue's client, no connection of its own), **at most once** like
/// [`Consumer`](crate::Consumer). When every list is empty it waits for the client's scheduler
/// group to move values (or 50 ms, for values moved by other processes).
///
/// # Cancel safety
///
/// Not cancel safe, as [`Consumer`](crate::Consumer).
#[derive(Debug)]
pub struct ShardedConsumer<C: Codec> {
    pub(super) queue: ShardedQueue<C>,
    pub(super) next: AtomicUsize,
}

/// The longest a [`ShardedConsumer`] waits between looks at empty lists.
const IDLE_WAIT: Duration = Duration::from_millis(50);

impl<C: Codec> ShardedConsumer<C> {
    /// Takes the next due value of any shard, waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] (the value has left Redis) or a Redis error.
    pub async fn poll(&self, timeout: Duration) -> Result<Option<C::Value>> {
        let deadline = Instant::now() + timeout;
        let mut moved = self.queue.shards()[0].moved_rx().map(|(_, rx)| rx);
        loop {
            if let Some(value) = self.poll_once().await? {
                return Ok(Some(value));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let nap = tokio::time::sleep(left.min(IDLE_WAIT));
            match moved.as_mut() {
                Some(rx) => {
                    tokio::select! {
                        _ = rx.recv() => {}
                        () = nap => {}
                    }
                }
                None => nap.await,
            }
        }
    }

    /// Waits for the next due value of any shard and takes it.
    ///
    /// # Errors
    ///
    /// As [`poll`](Self::poll).
    pub async fn take(&self) -> Result<C::Value> {
        loop {
            if let Some(value) = self.poll(Duration::from_secs(1)).await? {
                return Ok(value);
            }
        }
    }

    /// Puts values taken but not handed over back at the head of their shards' lists (each in
    /// the shard its bytes belong to, see [`shard_of`](crate::shard_of)), in their order within
    /// a shard, so the next take gets them again.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`], or a Redis error (the values of that shard and the shards after it
    /// are then not on their lists).
    pub async fn give_back(&self, values: &[C::Value]) -> Result<()> {
        let shards = self.queue.shards();
        let mut by_shard: Vec<Vec<Vec<u8>>> = vec![Vec::new(); shards.len()];
        for value in values {
            let raw = encode_value(self.queue.codec(), value.borrow())?;
            by_shard[shard_of(&raw, shards.len())].push(raw);
        }
        for (shard, raws) in shards.iter().zip(by_shard) {
            push_front(shard.client(), shard.name(), raws).await?;
        }
        Ok(())
    }

    /// One look at every shard's list, from the one after the last served; the first value.
    async fn poll_once(&self) -> Result<Option<C::Value>> {
        let shards = self.queue.shards();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for k in 0..shards.len() {
            let shard = &shards[(start + k) % shards.len()];
            let target = shard.name();
            let client = shard.client();
            let reply: Value = resend_refused("LPOP", || client.lpop(target, None))
                .await
                .map_err(|e| Error::from_redis("LPOP", target, e))?;
            if let Some(raw) = reply::opt_bytes(reply, "LPOP")? {
                self.next.store(start + k + 1, Ordering::Relaxed);
                return decode_value(self.queue.codec(), raw).map(Some);
            }
        }
        Ok(None)
    }
}
