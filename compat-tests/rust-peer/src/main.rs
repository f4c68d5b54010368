//! `delayq-compat-peer`: drives delayq for the Redisson interop suite in `compat-tests/`.
//!
//! Usage: `delayq-compat-peer <redis-url>`.
//!
//! It prints `{"ready":true}` once connected, then reads one JSON command per line on stdin and
//! writes one JSON reply per line on stdout. Commands run concurrently; every reply carries the
//! command's `id`, so replies may come back in any order:
//!
//! ```text
//! {"id":1,"op":"open","h":"q1","name":"q1","codec":"string","legacy":false,"transfer":true}
//! {"id":1,"ok":true}
//! {"id":2,"op":"offer","h":"q1","value":{"kind":"string","v":"a"},"delay_ms":300}
//! {"id":3,"op":"take","h":"q1","timeout_ms":2000}
//! {"id":3,"ok":true,"item":{"value":{"kind":"string","v":"a"},"raw":"61"},"at_ms":1767225600423}
//! {"id":4,"op":"bogus"}
//! {"id":4,"ok":false,"error":"unknown op \"bogus\""}
//! ```
//!
//! Values are described neutrally (`kind` = `string`, `long`, `bytes` with `hex`, ...) and mapped
//! to the Rust type of the queue's codec; every value read back is reported with the bytes the
//! codec encodes it to (`raw`, lower-case hex). Times are milliseconds since the Unix epoch.
//!
//! `open` with `shards` N opens a sharded queue (`ShardedQueue`, shards `NAME:{i}`) instead;
//! its ops are listed in `sharded.rs`.

#[path = "../../../tests/common/java_payloads.rs"]
mod java_payloads;
mod kinds;
mod sharded;

use delayq::codec::Codec;
use delayq::{
    Consumer, DelayedQueue, EntryFormat, GroupConfig, ReliableConsumer, Scheduler, SchedulerHandle,
};
use kinds::{hex, Kind};
use serde_json::{json, Map, Value};
use std::borrow::Borrow;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, Mutex, OnceCell};

/// A command's result: the reply's fields, or an error message.
type Reply = Result<Map<String, Value>, String>;

/// A boxed future of a [`Reply`].
type BoxFut<'a> = Pin<Box<dyn Future<Output = Reply> + Send + 'a>>;

/// The longest a single consumer poll waits inside `take_many`, so its deadline is kept.
const POLL_SLICE: Duration = Duration::from_secs(1);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn field<'a>(args: &'a Value, name: &str) -> Result<&'a Value, String> {
    args.get(name)
        .ok_or_else(|| format!("missing field {name:?}"))
}

fn str_field<'a>(args: &'a Value, name: &str) -> Result<&'a str, String> {
    field(args, name)?
        .as_str()
        .ok_or_else(|| format!("field {name:?} is not a string"))
}

fn u64_field(args: &Value, name: &str) -> Result<u64, String> {
    field(args, name)?
        .as_u64()
        .ok_or_else(|| format!("field {name:?} is not a non-negative integer"))
}

fn bool_field(args: &Value, name: &str, default: bool) -> Result<bool, String> {
    match args.get(name) {
        None => Ok(default),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| format!("field {name:?} is not a boolean")),
    }
}

