//! The benchmark phases. Each returns JSON figures and fails on anything that is not a timing:
//! a value lost or duplicated, a list left non-empty, due order broken, a process that died.

mod lookup;

use crate::java::{self, JavaPeer};
use crate::redis::{self, cmd, fill, int, unlink_queue, value, BoxResult, Pattern};
use crate::Plan;
use delayq::codec::StringCodec;
use delayq::{Consumer, DelayedQueue, QueueKeys, Scheduler, TransferConfig};
use fred::clients::Client;
use fred::interfaces::ClientLike;
use fred::prelude::Value;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value as Json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// delayq's offer script, exactly as delayq sends it, for the redis-benchmark ceiling.
fn offer_lua() -> String {
    delayq::__internal::script_source("offer.lua").unwrap_or_default()
}
/// A script call over this long breaks the transfer target.
const LONG_CALL_US: u64 = 10_000;

pub(crate) struct Ctx {
    url: String,
    port: String,
    classpath: String,
    plan: Plan,
    work_dir: String,
    client: Client,
    java: JavaPeer,
    /// The delayq CLI, for the many-queues phase.
    delayq_bin: Option<String>,
}

impl Ctx {
    pub(crate) async fn new(
        url: &str,
        classpath: &str,
        plan: Plan,
        work_dir: &str,
    ) -> BoxResult<Ctx> {
        let client = delayq::connect(url).await?;
        let java = JavaPeer::start(classpath, url).await?;
        Ok(Ctx {
            url: url.to_owned(),
            port: url.rsplit(':').next().unwrap_or_default().to_owned(),
            classpath: classpath.to_owned(),
            plan,
            work_dir: work_dir.to_owned(),
            client,
            java,
            delayq_bin: None,
        })
    }

    pub(crate) fn with_delayq_bin(mut self, bin: Option<String>) -> Ctx {
        self.delayq_bin = bin;
        self
    }
}

fn log(text: impl AsRef<str>) {
    eprintln!("bench: {}", text.as_ref());
}

fn rate(ops: f64, secs: f64) -> f64 {
    if secs > 0.0 {
        ops / secs
    } else {
        0.0
    }
}

fn f64_of(json: &Json, key: &str) -> BoxResult<f64> {
    json.get(key)
        .and_then(Json::as_f64)
        .ok_or_else(|| format!("java reply lacks {key}: {json}").into())
}

/// The two delayq scheduler configurations under test.
fn rust_configs() -> Vec<(&'static str, TransferConfig)> {
    vec![
        ("delayq-default", TransferConfig::default()),
        (
            "delayq-adaptive",
            TransferConfig::default().with_adaptive_batch(5_000, Duration::from_millis(5)),
        ),
    ]
}

pub(crate) async fn run_all(mut ctx: Ctx, only: Option<&[String]>) -> BoxResult<Json> {
    let wanted = |phase: &str| only.is_none_or(|o| o.iter().any(|p| p == phase));
    let started = Instant::now();
    let mut out = serde_json::Map::new();
    out.insert("meta".into(), meta(&ctx).await?);
    if wanted("offer") {
        out.insert("offer".into(), offer_phase(&mut ctx).await?);
    }
    if wanted("transfer") {
        out.insert("transfer".into(), transfer_phase(&mut ctx).await?);
    }
    if wanted("lookup") {
        out.insert("lookup".into(), lookup::lookup_phase(&mut ctx).await?);
    }
    if wanted("latency") {
        out.insert("latency".into(), latency_phase(&mut ctx).await?);
    }
    if wanted("drain") {
        out.insert("drain".into(), drain_phase(&mut ctx).await?);
    }
    if wanted("rss") {
        out.insert("rss".into(), rss_phase(&ctx).await?);
    }
    if wanted("many") {
        let bin = ctx
            .delayq_bin
            .as_deref()
            .ok_or("the many phase needs --delayq-bin (the delayq CLI)")?;
        let figures =
            crate::many::phase(&ctx.url, &ctx.classpath, bin, &ctx.plan, &ctx.work_dir).await?;
        out.insert("many".into(), figures);
    }
    if wanted("shard") {
        let figures = crate::shard::phase(&ctx.plan, &ctx.work_dir).await?;
        out.insert("shard".into(), figures);
    }
    if wanted("gateway") {
        let bin = ctx
            .delayq_bin
            .as_deref()
            .ok_or("the gateway phase needs --delayq-bin (the delayq CLI)")?;
        let figures = crate::gateway::phase(&ctx.plan.gateway, bin, &ctx.work_dir).await?;
        out.insert("gateway".into(), figures);
    }
    ctx.java.stop().await?;
    let _ = ctx.client.quit().await;
    // Figures only: report.py judges them against the project's targets.
    let mut results = Json::Object(out);
    if let Some(map) = results.as_object_mut() {
        map.insert("total_secs".into(), json!(started.elapsed().as_secs_f64()));
        if let Some(meta) = map.get_mut("meta").and_then(Json::as_object_mut) {
            meta.insert("loadavg_end".into(), json!(loadavg()));
        }
    }
    Ok(results)
}

