//! delayq's benchmark driver: delayq and the real Java Redisson side by side on one Redis.
//!
//! Run through `benches/run.sh` (which starts redis-server, builds the Java side and renders
//! RESULTS.md and the chart). The driver measures, in one run:
//! offer throughput (delayq, Redisson, redis-benchmark's pipelined ceiling), transfer throughput
//! and longest script call on pre-filled backlogs, due-to-consumer latency at a steady offer
//! rate, consumer drain rate, and client RSS after 1M offers and takes. It writes one JSON file.
//!
//! Every phase checks what it did (entries counted, lists emptied, due order kept) and the driver
//! exits non-zero when a component fails; a missed performance target never fails it.

mod durable;
mod gateway;
mod java;
mod limits;
mod many;
mod phases;
mod redis;
mod shard;

use redis::BoxResult;
use std::time::Duration;

/// The sizes of one run.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) smoke: bool,
    pub(crate) offer_secs: f64,
    pub(crate) offer_rounds: usize,
    pub(crate) offer_levels: Vec<usize>,
    pub(crate) bench_requests: u64,
    pub(crate) transfer_sizes: Vec<usize>,
    pub(crate) transfer_cap: Duration,
    pub(crate) lookup_sizes: Vec<u64>,
    pub(crate) latency_rate: u32,
    pub(crate) latency_secs: f64,
    pub(crate) latency_delay_ms: (u64, u64),
    pub(crate) drain_count: u64,
    pub(crate) rss_count: u64,
    pub(crate) rss_concurrency: usize,
    /// Queues of the many-queues phase (standalone), and on the Cluster.
    pub(crate) many_queues: usize,
    pub(crate) many_cluster_queues: usize,
    /// How long idle commands are counted.
    pub(crate) many_idle_secs: f64,
    /// Offers per second over random queues, for how long, with delays drawn from this range.
    pub(crate) many_rate: u32,
    pub(crate) many_secs: f64,
    pub(crate) many_delay_ms: (u64, u64),
    /// The gateway phase's sizes (`--gateway-pending` sets its pending messages,
    /// `--gateway-concurrency` the gateway's `--concurrency`).
    pub(crate) gateway: gateway::Sizes,
}

impl Plan {
    fn full() -> Plan {
        Plan {
            smoke: false,
            offer_secs: 3.0,
            offer_rounds: 3,
            offer_levels: vec![1, 16, 128],
            bench_requests: 500_000,
            transfer_sizes: vec![10_000, 100_000, 1_000_000],
            transfer_cap: Duration::from_secs(20),
            lookup_sizes: vec![10_000, 100_000, 1_000_000],
            latency_rate: 2_000,
            latency_secs: 20.0,
            latency_delay_ms: (50, 1_000),
            drain_count: 100_000,
            rss_count: 1_000_000,
            rss_concurrency: 16,
            many_queues: 10_000,
            many_cluster_queues: 10_000,
            many_idle_secs: 10.0,
            many_rate: 1_000,
            many_secs: 20.0,
            many_delay_ms: (100, 2_000),
            gateway: gateway::Sizes::full(),
        }
    }

    fn smoke() -> Plan {
        Plan {
            smoke: true,
            offer_secs: 0.5,
            offer_rounds: 1,
            offer_levels: vec![1, 16, 128],
            bench_requests: 20_000,
            transfer_sizes: vec![3_000],
            transfer_cap: Duration::from_secs(10),
            lookup_sizes: vec![2_000],
            latency_rate: 2_000,
            latency_secs: 2.0,
            latency_delay_ms: (50, 300),
            drain_count: 2_000,
            rss_count: 5_000,
            rss_concurrency: 16,
            // Over Redisson's default of 250 subscriptions, so that the smoke run shows it too.
            many_queues: 300,
            many_cluster_queues: 100,
            many_idle_secs: 2.0,
            many_rate: 500,
            many_secs: 2.0,
            many_delay_ms: (50, 300),
            gateway: gateway::Sizes::smoke(),
        }
    }
}

