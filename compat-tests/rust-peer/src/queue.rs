//! One opened queue, a [`DelayedQueue`] or (`open` with `shards` N) a [`ShardedQueue`], shard
//! `i` the Redisson queue `NAME:{i}` that the Java side reaches through the README's recipe.
//! Every op is written once for both kinds; an op one kind lacks answers an error that says so.
//!
//! On a sharded queue, `offer` also answers the `shard` delayq chose, handles print as
//! `SHARD:HEX`, and `shard_for` (`values`) answers delayq's
//! [`shard_for`](ShardedQueue::shard_for) of each. The ops a sharded queue lacks (see
//! [`ShardedQueue`]'s docs): `remove_all`, `contains_all`, `peek`, `poll`, `poll_many`,
//! `reliable_take`.

use crate::java_payloads::{OrderEvent, Payload};
use crate::kinds::{
    hex, BytesKind, Kind, KryoKind, KryoMap, LongKind, Order, SerdeKind, StringKind,
};
use crate::Peer;
use crate::{err, field, now_ms, reply, u64_field, BoxFut, OpenOpts, Ops, Reply, POLL_SLICE};
use delayq::codec::java::BigDecimal;
use delayq::codec::kryo::JavaBytes;
use delayq::codec::Codec;
use delayq::codec::{JavaHashMap, JsonJacksonCodec, MsgPackJacksonCodec, TypedJsonJacksonCodec};
use delayq::{
    Consumer, DelayedQueue, Job, JobError, Recurrence, ReliableConsumer, Schedule, ShardedConsumer,
    ShardedQueue,
};
use serde_json::{json, Value};
use std::borrow::Borrow;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, OnceCell};

/// A queue of either kind, or what each kind gives for the same purpose (its consumer).
enum Target<One, Sharded> {
    One(One),
    Sharded(Sharded),
}

/// `$body` with `$q` bound to the handle `$target` holds, whichever kind it is.
macro_rules! each {
    ($target:expr, $q:ident => $body:expr) => {
        match $target {
            Target::One($q) => $body,
            Target::Sharded($q) => $body,
        }
    };
}

type Queue<C> = Target<DelayedQueue<C>, ShardedQueue<C>>;
type Taker<C> = Target<Consumer<C>, ShardedConsumer<C>>;

/// One opened queue: a delayq queue plus the neutral-value mapping for its codec.
struct Handle<K: Kind> {
    kind: K,
    /// A second codec instance, to report the bytes of values read back.
    codec: K::C,
    queue: Queue<K::C>,
    consumer: OnceCell<Taker<K::C>>,
    reliable: OnceCell<ReliableConsumer<K::C>>,
}

/// The reply `{"result": ...}` of an op's outcome.
fn result(outcome: delayq::Result<impl serde::Serialize>) -> Reply {
    reply(vec![("result", json!(outcome.map_err(err)?))])
}

/// What the worker's handler saw of one job.
struct Seen<V> {
    value: V,
    raw: Vec<u8>,
    queue: String,
    attempt: u32,
    at_ms: u64,
}

