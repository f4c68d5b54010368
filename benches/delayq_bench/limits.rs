//! The `limits` phase: what limits that never bind cost a worker. One worker of concurrency 16
//! with an empty handler drains a backlog on the runner's redis-server, without limits, under
//! queue-wide limits (a cap of 1,000 and 1,000,000 starts a second) and under per-key limits
//! (a key per value, a key cap of 1,000), in alternating rounds; the median round of each is
//! kept and set against the unlimited one. Needs no Java; `--only limits` runs it alone.

use crate::redis::{fill_list, unlink_queue, BoxResult};
use crate::Plan;
use delayq::codec::StringCodec;
use delayq::limit::{Limits, Rate};
use delayq::{DelayedQueue, JobError};
use fred::clients::Client;
use serde_json::{json, Value as Json};
use std::time::Duration;
use tokio::time::Instant;

const CONCURRENCY: usize = 16;

fn log(text: impl AsRef<str>) {
    eprintln!("bench: limits: {}", text.as_ref());
}

/// The configurations measured, by name.
fn modes() -> BoxResult<Vec<(&'static str, Option<Limits>)>> {
    let queue_wide = Limits::default()
        .with_concurrency(1_000)
        .with_rate(Rate::new(1_000_000, Duration::from_secs(1))?);
    Ok(vec![
        ("none", None),
        ("queue_wide", Some(queue_wide)),
        (
            "per_key",
            Some(Limits::default().with_key_concurrency(1_000)),
        ),
    ])
}

/// One round: `n` values drained by one worker under `limits`; jobs per second.
async fn round(
    client: &Client,
    queue: &DelayedQueue<StringCodec>,
    limits: Option<&Limits>,
    n: u64,
) -> BoxResult<f64> {
    unlink_queue(client, queue.keys()).await?;
    match limits {
        Some(limits) => queue.limits().set(limits).await?,
        None => {
            queue.limits().clear().await?;
        }
    }
    fill_list(client, queue.keys().target(), n).await?;
    let started = Instant::now();
    let worker = queue
        .worker(CONCURRENCY, |_job| async { Ok::<(), JobError>(()) })
        // Each value its own key: per-key limits are looked at for every job, never binding.
        .limit_key(|value: &String| Some(value.clone()))
        .server_check(None)
        .spawn()?;
    let deadline = started + Duration::from_secs(120);
    while worker.stats().acked < n {
        if Instant::now() > deadline {
            return Err(format!("{} of {n} acked in 120 s", worker.stats().acked).into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    let stats = worker.shutdown().await?;
    if stats.errors + stats.lost > 0 {
        return Err(format!("round with errors: {stats:?}").into());
    }
    Ok(n as f64 / secs)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Alternating rounds of every mode; each mode's median throughput and its ratio to none's.
pub(crate) async fn phase(plan: &Plan, port: u16) -> BoxResult<Json> {
    let client = delayq::connect(&format!("redis://127.0.0.1:{port}")).await?;
    let queue = DelayedQueue::builder(client.clone(), "bench:limits", StringCodec)
        .transfer(false)
        .build()
        .await?;
    let (n, rounds) = if plan.smoke { (2_000, 1) } else { (20_000, 5) };
    let modes = modes()?;
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for r in 0..rounds {
        for (i, (name, limits)) in modes.iter().enumerate() {
            let rate = round(&client, &queue, limits.as_ref(), n).await?;
            log(format!("round {r}: {name}: {rate:.0} jobs/s"));
            rates[i].push(rate);
        }
    }
    queue.limits().clear().await?;
    unlink_queue(&client, queue.keys()).await?;
    let base = median(rates[0].clone());
    let mut out = serde_json::Map::new();
    out.insert("values_per_round".into(), json!(n));
    out.insert("concurrency".into(), json!(CONCURRENCY));
    for ((name, _), rates) in modes.iter().zip(rates) {
        let med = median(rates.clone());
        log(format!(
            "{name}: median {med:.0} jobs/s, {:.2} of none",
            med / base
        ));
        out.insert(
            (*name).into(),
            json!({ "rounds": rates, "median": med, "ratio": med / base }),
        );
    }
    Ok(Json::Object(out))
}
