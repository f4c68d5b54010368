//! The `durable` phase: durable offers (`Durability::replicas(1)`, 1 s timeout) beside plain
//! offers, 16 in flight on one fred client, on the runner's redis-server with one replica
//! (`run.sh` starts it). Needs no Java; `--only durable` runs it alone.
//!
//! Both sides write to a master that replicates to the same replica, in interleaved rounds
//! (the median round of each side is kept), so the difference is the wait alone. Every durable
//! round checks what the guarantee says: each value it confirmed is on the replica when the
//! round ends.

use crate::redis::{command_calls, int, unlink_queue, value, BoxResult};
use crate::Plan;
use delayq::codec::StringCodec;
use delayq::{DelayedQueue, Durability, Error};
use fred::clients::Client;
use serde_json::{json, Value as Json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

const IN_FLIGHT: usize = 16;
const TIMEOUT: Duration = Duration::from_secs(1);

fn log(text: impl AsRef<str>) {
    eprintln!("bench: durable: {}", text.as_ref());
}

/// One round's figures: offers confirmed, `NotConfirmed` outcomes, seconds, waits sent.
struct Round {
    ok: u64,
    not_confirmed: u64,
    secs: f64,
    waits: u64,
}

impl Round {
    fn rate(&self) -> f64 {
        self.ok as f64 / self.secs.max(f64::EPSILON)
    }

    fn json(&self) -> Json {
        json!({
            "ok": self.ok,
            "not_confirmed": self.not_confirmed,
            "secs": self.secs,
            "rate": self.rate(),
            "waits": self.waits,
            "offers_per_wait": if self.waits > 0 { self.ok as f64 / self.waits as f64 } else { 0.0 },
        })
    }
}

/// `IN_FLIGHT` tasks offer unique values through `queue` for `secs`.
async fn round(
    master: &Client,
    replica: &Client,
    queue: &DelayedQueue<StringCodec>,
    secs: f64,
) -> BoxResult<Round> {
    unlink_queue(master, queue.keys()).await?;
    let waits_before = command_calls(master, "wait").await?;
    let (ok, not_confirmed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut tasks = JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let (queue, ok, not_confirmed, next) = (
            queue.clone(),
            ok.clone(),
            not_confirmed.clone(),
            next.clone(),
        );
        tasks.spawn(async move {
            while Instant::now() < deadline {
                let i = next.fetch_add(1, Ordering::Relaxed);
                match queue.offer(&value(i), Duration::from_secs(3_600)).await {
                    Ok(()) => ok.fetch_add(1, Ordering::Relaxed),
                    Err(Error::NotConfirmed { .. }) => {
                        not_confirmed.fetch_add(1, Ordering::Relaxed)
                    }
                    Err(other) => return Err(other),
                };
            }
            Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let secs = start.elapsed().as_secs_f64();
    let round = Round {
        ok: ok.load(Ordering::Relaxed),
        not_confirmed: not_confirmed.load(Ordering::Relaxed),
        secs,
        waits: command_calls(master, "wait").await? - waits_before,
    };
    let written = round.ok + round.not_confirmed;
    let on_master = int(master, "ZCARD", queue.keys().timeout()).await? as u64;
    if on_master != written {
        return Err(format!("{written} offers returned, {on_master} entries on the master").into());
    }
    if !queue.inspect().durability().is_none() {
        // Confirmed means on the replica: no waiting for it to catch up.
        let on_replica = int(replica, "ZCARD", queue.keys().timeout()).await? as u64;
        if on_replica < round.ok {
            return Err(format!(
                "{} durable offers confirmed, only {on_replica} on the replica",
                round.ok
            )
            .into());
        }
    }
    unlink_queue(master, queue.keys()).await?;
    Ok(round)
}

/// The median round by rate, with every round's rate.
fn median(mut rounds: Vec<Round>) -> Json {
    rounds.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
    let rates: Vec<f64> = rounds.iter().map(Round::rate).collect();
    let mut out = rounds[rounds.len() / 2].json();
    out["round_rates"] = json!(rates);
    out
}

/// Plain and durable offers at `IN_FLIGHT`, side by side.
pub(crate) async fn phase(plan: &Plan, port: u16, replica_port: u16) -> BoxResult<Json> {
    let master = delayq::connect(&format!("redis://127.0.0.1:{port}")).await?;
    let replica = delayq::connect(&format!("redis://127.0.0.1:{replica_port}")).await?;
    let plain = DelayedQueue::builder(master.clone(), "bench:durable", StringCodec)
        .transfer(false)
        .build()
        .await?;
    let durability = Durability::replicas(1).timeout(TIMEOUT);
    let durable = plain.with_durability(durability);
    // Warm-ups: scripts loaded, the durable connection open.
    round(&master, &replica, &plain, 0.3).await?;
    round(&master, &replica, &durable, 0.3).await?;
    let (mut plain_rounds, mut durable_rounds) = (Vec::new(), Vec::new());
    for i in 0..plan.offer_rounds.max(1) {
        // Alternating which goes first, so that neither always follows the other's cleanup.
        let order = if i % 2 == 0 {
            [&plain, &durable]
        } else {
            [&durable, &plain]
        };
        for queue in order {
            let r = round(&master, &replica, queue, plan.offer_secs).await?;
            log(format!(
                "{}: {:.0}/s, {} waits, {} not confirmed",
                if queue.inspect().durability().is_none() {
                    "plain"
                } else {
                    "durable"
                },
                r.rate(),
                r.waits,
                r.not_confirmed
            ));
            match queue.inspect().durability().is_none() {
                true => plain_rounds.push(r),
                false => durable_rounds.push(r),
            }
        }
    }
    let (plain, durable) = (median(plain_rounds), median(durable_rounds));
    let ratio = durable["rate"].as_f64().unwrap_or(0.0) / plain["rate"].as_f64().unwrap_or(1.0);
    log(format!("durable / plain = {ratio:.2}"));
    Ok(json!({
        "in_flight": IN_FLIGHT,
        "replicas": 1,
        "timeout_ms": TIMEOUT.as_millis() as u64,
        "plain": plain,
        "durable": durable,
        "ratio": ratio,
    }))
}