impl<K: Kind> Handle<K>
where
    <K::C as Codec>::Value: 'static,
{
    /// A value read back: its neutral form and the bytes the codec encodes it to.
    fn item(&self, v: &<K::C as Codec>::Value) -> Result<Value, String> {
        let raw = self.codec.encode(v.borrow()).map_err(err)?;
        Ok(json!({ "value": self.kind.show(v)?, "raw": hex::encode(&raw) }))
    }

    fn items(&self, vs: &[<K::C as Codec>::Value]) -> Result<Value, String> {
        vs.iter()
            .map(|v| self.item(v))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    }

    fn opt_item(&self, v: Option<&<K::C as Codec>::Value>) -> Result<Value, String> {
        match v {
            Some(v) => self.item(v),
            None => Ok(Value::Null),
        }
    }

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

    /// The queue, for `op`, which only a queue that is not sharded has.
    fn one(&self, op: &str) -> Result<&DelayedQueue<K::C>, String> {
        match &self.queue {
            Target::One(q) => Ok(q),
            Target::Sharded(_) => Err(format!("op {op:?} is not on a sharded queue")),
        }
    }

    async fn consumer(&self) -> Result<&Taker<K::C>, String> {
        let open = || async {
            Ok::<_, delayq::Error>(match &self.queue {
                Target::One(q) => Target::One(q.consumer().await?),
                Target::Sharded(q) => Target::Sharded(q.consumer()),
            })
        };
        self.consumer.get_or_try_init(open).await.map_err(err)
    }

    async fn reliable(&self, op: &str) -> Result<&ReliableConsumer<K::C>, String> {
        let q = self.one(op)?;
        self.reliable
            .get_or_try_init(|| q.reliable_consumer())
            .await
            .map_err(err)
    }

    async fn run(&self, op: &str, args: &Value) -> Reply {
        let q = &self.queue;
        let delay = || u64_field(args, "delay_ms").map(Duration::from_millis);
        match op {
            "offer" => {
                let v = self.value(args)?;
                each!(q, q => q.offer(v.borrow(), delay()?).await).map_err(err)?;
                match q {
                    Target::One(_) => reply(vec![]),
                    Target::Sharded(q) => {
                        let shard = q.shard_for(v.borrow()).map_err(err)?;
                        reply(vec![("shard", json!(shard))])
                    }
                }
            }
            "offer_all" => {
                let raw = field(args, "items")?
                    .as_array()
                    .ok_or("field \"items\" is not an array")?;
                let mut items = Vec::with_capacity(raw.len());
                for it in raw {
                    let v = self.value(it)?;
                    items.push((v, Duration::from_millis(u64_field(it, "delay_ms")?)));
                }
                each!(q, q => q.offer_all(&items).await).map_err(err)?;
                reply(vec![("count", json!(items.len()))])
            }
            "offer_with_handle" => {
                let v = self.value(args)?;
                let handle = each!(q, q => q
                    .offer_with_handle(v.borrow(), delay()?)
                    .await
                    .map(|h| h.to_string()))
                .map_err(err)?;
                reply(vec![("handle", json!(handle))])
            }
            "offer_dedup" => {
                let v = self.value(args)?;
                let key = field(args, "key")?
                    .as_str()
                    .ok_or("field \"key\" is not a string")?;
                let window = Duration::from_millis(u64_field(args, "window_ms")?);
                let debounce = args.get("debounce").and_then(Value::as_bool) == Some(true);
                let dedup = match debounce {
                    true => delayq::dedup::Dedup::debounce(key, window),
                    false => delayq::dedup::Dedup::throttle(key, window),
                };
                let (outcome, handle) = match q {
                    Target::One(q) => {
                        let outcome = q
                            .dedup(dedup.clone())
                            .offer(v.borrow(), delay()?)
                            .await
                            .map_err(err)?;
                        (outcome, outcome.handle().to_string())
                    }
                    Target::Sharded(q) => {
                        let (shard, outcome) = q
                            .dedup(dedup)
                            .offer(v.borrow(), delay()?)
                            .await
                            .map_err(err)?;
                        (
                            outcome,
                            delayq::ShardedHandle::new(shard, outcome.handle()).to_string(),
                        )
                    }
                };
                reply(vec![
                    ("outcome", json!(outcome.as_str())),
                    ("handle", json!(handle)),
                    ("due_ms", json!(outcome.due_ms())),
                ])
            }
            "offer_unique" => {
                let v = self.value(args)?;
                result(each!(q, q => q.offer_unique(v.borrow(), delay()?).await))
            }
            "reschedule" => {
                let v = self.value(args)?;
                result(each!(q, q => q.reschedule(v.borrow(), delay()?).await))
            }
            "cancel" | "reschedule_by_id" => {
                let text = field(args, "handle")?
                    .as_str()
                    .ok_or("field \"handle\" is not a string")?;
                // Each kind parses its own handle: an entry's, or one with its shard.
                result(each!(q, q => {
                    let handle = text.parse().map_err(err)?;
                    match op {
                        "cancel" => q.cancel(&handle).await,
                        _ => q.reschedule_by_id(&handle, delay()?).await,
                    }
                }))
            }
            "schedule_every" => {
                // A recurring schedule on the queue, its value encoded with the queue's codec;
                // the queue's own scheduler (open with `transfer`) fires it.
                let q = self.one(op)?;
                let value = self.value(args)?;
                let every = Duration::from_millis(u64_field(args, "every_ms")?);
                let schedule = Schedule::new(
                    field(args, "schedule")?
                        .as_str()
                        .ok_or("field \"schedule\" is not a string")?,
                    Recurrence::every(every).map_err(err)?,
                    value,
                )
                .start_ms(u64_field(args, "start_ms")? as i64)
                .end_ms(u64_field(args, "end_ms")? as i64);
                let info = q.schedules().set(schedule).await.map_err(err)?;
                reply(vec![("next_ms", json!(info.next_ms))])
            }
            "shard_for" => {
                let Target::Sharded(sharded) = q else {
                    return Err("op \"shard_for\" is only on a sharded queue".into());
                };
                let shards = self
                    .values(args)?
                    .iter()
                    .map(|v| sharded.shard_for(v.borrow()).map_err(err))
                    .collect::<Result<Vec<_>, _>>()?;
                reply(vec![("shards", json!(shards))])
            }
            "remove" | "contains" => {
                let v = self.value(args)?;
                result(each!(q, q => match op {
                    "remove" => q.remove(v.borrow()).await,
                    _ => q.contains(v.borrow()).await,
                }))
            }
            "remove_all" | "contains_all" => {
                let (one, values) = (self.one(op)?, self.values(args)?);
                result(match op {
                    "remove_all" => one.remove_all(&values).await,
                    _ => one.contains_all(&values).await,
                })
            }
            "size" => result(each!(q, q => q.size().await)),
            "is_empty" => result(each!(q, q => q.is_empty().await)),
            "peek" => {
                let v = self.one(op)?.peek().await.map_err(err)?;
                reply(vec![("item", self.opt_item(v.as_ref())?)])
            }
            "poll" => {
                let v = self.one(op)?.poll().await.map_err(err)?;
                reply(vec![("item", self.opt_item(v.as_ref())?)])
            }
            "poll_many" => {
                let n = u64_field(args, "n")? as usize;
                let vs = self.one(op)?.poll_many(n).await.map_err(err)?;
                reply(vec![("items", self.items(&vs)?)])
            }
            "read_all" => {
                let vs = each!(q, q => q.read_all().await).map_err(err)?;
                reply(vec![("items", self.items(&vs)?)])
            }
            "clear" => result(each!(q, q => q.clear().await)),
            "destroy" => {
                each!(q, q => q.destroy().await).map_err(err)?;
                reply(vec![])
            }
            "take" => self.take(args).await,
            "take_many" => self.take_many(args).await,
            "reliable_take" => self.reliable_take(op, args).await,
            "work" => self.work(args).await,
            other => Err(format!("unknown op {other:?}")),
        }
    }

    /// Takes one due value (the consumer polls for at most `timeout_ms`).
    async fn take(&self, args: &Value) -> Reply {
        let timeout = Duration::from_millis(u64_field(args, "timeout_ms")?);
        let consumer = self.consumer().await?;
        let v = each!(consumer, c => c.poll(timeout).await).map_err(err)?;
        let at = now_ms();
        reply(vec![
            ("item", self.opt_item(v.as_ref())?),
            ("at_ms", json!(at)),
        ])
    }

    /// Takes up to `count` values from the target list before the deadline, each stamped with
    /// the time it arrived.
    async fn take_many(&self, args: &Value) -> Reply {
        let count = u64_field(args, "count")? as usize;
        let deadline = Instant::now() + Duration::from_millis(u64_field(args, "timeout_ms")?);
        let consumer = self.consumer().await?;
        let mut got = Vec::new();
        while got.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let slice = left.min(POLL_SLICE);
            if let Some(v) = each!(consumer, c => c.poll(slice).await).map_err(err)? {
                let at = now_ms();
                let mut item = self.item(&v)?;
                item["at_ms"] = json!(at);
                got.push(item);
            }
        }
        reply(vec![("items", Value::Array(got))])
    }

    /// Takes one value with delayq's reliable consumer and settles it at once: `outcome` "ack",
    /// or "nack" with `delay_ms` (a retry through the delayed queue).
    async fn reliable_take(&self, op: &str, args: &Value) -> Reply {
        let timeout = Duration::from_millis(u64_field(args, "timeout_ms")?);
        let consumer = self.reliable(op).await?;
        let Some(delivery) = consumer.take_timeout(timeout).await.map_err(err)? else {
            return reply(vec![("item", Value::Null)]);
        };
        let item = self.opt_item(delivery.value())?;
        let attempt = delivery.attempt();
        let settled = match field(args, "outcome")?.as_str() {
            Some("ack") => delivery.ack().await.map_err(err)?,
            Some("nack") => {
                let delay = Duration::from_millis(u64_field(args, "delay_ms")?);
                delivery.nack(delay).await.map_err(err)?
            }
            other => return Err(format!("unknown outcome {other:?}")),
        };
        reply(vec![
            ("item", item),
            ("attempt", json!(attempt)),
            ("settled", json!(settled)),
            ("at_ms", json!(now_ms())),
        ])
    }

    /// Runs delayq's worker (over every shard, for a sharded queue) until `count` jobs are
    /// handled or `timeout_ms` passes, then `linger_ms` more (so a second delivery would be
    /// seen); answers every job (`value`, `raw`, `job_raw`, `queue`: the shard's name, `attempt`,
    /// `at_ms`) and the worker's counters (`stats`).
    async fn work(&self, args: &Value) -> Reply {
        let count = u64_field(args, "count")? as usize;
        let deadline = Instant::now() + Duration::from_millis(u64_field(args, "timeout_ms")?);
        let linger =
            Duration::from_millis(args.get("linger_ms").and_then(Value::as_u64).unwrap_or(300));
        let concurrency = args.get("concurrency").and_then(Value::as_u64).unwrap_or(4) as usize;
        let (tx, mut rx) = mpsc::unbounded_channel::<Seen<<K::C as Codec>::Value>>();
        let handler = move |job: Job<<K::C as Codec>::Value>| {
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
        };
        let worker = each!(&self.queue, q => q
            .worker(concurrency, handler)
            .shutdown_grace(Duration::from_secs(5))
            .spawn())
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
            let mut it = self.item(&s.value)?;
            it["job_raw"] = json!(hex::encode(&s.raw));
            it["queue"] = json!(s.queue);
            it["attempt"] = json!(s.attempt);
            it["at_ms"] = json!(s.at_ms);
            items.push(it);
        }
        let stats = json!({
            "taken": stats.taken,
            "acked": stats.acked,
            "retried": stats.retried,
            "dead": stats.dead,
            "given_back": stats.given_back,
            "lost": stats.lost,
            "errors": stats.errors,
        });
        reply(vec![("items", Value::Array(items)), ("stats", stats)])
    }
}