fn reply(pairs: Vec<(&str, Value)>) -> Reply {
    Ok(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// The operations on one opened queue, whatever its codec.
trait Ops: Send + Sync {
    fn call<'a>(&'a self, op: &'a str, args: &'a Value) -> BoxFut<'a>;
}

/// One opened queue: a delayq queue plus the neutral-value mapping for its codec.
struct Handle<K: Kind> {
    kind: K,
    /// A second codec instance, to report the bytes of values read back.
    codec: K::C,
    queue: DelayedQueue<K::C>,
    consumer: OnceCell<Consumer<K::C>>,
    reliable: OnceCell<ReliableConsumer<K::C>>,
}

/// A value read back: its neutral form and the bytes `codec` encodes it to.
fn item<K: Kind>(kind: &K, codec: &K::C, v: &<K::C as Codec>::Value) -> Result<Value, String> {
    let raw = codec.encode(v.borrow()).map_err(err)?;
    Ok(json!({ "value": kind.show(v)?, "raw": hex::encode(&raw) }))
}

impl<K: Kind> Handle<K> {
    fn item(&self, v: &<K::C as Codec>::Value) -> Result<Value, String> {
        item(&self.kind, &self.codec, v)
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

    async fn consumer(&self) -> Result<&Consumer<K::C>, String> {
        self.consumer
            .get_or_try_init(|| async { self.queue.consumer().await })
            .await
            .map_err(err)
    }

    async fn reliable(&self) -> Result<&ReliableConsumer<K::C>, String> {
        self.reliable
            .get_or_try_init(|| async { self.queue.reliable_consumer().await })
            .await
            .map_err(err)
    }

    async fn run(&self, op: &str, args: &Value) -> Reply {
        let q = &self.queue;
        match op {
            "offer" => {
                let v = self.value(args)?;
                let delay = Duration::from_millis(u64_field(args, "delay_ms")?);
                q.offer(v.borrow(), delay).await.map_err(err)?;
                reply(vec![])
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
                q.offer_all(&items).await.map_err(err)?;
                reply(vec![("count", json!(items.len()))])
            }
            "offer_with_handle" => {
                let v = self.value(args)?;
                let delay = Duration::from_millis(u64_field(args, "delay_ms")?);
                let handle = q.offer_with_handle(v.borrow(), delay).await.map_err(err)?;
                reply(vec![("handle", json!(handle.to_string()))])
            }
            "offer_unique" => {
                let v = self.value(args)?;
                let delay = Duration::from_millis(u64_field(args, "delay_ms")?);
                let replaced = q.offer_unique(v.borrow(), delay).await.map_err(err)?;
                reply(vec![("result", json!(replaced))])
            }
            "reschedule" => {
                let v = self.value(args)?;
                let delay = Duration::from_millis(u64_field(args, "delay_ms")?);
                let found = q.reschedule(v.borrow(), delay).await.map_err(err)?;
                reply(vec![("result", json!(found))])
            }
            "cancel" | "reschedule_by_id" => {
                let text = field(args, "handle")?
                    .as_str()
                    .ok_or("field \"handle\" is not a string")?;
                let handle: delayq::OfferHandle = text.parse().map_err(err)?;
                let found = if op == "cancel" {
                    q.cancel(&handle).await.map_err(err)?
                } else {
                    let delay = Duration::from_millis(u64_field(args, "delay_ms")?);
                    q.reschedule_by_id(&handle, delay).await.map_err(err)?
                };
                reply(vec![("result", json!(found))])
            }
            "remove" => {
                let found = q.remove(self.value(args)?.borrow()).await.map_err(err)?;
                reply(vec![("result", json!(found))])
            }
            "remove_all" => {
                let changed = q.remove_all(&self.values(args)?).await.map_err(err)?;
                reply(vec![("result", json!(changed))])
            }
            "contains" => {
                let found = q.contains(self.value(args)?.borrow()).await.map_err(err)?;
                reply(vec![("result", json!(found))])
            }
            "contains_all" => {
                let found = q.contains_all(&self.values(args)?).await.map_err(err)?;
                reply(vec![("result", json!(found))])
            }
            "size" => reply(vec![("result", json!(q.size().await.map_err(err)?))]),
            "is_empty" => reply(vec![("result", json!(q.is_empty().await.map_err(err)?))]),
            "peek" => {
                let v = q.peek().await.map_err(err)?;
                reply(vec![("item", self.opt_item(v.as_ref())?)])
            }
            "poll" => {
                let v = q.poll().await.map_err(err)?;
                reply(vec![("item", self.opt_item(v.as_ref())?)])
            }
            "poll_many" => {
                let n = u64_field(args, "n")? as usize;
                let vs = q.poll_many(n).await.map_err(err)?;
                reply(vec![("items", self.items(&vs)?)])
            }
            "read_all" => {
                let vs = q.read_all().await.map_err(err)?;
                reply(vec![("items", self.items(&vs)?)])
            }
            "clear" => reply(vec![("result", json!(q.clear().await.map_err(err)?))]),
            "destroy" => {
                q.destroy().await.map_err(err)?;
                reply(vec![])
            }
            "take" => {
                let timeout = Duration::from_millis(u64_field(args, "timeout_ms")?);
                let consumer = self.consumer().await?;
                let v = consumer.poll(timeout).await.map_err(err)?;
                let at = now_ms();
                reply(vec![
                    ("item", self.opt_item(v.as_ref())?),
                    ("at_ms", json!(at)),
                ])
            }
            "take_many" => {
                // Takes up to `count` values from the target list before the deadline, each
                // stamped with the time it arrived.
                let count = u64_field(args, "count")? as usize;
                let deadline =
                    Instant::now() + Duration::from_millis(u64_field(args, "timeout_ms")?);
                let consumer = self.consumer().await?;
                let mut got = Vec::new();
                while got.len() < count {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    if let Some(v) = consumer.poll(left.min(POLL_SLICE)).await.map_err(err)? {
                        let at = now_ms();
                        let mut item = self.item(&v)?;
                        item["at_ms"] = json!(at);
                        got.push(item);
                    }
                }
                reply(vec![("items", Value::Array(got))])
            }
            "reliable_take" => {
                // Takes one value with delayq's reliable consumer and settles it at once:
                // `outcome` "ack", or "nack" with `delay_ms` (a retry through the delayed queue).
                let timeout = Duration::from_millis(u64_field(args, "timeout_ms")?);
                let consumer = self.reliable().await?;
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
            other => Err(format!("unknown op {other:?}")),
        }
    }
}

impl<K: Kind> Ops for Handle<K> {
    fn call<'a>(&'a self, op: &'a str, args: &'a Value) -> BoxFut<'a> {
        Box::pin(self.run(op, args))
    }
}

/// Builds a delayq queue for `kind` (a sharded one when `opts` has `shards`) and wraps it as
/// [`Ops`].
async fn open_with<K: Kind>(
    client: &fred::clients::Client,
    kind: K,
    opts: &OpenOpts<'_>,
) -> Result<Arc<dyn Ops>, String>
where
    <K::C as Codec>::Value: Clone + 'static,
{
    if let Some(shards) = opts.shards {
        return sharded::open(client, kind, opts, shards).await;
    }
    let queue = DelayedQueue::builder(client.clone(), opts.name, kind.codec())
        .options(delayq::QueueOptions::default().format(opts.format()))
        .transfer(opts.transfer)
        .group_config(opts.group_config())
        .build()
        .await
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

/// The options of `open` (and, minus the codec, of `scheduler_start`).
struct OpenOpts<'a> {
    /// The target list's name.
    name: &'a str,
    /// The codec's name.
    codec: &'a str,
    /// The value kind, for codecs that carry several (JSON, Kryo).
    kind: &'a str,
    /// Legacy `dLc0` entries (Redisson before 3.21.1).
    legacy: bool,
    /// Whether the queue runs a transfer scheduler.
    transfer: bool,
    /// The scheduler's safety sweep; `None` leaves only channel messages and its own timer.
    sweep: Option<Duration>,
    /// A sharded queue of this many shards (`ShardedQueue`) instead of one queue.
    shards: Option<usize>,
}

impl OpenOpts<'_> {
    fn parse(args: &Value) -> Result<OpenOpts<'_>, String> {
        let sweep = match args.get("sweep_ms") {
            None => GroupConfig::default().sweep_interval(),
            Some(Value::Null) => None,
            Some(_) => Some(Duration::from_millis(u64_field(args, "sweep_ms")?)),
        };
        Ok(OpenOpts {
            name: str_field(args, "name")?,
            codec: args.get("codec").and_then(Value::as_str).unwrap_or(""),
            kind: args.get("kind").and_then(Value::as_str).unwrap_or(""),
            legacy: bool_field(args, "legacy", false)?,
            transfer: bool_field(args, "transfer", true)?,
            sweep,
            shards: match args.get("shards") {
                None | Some(Value::Null) => None,
                Some(_) => Some(u64_field(args, "shards")? as usize),
            },
        })
    }

    fn format(&self) -> EntryFormat {
        if self.legacy {
            EntryFormat::Legacy
        } else {
            EntryFormat::Current
        }
    }

    fn group_config(&self) -> GroupConfig {
        GroupConfig::default().with_sweep_interval(self.sweep)
    }
}

