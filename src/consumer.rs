//! The consumer side: taking due values off the target list, as Redisson's `RBlockingQueue`.

use crate::codec::{decode_value, encode_value, Codec};
use crate::redis::{reply, resend_refused};
use crate::time::Delay;
use crate::{Error, Result};
use bytes::Bytes;
use fred::clients::Client;
use fred::interfaces::{ClientLike, ListInterface};
use fred::prelude::Value;
use fred::types::config::Options;
use futures::Stream;
use std::borrow::Borrow;
use std::sync::Arc;
use std::time::Duration;

/// How long one `BLPOP` of [`Consumer::take`] blocks before it asks again.
const TAKE_SLICE: Duration = Duration::from_secs(1);

/// How long past a blocking wait a reply may take before the connection counts as stuck.
const STUCK_MARGIN: Duration = Duration::from_secs(10);

/// Takes values off a queue's target list, on a connection of its own: **at most once**, as
/// Redisson's consumers (a value is gone from Redis when it is taken; a crash before the work
/// is done loses it). [`DelayedQueue::reliable_consumer`](crate::DelayedQueue::reliable_consumer)
/// takes with acknowledgement instead.
///
/// Java: the destination `RBlockingQueue` (`take()` is `BLPOP NAME 0`, `poll(timeout)` is
/// `BLPOP NAME secs`). The blocking commands run on the consumer's own connection (a
/// `clone_new` of the client it was made from) so they never hold up other traffic.
///
/// # Cancel safety
///
/// [`take`](Self::take) and [`poll`](Self::poll) are **not** cancel safe: if the future is
/// dropped after Redis has popped a value but before the reply is read, that value is lost, as it
/// is with Redisson. Use a timeout on `poll` rather than racing `take` in `select!` when that
/// matters.
///
/// # Examples
///
/// ```no_run
/// # async fn ex(client: delayq::fred::clients::Client) -> Result<(), delayq::Error> {
/// use delayq::codec::StringCodec;
/// use delayq::Consumer;
/// use std::time::Duration;
///
/// let consumer = Consumer::new(&client, "orders", StringCodec).await?;
/// if let Some(order) = consumer.poll(Duration::from_secs(5)).await? {
///     println!("due: {order}");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Consumer<C: Codec> {
    client: Client,
    target: String,
    codec: Arc<C>,
}

impl<C: Codec> Consumer<C> {
    /// A consumer of the list `name`, on a new connection made from `client`'s config.
    ///
    /// # Errors
    ///
    /// No connection.
    pub async fn new(client: &Client, name: impl Into<String>, codec: C) -> Result<Self> {
        Self::with_shared_codec(client, &name.into(), Arc::new(codec)).await
    }

    pub(crate) async fn with_shared_codec(
        client: &Client,
        target: &str,
        codec: Arc<C>,
    ) -> Result<Self> {
        let own = client.clone_new();
        crate::redis::init_client(&own).await?;
        Ok(Consumer {
            client: own,
            target: target.to_owned(),
            codec,
        })
    }

    /// The list this consumer takes from.
    pub fn name(&self) -> &str {
        &self.target
    }

    fn decode(&self, raw: Bytes) -> Result<C::Value> {
        decode_value(&*self.codec, raw)
    }

    async fn blpop(&self, timeout: Duration) -> Result<Option<Bytes>> {
        // A client-side limit well past the server-side wait, so a stuck connection gives an
        // error instead of hanging (the client's default timeout may be shorter than the wait).
        let options = Options {
            timeout: Some(timeout + STUCK_MARGIN),
            ..Default::default()
        };
        let started = std::time::Instant::now();
        let client = self.client.with_options(&options);
        let reply: Value = match resend_refused("BLPOP", || {
            client.blpop(self.target.as_str(), timeout.as_secs_f64())
        })
        .await
        {
            Ok(reply) => reply,
            // fred reports BLPOP's nil reply (the wait ran out) as a Timeout error too; only
            // the client-side limit takes longer than the wait plus the margin.
            Err(err)
                if *err.kind() == fred::error::ErrorKind::Timeout
                    && started.elapsed() < timeout + STUCK_MARGIN =>
            {
                return Ok(None)
            }
            Err(err) => return Err(Error::from_redis("BLPOP", &self.target, err)),
        };
        match reply {
            Value::Null => Ok(None),
            Value::Array(mut pair) if pair.len() == 2 => pair
                .pop()
                .map(|value| reply::bytes(value, "BLPOP"))
                .transpose(),
            other => Err(Error::UnexpectedReply {
                context: "BLPOP",
                detail: format!("{other:?}"),
            }),
        }
    }