/// The 1, 5 and 15 minute load averages (the machine may be shared).
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

async fn meta(ctx: &Ctx) -> BoxResult<Json> {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    let p = &ctx.plan;
    Ok(json!({
        "mode": if p.smoke { "smoke" } else { "full" },
        "date": std::env::var("BENCH_DATE").unwrap_or_default(),
        "commit": std::env::var("BENCH_COMMIT").unwrap_or_default(),
        "redis_version": redis::redis_version(&ctx.client).await?,
        "redisson_version": ctx.java.redisson_version,
        "java_version": std::env::var("BENCH_JAVA_VERSION").unwrap_or_default(),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu_model": cpu_model,
        "loadavg_start": loadavg(),
        "plan": {
            "offer_secs_per_case": p.offer_secs,
            "offer_rounds": p.offer_rounds,
            "offer_levels": p.offer_levels,
            "redis_benchmark_requests": p.bench_requests,
            "transfer_sizes": p.transfer_sizes,
            "transfer_cap_secs": p.transfer_cap.as_secs_f64(),
            "lookup_sizes": p.lookup_sizes,
            "latency_rate_per_sec": p.latency_rate,
            "latency_secs": p.latency_secs,
            "latency_delay_ms": [p.latency_delay_ms.0, p.latency_delay_ms.1],
            "drain_count": p.drain_count,
            "rss_count": p.rss_count,
            "rss_concurrency": p.rss_concurrency,
        },
    }))
}

// ---------------------------------------------------------------------------------------------
// Offer throughput

async fn offer_phase(ctx: &mut Ctx) -> BoxResult<Json> {
    // Warm-ups (JIT, connection pools), not recorded.
    rust_offer(ctx, 16, 0.5).await?;
    java_offer(ctx, 16, if ctx.plan.smoke { 0.5 } else { 2.0 }).await?;
    // delayq's offers above loaded its offer script: the ceiling must run that very script.
    let sha = fred::util::sha1_hash(&offer_lua());
    let exists = cmd(
        &ctx.client,
        "SCRIPT",
        vec!["EXISTS".into(), sha.clone().into()],
    )
    .await?;
    if !matches!(&exists, Value::Array(v) if v.first().and_then(Value::as_i64) == Some(1)) {
        return Err("the benchmark's copy of the offer script is not the one delayq loaded".into());
    }
    let mut rows = Vec::new();
    // Each level runs `offer_rounds` interleaved rounds (delayq, Redisson, ceiling, reference)
    // and reports each side's median round, so a burst of load from elsewhere on the machine
    // hits both sides alike.
    for &c in &ctx.plan.offer_levels.clone() {
        let secs = ctx.plan.offer_secs;
        let mut rounds: [Vec<Json>; 4] = Default::default();
        for _ in 0..ctx.plan.offer_rounds {
            let (ops, s) = rust_offer(ctx, c, secs).await?;
            rounds[0].push(json!({ "ops": ops, "secs": s, "rate": rate(ops as f64, s) }));
            let (ops, s) = java_offer(ctx, c, secs).await?;
            rounds[1].push(json!({ "ops": ops, "secs": s, "rate": rate(ops as f64, s) }));
            rounds[2].push(redis_benchmark(ctx, &sha, c, 32).await?);
            // For reference: the same without pipelining, one call in flight per connection.
            rounds[3].push(redis_benchmark(ctx, &sha, c, 1).await?);
        }
        let [d, j, b, u] = rounds.map(median_round);
        log(format!(
            "offer c={c}: delayq {:.0}/s, java {:.0}/s, redis-benchmark {:.0}/s (medians)",
            d["rate"].as_f64().unwrap_or(0.0),
            j["rate"].as_f64().unwrap_or(0.0),
            b["rate"].as_f64().unwrap_or(0.0),
        ));
        rows.push(json!({
            "concurrency": c,
            "delayq": d,
            "java": j,
            "redis_benchmark": b,
            "redis_benchmark_unpipelined": u,
        }));
    }
    Ok(Json::Array(rows))
}