impl<K: Kind> Ops for Handle<K>
where
    <K::C as Codec>::Value: 'static,
{
    fn call<'a>(&'a self, op: &'a str, args: &'a Value) -> BoxFut<'a> {
        Box::pin(self.run(op, args))
    }
}

/// Builds a delayq queue for `kind` (a sharded one when `opts` has `shards`) and wraps it as
/// [`Ops`].
pub(crate) async fn open_with<K: Kind>(
    client: &fred::clients::Client,
    kind: K,
    opts: &OpenOpts<'_>,
) -> Result<Arc<dyn Ops>, String>
where
    <K::C as Codec>::Value: 'static,
{
    let queue = match opts.shards {
        None => DelayedQueue::builder(client.clone(), opts.name, kind.codec())
            .options(opts.options())
            .transfer(opts.transfer)
            .group_config(opts.group_config())
            .build()
            .await
            .map(Target::One),
        Some(shards) => ShardedQueue::builder(client.clone(), opts.name, shards, kind.codec())
            .options(opts.options())
            .transfer(opts.transfer)
            .group_config(opts.group_config())
            .build()
            .await
            .map(Target::Sharded),
    }
    .map_err(err)?;
    let codec = kind.codec();
    Ok(Arc::new(Handle {
        kind,
        codec,
        queue,
        consumer: OnceCell::new(),
        reliable: OnceCell::new(),
    }))
}

