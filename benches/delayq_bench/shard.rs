//! The `shard` phase (issue 18): a 12-shard queue against one unsharded queue on a local Cluster
//! of 3 masters: offer + transfer + take throughput, and random-delay transfer with a backlog
//! pending. Needs no Java; `--only shard` runs it alone.

use crate::many::Cluster;
use crate::redis::{fill, BoxResult, Pattern};
use crate::Plan;
use delayq::codec::StringCodec;
use delayq::{Consumer, DelayedQueue, SchedulerConfig, ShardedQueue};
use fred::clients::Client;
use serde_json::{json, Value as Json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

const SHARDS: usize = 12;
const PRODUCERS: u64 = 16;

fn log(text: impl AsRef<str>) {
    eprintln!("bench: shard: {}", text.as_ref());
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
/// batches); moves per second and the longest call in ms.
async fn transfer(
    client: &Client,
    queues: &[DelayedQueue<StringCodec>],
    n: usize,
) -> BoxResult<(f64, f64)> {
    for queue in queues {
        fill(client, queue.keys(), n / queues.len(), Pattern::Random).await?;
    }
    let config = SchedulerConfig::default().with_adaptive_batch(5_000, Duration::from_millis(5));
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for queue in queues {
        let (queue, config) = (queue.clone(), config.clone());
        let want = (n / queues.len()) as u64;
        tasks.spawn(async move {
            let (mut moved, mut longest) = (0u64, Duration::ZERO);
            while moved < want {
                let call = Instant::now();
                let outcome = queue.transfer_due_with(&config).await?;
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
    if moved != (n / queues.len() * queues.len()) as u64 {
        return Err(format!("transfer: moved {moved} of {n}").into());
    }
    Ok((moved as f64 / secs, longest.as_secs_f64() * 1e3))
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
    let (n, pending) = if plan.smoke {
        (5_000, 24_000)
    } else {
        (200_000, 1_000_000)
    };

    let (single, sharded) = layouts(&client, "flow", true).await?;
    let one = throughput(&single, &client, n).await?;
    log(format!("offer+transfer+take, 1 queue: {one:.0}/s"));
    let many = throughput(sharded.shards(), &client, n).await?;
    log(format!(
        "offer+transfer+take, {SHARDS} shards: {many:.0}/s ({:.2}x)",
        many / one
    ));
    single[0].destroy().await?;
    sharded.destroy().await?;

    let (single, sharded) = layouts(&client, "backlog", false).await?;
    let (one_rate, one_call) = transfer(&client, &single, pending).await?;
    log(format!("random transfer, {pending} pending, 1 queue: {one_rate:.0}/s, longest call {one_call:.1} ms"));
    let (sh_rate, sh_call) = transfer(&client, sharded.shards(), pending).await?;
    log(format!(
        "random transfer, {pending} pending, {SHARDS} shards: {sh_rate:.0}/s ({:.1}x), longest call {sh_call:.1} ms",
        sh_rate / one_rate
    ));
    let _ = fred::interfaces::ClientLike::quit(&client).await;
    drop(cluster);
    Ok(json!({
        "masters": 3,
        "shards": SHARDS,
        "flow": { "values": n, "one_queue_per_s": one, "sharded_per_s": many, "ratio": many / one },
        "transfer": {
            "pending": pending,
            "one_queue_per_s": one_rate, "one_queue_longest_call_ms": one_call,
            "sharded_per_s": sh_rate, "sharded_longest_call_ms": sh_call,
            "ratio": sh_rate / one_rate,
        },
    }))
}
