//! The `shard` phase: a 12-shard queue against one unsharded queue on a local Cluster of 3
//! masters: offer + transfer + take throughput, and random-delay transfer with a backlog
//! pending. Needs no Java; `--only shard` runs it alone.

use crate::many::{proc_figures, Cluster};
use crate::redis::{self, fill, BoxResult, Pattern};
use crate::Plan;
use delayq::codec::StringCodec;
use delayq::{Consumer, DelayedQueue, ShardedQueue, TransferConfig};
use fred::clients::Client;
use serde_json::{json, Value as Json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

const SHARDS: usize = 12;
const PRODUCERS: u64 = 16;
/// The transfer calls' time budget in the backlog case.
const CALL_BUDGET: Duration = Duration::from_millis(8);

fn log(text: impl AsRef<str>) {
    eprintln!("bench: shard: {}", text.as_ref());
}

/// The cluster's masters, each through a plain connection of its own: server-side script times
/// (INFO commandstats, SLOWLOG over 100 µs) and CPU, summed over the masters, for one case.
struct Masters {
    clients: Vec<Client>,
    cpu_before: Vec<f64>,
    own_cpu_before: f64,
    started: Instant,
}

impl Masters {
    async fn connect(ports: &[u16]) -> BoxResult<Masters> {
        let mut clients = Vec::new();
        for port in ports {
            clients.push(delayq::connect(&format!("redis://127.0.0.1:{port}")).await?);
        }
        Ok(Masters {
            clients,
            cpu_before: Vec::new(),
            own_cpu_before: 0.0,
            started: Instant::now(),
        })
    }

    async fn start_case(&mut self) -> BoxResult<()> {
        self.cpu_before.clear();
        for client in &self.clients {
            redis::reset_server_stats(client, 100).await?;
            self.cpu_before.push(redis::server_cpu_secs(client).await?);
        }
        self.own_cpu_before = proc_figures(std::process::id())?.1;
        self.started = Instant::now();
        Ok(())
    }

    async fn end_case(&self) -> BoxResult<Json> {
        let secs = self.started.elapsed().as_secs_f64();
        let own_cpu = proc_figures(std::process::id())?.1 - self.own_cpu_before;
        let (mut calls, mut usec, mut slow, mut cpu) = (0, 0, Vec::new(), Vec::new());
        for (client, before) in self.clients.iter().zip(&self.cpu_before) {
            let c = redis::script_calls(client).await?;
            calls += c.calls;
            usec += c.usec;
            slow.extend(redis::slow_script_calls(client).await?);
            cpu.push(redis::server_cpu_secs(client).await? - before);
        }
        let redis_cpu: f64 = cpu.iter().sum();
        Ok(json!({
            "secs": secs,
            "script_calls": calls,
            "mean_call_us": if calls > 0 { usec as f64 / calls as f64 } else { 0.0 },
            "max_call_us": slow.iter().copied().max().unwrap_or(0),
            "calls_over_10ms": slow.iter().filter(|&&d| d > 10_000).count(),
            "redis_cpu_secs_per_master": cpu,
            "redis_cpu_secs": redis_cpu,
            "driver_cpu_secs": own_cpu,
            // Both cores' time: what Redis and this process used of it.
            "machine_busy_percent": (redis_cpu + own_cpu) / (secs * 2.0) * 100.0,
        }))
    }

    async fn quit(self) {
        for client in self.clients {
            let _ = fred::interfaces::ClientLike::quit(&client).await;
        }
    }
}

/// Offers `n` values (delay 0) from 16 tasks while the queues' scheduler group transfers and
/// one consumer per queue takes; the time until every value is taken.
async fn throughput(
    queues: &[DelayedQueue<StringCodec>],
    client: &Client,
    n: u64,
) -> BoxResult<f64> {
    let taken = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut takers = JoinSet::new();
    // At least 4 consumers, as many as shards otherwise.
    for k in 0..queues.len().max(4) {
        let consumer = Consumer::new(client, queues[k % queues.len()].name(), StringCodec).await?;
        let taken = taken.clone();
        takers.spawn(async move {
            while taken.load(Ordering::Relaxed) < n {
                if consumer.poll(Duration::from_millis(100)).await?.is_some() {
                    taken.fetch_add(1, Ordering::Relaxed);
                }
            }
            consumer.close().await;
            Ok::<(), delayq::Error>(())
        });
    }
    let mut producers = JoinSet::new();
    for p in 0..PRODUCERS {
        let queues = queues.to_vec();
        producers.spawn(async move {
            let mut i = p;
            while i < n {
                let value = format!("t{i}");
                let shard = delayq::shard_of(value.as_bytes(), queues.len());
                queues[shard].offer(&value, Duration::ZERO).await?;
                i += PRODUCERS;
            }
            Ok::<(), delayq::Error>(())
        });
    }
    while let Some(done) = producers.join_next().await {
        done??;
    }
    while let Some(done) = takers.join_next().await {
        done??;
    }
    let secs = started.elapsed().as_secs_f64();
    let got = taken.load(Ordering::Relaxed);
    if got != n {
        return Err(format!("throughput: {got} taken of {n}").into());
    }
    Ok(n as f64 / secs)
}

/// Moves `n` due random-order entries spread over `queues` (one task per queue, adaptive
/// batches); moves per second, the longest call in ms as the client saw it, and the masters'
/// own figures.
async fn transfer(
    client: &Client,
    queues: &[DelayedQueue<StringCodec>],
    n: usize,
    masters: &mut Masters,
) -> BoxResult<(f64, f64, Json)> {
    for queue in queues {
        fill(client, queue.keys(), n / queues.len(), Pattern::Random).await?;
    }
    masters.start_case().await?;
    // Calls of at most 8 ms (the default budget is 20 ms): the target is no call over 10 ms.
    let config = TransferConfig::default()
        .with_adaptive_batch(5_000, Duration::from_millis(5))
        .with_max_call_time(CALL_BUDGET);
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for queue in queues {
        let (queue, config) = (queue.clone(), config);
        let want = (n / queues.len()) as u64;
        tasks.spawn(async move {
            let (mut moved, mut longest) = (0u64, Duration::ZERO);
            while moved < want {
                let call = Instant::now();
                let outcome = queue.admin().transfer_due_with(&config).await?;
                longest = longest.max(call.elapsed());
                moved += outcome.moved as u64;
            }
            Ok::<(u64, Duration), delayq::Error>((moved, longest))
        });
    }
    let (mut moved, mut longest) = (0, Duration::ZERO);
    while let Some(done) = tasks.join_next().await {
        let (m, l) = done??;
        moved += m;
        longest = longest.max(l);
    }
    let secs = started.elapsed().as_secs_f64();
    let server = masters.end_case().await?;
    if moved != (n / queues.len() * queues.len()) as u64 {
        return Err(format!("transfer: moved {moved} of {n}").into());
    }
    Ok((moved as f64 / secs, longest.as_secs_f64() * 1e3, server))
}

async fn layouts(
    client: &Client,
    tag: &str,
    transfer: bool,
) -> BoxResult<(Vec<DelayedQueue<StringCodec>>, ShardedQueue<StringCodec>)> {
    let single = DelayedQueue::builder(client.clone(), format!("bench-single-{tag}"), StringCodec)
        .transfer(transfer)
        .build()
        .await?;
    let sharded = ShardedQueue::builder(
        client.clone(),
        format!("bench-sharded-{tag}"),
        SHARDS,
        StringCodec,
    )
    .transfer(transfer)
    .build()
    .await?;
    Ok((vec![single], sharded))
}

/// The whole phase.
pub(crate) async fn phase(plan: &Plan, work_dir: &str) -> BoxResult<Json> {
    // A fresh directory: nodes.conf left by an earlier run would keep the nodes out of a new
    // cluster.
    let dir = format!("{work_dir}/shard");
    let _ = std::fs::remove_dir_all(&dir);
    let cluster = Cluster::start(&dir)?;
    let client = delayq::connect(&cluster.url()).await?;
    let mut masters = Masters::connect(&cluster.ports).await?;
    let (n, pending) = if plan.smoke {
        (5_000, 24_000)
    } else {
        (200_000, 1_000_000)
    };

    let (single, sharded) = layouts(&client, "flow", true).await?;
    masters.start_case().await?;
    let one = throughput(&single, &client, n).await?;
    let one_load = masters.end_case().await?;
    log(format!(
        "offer+transfer+take, 1 queue: {one:.0}/s; {one_load}"
    ));
    masters.start_case().await?;
    let many = throughput(sharded.shards(), &client, n).await?;
    let many_load = masters.end_case().await?;
    log(format!("{many_load}"));
    log(format!(
        "offer+transfer+take, {SHARDS} shards: {many:.0}/s ({:.2}x)",
        many / one
    ));
    single[0].destroy().await?;
    sharded.destroy().await?;

    let (single, sharded) = layouts(&client, "backlog", false).await?;
    let (one_rate, one_call, one_server) =
        transfer(&client, &single, pending, &mut masters).await?;
    log(format!("random transfer, {pending} pending, 1 queue: {one_rate:.0}/s, longest call {one_call:.1} ms; {one_server}"));
    let (sh_rate, sh_call, sh_server) =
        transfer(&client, sharded.shards(), pending, &mut masters).await?;
    log(format!(
        "random transfer, {pending} pending, {SHARDS} shards: {sh_rate:.0}/s ({:.1}x), longest call {sh_call:.1} ms; {sh_server}",
        sh_rate / one_rate
    ));
    // The same shard's work with a core to itself: one shard's share of the backlog, its master
    // the only busy Redis. What a call costs when Redis is not waiting for a core (3 masters
    // and the driver share 2 cores above, and a script's time is wall-clock time).
    let alone = &sharded.shards()[..1];
    let (alone_rate, alone_call, alone_server) =
        transfer(&client, alone, pending / SHARDS, &mut masters).await?;
    log(format!(
        "random transfer, {} pending, 1 shard alone: {alone_rate:.0}/s, longest call {alone_call:.1} ms; {alone_server}",
        pending / SHARDS
    ));
    masters.quit().await;
    let _ = fred::interfaces::ClientLike::quit(&client).await;
    drop(cluster);
    Ok(json!({
        "masters": 3,
        "shards": SHARDS,
        "flow": {
            "values": n, "one_queue_per_s": one, "sharded_per_s": many, "ratio": many / one,
            "one_queue_server": one_load, "sharded_server": many_load,
        },
        "transfer": {
            "pending": pending,
            "call_budget_ms": CALL_BUDGET.as_millis() as u64,
            "one_queue_per_s": one_rate, "one_queue_longest_call_ms": one_call,
            "sharded_per_s": sh_rate, "sharded_longest_call_ms": sh_call,
            "ratio": sh_rate / one_rate,
            "one_queue_server": one_server, "sharded_server": sh_server,
            "alone": {
                "pending": pending / SHARDS, "per_s": alone_rate,
                "longest_call_ms": alone_call, "server": alone_server,
            },
        },
    }))
}