/// Opens a queue with a serde codec family (`$codec<T>`) for the kind named in `opts`.
macro_rules! open_serde {
    ($client:expr, $opts:expr, $codec:ident) => {
        match $opts.kind {
            "string" => open_with($client, SerdeKind::<$codec<String>>(PhantomData), $opts).await,
            "long" => open_with($client, SerdeKind::<$codec<i64>>(PhantomData), $opts).await,
            "map" => {
                open_with(
                    $client,
                    SerdeKind::<$codec<JavaHashMap<String>>>(PhantomData),
                    $opts,
                )
                .await
            }
            "list" => {
                open_with(
                    $client,
                    SerdeKind::<$codec<Vec<String>>>(PhantomData),
                    $opts,
                )
                .await
            }
            "order" => open_with($client, SerdeKind::<$codec<Order>>(PhantomData), $opts).await,
            "decimal" => {
                open_with($client, SerdeKind::<$codec<BigDecimal>>(PhantomData), $opts).await
            }
            "event" => {
                open_with($client, SerdeKind::<$codec<OrderEvent>>(PhantomData), $opts).await
            }
            other => Err(format!(
                "kind {other:?} is not supported with {}",
                $opts.codec
            )),
        }
    };
}

/// Opens a queue with the codec named in `opts`.
pub(crate) async fn open(peer: &Peer, opts: &OpenOpts<'_>) -> Result<Arc<dyn Ops>, String> {
    let c = &peer.client;
    match opts.codec {
        "string" => open_with(c, StringKind, opts).await,
        "long" => open_with(c, LongKind, opts).await,
        "bytes" => open_with(c, BytesKind, opts).await,
        "json" => open_serde!(c, opts, JsonJacksonCodec),
        "typed_json" => open_serde!(c, opts, TypedJsonJacksonCodec),
        "msgpack" => open_serde!(c, opts, MsgPackJacksonCodec),
        "kryo5" => match opts.kind {
            "string" => open_with(c, KryoKind::<String>(PhantomData), opts).await,
            "long" => open_with(c, KryoKind::<i64>(PhantomData), opts).await,
            // A Java `byte[]` root value: only Kryo among these codecs carries one typed.
            "bytes" => open_with(c, KryoKind::<JavaBytes>(PhantomData), opts).await,
            "map" => open_with(c, KryoKind::<KryoMap>(PhantomData), opts).await,
            "list" => open_with(c, KryoKind::<Vec<String>>(PhantomData), opts).await,
            "order" => open_with(c, KryoKind::<Order>(PhantomData), opts).await,
            "decimal" => open_with(c, KryoKind::<BigDecimal>(PhantomData), opts).await,
            "event" => open_with(c, KryoKind::<OrderEvent>(PhantomData), opts).await,
            "payload" => open_with(c, KryoKind::<Payload>(PhantomData), opts).await,
            other => Err(format!("kind {other:?} is not supported with kryo5")),
        },
        other => Err(format!(
            "codec {other:?} (kind {:?}) is not supported by this peer",
            opts.kind
        )),
    }
}