/// Everything the peer holds between commands.
struct Peer {
    client: fred::clients::Client,
    queues: Mutex<HashMap<String, Arc<dyn Ops>>>,
    schedulers: Mutex<HashMap<String, SchedulerHandle>>,
}

impl Peer {
    async fn open(&self, args: &Value) -> Reply {
        let h = str_field(args, "h")?;
        let opts = OpenOpts::parse(args)?;
        let ops = kinds::open(self, &opts).await?;
        self.queues.lock().await.insert(h.to_owned(), ops);
        reply(vec![])
    }

    async fn scheduler_start(&self, args: &Value) -> Reply {
        let opts = OpenOpts::parse(args)?;
        let name = opts.name;
        let handle = Scheduler::builder(self.client.clone(), name)
            .options(delayq::QueueOptions::default().format(opts.format()))
            .group_config(opts.group_config())
            .spawn()
            .await
            .map_err(err)?;
        if let Some(old) = self.schedulers.lock().await.insert(name.to_owned(), handle) {
            old.shutdown().await;
        }
        reply(vec![])
    }

    async fn scheduler_stop(&self, args: &Value) -> Reply {
        let name = str_field(args, "name")?;
        let handle = self.schedulers.lock().await.remove(name);
        match handle {
            Some(h) => {
                h.shutdown().await;
                reply(vec![("result", json!(true))])
            }
            None => reply(vec![("result", json!(false))]),
        }
    }

