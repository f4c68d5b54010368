//! Finding values on big queues: delayq's `contains`, `reschedule`, `offer_unique` and `remove`
//! through its value index, against Redisson's `contains` and `remove`, which walk the
//! order list. The queue holds `n` random-delay entries, half offered by Java (Redisson's own
//! `offer`, several threads) and half by delayq, at the same time.
//!
//! Each size is measured in both states of the value index's upkeep: with no delayq scheduler
//! on the queue (a Java scheduler serves it, or only one-shot CLI processes run), where lookups
//! index what they wait for themselves, and with one, which keeps the index up to date ahead of
//! lookups. In each, the first lookup indexes the queue; then Java offers [`BEHIND`] more
//! entries behind the index, and the catch-up is measured (by the next lookup without a
//! scheduler; by the scheduler, until the index covers the list, with one) before the
//! operations.

use super::{log, Ctx};
use crate::redis::{self, cmd, unlink_queue, value, BoxResult};
use delayq::codec::StringCodec;
use delayq::{DelayedQueue, QueueKeys};
use fred::prelude::Value;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value as Json};
use std::time::Duration;
use tokio::time::Instant;

/// delayq's operations measured, in this order (remove last: it shrinks the queue).
const OPS: [&str; 4] = ["contains", "reschedule", "offer_unique", "remove"];

/// Entries Java offers behind a complete value index before the operations are measured (at
/// most a tenth of the queue).
const BEHIND: u64 = 20_000;

pub(crate) async fn lookup_phase(ctx: &mut Ctx) -> BoxResult<Json> {
    let mut rows = Vec::new();
    for &n in &ctx.plan.lookup_sizes.clone() {
        for scheduler in [false, true] {
            rows.push(lookup_case(ctx, n, scheduler).await?);
        }
    }
    Ok(Json::Array(rows))
}

/// Whether the value index covers the whole order list: its tail entry has a record (see
/// `lua/lib/values_record.lua`).
async fn index_complete(ctx: &Ctx, keys: &QueueKeys) -> BoxResult<bool> {
    let tail = match cmd(
        &ctx.client,
        "LINDEX",
        vec![keys.order().into(), (-1).into()],
    )
    .await?
    {
        Value::Bytes(tail) if tail.len() >= 9 => tail,
        _ => return Ok(false),
    };
    let mut field = b"i".to_vec();
    field.extend_from_slice(&tail[..9]);
    let record = cmd(
        &ctx.client,
        "HGET",
        vec![keys.values().into(), Value::Bytes(field.into())],
    )
    .await?;
    Ok(match record {
        Value::Bytes(r) => r.windows(tail.len()).any(|w| w == &tail[..]),
        _ => false,
    })
}

