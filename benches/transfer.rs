//! Transfer throughput and longest script call, due-ordered and random-delay, at several
//! pending counts: delayq's transfer (head window and position index, default and adaptive
//! batches) against the same script with the index off (after the head window, one `LREM` scan
//! per entry, 100 per call: Redisson's algorithm for entries that are not at the head). The real
//! Redisson scheduler is measured side by side by `benches/run.sh`. Prints one line per case;
//! `--json FILE` also writes them as JSON.
//!
//! Run: `benches/transfer.sh [--sizes 10000,100000] [--json FILE]` (starts a throwaway Redis),
//! or `REDIS_URL=... cargo bench --bench transfer -- [...]`.

use delayq::codec::StringCodec;
use delayq::{DelayedQueue, TransferConfig};
use std::time::{Duration, Instant};

struct Case {
    pending: usize,
    delays: &'static str,
    algorithm: &'static str,
    config: TransferConfig,
}

struct Outcome {
    moved: u64,
    seconds: f64,
    calls: u64,
    longest_call_ms: f64,
    by_index: u64,
}

fn delay_for(i: usize, pending: usize, delays: &str) -> Duration {
    // Every entry is due within 1 s of the offers; what differs is where due entries sit in the
    // order list.
    let ms = match delays {
        "due-ordered" => (i * 1_000 / pending) as u64,
        _ => rand::random::<u64>() % 1_000,
    };
    Duration::from_millis(ms)
}

async fn run_case(client: &fred::clients::Client, case: &Case, round: usize) -> Outcome {
    let name = format!("bench:transfer:{}:{round}", std::process::id());
    let queue = DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    queue.clear().await.unwrap();
    let mut batch = Vec::with_capacity(1_000);
    for i in 0..case.pending {
        batch.push((
            format!("value-{i:08}"),
            delay_for(i, case.pending, case.delays),
        ));
        if batch.len() == 1_000 {
            queue.offer_all(&batch).await.unwrap();
            batch.clear();
        }
    }
    queue.offer_all(&batch).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_100)).await;

    let mut config = case.config;
    let started = Instant::now();
    let (mut moved, mut calls, mut by_index, mut longest) = (0, 0, 0, Duration::ZERO);
    loop {
        let call = Instant::now();
        let outcome = queue.admin().transfer_due_with(&config).await.unwrap();
        let took = call.elapsed();
        longest = longest.max(took);
        calls += 1;
        moved += outcome.moved;
        by_index += outcome.found_by_index;
        if outcome.moved == 0 {
            break;
        }
        // The scheduler's adaptive rule, applied between calls as the scheduler does.
        let next =
            delayq::__internal::next_batch(&case.config, config.batch_size(), outcome.moved, took);
        config = config.with_batch_size(next);
    }
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(moved as usize, case.pending, "every entry moved");
    let _: u64 = fred::interfaces::KeysInterface::del(client, name.as_str())
        .await
        .unwrap();
    Outcome {
        moved,
        seconds,
        calls,
        longest_call_ms: longest.as_secs_f64() * 1_000.0,
        by_index,
    }
}

#[tokio::main]
async fn main() {
    let mut sizes = vec![10_000usize, 100_000];
    let mut json_out = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--sizes" => {
                sizes = args
                    .next()
                    .expect("--sizes N,N")
                    .split(',')
                    .map(|n| n.parse().expect("a number"))
                    .collect()
            }
            "--json" => json_out = Some(args.next().expect("--json FILE")),
            _ => {} // cargo bench passes --bench
        }
    }
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = delayq::connect(&url).await.unwrap();

    let mut rows = Vec::new();
    println!(
        "{:>9} {:<12} {:<26} {:>12} {:>8} {:>14} {:>9}",
        "pending", "delays", "algorithm", "moved/s", "calls", "longest call", "by index"
    );
    let mut round = 0;
    for &pending in &sizes {
        for delays in ["due-ordered", "random"] {
            let cases = [
                Case {
                    pending,
                    delays,
                    algorithm: "index off (LREM per entry)",
                    config: TransferConfig::default().with_index_threshold(0),
                },
                Case {
                    pending,
                    delays,
                    algorithm: "delayq default (100/call)",
                    config: TransferConfig::default(),
                },
                Case {
                    pending,
                    delays,
                    algorithm: "delayq adaptive (<=5000)",
                    config: TransferConfig::default()
                        .with_adaptive_batch(5_000, Duration::from_millis(5)),
                },
            ];
            for case in &cases {
                round += 1;
                let out = run_case(&client, case, round).await;
                let rate = out.moved as f64 / out.seconds;
                println!(
                    "{:>9} {:<12} {:<26} {:>12.0} {:>8} {:>11.2} ms {:>9}",
                    pending,
                    delays,
                    case.algorithm,
                    rate,
                    out.calls,
                    out.longest_call_ms,
                    out.by_index
                );
                rows.push(format!(
                    "{{\"pending\":{pending},\"delays\":\"{delays}\",\"algorithm\":\"{}\",\"moved_per_s\":{rate:.0},\"calls\":{},\"longest_call_ms\":{:.3},\"found_by_index\":{}}}",
                    case.algorithm, out.calls, out.longest_call_ms, out.by_index
                ));
            }
        }
    }
    if let Some(path) = json_out {
        std::fs::write(&path, format!("[\n{}\n]\n", rows.join(",\n"))).unwrap();
        println!("wrote {path}");
    }
}
