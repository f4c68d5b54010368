//! The many-queues phase: one process keeping N Redisson delayed queues moving.
//!
//! Sides, one after another on a flushed server, each with N queues `mq-0 .. mq-{N-1}` holding
//! one parked value (due in a day) so that they exist:
//! - `delayq`: the real CLI, `delayq transfer --all --match 'mq-*'` (one process, discovery);
//! - `java-default`: a JVM holding N `RDelayedQueue` instances with Redisson's default
//!   subscription pool (how far it gets);
//! - `java-tuned`: the same with a subscription pool big enough for every channel;
//! - `delayq-cluster`: the CLI on a Cluster of 3 masters started here.
//!
//! For each: how long until every channel is subscribed, the process's Redis connections, its
//! resident memory, the commands per second Redis serves while nothing is due, the process's
//! CPU while idle; then values offered at a steady rate to random queues with random delays and
//! their due-to-target lateness, seen by a reader woken by keyspace notifications (list
//! events of the target lists, one subscriber per master) that pops each target list at once. A value never seen
//! fails delayq's side; on Java's side it is reported.

use crate::redis::{cmd, delayq_now_ms, now_us, BoxResult};
use crate::Plan;
use delayq::codec::StringCodec;
use delayq::DelayedQueue;
use fred::clients::Client;
use fred::interfaces::{ClientLike, EventInterface, PubsubInterface};
use fred::prelude::Value;
use rand::Rng;
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::time::Instant;

const PREFIX: &str = "mq";

/// Where a side runs: a standalone server or a Cluster, with one client per master.
pub(crate) struct Target {
    pub(crate) url: String,
    pub(crate) client: Client,
    pub(crate) nodes: Vec<Client>,
}

impl Target {
    pub(crate) async fn connect(url: &str, node_urls: &[String]) -> BoxResult<Target> {
        let mut nodes = Vec::new();
        for node in node_urls {
            nodes.push(delayq::connect(node).await?);
        }
        Ok(Target {
            url: url.to_owned(),
            client: delayq::connect(url).await?,
            nodes,
        })
    }

    pub(crate) async fn close(self) {
        let _ = self.client.quit().await;
        for node in self.nodes {
            let _ = node.quit().await;
        }
    }

    async fn each(&self, name: &'static str, args: &[&str]) -> BoxResult<Vec<Value>> {
        let mut out = Vec::new();
        for node in &self.nodes {
            let args = args.iter().map(|a| Value::from(a.to_string())).collect();
            out.push(cmd(node, name, args).await?);
        }
        Ok(out)
    }

    /// A figure of INFO summed over the masters.
    async fn info_sum(&self, section: &str, field: &str) -> BoxResult<u64> {
        let mut sum = 0;
        for reply in self.each("INFO", &[section]).await? {
            let text = reply.as_string().ok_or("INFO: not text")?;
            sum += text
                .lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("INFO {section}: no {field}"))?;
        }
        Ok(sum)
    }

    /// The clients connected to the masters once the count has stopped changing (over 200 ms;
    /// 10 s at most): the previous side's connections take a moment to close after its process
    /// has stopped, and counted in a baseline they would be subtracted from the next side's.
    async fn settled_clients(&self) -> BoxResult<u64> {
        let give_up = Instant::now() + Duration::from_secs(10);
        let mut last = self.info_sum("clients", "connected_clients").await?;
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now = self.info_sum("clients", "connected_clients").await?;
            if now == last || Instant::now() > give_up {
                return Ok(now);
            }
            last = now;
        }
    }

    /// The queues' channels subscribed on any master.
    async fn channels(&self) -> BoxResult<usize> {
        let pattern = format!("redisson_delay_queue_channel:{{{PREFIX}-*}}");
        let mut count = 0;
        for reply in self.each("PUBSUB", &["CHANNELS", &pattern]).await? {
            if let Value::Array(items) = reply {
                count += items.len();
            }
        }
        Ok(count)
    }
}

/// A process under test: the delayq CLI or a JVM.
struct UnderTest {
    child: Child,
    /// The JVM's stdin (closing it stops the JVM; `stats` asks it for its heap).
    jvm: Option<(
        ChildStdin,
        tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    )>,
}

impl UnderTest {
    fn pid(&self) -> BoxResult<u32> {
        Ok(self.child.id().ok_or("the process has exited")?)
    }

    async fn java_stats(&mut self) -> BoxResult<Option<Json>> {
        let Some((stdin, lines)) = &mut self.jvm else {
            return Ok(None);
        };
        stdin.write_all(b"stats\n").await?;
        stdin.flush().await?;
        while let Some(line) = lines.next_line().await? {
            if let Some(json) = line.strip_prefix("RESULT ") {
                return Ok(Some(serde_json::from_str(json)?));
            }
        }
        Err("the JVM exited before answering stats".into())
    }