/// Java offers `behind` entries after the index was complete; then the index catches up: by the
/// scheduler (waited for, at most 10 minutes), or by the next lookup.
async fn catch_up(
    ctx: &mut Ctx,
    queue: &DelayedQueue<StringCodec>,
    n: u64,
    behind: u64,
    scheduler: bool,
) -> BoxResult<Json> {
    let command = format!("offer_n {} {n} {behind} 4 60000 3600000", queue.name());
    ctx.java.call(&command, Duration::from_secs(600)).await?;
    redis::reset_server_stats(&ctx.client, 0).await?;
    let started = Instant::now();
    if scheduler {
        while !index_complete(ctx, queue.keys()).await? {
            if started.elapsed() > Duration::from_secs(600) {
                return Err(format!("lookup {n}: the scheduler left the index behind").into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    } else if !queue.contains(&value(1)).await? {
        return Err(format!("lookup {n}: value 1 is not pending").into());
    }
    let secs = started.elapsed().as_secs_f64();
    let mut row = summary(redis::slow_script_calls(&ctx.client).await?);
    row["entries"] = json!(behind);
    row["secs"] = json!(secs);
    Ok(row)
}

/// Durations (µs) summed up: calls, median, p99, longest, total.
fn summary(mut us: Vec<u64>) -> Json {
    us.sort_unstable();
    let q = |p: f64| {
        us.get(((us.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(0)
    };
    json!({
        "calls": us.len(),
        "median_us": q(0.5),
        "p99_us": q(0.99),
        "max_us": q(1.0),
        "total_us": us.iter().sum::<u64>(),
    })
}

async fn fill(ctx: &mut Ctx, queue: &DelayedQueue<StringCodec>, n: u64) -> BoxResult<Json> {
    let half = n / 2;
    let started = Instant::now();
    let command = format!("offer_n {} 0 {half} 8 60000 3600000", queue.name());
    let java = ctx.java.call(&command, Duration::from_secs(600));
    let rust = async {
        let mut rng = rand::rngs::StdRng::seed_from_u64(n);
        let mut i = half;
        while i < n {
            let end = (i + 10_000).min(n);
            let items: Vec<(String, Duration)> = (i..end)
                .map(|k| {
                    let ms = rng.random_range(60_000..3_600_000);
                    (value(k), Duration::from_millis(ms))
                })
                .collect();
            queue.offer_all(&items).await?;
            i = end;
        }
        Ok::<_, delayq::Error>(())
    };
    let (java, rust) = tokio::join!(java, rust);
    java?;
    rust?;
    let llen = redis::int(&ctx.client, "LLEN", queue.keys().order()).await? as u64;
    if llen != n {
        return Err(format!("lookup fill of {n}: the order list holds {llen}").into());
    }
    Ok(json!({ "secs": started.elapsed().as_secs_f64() }))
}

async fn lookup_case(ctx: &mut Ctx, n: u64, scheduler: bool) -> BoxResult<Json> {
    let state = if scheduler {
        "scheduler"
    } else {
        "no_scheduler"
    };
    let name = format!("bench:lookup:{n}:{state}");
    let keys = QueueKeys::new(name.clone());
    unlink_queue(&ctx.client, &keys).await?;
    let queue = DelayedQueue::builder(ctx.client.clone(), name.as_str(), StringCodec)
        .transfer(scheduler)
        .build()
        .await?;
    let filled = fill(ctx, &queue, n).await?;

    // The first lookup indexes the queue, in short calls (no scheduler indexes a queue before
    // its first lookup).
    redis::reset_server_stats(&ctx.client, 0).await?;
    let started = Instant::now();
    if !queue.contains(&value(0)).await? {
        return Err(format!("lookup {n}: value 0 is not pending").into());
    }
    let build_secs = started.elapsed().as_secs_f64();
    let build = summary(redis::slow_script_calls(&ctx.client).await?);
    log(format!(
        "lookup {n} ({state}): index built in {build_secs:.1} s, {} calls, longest {} us",
        build["calls"], build["max_us"]
    ));
    let index_bytes = memory_usage(ctx, keys.values()).await?;
    let behind = BEHIND.min(n / 10).max(1);
    let caught_up = catch_up(ctx, &queue, n, behind, scheduler).await?;
    log(format!(
        "lookup {n} ({state}): {behind} entries behind caught up in {:.2} s, {} calls, longest {} us",
        caught_up["secs"].as_f64().unwrap_or(0.0),
        caught_up["calls"],
        caught_up["max_us"]
    ));

    let ops = if ctx.plan.smoke { 20 } else { 200 };
    let mut rng = rand::rngs::StdRng::seed_from_u64(n + 1);
    let mut delayq = serde_json::Map::new();
    for op in OPS {
        redis::reset_server_stats(&ctx.client, 0).await?;
        let started = Instant::now();
        let mut hits = 0;
        for _ in 0..ops {
            let v = value(rng.random_range(0..n));
            let hit = match op {
                "contains" => queue.contains(&v).await?,
                "reschedule" => queue.reschedule(&v, Duration::from_secs(7_200)).await?,
                "offer_unique" => queue.offer_unique(&v, Duration::from_secs(7_200)).await?,
                _ => queue.remove(&v).await?,
            };
            hits += u64::from(hit);
        }
        let secs = started.elapsed().as_secs_f64();
        let mut row = summary(redis::slow_script_calls(&ctx.client).await?);
        row["ops"] = json!(ops);
        row["found"] = json!(hits);
        row["secs"] = json!(secs);
        log(format!(
            "lookup {n} ({state}): delayq {op}: median {} us, longest {} us ({} calls)",
            row["median_us"], row["max_us"], row["calls"]
        ));
        delayq.insert(op.to_owned(), row);
    }

    // Redisson's own, a few calls each: at a million entries one holds Redis for seconds.
    let java_ops = match (ctx.plan.smoke, n) {
        (true, _) => 5,
        (false, n) if n >= 1_000_000 => 1,
        (false, n) if n >= 100_000 => 5,
        _ => 20,
    };
    let mut java = serde_json::Map::new();
    for op in ["contains", "remove"] {
        redis::reset_server_stats(&ctx.client, 0).await?;
        let reply = ctx
            .java
            .call(
                &format!("lookup {name} {op} {java_ops} {n} {}", n + 2),
                Duration::from_secs(1_800),
            )
            .await?;
        let mut row = summary(redis::slow_script_calls(&ctx.client).await?);
        row["ops"] = json!(java_ops);
        row["found"] = reply["found"].clone();
        row["secs"] = reply["secs"].clone();
        log(format!(
            "lookup {n} ({state}): Redisson {op}: median {} us, longest {} us",
            row["median_us"], row["max_us"]
        ));
        java.insert(op.to_owned(), row);
    }
    unlink_queue(&ctx.client, &keys).await?;
    Ok(json!({
        "pending": n,
        "state": state,
        "fill": filled,
        "index_build": { "secs": build_secs, "calls": build, "bytes": index_bytes },
        "catch_up": caught_up,
        "delayq": delayq,
        "java": java,
    }))
}

async fn memory_usage(ctx: &Ctx, key: &str) -> BoxResult<u64> {
    let reply = cmd(
        &ctx.client,
        "MEMORY",
        vec!["USAGE".into(), key.into(), "SAMPLES".into(), 0.into()],
    )
    .await?;
    Ok(match reply {
        Value::Integer(i) => i as u64,
        _ => 0,
    })
}
