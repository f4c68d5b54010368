//! Sharded queues in the peer: `open` with `shards` builds a [`ShardedQueue`] (shard `i` is the
//! Redisson queue `NAME:{i}`, a value's shard the JDK's CRC32 of its encoded bytes modulo N),
//! which the Java side reaches through the README's recipe, one `RDelayedQueue` per shard.
//!
//! Ops on such a handle: `offer` (answers the `shard` delayq chose), `offer_all`,
//! `offer_with_handle` (answers `handle`, `SHARD:HEX`), `cancel` (`handle`), `shard_for`
//! (`values`, answers `shards`: delayq's [`shard_for`](ShardedQueue::shard_for) of each),
//! `remove`, `contains`, `size`, `read_all`, `clear`, `destroy`, and `work`: delayq's sharded
//! worker (`ShardedQueue::worker`) until `count` values are handled or `timeout_ms` passes, then
//! `linger_ms` more (so a second delivery would be seen); it answers every job (`value`, `raw`,
//! `queue`: the shard's name, `attempt`, `at_ms`) and the worker's counters (`stats`).

use crate::kinds::Kind;
use crate::{err, field, item, now_ms, reply, u64_field, BoxFut, OpenOpts, Ops, Reply};
use delayq::codec::Codec;
use delayq::{Job, JobError, ShardedHandle, ShardedQueue};
use serde_json::{json, Value};
use std::borrow::Borrow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// One opened sharded queue.
struct Sharded<K: Kind> {
    kind: K,
    /// A second codec instance, to report the bytes of values read back.
    codec: K::C,
    queue: ShardedQueue<K::C>,
}

/// What the worker's handler saw of one job.
struct Seen<V> {
    value: V,
    raw: Vec<u8>,
    queue: String,
    attempt: u32,
    at_ms: u64,
}

