//! A reliable worker: a few jobs offered with short delays, handled two at a time with
//! acknowledgements; one job fails its first attempt and succeeds on the retry. The program
//! stops the worker once every job is acknowledged and prints the worker's counters.
//!
//! `REDIS_URL=redis://127.0.0.1:6379 cargo run --example worker`

use delayq::codec::StringCodec;
use delayq::{DelayedQueue, Job, JobError, RetryPolicy};
use std::time::{Duration, Instant};

const JOBS: [&str; 4] = ["invoice-1", "invoice-2", "flaky-webhook-3", "invoice-4"];

#[tokio::main]
async fn main() -> Result<(), delayq::Error> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = delayq::connect(&url).await?;
    let name = format!("example:worker:{}", std::process::id());
    let queue = DelayedQueue::new(client, name.as_str(), StringCodec).await?;

    for (i, job) in JOBS.iter().enumerate() {
        let delay = Duration::from_millis(200 * i as u64);
        queue.offer(job, delay).await?;
        println!("offered  {job:<16} due in {delay:?}");
    }

    let worker = queue
        .worker(2, |job: Job<String>| async move {
            if job.value().starts_with("flaky") && job.attempt() == 1 {
                println!("failed   {:<16} attempt 1: retried later", job.value());
                // A retryable failure: the value goes back into the delayed queue.
                return Err(JobError::new("webhook timed out"));
            }
            println!("handled  {:<16} attempt {}", job.value(), job.attempt());
            Ok(())
        })
        .retry(RetryPolicy::exponential(
            3,
            Duration::from_millis(300),
            Duration::from_secs(2),
        ))
        .stop_on_signal()
        .spawn()?;

    // Wait for every job's acknowledgement (or give up after 30 s), then stop gracefully.
    let started = Instant::now();
    while worker.stats().acked < JOBS.len() as u64 && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stats = worker.shutdown().await?;
    println!(
        "worker: {} taken, {} acked, {} retried, {} dead",
        stats.taken, stats.acked, stats.retried, stats.dead
    );
    queue.delete().await?;
    Ok(())
}
