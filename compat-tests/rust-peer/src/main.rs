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
//! `queue.rs` serves both kinds and says which ops a sharded queue lacks.

#[path = "../../../crates/delayq-codec/tests/it/java_payloads.rs"]
mod java_payloads;
mod kinds;
mod queue;

use delayq::{EntryFormat, GroupConfig, QueueOptions, Scheduler, SchedulerHandle};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, Mutex};

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

    fn options(&self) -> QueueOptions {
        QueueOptions::default().format(if self.legacy {
            EntryFormat::Legacy
        } else {
            EntryFormat::Current
        })
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
        let ops = queue::open(self, &opts).await?;
        self.queues.lock().await.insert(h.to_owned(), ops);
        reply(vec![])
    }

    async fn scheduler_start(&self, args: &Value) -> Reply {
        let opts = OpenOpts::parse(args)?;
        let name = opts.name;
        let handle = Scheduler::builder(self.client.clone(), name)
            .options(opts.options())
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