    /// Waits for the next value and takes it.
    ///
    /// Java: `RBlockingQueue#take()`. Blocks in slices of one second, so a lost connection is
    /// noticed and the wait resumes after reconnecting.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] (with the raw bytes, which have left Redis) or a Redis error.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe; see the type's docs.
    pub async fn take(&self) -> Result<C::Value> {
        loop {
            if let Some(raw) = self.blpop(TAKE_SLICE).await? {
                return self.decode(raw);
            }
        }
    }

    /// Takes the next value, waiting at most `timeout` (not at all for zero).
    ///
    /// Java: `RBlockingQueue#poll(timeout, unit)`; with zero, `RQueue#poll()`.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] or a Redis error.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe; see the type's docs.
    pub async fn poll(&self, timeout: Duration) -> Result<Option<C::Value>> {
        // Refuse what Redis would refuse, before sending anything.
        Delay::span(timeout)?;
        let raw = if timeout.is_zero() {
            resend_refused("LPOP", || self.client.lpop(self.target.as_str(), None))
                .await
                .map_err(|e| Error::from_redis("LPOP", &self.target, e))?
        } else {
            // BLPOP takes seconds with millisecond precision; round up so it never waits less.
            let slice = Duration::from_millis(timeout.as_millis().max(1) as u64);
            self.blpop(slice).await?
        };
        raw.map(|raw| self.decode(raw)).transpose()
    }

    /// Takes up to `limit` values without waiting.
    ///
    /// Java: `RQueue#poll(limit)`.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] for the first value that does not decode (the others have left Redis
    /// too; [`poll_many_raw`](Self::poll_many_raw) keeps them apart), or a Redis error.
    pub async fn poll_many(&self, limit: usize) -> Result<Vec<C::Value>> {
        self.poll_many_raw(limit).await?.into_iter().collect()
    }

    /// Like [`poll_many`](Self::poll_many), with each value's decode result apart.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn poll_many_raw(&self, limit: usize) -> Result<Vec<Result<C::Value>>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let reply: Value = resend_refused("LPOP", || {
            self.client.lpop(self.target.as_str(), Some(limit))
        })
        .await
        .map_err(|e| Error::from_redis("LPOP", &self.target, e))?;
        let raws = reply::bytes_list(reply, "LPOP")?;
        Ok(raws.into_iter().map(|raw| self.decode(raw)).collect())
    }

    /// Puts values taken but not handed over (the caller could not write or process them) back
    /// at the head of the list, `values[0]` first, so the next take gets them again in their
    /// order.
    ///
    /// Java: `RDeque#addFirst` of each, the last one first.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`], or a Redis error (the values are then not on the list).
    pub async fn give_back(&self, values: &[C::Value]) -> Result<()> {
        let raws = values
            .iter()
            .map(|value| encode_value(&*self.codec, value.borrow()))
            .collect::<Result<Vec<_>>>()?;
        push_front(&self.client, &self.target, raws).await
    }

    /// The values as a stream: each item is one [`take`](Self::take).
    ///
    /// The stream ends only when it is dropped; errors are items, and the stream goes on after
    /// them.
    pub fn into_stream(self) -> impl Stream<Item = Result<C::Value>> {
        futures::stream::unfold(self, |consumer| async move {
            let item = consumer.take().await;
            Some((item, consumer))
        })
    }

    /// Closes the consumer's connection (dropping the consumer closes it in the background).
    pub async fn close(self) {
        let _ = self.client.quit().await;
    }
}

/// `LPUSH` of `raws` onto `list` so that `raws[0]` ends at the head and the rest follow in
/// their order (LPUSH puts each argument in front of the one before it). Nothing is sent for
/// none.
pub(crate) async fn push_front(client: &Client, list: &str, mut raws: Vec<Vec<u8>>) -> Result<()> {
    if raws.is_empty() {
        return Ok(());
    }
    raws.reverse();
    let values: Vec<Value> = raws
        .into_iter()
        .map(|raw| Value::Bytes(raw.into()))
        .collect();
    let _: u64 = resend_refused("LPUSH", || client.lpush(list, values.clone()))
        .await
        .map_err(|e| Error::from_redis("LPUSH", list, e))?;
    Ok(())
}

impl<C: Codec> Drop for Consumer<C> {
    fn drop(&mut self) {
        // The connection is the consumer's own: close it so it does not outlive the consumer.
        if self.client.is_connected() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                let client = self.client.clone();
                runtime.spawn(async move {
                    let _ = client.quit().await;
                });
            }
        }
    }
}