impl<K: Kind> Sharded<K>
where
    <K::C as Codec>::Value: Clone + 'static,
{
    fn value(&self, args: &Value) -> Result<<K::C as Codec>::Value, String> {
        self.kind.parse(field(args, "value")?)
    }

    fn values(&self, args: &Value) -> Result<Vec<<K::C as Codec>::Value>, String> {
        field(args, "values")?
            .as_array()
            .ok_or("field \"values\" is not an array")?
            .iter()
            .map(|v| self.kind.parse(v))
            .collect()
    }

    async fn run(&self, op: &str, args: &Value) -> Reply {
        let q = &self.queue;
        match op {
            "offer" => {
                let v = self.value(args)?;
                let delay = Duration::from_millis(u64_field(args, "delay_ms")?);
                let shard = q.shard_for(v.borrow()).map_err(err)?;
                q.offer(v.borrow(), delay).await.map_err(err)?;
                reply(vec![("shard", json!(shard))])
            }
            "offer_all" => {
                let raw = field(args, "items")?
                    .as_array()
                    .ok_or("field \"items\" is not an array")?;
                let mut items = Vec::with_capacity(raw.len());
                for it in raw {
                    let v = self.kind.parse(field(it, "value")?)?;
                    items.push((v, Duration::from_millis(u64_field(it, "delay_ms")?)));
                }
                q.offer_all(&items).await.map_err(err)?;
                reply(vec![("count", json!(items.len()))])
            }
            "offer_with_handle" => {
                let v = self.value(args)?;
                let delay = Duration::from_millis(u64_field(args, "delay_ms")?);
                let handle = q.offer_with_handle(v.borrow(), delay).await.map_err(err)?;
                reply(vec![("handle", json!(handle.to_string()))])
            }
            "cancel" => {
                let text = field(args, "handle")?
                    .as_str()
                    .ok_or("field \"handle\" is not a string")?;
                let handle: ShardedHandle = text.parse().map_err(err)?;
                reply(vec![(
                    "result",
                    json!(q.cancel(&handle).await.map_err(err)?),
                )])
            }
            "shard_for" => {
                let shards = self
                    .values(args)?
                    .iter()
                    .map(|v| q.shard_for(v.borrow()).map_err(err))
                    .collect::<Result<Vec<_>, _>>()?;
                reply(vec![("shards", json!(shards))])
            }
            "remove" => {
                let found = q.remove(self.value(args)?.borrow()).await.map_err(err)?;
                reply(vec![("result", json!(found))])
            }
            "contains" => {
                let found = q.contains(self.value(args)?.borrow()).await.map_err(err)?;
                reply(vec![("result", json!(found))])
            }
            "size" => reply(vec![("result", json!(q.size().await.map_err(err)?))]),
            "read_all" => {
                let items = q
                    .read_all()
                    .await
                    .map_err(err)?
                    .iter()
                    .map(|v| item(&self.kind, &self.codec, v))
                    .collect::<Result<Vec<_>, _>>()?;
                reply(vec![("items", Value::Array(items))])
            }
            "clear" => reply(vec![("result", json!(q.clear().await.map_err(err)?))]),
            "destroy" => {
                q.destroy().await.map_err(err)?;
                reply(vec![])
            }
            "work" => self.work(args).await,
            other => Err(format!("unknown op {other:?} on a sharded queue")),
        }
    }

    /// Runs the sharded worker until `count` jobs (or `timeout_ms`), then `linger_ms` more.
    async fn work(&self, args: &Value) -> Reply {
        let count = u64_field(args, "count")? as usize;
        let deadline = Instant::now() + Duration::from_millis(u64_field(args, "timeout_ms")?);
        let linger =
            Duration::from_millis(args.get("linger_ms").and_then(Value::as_u64).unwrap_or(300));
        let concurrency = args.get("concurrency").and_then(Value::as_u64).unwrap_or(4) as usize;
        let (tx, mut rx) = mpsc::unbounded_channel::<Seen<<K::C as Codec>::Value>>();
        let worker = self
            .queue
            .worker(concurrency, move |job: Job<<K::C as Codec>::Value>| {
                let at_ms = now_ms();
                let seen = Seen {
                    raw: job.raw().to_vec(),
                    queue: job.queue().to_owned(),
                    attempt: job.attempt(),
                    at_ms,
                    value: job.into_value(),
                };
                // The receiver outlives the worker (it is shut down below first).
                let _ = tx.send(seen);
                std::future::ready(Ok::<(), JobError>(()))
            })
            .shutdown_grace(Duration::from_secs(5))
            .spawn()
            .map_err(err)?;
        let mut got = Vec::new();
        let mut until = deadline;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match tokio::time::timeout(left, rx.recv()).await {
                Ok(Some(seen)) => {
                    got.push(seen);
                    if got.len() == count {
                        until = Instant::now() + linger;
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
        let stats = worker.shutdown().await.map_err(err)?;
        while let Ok(seen) = rx.try_recv() {
            got.push(seen);
        }
        let mut items = Vec::with_capacity(got.len());
        for s in &got {
            let mut it = item(&self.kind, &self.codec, &s.value)?;
            it["job_raw"] = json!(crate::kinds::hex::encode(&s.raw));
            it["queue"] = json!(s.queue);
            it["attempt"] = json!(s.attempt);
            it["at_ms"] = json!(s.at_ms);
            items.push(it);
        }
        reply(vec![
            ("items", Value::Array(items)),
            (
                "stats",
                json!({
                    "taken": stats.taken,
                    "acked": stats.acked,
                    "retried": stats.retried,
                    "dead": stats.dead,
                    "given_back": stats.given_back,
                    "lost": stats.lost,
                    "errors": stats.errors,
                }),
            ),
        ])
    }
}

impl<K: Kind> Ops for Sharded<K>
where
    <K::C as Codec>::Value: Clone + 'static,
{
    fn call<'a>(&'a self, op: &'a str, args: &'a Value) -> BoxFut<'a> {
        Box::pin(self.run(op, args))
    }
}

/// Builds a sharded queue of `shards` shards for `kind`.
pub(crate) async fn open<K: Kind>(
    client: &fred::clients::Client,
    kind: K,
    opts: &OpenOpts<'_>,
    shards: usize,
) -> Result<Arc<dyn Ops>, String>
where
    <K::C as Codec>::Value: Clone + 'static,
{
    let queue = ShardedQueue::builder(client.clone(), opts.name, shards, kind.codec())
        .options(delayq::QueueOptions::default().format(opts.format()))
        .transfer(opts.transfer)
        .group_config(opts.group_config())
        .build()
        .await
        .map_err(err)?;
    let codec = kind.codec();
    Ok(Arc::new(Sharded { kind, codec, queue }))
}