    async fn stop(mut self) -> BoxResult<()> {
        match self.jvm.take() {
            Some((stdin, _)) => drop(stdin),
            None => {
                let pid = self.pid()?.to_string();
                Command::new("kill").args(["-TERM", &pid]).status().await?;
            }
        }
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .map_err(|_| "the process did not stop within 60 s")??;
        if !status.success() {
            return Err(format!("the process exited with {status}").into());
        }
        Ok(())
    }
}

enum Kind {
    Delayq,
    Java,
}

/// What to start for one side.
pub(crate) enum Side<'a> {
    Delayq { bin: &'a str, log: String },
    Java { classpath: &'a str, tuned: bool },
}

impl Side<'_> {
    async fn start(&self, url: &str, queues: usize) -> BoxResult<(UnderTest, Json)> {
        match self {
            Side::Delayq { bin, log } => {
                let log = std::fs::File::create(log)?;
                let child = Command::new(bin)
                    .args(["--url", url, "transfer", "--all", "--match"])
                    .arg(format!("{PREFIX}-*"))
                    .env("RUST_LOG", "warn")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(log)
                    .kill_on_drop(true)
                    .spawn()
                    .map_err(|e| format!("cannot start {bin}: {e}"))?;
                Ok((UnderTest { child, jvm: None }, json!({})))
            }
            Side::Java { classpath, tuned } => {
                let mut args = vec![
                    url.to_owned(),
                    PREFIX.to_owned(),
                    queues.to_string(),
                    "120".to_owned(),
                ];
                if *tuned {
                    args.push("tuned".into());
                }
                let command = crate::java::command_for(classpath, "delayq.bench.ManyQueues", &args);
                let (child, stdin, lines, ready) =
                    crate::java::spawn_until_ready(command, 300).await?;
                let created: Json = serde_json::from_str(&ready)?;
                let jvm = Some((stdin, lines));
                Ok((UnderTest { child, jvm }, created))
            }
        }
    }
}

fn log(text: impl AsRef<str>) {
    eprintln!("bench: {}", text.as_ref());
}

/// How many queues `delayq transfer --all` says it found, once it has said it.
fn found_by_delayq(log: &str) -> Option<usize> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text
        .lines()
        .find(|l| l.starts_with("delayq: transferring "))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The end of the delayq process's log, for an error message.
fn log_tail(side: &Side<'_>) -> String {
    let Side::Delayq { log, .. } = side else {
        return String::new();
    };
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    format!(
        "; its log ends:\n{}",
        lines[lines.len().saturating_sub(20)..].join("\n")
    )
}

/// Deletes everything, turns on `rpush` keyspace events, and parks one value in each queue.
async fn prepare(target: &Target, queues: usize) -> BoxResult<Vec<DelayedQueue<StringCodec>>> {
    target.each("FLUSHALL", &[]).await?;
    target
        .each("CONFIG", &["SET", "notify-keyspace-events", "Kl"])
        .await?;
    let mut handles = Vec::with_capacity(queues);
    for i in 0..queues {
        let queue =
            DelayedQueue::builder(target.client.clone(), format!("{PREFIX}-{i}"), StringCodec)
                .transfer(false)
                .build()
                .await?;
        handles.push(queue);
    }
    for chunk in handles.chunks(1_000) {
        let parked = chunk
            .iter()
            .map(|queue| queue.offer("parked", Duration::from_secs(86_400)));
        for result in futures::future::join_all(parked).await {
            result?;
        }
    }
    Ok(handles)
}

/// Resident memory (KiB) and CPU time (seconds) of a process, from /proc.
pub(crate) fn proc_figures(pid: u32) -> BoxResult<(u64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no VmRSS")?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) end with ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .ok_or("bad /proc stat")?
        .1
        .split_whitespace()
        .collect();
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    Ok((rss, ticks / 100.0))
}