struct Args {
    port: u16,
    classpath: String,
    out: String,
    work_dir: String,
    plan: Plan,
    only: Option<Vec<String>>,
    delayq_bin: Option<String>,
    /// A replica of the server at `port` (the durable phase's).
    replica_port: Option<u16>,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> BoxResult<Args> {
    let mut port = None;
    let mut classpath = None;
    let mut out = None;
    let mut work_dir = std::env::temp_dir().display().to_string();
    let mut smoke = false;
    let mut only = None;
    let mut delayq_bin = None;
    let mut replica_port = None;
    let mut gateway_pending = None;
    let mut gateway_concurrency = None;
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--port" => port = Some(value()?.parse()?),
            "--java-classpath" => classpath = Some(value()?),
            "--out" => out = Some(value()?),
            "--work-dir" => work_dir = value()?,
            "--only" => only = Some(value()?.split(',').map(str::to_owned).collect()),
            "--smoke" => smoke = true,
            "--delayq-bin" => delayq_bin = Some(value()?),
            "--replica-port" => replica_port = Some(value()?.parse()?),
            "--gateway-pending" => gateway_pending = Some(value()?.parse()?),
            "--gateway-concurrency" => gateway_concurrency = Some(value()?.parse()?),
            // cargo bench passes this to harness-less benches.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let mut plan = if smoke { Plan::smoke() } else { Plan::full() };
    if let Some(n) = gateway_pending {
        plan.gateway.pending = n;
    }
    if let Some(n) = gateway_concurrency {
        plan.gateway.concurrency = n;
    }
    Ok(Args {
        port: port.ok_or("--port is required")?,
        classpath: classpath.ok_or("--java-classpath is required")?,
        out: out.ok_or("--out is required")?,
        work_dir,
        plan,
        only,
        delayq_bin,
        replica_port,
    })
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(r) => r,
        Err(err) => {
            eprintln!("bench: no runtime: {err}");
            std::process::exit(1);
        }
    };
    let result = if args.peek().map(String::as_str) == Some("rss-child") {
        args.next();
        runtime.block_on(phases::rss_child(args))
    } else {
        match parse_args(args) {
            Ok(args) => runtime.block_on(run(args)),
            Err(err) => Err(err),
        }
    };
    if let Err(err) = result {
        eprintln!("bench: FAILED: {err}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> BoxResult<()> {
    // The shard phase needs only its own Cluster, the durable phase the server and its replica,
    // the limits phase the server, the gateway phase its own server and the CLI: none needs
    // Java; alone, each runs without the rest.
    let alone = match args.only.as_deref() {
        Some([one]) if ["shard", "durable", "limits", "gateway"].contains(&one.as_str()) => {
            Some(one.clone())
        }
        _ => None,
    };
    if let Some(phase) = alone {
        let started = std::time::Instant::now();
        let meta = serde_json::json!({
            "mode": phase,
            "date": std::env::var("BENCH_DATE").unwrap_or_default(),
            "commit": std::env::var("BENCH_COMMIT").unwrap_or_default(),
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "loadavg_start": phases::loadavg(),
        });
        let figures = match phase.as_str() {
            "shard" => shard::phase(&args.plan, &args.work_dir).await?,
            "limits" => limits::phase(&args.plan, args.port).await?,
            "gateway" => {
                let bin = args
                    .delayq_bin
                    .as_deref()
                    .ok_or("the gateway phase needs --delayq-bin (the delayq CLI)")?;
                gateway::phase(&args.plan.gateway, bin, &args.work_dir).await?
            }
            _ => {
                let replica = args
                    .replica_port
                    .ok_or("the durable phase needs --replica-port")?;
                durable::phase(&args.plan, args.port, replica).await?
            }
        };
        let mut meta = meta;
        meta["loadavg_end"] = serde_json::json!(phases::loadavg());
        let results = serde_json::json!({
            "meta": meta,
            phase.as_str(): figures,
            "total_secs": started.elapsed().as_secs_f64(),
        });
        let text = serde_json::to_string_pretty(&results)?;
        std::fs::write(&args.out, text + "\n")?;
        eprintln!("bench: wrote {}", args.out);
        return Ok(());
    }
    let url = format!("redis://127.0.0.1:{}", args.port);
    let ctx = phases::Ctx::new(&url, &args.classpath, args.plan.clone(), &args.work_dir)
        .await?
        .with_delayq_bin(args.delayq_bin);
    let results = phases::run_all(ctx, args.only.as_deref()).await?;
    let text = serde_json::to_string_pretty(&results)?;
    std::fs::write(&args.out, text + "\n")?;
    eprintln!("bench: wrote {}", args.out);
    Ok(())
}
