//! The `gateway` phase: the QStash-compatible gateway as a client sees it, the real `delayq
//! gateway` process (release build) on loopback with a token file and an allow-list, against a
//! redis-server the phase starts for itself. In one run, on one gateway process:
//!
//! 1. delivery to a loopback receiver (a hyper server in this process answering 200):
//!    deliveries a second of messages published undelayed while the queue's transfers were
//!    paused, then released at once; publish-to-delivery latency at a paced rate; the lateness
//!    of messages published with `Upstash-Delay` of a few seconds;
//! 2. publish over HTTP from 64 keep-alive connections (1 h delay, so nothing is delivered),
//!    against the library's own `DelayedQueue::offer` of a value as long as the gateway's
//!    envelope, from 64 tasks on one fred client, in alternating rounds (median kept);
//!
//! then on a fresh process and a flushed server:
//!
//! 3. N messages with 1 KiB bodies published (1 h delay): the process's RSS, then cancels of
//!    random ids by `DELETE /v2/messages/{id}`.
//!
//! A message lost, a publish or cancel not answered as QStash answers it, or the queue holding
//! other than what was published fails the phase; figures are only measured (report.py judges).
//! `--only gateway` runs it alone (no Java).

mod http;

use crate::many::proc_figures;
use crate::redis::{self, cmd, int, now_us, BoxResult, OwnServer};
use delayq::codec::ByteArrayCodec;
use delayq::entry::{unpack, EntryFormat};
use delayq::{DelayedQueue, QueueKeys};
use fred::clients::Client;
use fred::interfaces::ClientLike;
use fred::prelude::Value;
use http::{stamped_body, Conn, Delivery, Receiver};
use rand::seq::SliceRandom;
use serde_json::{json, Value as Json};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Keep-alive connections of the load generator (and tasks of the library's offers).
const CONNECTIONS: usize = 64;
/// `--concurrency` of the gateway unless `--gateway-concurrency` says otherwise: deliveries in
/// flight in the process. The receiver answers at once, so a delivery waits only for the
/// gateway's own Redis calls and the HTTP round trip; more in flight than the default 16 lets
/// those waits overlap.
const DELIVERY_CONCURRENCY: usize = 64;
/// The body of the messages published for throughput and latency.
const PUBLISH_BODY: usize = 128;
/// The body of the pending messages.
const PENDING_BODY: usize = 1024;
/// The gateway's delayq queue (its default).
const QUEUE: &str = "delayq-gateway";
/// The delay of messages that must stay pending.
const HOUR_SECS: u64 = 3_600;

/// The sizes of the phase.
#[derive(Debug, Clone)]
pub(crate) struct Sizes {
    pub(crate) publish_secs: f64,
    pub(crate) publish_rounds: usize,
    /// Messages published undelayed, then released at once (deliveries a second).
    pub(crate) delivery_count: u64,
    /// Paced publishes a second, for how long (publish-to-delivery latency).
    pub(crate) latency_rate: u32,
    pub(crate) latency_secs: f64,
    /// Delayed messages a second, for how long, with delays drawn from this range (s).
    pub(crate) delayed_rate: u32,
    pub(crate) delayed_secs: f64,
    pub(crate) delayed_delay_secs: (u64, u64),
    /// Pending messages of 1 KiB (`--gateway-pending`), and how many of them are cancelled.
    pub(crate) pending: u64,
    pub(crate) cancels: usize,
    /// The gateway's `--concurrency`.
    pub(crate) concurrency: usize,
}

impl Sizes {
    pub(crate) fn full() -> Sizes {
        Sizes {
            publish_secs: 5.0,
            publish_rounds: 3,
            delivery_count: 20_000,
            latency_rate: 1_000,
            latency_secs: 20.0,
            delayed_rate: 200,
            delayed_secs: 10.0,
            delayed_delay_secs: (2, 5),
            pending: 1_000_000,
            cancels: 1_000,
            concurrency: DELIVERY_CONCURRENCY,
        }
    }

    pub(crate) fn smoke() -> Sizes {
        Sizes {
            publish_secs: 0.5,
            publish_rounds: 1,
            delivery_count: 500,
            latency_rate: 1_000,
            latency_secs: 0.5,
            delayed_rate: 200,
            delayed_secs: 0.5,
            delayed_delay_secs: (1, 1),
            pending: 2_000,
            cancels: 100,
            concurrency: DELIVERY_CONCURRENCY,
        }
    }
}

fn log(text: impl AsRef<str>) {
    eprintln!("bench: gateway: {}", text.as_ref());
}

/// The files `delayq gateway` reads its secrets from (mode 0600), and the token.
struct Secrets {
    token: String,
    token_file: String,
    signing_key_file: String,
}

impl Secrets {
    fn write(dir: &str) -> BoxResult<Secrets> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(dir)?;
        let write = |name: &str, text: &str| -> BoxResult<String> {
            let path = format!("{dir}/{name}");
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&path)?;
            writeln!(file, "{text}")?;
            Ok(path)
        };
        let token = format!("tok_{:032x}", rand::random::<u128>());
        let token_file = write("gateway.token", &token)?;
        let key = format!("sig_{:032x}", rand::random::<u128>());
        let signing_key_file = write("signing.key", &key)?;
        Ok(Secrets {
            token,
            token_file,
            signing_key_file,
        })
    }
}