/// One side: start, wait until every channel is subscribed, measure idle, then the load.
pub(crate) async fn run_side(
    target: &Target,
    side: Side<'_>,
    name: &str,
    queues: usize,
    plan: &Plan,
) -> BoxResult<Json> {
    log(format!("many queues, {name}: {queues} queues"));
    let side_kind = match side {
        Side::Delayq { .. } => Kind::Delayq,
        Side::Java { .. } => Kind::Java,
    };
    let handles = prepare(target, queues).await?;
    let baseline = target.settled_clients().await?;
    let started = Instant::now();
    let (mut process, created) = side.start(&target.url, queues).await?;
    let held = created["created"].as_u64().map_or(queues, |c| c as usize);
    let mut figures = json!({ "queues": queues, "held": held, "start": created });
    if held == 0 {
        process.stop().await?;
        return Ok(figures);
    }
    // Ready: Java has subscribed every instance's channel; delayq has said how many queues its
    // first scan found (it hears them through one pattern subscription).
    let ready_by = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(status) = process.child.try_wait()? {
            return Err(format!(
                "{name}: the process exited with {status}{}",
                log_tail(&side)
            )
            .into());
        }
        let found = match &side {
            Side::Delayq { log, .. } => found_by_delayq(log),
            Side::Java { .. } => Some(target.channels().await?),
        };
        if let Some(found) = found.filter(|&found| found >= held) {
            figures["found"] = json!(found);
            break;
        }
        if Instant::now() > ready_by {
            return Err(format!(
                "{name}: not ready after 300 s ({found:?} of {held}){}",
                log_tail(&side)
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    figures["ready_secs"] = json!(started.elapsed().as_secs_f64());
    // Let start-up work (first transfers, a first sweep) settle.
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The process's connections: the server's count now minus before it started. Fewer than
    // before (another client left meanwhile) leaves the figure unknown, reported as such.
    let now = target.info_sum("clients", "connected_clients").await?;
    match now.checked_sub(baseline) {
        Some(connections) => figures["connections"] = json!(connections),
        None => {
            figures["connections"] = Json::Null;
            figures["connections_unmeasured"] = json!(format!(
                "{now} clients connected with the process running, {baseline} before it started"
            ));
        }
    }

    let pid = process.pid()?;
    let before = target.info_sum("stats", "total_commands_processed").await?;
    let (_, cpu_before) = proc_figures(pid)?;
    let idle_started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(plan.many_idle_secs)).await;
    let after = target.info_sum("stats", "total_commands_processed").await?;
    let (rss_kib, cpu_after) = proc_figures(pid)?;
    let secs = idle_started.elapsed().as_secs_f64();
    // The INFO calls themselves: one per master before the count is read.
    let idle_commands = after.saturating_sub(before + target.nodes.len() as u64);
    figures["idle_commands_per_sec"] = json!(idle_commands as f64 / secs);
    figures["idle_cpu_pct"] = json!(100.0 * (cpu_after - cpu_before) / secs);
    figures["rss_mib"] = json!(rss_kib as f64 / 1024.0);
    if let Some(stats) = process.java_stats().await? {
        figures["java"] = stats;
    }
    let load = load(target, &handles[..held], plan).await?;
    process.stop().await?;
    let lost = load["missing"].as_u64().unwrap_or(0) + load["duplicates"].as_u64().unwrap_or(0);
    if matches!(side_kind, Kind::Delayq) && lost > 0 {
        return Err(format!("{name}: values missing or duplicated: {load}").into());
    }
    figures["load"] = load;
    log(format!("many queues, {name}: {figures}"));
    Ok(figures)
}

/// Offers at the plan's rate to random queues and measures due-to-target lateness.
async fn load(
    target: &Target,
    handles: &[DelayedQueue<StringCodec>],
    plan: &Plan,
) -> BoxResult<Json> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut readers = Vec::new();
    let names: Arc<Vec<String>> = Arc::new(handles.iter().map(|h| h.name().to_owned()).collect());
    for node in &target.nodes {
        readers.push(Reader::start(node.clone(), names.clone(), tx.clone()).await?);
    }
    drop(tx);
    let (lo, hi) = plan.many_delay_ms;
    let total = (plan.many_rate as f64 * plan.many_secs) as u64;
    let per_tick = (plan.many_rate / 100).max(1) as u64;
    let mut offered: HashMap<u64, i64> = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let started = Instant::now();
    let mut seq = 0u64;
    while seq < total {
        tick.tick().await;
        let mut batch = Vec::new();
        {
            let mut rng = rand::rng();
            for _ in 0..per_tick.min(total - seq) {
                let queue = &handles[rng.random_range(0..handles.len())];
                let delay = rng.random_range(lo..=hi);
                let due = delayq_now_ms() + delay as i64;
                offered.insert(seq, due);
                batch.push((queue, format!("{due}:{seq}"), delay));
                seq += 1;
            }
        }
        let offers = batch
            .iter()
            .map(|(queue, value, delay)| queue.offer(value, Duration::from_millis(*delay)));
        for result in futures::future::join_all(offers).await {
            result?;
        }
    }
    let offer_secs = started.elapsed().as_secs_f64();
    let mut lateness_us = Vec::with_capacity(offered.len());
    let mut seen = std::collections::HashSet::new();
    let mut duplicates = 0u64;
    let wait_until = Instant::now() + Duration::from_millis(hi) + Duration::from_secs(15);
    while seen.len() < offered.len() {
        let Ok(Some((value, at_us))) = tokio::time::timeout_at(wait_until, rx.recv()).await else {
            break;
        };
        let Some((due, seq)) = parse(&value) else {
            continue;
        };
        if !seen.insert(seq) {
            duplicates += 1;
            continue;
        }
        lateness_us.push(at_us - due * 1_000);
    }
    for reader in readers {
        reader.stop().await;
    }
    // Values still waiting in the delayed queues (besides each queue's parked one): due long
    // ago, never transferred.
    let sizes = futures::future::join_all(handles.iter().map(|queue| queue.size())).await;
    let mut still_delayed = 0;
    for size in sizes {
        still_delayed += size?.saturating_sub(1);
    }
    lateness_us.sort_unstable();
    let pct = |p: f64| -> f64 {
        if lateness_us.is_empty() {
            return 0.0;
        }
        let i = ((lateness_us.len() as f64 - 1.0) * p).round() as usize;
        lateness_us[i] as f64 / 1_000.0
    };
    let early = lateness_us.iter().filter(|&&l| l < -1_000).count();
    Ok(json!({
        "offered": offered.len(),
        "received": seen.len(),
        "missing": offered.len() - seen.len(),
        "still_delayed": still_delayed,
        "duplicates": duplicates,
        "early_over_1ms": early,
        "rate": offered.len() as f64 / offer_secs,
        "delay_ms": [lo, hi],
        "lateness_ms": {
            "p50": pct(0.5), "p99": pct(0.99), "p999": pct(0.999), "max": pct(1.0),
        },
    }))
}

fn parse(value: &str) -> Option<(i64, u64)> {
    let (due, seq) = value.split_once(':')?;
    Some((due.parse().ok()?, seq.parse().ok()?))
}

/// A reader on one master: on each `rpush` event of a target list, pops the list empty and sends
/// each value with the time it was seen.
struct Reader {
    subscriber: Client,
    task: tokio::task::JoinHandle<()>,
}

impl Reader {
    /// Listens to the keyspace events of the target lists `mq-*` on `node`; after falling
    /// behind (events lost), pops every one of `names` kept on that node.
    async fn start(
        node: Client,
        names: Arc<Vec<String>>,
        tx: mpsc::UnboundedSender<(String, i64)>,
    ) -> BoxResult<Reader> {
        let subscriber = node.clone_new();
        // fred hands keyspace notifications to this receiver, not to `message_rx`.
        let mut events = subscriber.keyspace_event_rx();
        subscriber.init().await?;
        subscriber
            .psubscribe(format!("__keyspace@*__:{PREFIX}-*"))
            .await?;
        let task = tokio::spawn(async move {
            loop {
                // Only an `rpush` brings values (the pops' own `lpop`/`del` events are skipped),
                // and each list is popped by a task of its own, so one slow pop never holds up
                // the events behind it (which would lag the receiver and cost a pop of every
                // list).
                let keys: Vec<String> = match events.recv().await {
                    Ok(event) if event.operation == "rpush" => match event.key.as_str() {
                        Some(key) => vec![key.to_owned()],
                        None => continue,
                    },
                    Ok(_) => continue,
                    Err(RecvError::Lagged(_)) => names.to_vec(),
                    Err(RecvError::Closed) => return,
                };
                if tx.is_closed() {
                    return;
                }
                let (node, tx) = (node.clone(), tx.clone());
                tokio::spawn(async move {
                    use futures::StreamExt;
                    futures::stream::iter(keys)
                        .for_each_concurrent(64, |key| {
                            let (node, tx) = (&node, &tx);
                            async move {
                                pop_all(node, &key, tx).await;
                            }
                        })
                        .await;
                });
            }
        });
        Ok(Reader { subscriber, task })
    }

    async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
        let _ = self.subscriber.quit().await;
    }
}