/// The round with the median rate, plus every round's rate.
fn median_round(mut rounds: Vec<Json>) -> Json {
    let rate_of = |r: &Json| r["rate"].as_f64().unwrap_or(0.0);
    rounds.sort_by(|a, b| rate_of(a).total_cmp(&rate_of(b)));
    let rates: Vec<f64> = rounds.iter().map(rate_of).collect();
    let mut median = rounds.swap_remove(rounds.len() / 2);
    if let Some(m) = median.as_object_mut() {
        m.insert("round_rates".into(), json!(rates));
    }
    median
}

/// `c` tasks on one delayq queue (one fred client) offer unique values for `secs`.
async fn rust_offer(ctx: &Ctx, c: usize, secs: f64) -> BoxResult<(u64, f64)> {
    let name = format!("bench:offer:delayq:c{c}");
    let queue = DelayedQueue::builder(ctx.client.clone(), name, StringCodec)
        .transfer(false)
        .build()
        .await?;
    unlink_queue(&ctx.client, queue.keys()).await?;
    let counter = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut tasks = JoinSet::new();
    for _ in 0..c {
        let queue = queue.clone();
        let counter = counter.clone();
        tasks.spawn(async move {
            while Instant::now() < deadline {
                let i = counter.fetch_add(1, Ordering::Relaxed);
                queue.offer(&value(i), Duration::from_secs(3_600)).await?;
            }
            Ok::<_, delayq::Error>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let ops = counter.load(Ordering::Relaxed);
    let keys = queue.keys().clone();
    check_offered(&ctx.client, &keys, ops, "delayq").await?;
    unlink_queue(&ctx.client, &keys).await?;
    Ok((ops, elapsed))
}

/// The same with Redisson: `c` threads, synchronous `offer` calls.
async fn java_offer(ctx: &mut Ctx, c: usize, secs: f64) -> BoxResult<(u64, f64)> {
    let keys = QueueKeys::new(format!("bench:offer:java:c{c}"));
    unlink_queue(&ctx.client, &keys).await?;
    let reply = ctx
        .java
        .call(
            &format!("offer {} {c} {secs} 3600000", keys.target()),
            Duration::from_secs_f64(secs + 120.0),
        )
        .await?;
    let ops = f64_of(&reply, "ops")? as u64;
    check_offered(&ctx.client, &keys, ops, "java").await?;
    unlink_queue(&ctx.client, &keys).await?;
    Ok((ops, f64_of(&reply, "secs")?))
}

async fn check_offered(client: &Client, keys: &QueueKeys, ops: u64, who: &str) -> BoxResult<()> {
    let zcard = int(client, "ZCARD", keys.timeout()).await? as u64;
    let llen = int(client, "LLEN", keys.order()).await? as u64;
    if zcard != ops || llen != ops {
        return Err(format!(
            "{who} offered {ops} values but left {zcard} zset members, {llen} list entries"
        )
        .into());
    }
    Ok(())
}

/// redis-benchmark running the offer script with `c` connections, `pipeline` calls in flight on
/// each (the ceiling: -P 32, the throughput Redis itself allows for this script). The random id is 8 fixed bytes and the value
/// `value-` plus redis-benchmark's 12 random digits (`__rand_int__`), 18 bytes like ours.
async fn redis_benchmark(ctx: &Ctx, sha: &str, c: usize, pipeline: usize) -> BoxResult<Json> {
    let keys = QueueKeys::new(format!("bench:offer:redis-benchmark:c{c}"));
    unlink_queue(&ctx.client, &keys).await?;
    let n = if pipeline > 1 {
        ctx.plan.bench_requests
    } else {
        ctx.plan.bench_requests / 5
    };
    // ARGV: now (ms), entry format, then one entry: delay, id, value.
    let now = redis::delayq_now_ms().to_string();
    let script_keys =
        delayq::__internal::script_keys("offer.lua", &keys, &[]).ok_or("offer.lua has no keys")?;
    let output = tokio::process::Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &ctx.port, "-n", &n.to_string()])
        .args([
            "-c",
            &c.to_string(),
            "-P",
            &pipeline.to_string(),
            "-r",
            "100000000000",
            "--csv",
        ])
        .args(["EVALSHA", sha, &script_keys.len().to_string()])
        .args(&script_keys)
        .args([&now, "0", "3600000", "abcdefgh", "value-__rand_int__"])
        .output()
        .await
        .map_err(|e| format!("cannot run redis-benchmark: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "redis-benchmark failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let rps = stdout
        .lines()
        .filter(|l| !l.starts_with("\"test\""))
        .find_map(|l| {
            l.split("\",\"")
                .nth(1)
                .and_then(|v| v.trim_matches('"').parse::<f64>().ok())
        })
        .ok_or_else(|| format!("redis-benchmark: no rate in {stdout:?}"))?;
    // Every call ran the offer script. The id is fixed and `__rand_int__` comes from a 31-bit
    // random(), so a few calls repeat an earlier entry exactly: offer.lua adds such an entry
    // once (as it does for a call re-sent after a lost reply). The order list and the zset must
    // agree, and hold nearly every call.
    let llen = int(&ctx.client, "LLEN", keys.order()).await? as u64;
    let zcard = int(&ctx.client, "ZCARD", keys.timeout()).await? as u64;
    if llen != zcard || llen > n || llen < n - n / 100 {
        return Err(format!(
            "redis-benchmark ran {n} offers but the order list has {llen} and the zset {zcard}"
        )
        .into());
    }
    unlink_queue(&ctx.client, &keys).await?;
    Ok(json!({ "requests": n, "pipeline": pipeline, "clients": c, "rate": rps }))
}

// ---------------------------------------------------------------------------------------------
// Transfer throughput and longest script call

async fn transfer_phase(ctx: &mut Ctx) -> BoxResult<Json> {
    let mut rows = Vec::new();
    for &n in &ctx.plan.transfer_sizes.clone() {
        for pattern in [Pattern::Due, Pattern::Random] {
            let mut impls: Vec<(&str, Option<TransferConfig>)> = rust_configs()
                .into_iter()
                .map(|(n, c)| (n, Some(c)))
                .collect();
            impls.push(("java", None));
            for (imp, config) in impls {
                let row = transfer_case(ctx, n, pattern, imp, config).await?;
                log(format!(
                    "transfer {n} {}: {imp}: {:.0}/s{}, longest call {} us",
                    pattern.name(),
                    row["rate"].as_f64().unwrap_or(0.0),
                    if row["capped"].as_bool() == Some(true) {
                        " (capped)"
                    } else {
                        ""
                    },
                    row["max_call_us"]
                ));
                rows.push(row);
            }
        }
    }
    Ok(Json::Array(rows))
}

async fn transfer_case(
    ctx: &mut Ctx,
    n: usize,
    pattern: Pattern,
    imp: &str,
    config: Option<TransferConfig>,
) -> BoxResult<Json> {
    let keys = QueueKeys::new(format!("bench:transfer:{imp}:{}:{n}", pattern.name()));
    unlink_queue(&ctx.client, &keys).await?;
    let scores = fill(&ctx.client, &keys, n, pattern).await?;
    // Once, on the longest random-order list: what removing from its middle costs at all.
    let largest = ctx.plan.transfer_sizes.iter().copied().max() == Some(n);
    let floor = if largest && matches!(pattern, Pattern::Random) && imp == "delayq-default" {
        let floor = redis::list_floor(&ctx.client, keys.order()).await?;
        log(format!("list floor at {n}: {floor}"));
        Some(floor)
    } else {
        None
    };
    // Log every script call over 100 µs; fast calls do not matter for the longest one.
    redis::reset_server_stats(&ctx.client, 100).await?;

    let ping = redis::PingLoop::start(&ctx.url).await?;
    let start = Instant::now();
    let running = match &config {
        Some(config) => {
            let client = delayq::connect(&ctx.url).await?;
            let handle = Scheduler::spawn(client.clone(), keys.target(), *config).await?;
            Some((handle, client))
        }
        None => {
            ctx.java
                .call(
                    &format!("sched_start {}", keys.target()),
                    Duration::from_secs(30),
                )
                .await?;
            None
        }
    };
    let cap = ctx.plan.transfer_cap;
    let (moved, elapsed, capped) = loop {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let moved = int(&ctx.client, "LLEN", keys.target()).await? as usize;
        let elapsed = start.elapsed();
        if moved >= n {
            break (moved, elapsed, false);
        }
        if elapsed >= cap {
            break (moved, elapsed, true);
        }
    };
    match running {
        // delayq's scheduler, in this process.
        Some((handle, client)) => {
            handle.shutdown().await;
            let _ = client.quit().await;
        }
        // Redisson's, in the JVM.
        None => {
            ctx.java
                .call(
                    &format!("sched_stop {}", keys.target()),
                    Duration::from_secs(60),
                )
                .await?;
        }
    }
    let ping = ping.stop().await?;
    let calls = redis::script_calls(&ctx.client).await?;
    let slow = redis::slow_script_calls(&ctx.client).await?;
    let max_call_us = slow.iter().copied().max().unwrap_or(0);
    let over_10ms = slow.iter().filter(|&&d| d > LONG_CALL_US).count();
    let over_25ms = slow.iter().filter(|&&d| d > 25_000).count();

    check_transfer(&ctx.client, &keys, &scores, capped).await?;
    unlink_queue(&ctx.client, &keys).await?;
    let secs = elapsed.as_secs_f64();
    Ok(json!({
        "impl": imp,
        "pattern": pattern.name(),
        "pending": n,
        "moved": moved,
        "secs": secs,
        "rate": rate(moved as f64, secs),
        "capped": capped,
        "script_calls": calls.calls,
        "mean_call_us": if calls.calls > 0 { calls.usec as f64 / calls.calls as f64 } else { 0.0 },
        "max_call_us": max_call_us,
        "calls_over_10ms": over_10ms,
        "calls_over_25ms": over_25ms,
        "ping": ping,
        "list_floor": floor,
    }))
}

/// Nothing lost or duplicated, and the target list in due order (checked on its head).
async fn check_transfer(
    client: &Client,
    keys: &QueueKeys,
    scores: &[i64],
    capped: bool,
) -> BoxResult<()> {
    const COUNTS: &str = "return {redis.call('llen', KEYS[1]), redis.call('zcard', KEYS[2]), \
                          redis.call('llen', KEYS[3])}";
    let reply = cmd(
        client,
        "EVAL",
        vec![
            COUNTS.into(),
            3.into(),
            keys.target().into(),
            keys.timeout().into(),
            keys.order().into(),
        ],
    )
    .await?;
    let counts: Vec<i64> = match reply {
        Value::Array(v) => v.iter().filter_map(Value::as_i64).collect(),
        other => return Err(format!("counts: {other:?}").into()),
    };
    let [target, zset, order] = counts[..] else {
        return Err("counts: three integers expected".into());
    };
    let n = scores.len() as i64;
    if target + zset != n || zset != order || (!capped && target != n) {
        return Err(format!(
            "transfer of {n}: target list {target}, zset {zset}, order list {order}"
        )
        .into());
    }
    let head = cmd(
        client,
        "LRANGE",
        vec![keys.target().into(), 0.into(), 1_999.into()],
    )
    .await?;
    let Value::Array(values) = head else {
        return Err("LRANGE: not an array".into());
    };
    let mut last = i64::MIN;
    for v in values {
        let text = v.as_string().ok_or("target value is not text")?;
        let index: usize = text
            .strip_prefix("value-")
            .and_then(|d| d.parse().ok())
            .ok_or_else(|| format!("unexpected value {text:?} on the target list"))?;
        let score = *scores.get(index).ok_or("value index out of range")?;
        if score < last {
            return Err(format!("target list out of due order at {text}").into());
        }
        last = score;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Due-to-consumer latency at a steady offer rate

async fn latency_phase(ctx: &mut Ctx) -> BoxResult<Json> {
    let mut rows = Vec::new();
    for (imp, config) in rust_configs() {
        let before = server_load_start(&ctx.client).await?;
        let samples = rust_latency(ctx, imp, config).await?;
        let load = server_load_end(&ctx.client, before, samples.len()).await?;
        rows.push(latency_row(imp, samples, load)?);
    }
    let before = server_load_start(&ctx.client).await?;
    let samples = java_latency(ctx).await?;
    let load = server_load_end(&ctx.client, before, samples.len()).await?;
    rows.push(latency_row("java", samples, load)?);
    Ok(Json::Array(rows))
}

/// Clears the command statistics; returns the start time and Redis's CPU seconds so far.
async fn server_load_start(client: &Client) -> BoxResult<(Instant, f64)> {
    redis::reset_server_stats(client, 1_000_000).await?;
    Ok((Instant::now(), redis::server_cpu_secs(client).await?))
}

/// What the case cost Redis: transfer script calls (every script call minus the one per offer)
/// and Redis's CPU time.
async fn server_load_end(
    client: &Client,
    (started, cpu_before): (Instant, f64),
    offers: usize,
) -> BoxResult<Json> {
    let secs = started.elapsed().as_secs_f64();
    let calls = redis::script_calls(client).await?;
    let cpu = redis::server_cpu_secs(client).await? - cpu_before;
    let transfers = calls.calls.saturating_sub(offers as u64);
    Ok(json!({
        "secs": secs,
        "script_calls": calls.calls,
        "transfer_calls": transfers,
        "transfer_calls_per_sec": rate(transfers as f64, secs),
        "redis_cpu_secs": cpu,
        "redis_cpu_percent": if secs > 0.0 { cpu / secs * 100.0 } else { 0.0 },
    }))
}

fn latency_row(imp: &str, mut us: Vec<i64>, load: Json) -> BoxResult<Json> {
    if us.is_empty() {
        return Err(format!("{imp}: no latency samples").into());
    }
    us.sort_unstable();
    let q = |p: f64| us[((us.len() - 1) as f64 * p).round() as usize] as f64 / 1_000.0;
    let curve: Vec<f64> = (0..=200).map(|i| q(f64::from(i) / 200.0)).collect();
    let mean = us.iter().map(|&v| v as f64).sum::<f64>() / us.len() as f64 / 1_000.0;
    log(format!(
        "latency {imp}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} samples); {:.0} transfer calls/s, Redis CPU {:.0}%",
        q(0.5),
        q(0.99),
        q(1.0),
        us.len(),
        load["transfer_calls_per_sec"].as_f64().unwrap_or(0.0),
        load["redis_cpu_percent"].as_f64().unwrap_or(0.0),
    ));
    Ok(json!({
        "impl": imp,
        "samples": us.len(),
        "min_ms": q(0.0),
        "p50_ms": q(0.5),
        "p90_ms": q(0.9),
        "p99_ms": q(0.99),
        "p999_ms": q(0.999),
        "max_ms": q(1.0),
        "mean_ms": mean,
        "quantiles_ms": curve,
        "server": load,
    }))
}

async fn rust_latency(ctx: &Ctx, imp: &str, config: TransferConfig) -> BoxResult<Vec<i64>> {
    let name = format!("bench:latency:{imp}");
    let keys = QueueKeys::new(name.clone());
    unlink_queue(&ctx.client, &keys).await?;
    let p = &ctx.plan;
    let total = (f64::from(p.latency_rate) * p.latency_secs) as usize;
    let queue = DelayedQueue::builder(ctx.client.clone(), name, StringCodec)
        .transfer_config(config)
        .build()
        .await?;
    let consumer = queue.consumer().await?;
    let give_up = Duration::from_secs_f64(p.latency_secs)
        + Duration::from_millis(p.latency_delay_ms.1)
        + Duration::from_secs(10);
    let taker = tokio::spawn(async move {
        let deadline = Instant::now() + give_up;
        let mut samples = Vec::with_capacity(total);
        while samples.len() < total && Instant::now() < deadline {
            if let Some(v) = consumer.poll(Duration::from_secs(1)).await? {
                let now = redis::now_us();
                let due: i64 = v
                    .rsplit('-')
                    .next()
                    .and_then(|d| d.parse().ok())
                    .ok_or_else(|| format!("unexpected value {v:?}"))?;
                samples.push(now - due * 1_000);
            }
        }
        consumer.close().await;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(samples)
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let start = Instant::now();
    let mut sent = 0usize;
    while sent < total {
        let should =
            ((start.elapsed().as_secs_f64() * f64::from(p.latency_rate)) as usize).min(total);
        while sent < should {
            let delay = rng.random_range(p.latency_delay_ms.0..=p.latency_delay_ms.1);
            let due = redis::delayq_now_ms() + delay as i64;
            queue
                .offer(&format!("lat-{sent}-{due}"), Duration::from_millis(delay))
                .await?;
            sent += 1;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let samples = taker.await??;
    queue.destroy().await?;
    unlink_queue(&ctx.client, &keys).await?;
    if samples.len() != total {
        return Err(format!("{imp}: offered {total}, took {}", samples.len()).into());
    }
    Ok(samples)
}

async fn java_latency(ctx: &mut Ctx) -> BoxResult<Vec<i64>> {
    let keys = QueueKeys::new("bench:latency:java");
    unlink_queue(&ctx.client, &keys).await?;
    let p = ctx.plan.clone();
    let file = format!("{}/java-latency-{}.txt", ctx.work_dir, std::process::id());
    let reply = ctx
        .java
        .call(
            &format!(
                "latency {} {} {} {} {} {file}",
                keys.target(),
                p.latency_rate,
                p.latency_secs,
                p.latency_delay_ms.0,
                p.latency_delay_ms.1
            ),
            Duration::from_secs_f64(p.latency_secs + 120.0),
        )
        .await?;
    let text = std::fs::read_to_string(&file)?;
    let _ = std::fs::remove_file(&file);
    let samples: Vec<i64> = text
        .lines()
        .map(|l| l.trim().parse::<i64>())
        .collect::<Result<_, _>>()?;
    let sent = f64_of(&reply, "sent")? as usize;
    unlink_queue(&ctx.client, &keys).await?;
    if samples.len() != sent {
        return Err(format!("java: offered {sent}, took {}", samples.len()).into());
    }
    Ok(samples)
}

// ---------------------------------------------------------------------------------------------
// Consumer drain rate

async fn drain_phase(ctx: &mut Ctx) -> BoxResult<Json> {
    let n = ctx.plan.drain_count;
    let mut rows = Vec::new();
    for batch in [1u64, 100] {
        let how = if batch == 1 { "take" } else { "poll(100)" };
        let name = format!("bench:drain:delayq:{batch}");
        cmd(&ctx.client, "UNLINK", vec![name.clone().into()]).await?;
        redis::fill_list(&ctx.client, &name, n).await?;
        let consumer = Consumer::new(&ctx.client, name.clone(), StringCodec).await?;
        let start = Instant::now();
        let mut got = 0u64;
        while got < n {
            if batch == 1 {
                consumer
                    .poll(Duration::from_secs(5))
                    .await?
                    .ok_or_else(|| format!("drain: list ran dry after {got}"))?;
                got += 1;
            } else {
                let vs = consumer.poll_many(batch as usize).await?;
                if vs.is_empty() {
                    return Err(format!("drain: list ran dry after {got}").into());
                }
                got += vs.len() as u64;
            }
        }
        let secs = start.elapsed().as_secs_f64();
        consumer.close().await;
        check_empty(&ctx.client, &name, got, n).await?;
        rows.push(json!({ "impl": "delayq", "how": how, "ops": got, "secs": secs, "rate": rate(got as f64, secs) }));

        let name = format!("bench:drain:java:{batch}");
        cmd(&ctx.client, "UNLINK", vec![name.clone().into()]).await?;
        redis::fill_list(&ctx.client, &name, n).await?;
        let reply = ctx
            .java
            .call(
                &format!("drain {name} {n} {batch}"),
                Duration::from_secs(600),
            )
            .await?;
        let (jops, jsecs) = (f64_of(&reply, "ops")?, f64_of(&reply, "secs")?);
        check_empty(&ctx.client, &name, jops as u64, n).await?;
        rows.push(json!({ "impl": "java", "how": how, "ops": jops, "secs": jsecs, "rate": rate(jops, jsecs) }));
        log(format!(
            "drain {how}: delayq {:.0}/s, java {:.0}/s",
            rate(got as f64, secs),
            rate(jops, jsecs)
        ));
    }
    Ok(Json::Array(rows))
}

async fn check_empty(client: &Client, list: &str, got: u64, n: u64) -> BoxResult<()> {
    let left = int(client, "LLEN", list).await?;
    if got != n || left != 0 {
        return Err(format!("drain of {list}: took {got} of {n}, {left} left").into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Client memory after N offers and takes, each in a fresh process

async fn rss_phase(ctx: &Ctx) -> BoxResult<Json> {
    let n = ctx.plan.rss_count;
    let c = ctx.plan.rss_concurrency;
    let exe = std::env::current_exe()?;
    let output = tokio::time::timeout(
        Duration::from_secs(900),
        tokio::process::Command::new(exe)
            .args([
                "rss-child",
                "--url",
                &ctx.url,
                "--queue",
                "bench:rss:delayq",
            ])
            .args(["--count", &n.to_string(), "--concurrency", &c.to_string()])
            .stderr(std::process::Stdio::inherit())
            .output(),
    )
    .await
    .map_err(|_| "rss child: timed out")??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!("rss child failed ({}): {stdout}", output.status).into());
    }
    let rust: Json = serde_json::from_str(
        stdout
            .lines()
            .find_map(|l| l.strip_prefix("RESULT "))
            .ok_or("rss child: no RESULT")?,
    )?;
    let java = java::run_once(
        &ctx.classpath,
        &[
            "rss".into(),
            ctx.url.clone(),
            "bench:rss:java".into(),
            n.to_string(),
            c.to_string(),
        ],
    )
    .await?;
    for (who, r) in [("delayq", &rust), ("java", &java)] {
        let taken = r["taken"].as_u64().unwrap_or(0);
        if taken != n {
            return Err(format!("rss {who}: offered {n}, took {taken}").into());
        }
        log(format!(
            "rss {who}: {} KiB after {n} offers + takes (peak {} KiB) in {:.1} s",
            r["rss_kib"],
            r["hwm_kib"],
            r["secs"].as_f64().unwrap_or(0.0)
        ));
    }
    for name in ["bench:rss:delayq", "bench:rss:java"] {
        unlink_queue(&ctx.client, &QueueKeys::new(name)).await?;
    }
    Ok(json!({ "count": n, "concurrency": c, "delayq": rust, "java": java }))
}

/// The child process: offers `count` due values from `concurrency` tasks while as many
/// consumers take them (scheduler on, default config), then prints its memory.
pub(crate) async fn rss_child(mut args: impl Iterator<Item = String>) -> BoxResult<()> {
    let (mut url, mut queue_name, mut count, mut conc) = (None, None, 0u64, 1usize);
    while let Some(a) = args.next() {
        let v = args.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--url" => url = Some(v),
            "--queue" => queue_name = Some(v),
            "--count" => count = v.parse()?,
            "--concurrency" => conc = v.parse()?,
            other => return Err(format!("rss-child: unknown argument {other}").into()),
        }
    }
    let client = delayq::connect(&url.ok_or("--url")?).await?;
    let queue =
        DelayedQueue::new(client.clone(), queue_name.ok_or("--queue")?, StringCodec).await?;
    unlink_queue(&client, queue.keys()).await?;
    let offered = Arc::new(AtomicU64::new(0));
    let taken = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks: JoinSet<BoxResult<()>> = JoinSet::new();
    for _ in 0..conc {
        let q = queue.clone();
        let offered = offered.clone();
        tasks.spawn(async move {
            loop {
                let i = offered.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return Ok(());
                }
                q.offer(&value(i), Duration::ZERO).await?;
            }
        });
        let consumer = queue.consumer().await?;
        let taken = taken.clone();
        tasks.spawn(async move {
            let idle_limit = Duration::from_secs(30);
            let mut idle_since = Instant::now();
            while taken.load(Ordering::Relaxed) < count {
                if consumer.poll(Duration::from_secs(1)).await?.is_some() {
                    taken.fetch_add(1, Ordering::Relaxed);
                    idle_since = Instant::now();
                } else if idle_since.elapsed() > idle_limit {
                    return Err("rss-child: no value for 30 s".into());
                }
            }
            consumer.close().await;
            Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let secs = start.elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib = |field: &str| -> i64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| {
                v.trim_start_matches(':')
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()
            })
            .unwrap_or(-1)
    };
    let result = json!({
        "ops": count,
        "taken": taken.load(Ordering::Relaxed),
        "secs": secs,
        "rss_kib": kib("VmRSS"),
        "hwm_kib": kib("VmHWM"),
    });
    queue.destroy().await?;
    let _ = client.quit().await;
    println!("RESULT {result}");
    Ok(())
}