/// A `delayq gateway` process started by the phase.
struct GatewayProcess {
    child: tokio::process::Child,
    addr: SocketAddr,
    log: String,
}

impl GatewayProcess {
    /// The flags every gateway of the phase runs with, besides --url, --listen and the files.
    fn flags(receiver: &str, concurrency: usize) -> Vec<String> {
        vec![
            "--allow-destination".into(),
            receiver.into(),
            "--concurrency".into(),
            concurrency.to_string(),
        ]
    }

    async fn start(
        bin: &str,
        redis_url: &str,
        secrets: &Secrets,
        receiver: &str,
        concurrency: usize,
        log: String,
    ) -> BoxResult<GatewayProcess> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let child = tokio::process::Command::new(bin)
            .args(["--url", redis_url, "gateway", "--listen", &addr.to_string()])
            .args(["--token-file", &secrets.token_file])
            .args(["--signing-key-file", &secrets.signing_key_file])
            .args(Self::flags(receiver, concurrency))
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {bin}: {e}"))?;
        let mut gateway = GatewayProcess { child, addr, log };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = gateway.child.try_wait()? {
                return Err(
                    format!("the gateway exited with {status}{}", gateway.log_tail()).into(),
                );
            }
            if let Ok(mut conn) = Conn::open(addr, &secrets.token).await {
                if conn.healthy().await {
                    return Ok(gateway);
                }
            }
            if Instant::now() > deadline {
                return Err(
                    format!("the gateway did not answer in 60 s{}", gateway.log_tail()).into(),
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn pid(&self) -> BoxResult<u32> {
        Ok(self.child.id().ok_or("the gateway has exited")?)
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!(
            "; its log ({}) ends:\n{}",
            self.log,
            lines[lines.len().saturating_sub(20)..].join("\n")
        )
    }

    /// SIGTERM, and a clean exit within 60 s.
    async fn stop(mut self) -> BoxResult<()> {
        let pid = self.pid()?.to_string();
        tokio::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .await?;
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .map_err(|_| "the gateway did not stop within 60 s")??;
        if !status.success() {
            return Err(format!("the gateway exited with {status}{}", self.log_tail()).into());
        }
        Ok(())
    }
}

/// Resident and peak resident memory (KiB) of a process, from /proc/PID/status.
fn memory_kib(pid: u32) -> BoxResult<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> BoxResult<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .ok_or_else(|| format!("/proc/{pid}/status: no {name}").into())
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// CPU seconds used so far by the gateway, Redis and this driver.
struct Cpu {
    gateway: f64,
    redis: f64,
    driver: f64,
}

impl Cpu {
    async fn now(gateway_pid: Option<u32>, client: &Client) -> BoxResult<Cpu> {
        Ok(Cpu {
            gateway: match gateway_pid {
                Some(pid) => proc_figures(pid)?.1,
                None => 0.0,
            },
            redis: redis::server_cpu_secs(client).await?,
            driver: proc_figures(std::process::id())?.1,
        })
    }

    /// CPU seconds since `self`, each as a share of one core over `secs`.
    async fn since(&self, gateway_pid: Option<u32>, client: &Client, secs: f64) -> BoxResult<Json> {
        let now = Cpu::now(gateway_pid, client).await?;
        let share = |used: f64| if secs > 0.0 { used / secs } else { 0.0 };
        let mut out = json!({
            "redis_cores": share(now.redis - self.redis),
            "driver_cores": share(now.driver - self.driver),
        });
        if gateway_pid.is_some() {
            out["gateway_cores"] = json!(share(now.gateway - self.gateway));
        }
        Ok(out)
    }
}

fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// p50, p90, p99, max, min and mean of `ms`.
fn summary(mut ms: Vec<f64>) -> Json {
    ms.sort_by(f64::total_cmp);
    let mean = if ms.is_empty() {
        0.0
    } else {
        ms.iter().sum::<f64>() / ms.len() as f64
    };
    json!({
        "samples": ms.len(),
        "p50_ms": quantile(&ms, 0.5),
        "p90_ms": quantile(&ms, 0.9),
        "p99_ms": quantile(&ms, 0.99),
        "max_ms": quantile(&ms, 1.0),
        "min_ms": ms.first().copied().unwrap_or(0.0),
        "mean_ms": mean,
    })
}

/// What the phase works with.
struct Setup {
    bin: String,
    redis_url: String,
    client: Client,
    secrets: Secrets,
    receiver: Receiver,
    concurrency: usize,
    work_dir: String,
    /// The messages of the parts before, all delivered: one of them again is a duplicate.
    delivered: Mutex<HashSet<String>>,
}

impl Setup {
    fn destination(&self) -> String {
        format!("{}hook", self.receiver.url())
    }

    async fn start_gateway(&self, name: &str) -> BoxResult<GatewayProcess> {
        let log = format!("{}/gateway-{name}.log", self.work_dir);
        GatewayProcess::start(
            &self.bin,
            &self.redis_url,
            &self.secrets,
            &self.receiver.url(),
            self.concurrency,
            log,
        )
        .await
    }

    async fn connections(&self, gateway: &GatewayProcess) -> BoxResult<Vec<Conn>> {
        let mut conns = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            conns.push(Conn::open(gateway.addr, &self.secrets.token).await?);
        }
        Ok(conns)
    }

    /// Waits until the receiver has a delivery of every id in `ids` (at most until
    /// `deadline`); the first delivery of each id, and how many deliveries were of a message
    /// delivered already (of this part or one before). A message never published fails.
    async fn collect(
        &self,
        ids: &HashSet<String>,
        deadline: Instant,
        what: &str,
    ) -> BoxResult<(HashMap<String, Delivery>, u64)> {
        let mut first: HashMap<String, Delivery> = HashMap::with_capacity(ids.len());
        let mut duplicates = 0;
        loop {
            for delivery in self.receiver.take() {
                if !ids.contains(&delivery.message_id) {
                    let delivered = self.delivered.lock().unwrap_or_else(|e| e.into_inner());
                    if delivered.contains(&delivery.message_id) {
                        duplicates += 1;
                        continue;
                    }
                    return Err(format!(
                        "{what}: the receiver got message {}, which this part did not publish",
                        delivery.message_id
                    )
                    .into());
                }
                match first.entry(delivery.message_id.clone()) {
                    std::collections::hash_map::Entry::Occupied(_) => duplicates += 1,
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert(delivery);
                    }
                }
            }
            if first.len() == ids.len() {
                let mut delivered = self.delivered.lock().unwrap_or_else(|e| e.into_inner());
                delivered.extend(ids.iter().cloned());
                return Ok((first, duplicates));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{what}: {} of {} messages delivered by the deadline",
                    first.len(),
                    ids.len()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// The whole phase.
pub(crate) async fn phase(sizes: &Sizes, bin: &str, work_dir: &str) -> BoxResult<Json> {
    let started = Instant::now();
    let server = OwnServer::start(work_dir, "gateway-redis").await?;
    let client = delayq::connect(&server.url()).await?;
    let receiver = Receiver::start().await?;
    let setup = Setup {
        bin: bin.to_owned(),
        redis_url: server.url(),
        client,
        secrets: Secrets::write(&format!("{work_dir}/gateway-secrets"))?,
        receiver,
        concurrency: sizes.concurrency,
        work_dir: work_dir.to_owned(),
        delivered: Mutex::new(HashSet::new()),
    };
    let mut out = serde_json::Map::new();
    out.insert("connections".into(), json!(CONNECTIONS));
    out.insert(
        "gateway_flags".into(),
        json!(GatewayProcess::flags(
            "http://127.0.0.1:RECEIVER/",
            sizes.concurrency
        )),
    );
    out.insert("loadavg_start".into(), json!(crate::phases::loadavg()));

    // Deliveries first, on a queue holding nothing else; then the publishes, whose messages
    // stay pending for an hour.
    let gateway = setup.start_gateway("a").await?;
    out.insert(
        "delivery".into(),
        delivery_part(&setup, &gateway, sizes).await?,
    );
    out.insert(
        "latency".into(),
        latency_part(&setup, &gateway, sizes).await?,
    );
    out.insert(
        "delayed".into(),
        delayed_part(&setup, &gateway, sizes).await?,
    );
    out.insert(
        "publish".into(),
        publish_part(&setup, &gateway, sizes).await?,
    );
    gateway.stop().await?;

    // A fresh server state and a fresh process: its memory is the pending messages' alone.
    cmd(&setup.client, "FLUSHALL", Vec::new()).await?;
    let gateway = setup.start_gateway("b").await?;
    out.insert(
        "pending".into(),
        pending_part(&setup, &gateway, sizes).await?,
    );
    gateway.stop().await?;

    // Every message of the pending part is due in an hour.
    let early = setup.receiver.take();
    if let Some(delivery) = early.iter().find(|d| {
        !setup
            .delivered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&d.message_id)
    }) {
        return Err(format!(
            "message {} was delivered an hour early",
            delivery.message_id
        )
        .into());
    }
    if setup.receiver.malformed() > 0 {
        return Err(format!(
            "the receiver got {} requests that were not signed, stamped deliveries",
            setup.receiver.malformed()
        )
        .into());
    }
    out.insert("loadavg_end".into(), json!(crate::phases::loadavg()));
    out.insert("secs".into(), json!(started.elapsed().as_secs_f64()));
    let _ = setup.client.quit().await;
    setup.receiver.shutdown().await;
    drop(server);
    Ok(Json::Object(out))
}

/// `CONNECTIONS` connections publish until `deadline`, or until `limit` messages in all, each
/// with `body()` and `delay_secs`; the ids answered (when `keep_ids`) and how many.
async fn publish_closed_loop(
    conns: Vec<Conn>,
    destination: &str,
    delay_secs: u64,
    body: fn() -> bytes::Bytes,
    deadline: Option<Instant>,
    limit: Option<u64>,
    keep: Arc<dyn Fn(u64) -> bool + Send + Sync>,
) -> BoxResult<(u64, Vec<(u64, String)>)> {
    let counter = Arc::new(AtomicU64::new(0));
    let published = Arc::new(AtomicU64::new(0));
    let kept = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = JoinSet::new();
    for mut conn in conns {
        let counter = counter.clone();
        let published = published.clone();
        let kept = kept.clone();
        let keep = keep.clone();
        let destination = destination.to_owned();
        tasks.spawn(async move {
            loop {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(());
                }
                let i = counter.fetch_add(1, Ordering::Relaxed);
                if limit.is_some_and(|n| i >= n) {
                    return Ok(());
                }
                let answer = conn.publish(&destination, delay_secs, body()).await?;
                published.fetch_add(1, Ordering::Relaxed);
                if keep(i) {
                    kept.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((i, answer.id));
                }
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let published = published.load(Ordering::Relaxed);
    let kept = std::mem::take(&mut *kept.lock().unwrap_or_else(|e| e.into_inner()));
    Ok((published, kept))
}

fn publish_body() -> bytes::Bytes {
    stamped_body(PUBLISH_BODY, Duration::ZERO)
}

fn pending_body() -> bytes::Bytes {
    stamped_body(PENDING_BODY, Duration::from_secs(HOUR_SECS))
}

/// The length of the value of one entry of the gateway's queue: its envelope.
async fn envelope_len(client: &Client) -> BoxResult<usize> {
    let keys = QueueKeys::new(QUEUE);
    let reply = cmd(
        client,
        "ZRANGE",
        vec![keys.timeout().into(), 0.into(), 0.into()],
    )
    .await?;
    let raw = match reply {
        Value::Array(items) => match items.into_iter().next() {
            Some(Value::Bytes(b)) => b.to_vec(),
            Some(Value::String(s)) => s.as_bytes().to_vec(),
            other => return Err(format!("ZRANGE of the gateway queue: {other:?}").into()),
        },
        other => return Err(format!("ZRANGE of the gateway queue: {other:?}").into()),
    };
    Ok(unpack(&raw, EntryFormat::Current)?.value.len())
}

/// One round of the library's offers: `CONNECTIONS` tasks on one fred client offer values of
/// `len` bytes with a 1 h delay for `secs`; offers and seconds.
async fn library_round(client: &Client, len: usize, secs: f64) -> BoxResult<(u64, f64)> {
    let queue = DelayedQueue::builder(client.clone(), "bench:gateway:offer", ByteArrayCodec)
        .transfer(false)
        .build()
        .await?;
    redis::unlink_queue(client, queue.keys()).await?;
    let counter = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut tasks = JoinSet::new();
    for _ in 0..CONNECTIONS {
        let queue = queue.clone();
        let counter = counter.clone();
        tasks.spawn(async move {
            let value = vec![b'x'; len];
            while Instant::now() < deadline {
                queue.offer(&value, Duration::from_secs(HOUR_SECS)).await?;
                counter.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, delayq::Error>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let ops = counter.load(Ordering::Relaxed);
    let zcard = int(client, "ZCARD", queue.keys().timeout()).await? as u64;
    if zcard != ops {
        return Err(format!("the library offered {ops} values but its queue holds {zcard}").into());
    }
    redis::unlink_queue(client, queue.keys()).await?;
    Ok((ops, elapsed))
}

fn median_of(rounds: &[Json]) -> Json {
    let mut sorted = rounds.to_vec();
    sorted.sort_by(|a, b| {
        let rate = |r: &Json| r["rate"].as_f64().unwrap_or(0.0);
        rate(a).total_cmp(&rate(b))
    });
    sorted[sorted.len() / 2].clone()
}

/// Part 1: publish over HTTP against the library's offers, alternating rounds.
async fn publish_part(setup: &Setup, gateway: &GatewayProcess, sizes: &Sizes) -> BoxResult<Json> {
    let client = &setup.client;
    let pid = Some(gateway.pid()?);
    let keep_none: Arc<dyn Fn(u64) -> bool + Send + Sync> = Arc::new(|_| false);
    // A warm-up (connections, scripts loaded, allocator), not recorded; its entries tell the
    // envelope's length.
    let conns = setup.connections(gateway).await?;
    let warm = Instant::now() + Duration::from_secs_f64(sizes.publish_secs.min(1.0));
    let dest = setup.destination();
    publish_closed_loop(
        conns,
        &dest,
        HOUR_SECS,
        publish_body,
        Some(warm),
        None,
        keep_none.clone(),
    )
    .await?;
    let envelope = envelope_len(client).await?;
    library_round(client, envelope, 0.5).await?;
    let pending_key = QueueKeys::new(QUEUE).timeout().to_owned();
    let (mut http_rounds, mut lib_rounds) = (Vec::new(), Vec::new());
    for round in 0..sizes.publish_rounds {
        let conns = setup.connections(gateway).await?;
        let before = int(client, "ZCARD", &pending_key).await? as u64;
        let cpu = Cpu::now(pid, client).await?;
        let start = Instant::now();
        let deadline = start + Duration::from_secs_f64(sizes.publish_secs);
        let (n, _) = publish_closed_loop(
            conns,
            &dest,
            HOUR_SECS,
            publish_body,
            Some(deadline),
            None,
            keep_none.clone(),
        )
        .await?;
        let secs = start.elapsed().as_secs_f64();
        let cpu = cpu.since(pid, client, secs).await?;
        let after = int(client, "ZCARD", &pending_key).await? as u64;
        if after - before != n {
            return Err(format!(
                "{n} publishes answered 201, but {} entries added",
                after - before
            )
            .into());
        }
        let rate = n as f64 / secs;
        http_rounds.push(json!({ "messages": n, "secs": secs, "rate": rate, "cpu": cpu }));

        let cpu_lib = Cpu::now(None, client).await?;
        let (ops, lib_secs) = library_round(client, envelope, sizes.publish_secs).await?;
        let cpu_lib = cpu_lib.since(None, client, lib_secs).await?;
        let lib_rate = ops as f64 / lib_secs;
        lib_rounds
            .push(json!({ "offers": ops, "secs": lib_secs, "rate": lib_rate, "cpu": cpu_lib }));
        log(format!(
            "publish round {round}: HTTP {rate:.0}/s, library offers {lib_rate:.0}/s"
        ));
    }
    let (http, lib) = (median_of(&http_rounds), median_of(&lib_rounds));
    let (h, l) = (
        http["rate"].as_f64().unwrap_or(0.0),
        lib["rate"].as_f64().unwrap_or(0.0),
    );
    Ok(json!({
        "body_bytes": PUBLISH_BODY,
        "envelope_bytes": envelope,
        "secs_per_round": sizes.publish_secs,
        "http": http,
        "library": lib,
        "http_round_rates": http_rounds.iter().map(|r| r["rate"].clone()).collect::<Vec<_>>(),
        "library_round_rates": lib_rounds.iter().map(|r| r["rate"].clone()).collect::<Vec<_>>(),
        "per_s": h,
        "library_per_s": l,
        "ratio": if l > 0.0 { h / l } else { 0.0 },
    }))
}

/// Part 2a: N messages published undelayed while the queue's transfers are paused, then
/// released at once; deliveries a second from the first delivery to the last.
async fn delivery_part(setup: &Setup, gateway: &GatewayProcess, sizes: &Sizes) -> BoxResult<Json> {
    let client = &setup.client;
    let queue = DelayedQueue::builder(client.clone(), QUEUE, ByteArrayCodec)
        .transfer(false)
        .build()
        .await?;
    queue.admin().pause().await?;
    let n = sizes.delivery_count;
    let conns = setup.connections(gateway).await?;
    let keep_all: Arc<dyn Fn(u64) -> bool + Send + Sync> = Arc::new(|_| true);
    let (published, ids) = publish_closed_loop(
        conns,
        &setup.destination(),
        0,
        publish_body,
        None,
        Some(n),
        keep_all,
    )
    .await?;
    let ids: HashSet<String> = ids.into_iter().map(|(_, id)| id).collect();
    if published != n || ids.len() as u64 != n {
        return Err(format!("delivery: {published} published, {} ids, of {n}", ids.len()).into());
    }
    let early = setup.receiver.count();
    if early > 0 {
        return Err(format!("delivery: {early} delivered while the queue was paused").into());
    }
    let pid = Some(gateway.pid()?);
    cmd(client, "CONFIG", vec!["RESETSTAT".into()]).await?;
    let cpu = Cpu::now(pid, client).await?;
    let resumed = now_us();
    queue.admin().resume().await?;
    let deadline = Instant::now() + Duration::from_secs(120) + Duration::from_millis(n / 10);
    let (got, duplicates) = setup.collect(&ids, deadline, "delivery").await?;
    let first = got.values().map(|d| d.received_us).min().unwrap_or(resumed);
    let last = got.values().map(|d| d.received_us).max().unwrap_or(resumed);
    let secs = (last - first) as f64 / 1e6;
    let cpu = cpu
        .since(pid, client, (now_us() - resumed) as f64 / 1e6)
        .await?;
    let commands = top_commands(client, n).await?;
    let rate = if secs > 0.0 {
        (n - 1) as f64 / secs
    } else {
        0.0
    };
    log(format!(
        "delivery: {n} messages in {secs:.2} s from the first delivery: {rate:.0}/s \
         ({duplicates} delivered twice)"
    ));
    Ok(json!({
        "messages": n,
        "concurrency": setup.concurrency,
        "secs": secs,
        "per_s": rate,
        "first_after_resume_ms": (first - resumed) as f64 / 1e3,
        "duplicates": duplicates,
        "cpu": cpu,
        "redis_commands": commands,
    }))
}

/// The commands Redis spent most time on since its stats were reset (at most 8): calls and
/// server µs per message (or request) of `messages`.
async fn top_commands(client: &Client, messages: u64) -> BoxResult<Json> {
    let stats = redis::command_stats(client).await?;
    let mut rows: Vec<(String, f64, f64)> = stats
        .into_iter()
        .map(|(name, fields)| {
            let calls = fields.get("calls").copied().unwrap_or(0.0);
            let usec = fields.get("usec").copied().unwrap_or(0.0);
            (name, calls, usec)
        })
        .collect();
    rows.sort_by(|a, b| b.2.total_cmp(&a.2));
    let per = messages.max(1) as f64;
    Ok(rows
        .into_iter()
        .take(8)
        .map(|(name, calls, usec)| {
            json!({
                "command": name,
                "calls_per_message": calls / per,
                "us_per_message": usec / per,
            })
        })
        .collect())
}

/// `CONNECTIONS` connections publish at `rate` a second in all for `secs`, connection k at
/// t0 + (k + CONNECTIONS·i) / rate; each message's delay drawn from `lo..=hi` seconds. The ids and the
/// most a publish started behind its time (ms).
async fn publish_paced(
    conns: Vec<Conn>,
    destination: &str,
    rate: u32,
    secs: f64,
    (lo, hi): (u64, u64),
) -> BoxResult<(HashSet<String>, f64)> {
    let total = (f64::from(rate) * secs).round() as u64;
    let t0 = Instant::now() + Duration::from_millis(20);
    let mut tasks = JoinSet::new();
    for (k, mut conn) in conns.into_iter().enumerate() {
        let destination = destination.to_owned();
        tasks.spawn(async move {
            let mut ids = Vec::new();
            let mut behind = Duration::ZERO;
            let mut slot = k as u64;
            while slot < total {
                let at = t0 + Duration::from_secs_f64(slot as f64 / f64::from(rate));
                tokio::time::sleep_until(at).await;
                behind = behind.max(Instant::now().saturating_duration_since(at));
                let delay = rand::random_range(lo..=hi);
                let body = stamped_body(PUBLISH_BODY, Duration::from_secs(delay));
                ids.push(conn.publish(&destination, delay, body).await?.id);
                slot += CONNECTIONS as u64;
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>((ids, behind))
        });
    }
    let (mut ids, mut behind) = (HashSet::new(), Duration::ZERO);
    while let Some(done) = tasks.join_next().await {
        let (some, late) = done??;
        ids.extend(some);
        behind = behind.max(late);
    }
    if ids.len() as u64 != total {
        return Err(format!("paced publish: {} ids of {total}", ids.len()).into());
    }
    Ok((ids, behind.as_secs_f64() * 1e3))
}

/// Part 2b: undelayed messages at a paced rate; from the publish sent to the delivery received.
async fn latency_part(setup: &Setup, gateway: &GatewayProcess, sizes: &Sizes) -> BoxResult<Json> {
    let conns = setup.connections(gateway).await?;
    let (ids, behind_ms) = publish_paced(
        conns,
        &setup.destination(),
        sizes.latency_rate,
        sizes.latency_secs,
        (0, 0),
    )
    .await?;
    let deadline = Instant::now() + Duration::from_secs(120);
    let (got, duplicates) = setup.collect(&ids, deadline, "latency").await?;
    let ms: Vec<f64> = got
        .values()
        .map(|d| (d.received_us - d.sent_us) as f64 / 1e3)
        .collect();
    let mut figures = summary(ms);
    log(format!(
        "latency at {}/s: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        sizes.latency_rate, figures["p50_ms"], figures["p99_ms"], figures["max_ms"]
    ));
    figures["rate"] = json!(sizes.latency_rate);
    figures["secs"] = json!(sizes.latency_secs);
    figures["publisher_behind_max_ms"] = json!(behind_ms);
    figures["duplicates"] = json!(duplicates);
    Ok(figures)
}

/// Part 2c: messages with `Upstash-Delay` of a few seconds; from the due time (the publish's
/// send time plus its delay: at most the publish's own round trip early) to the delivery.
async fn delayed_part(setup: &Setup, gateway: &GatewayProcess, sizes: &Sizes) -> BoxResult<Json> {
    let (lo, hi) = sizes.delayed_delay_secs;
    let conns = setup.connections(gateway).await?;
    let (ids, behind_ms) = publish_paced(
        conns,
        &setup.destination(),
        sizes.delayed_rate,
        sizes.delayed_secs,
        (lo, hi),
    )
    .await?;
    let deadline = Instant::now() + Duration::from_secs(hi + 120);
    let (got, duplicates) = setup.collect(&ids, deadline, "delayed").await?;
    let ms: Vec<f64> = got
        .values()
        .map(|d| (d.received_us - d.due_us) as f64 / 1e3)
        .collect();
    let mut figures = summary(ms);
    log(format!(
        "lateness of delayed messages: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        figures["p50_ms"], figures["p99_ms"], figures["max_ms"]
    ));
    figures["rate"] = json!(sizes.delayed_rate);
    figures["secs"] = json!(sizes.delayed_secs);
    figures["delay_secs"] = json!([lo, hi]);
    figures["publisher_behind_max_ms"] = json!(behind_ms);
    figures["duplicates"] = json!(duplicates);
    Ok(figures)
}

/// Part 3: N pending messages of 1 KiB published through a fresh gateway; its memory, then
/// cancels of random ids one after the other.
async fn pending_part(setup: &Setup, gateway: &GatewayProcess, sizes: &Sizes) -> BoxResult<Json> {
    let client = &setup.client;
    let n = sizes.pending;
    let cancels = sizes.cancels.min(n as usize);
    let mut chosen: Vec<u64> = rand::seq::index::sample(&mut rand::rng(), n as usize, cancels)
        .into_iter()
        .map(|i| i as u64)
        .collect();
    chosen.sort_unstable();
    let chosen = Arc::new(chosen);
    let keep: Arc<dyn Fn(u64) -> bool + Send + Sync> = {
        let chosen = chosen.clone();
        Arc::new(move |i| chosen.binary_search(&i).is_ok())
    };
    let (rss_start, _) = memory_kib(gateway.pid()?)?;
    log(format!(
        "pending: publishing {n} messages of {PENDING_BODY} bytes"
    ));
    let conns = setup.connections(gateway).await?;
    let start = Instant::now();
    let (published, kept) = publish_closed_loop(
        conns,
        &setup.destination(),
        HOUR_SECS,
        pending_body,
        None,
        Some(n),
        keep,
    )
    .await?;
    let publish_secs = start.elapsed().as_secs_f64();
    let keys = QueueKeys::new(QUEUE);
    let zcard = int(client, "ZCARD", keys.timeout()).await? as u64;
    let index = format!("delayq_gateway_messages:{{{QUEUE}}}");
    let records = int(client, "HLEN", &index).await? as u64;
    if published != n || zcard != n || records != n {
        return Err(format!(
            "pending: {published} of {n} published; the queue holds {zcard}, the index {records}"
        )
        .into());
    }
    let (rss, hwm) = memory_kib(gateway.pid()?)?;
    let redis_memory = used_memory(client).await?;
    log(format!(
        "pending: {n} published in {publish_secs:.1} s ({:.0}/s); gateway RSS {:.1} MiB (peak {:.1})",
        n as f64 / publish_secs,
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    ));

    let mut ids: Vec<String> = kept.into_iter().map(|(_, id)| id).collect();
    ids.shuffle(&mut rand::rng());
    let mut conn = Conn::open(gateway.addr, &setup.secrets.token).await?;
    cmd(client, "CONFIG", vec!["RESETSTAT".into()]).await?;
    let mut ms = Vec::with_capacity(ids.len());
    for id in &ids {
        let sent = Instant::now();
        conn.cancel(id).await?;
        ms.push(sent.elapsed().as_secs_f64() * 1e3);
    }
    let commands = top_commands(client, ids.len() as u64).await?;
    let first_ms = ms.first().copied().unwrap_or(0.0);
    let left = int(client, "ZCARD", keys.timeout()).await? as u64;
    if left != n - ids.len() as u64 {
        return Err(format!("pending: {} cancelled, but {left} of {n} left", ids.len()).into());
    }
    let mut cancel = summary(ms);
    cancel["first_ms"] = json!(first_ms);
    cancel["redis_commands"] = commands;
    log(format!(
        "cancel by id at {n} pending: median {:.2} ms, p99 {:.2} ms",
        cancel["p50_ms"], cancel["p99_ms"]
    ));
    Ok(json!({
        "messages": n,
        "body_bytes": PENDING_BODY,
        "publish_secs": publish_secs,
        "publish_per_s": n as f64 / publish_secs,
        "rss_start_mib": rss_start as f64 / 1024.0,
        "rss_mib": rss as f64 / 1024.0,
        "hwm_mib": hwm as f64 / 1024.0,
        "redis_used_memory_mib": redis_memory as f64 / 1048576.0,
        "cancel": cancel,
    }))
}

/// INFO memory's `used_memory` (bytes).
async fn used_memory(client: &Client) -> BoxResult<u64> {
    let info = cmd(client, "INFO", vec!["memory".into()]).await?;
    let text = info.as_string().ok_or("INFO: not text")?;
    text.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| "INFO memory: no used_memory".into())
}