/// Pops `key` empty, sending each value with the time it was seen; false when nobody listens.
async fn pop_all(node: &Client, key: &str, tx: &mpsc::UnboundedSender<(String, i64)>) -> bool {
    loop {
        let args = vec![Value::from(key.to_owned()), Value::from(1_000)];
        let popped = cmd(node, "LPOP", args).await;
        let at = now_us();
        let Ok(Value::Array(values)) = popped else {
            return true;
        };
        for value in values {
            if let Some(text) = value.as_string() {
                if text != "parked" && tx.send((text, at)).is_err() {
                    return false;
                }
            }
        }
    }
}

/// A Cluster of three masters started for the phase (stopped when dropped).
pub(crate) struct Cluster {
    servers: Vec<std::process::Child>,
    pub(crate) ports: Vec<u16>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for server in &mut self.servers {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// A free loopback port whose cluster bus port (+10000) is free too.
fn free_port() -> BoxResult<u16> {
    for _ in 0..100 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        if port < 55_000 && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return Ok(port);
        }
    }
    Err("no free port pair".into())
}

impl Cluster {
    pub(crate) fn start(work_dir: &str) -> BoxResult<Cluster> {
        let mut cluster = Cluster {
            servers: Vec::new(),
            ports: Vec::new(),
        };
        for i in 0..3 {
            let port = free_port()?;
            let dir = format!("{work_dir}/cluster-{i}");
            std::fs::create_dir_all(&dir)?;
            let server = std::process::Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args([
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                ])
                .args(["--save", "", "--appendonly", "no", "--dir", &dir])
                .args(["--logfile", "redis.log"])
                .spawn()?;
            cluster.servers.push(server);
            cluster.ports.push(port);
        }
        for &port in &cluster.ports {
            wait_ping(port)?;
        }
        let nodes: Vec<String> = cluster
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let created = std::process::Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()?;
        if !created.status.success() {
            return Err(format!(
                "redis-cli --cluster create failed: {}",
                String::from_utf8_lossy(&created.stdout)
            )
            .into());
        }
        for _ in 0..300 {
            let ok = cluster
                .ports
                .iter()
                .all(|&port| cli(port, &["CLUSTER", "INFO"]).contains("cluster_state:ok"));
            if ok {
                return Ok(cluster);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err("the cluster did not become healthy within 30 s".into())
    }

    pub(crate) fn url(&self) -> String {
        let mut url = format!("redis-cluster://127.0.0.1:{}", self.ports[0]);
        for (i, port) in self.ports.iter().enumerate().skip(1) {
            url.push(if i == 1 { '?' } else { '&' });
            url.push_str(&format!("node=127.0.0.1:{port}"));
        }
        url
    }

    pub(crate) fn node_urls(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect()
    }
}

fn cli(port: u16, args: &[&str]) -> String {
    std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

fn wait_ping(port: u16) -> BoxResult<()> {
    for _ in 0..100 {
        if cli(port, &["PING"]).contains("PONG") {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("redis-server on {port} did not start").into())
}

/// The whole phase: delayq, Java with Redisson's defaults, Java tuned (standalone), then delayq
/// on a Cluster of three masters.
pub(crate) async fn phase(
    url: &str,
    classpath: &str,
    delayq_bin: &str,
    plan: &Plan,
    work_dir: &str,
) -> BoxResult<Json> {
    let standalone = Target::connect(url, &[url.to_owned()]).await?;
    let queues = plan.many_queues;
    let mut out = serde_json::Map::new();
    let delayq = Side::Delayq {
        bin: delayq_bin,
        log: format!("{work_dir}/many-delayq.log"),
    };
    out.insert(
        "delayq".into(),
        run_side(&standalone, delayq, "delayq", queues, plan).await?,
    );
    for (name, tuned) in [("java-default", false), ("java-tuned", true)] {
        let side = Side::Java { classpath, tuned };
        out.insert(
            name.into(),
            run_side(&standalone, side, name, queues, plan).await?,
        );
    }
    standalone.each("FLUSHALL", &[]).await?;
    standalone
        .each("CONFIG", &["SET", "notify-keyspace-events", ""])
        .await?;
    standalone.close().await;

    let cluster = Cluster::start(work_dir)?;
    let target = Target::connect(&cluster.url(), &cluster.node_urls()).await?;
    let side = Side::Delayq {
        bin: delayq_bin,
        log: format!("{work_dir}/many-delayq-cluster.log"),
    };
    let queues = plan.many_cluster_queues;
    let mut figures = run_side(&target, side, "delayq-cluster", queues, plan).await?;
    // Where the queues live: every master holds some.
    let mut per_master = Vec::new();
    for node in &target.nodes {
        let keys = cmd(node, "DBSIZE", vec![]).await?;
        per_master.push(keys.as_u64().unwrap_or(0));
    }
    figures["keys_per_master"] = json!(per_master);
    out.insert("delayq-cluster".into(), figures);
    target.close().await;
    drop(cluster);
    Ok(Json::Object(out))
}