    async fn dispatch(&self, args: &Value) -> Reply {
        let op = str_field(args, "op")?;
        match op {
            "ping" => reply(vec![("at_ms", json!(now_ms()))]),
            "caps" => reply(vec![("codecs", json!(kinds::CODECS))]),
            "open" => self.open(args).await,
            "close" => {
                let h = str_field(args, "h")?;
                let removed = self.queues.lock().await.remove(h).is_some();
                reply(vec![("result", json!(removed))])
            }
            "scheduler_start" => self.scheduler_start(args).await,
            "scheduler_stop" => self.scheduler_stop(args).await,
            _ => {
                let h = str_field(args, "h")?;
                let ops = self
                    .queues
                    .lock()
                    .await
                    .get(h)
                    .cloned()
                    .ok_or_else(|| format!("no open queue {h:?}"))?;
                ops.call(op, args).await
            }
        }
    }
}

async fn handle_line(peer: Arc<Peer>, line: String, out: mpsc::UnboundedSender<String>) {
    let (id, result) = match serde_json::from_str::<Value>(&line) {
        Ok(args) => {
            let id = args.get("id").cloned().unwrap_or(Value::Null);
            (id, peer.dispatch(&args).await)
        }
        Err(e) => (Value::Null, Err(format!("bad JSON command: {e}"))),
    };
    let mut msg = Map::new();
    msg.insert("id".into(), id);
    match result {
        Ok(fields) => {
            msg.insert("ok".into(), json!(true));
            msg.extend(fields);
        }
        Err(e) => {
            msg.insert("ok".into(), json!(false));
            msg.insert("error".into(), json!(e));
        }
    }
    // The writer only goes away when the process is ending.
    let _ = out.send(Value::Object(msg).to_string());
}

async fn real_main() -> Result<(), String> {
    let url = std::env::args()
        .nth(1)
        .ok_or("usage: delayq-compat-peer <redis-url>")?;
    let client = delayq::connect(&url).await.map_err(err)?;
    let peer = Arc::new(Peer {
        client,
        queues: Mutex::new(HashMap::new()),
        schedulers: Mutex::new(HashMap::new()),
    });

    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = rx.recv().await {
            let ok = stdout.write_all(line.as_bytes()).await.is_ok()
                && stdout.write_all(b"\n").await.is_ok()
                && stdout.flush().await.is_ok();
            if !ok {
                break;
            }
        }
    });
    tx.send(json!({ "ready": true }).to_string()).map_err(err)?;

    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut tasks = Vec::new();
    while let Some(line) = lines.next_line().await.map_err(err)? {
        if line.trim().is_empty() {
            continue;
        }
        if line.trim() == "quit" {
            break;
        }
        tasks.push(tokio::spawn(handle_line(peer.clone(), line, tx.clone())));
    }
    for t in tasks {
        let _ = t.await;
    }
    let schedulers: Vec<_> = peer.schedulers.lock().await.drain().collect();
    for (_, h) in schedulers {
        h.shutdown().await;
    }
    drop(tx);
    let _ = writer.await;
    Ok(())
}

#[tokio::main]
async fn main() {
    if let Err(e) = real_main().await {
        eprintln!("delayq-compat-peer: {e}");
        std::process::exit(1);
    }
}
