//! Cancel an unpaid order after 15 minutes, unless payment removes the timeout first.
//!
//! Each new order offers its id with a 15-minute delay (unique: offering again moves the
//! deadline instead of adding a second one). Payment cancels the timeout with `remove`; a
//! customer asking for more time pushes it back with `reschedule`. A worker cancels the orders
//! whose timeout fires, with acknowledgements, retries and dead letters, and stops gracefully on
//! Ctrl-C or SIGTERM. Java services on Redisson can offer to and take from the same queue.
//!
//! `REDIS_URL=redis://127.0.0.1:6379 cargo run --example order_timeout` (the demo uses seconds
//! instead of minutes: set `ORDER_TIMEOUT_SECS` to change it; it stops by itself after the demo
//! orders are settled).

use delayq::codec::StringCodec;
use delayq::{DelayedQueue, Job, JobError, RetryPolicy};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The order service's state, for the demo: which orders are paid or cancelled.
#[derive(Default)]
struct Orders {
    paid: HashSet<String>,
    cancelled: HashSet<String>,
}

#[tokio::main]
async fn main() -> Result<(), delayq::Error> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let timeout = Duration::from_secs(
        std::env::var("ORDER_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2),
    );
    let client = delayq::connect(&url).await?;
    let name = format!("order-timeouts:{}", std::process::id());
    // Java: redisson.getDelayedQueue(redisson.getBlockingQueue(name, StringCodec.INSTANCE))
    let queue = DelayedQueue::new(client, name.as_str(), StringCodec).await?;
    let orders = Arc::new(Mutex::new(Orders::default()));

    // Orders are placed: each gets a timeout.
    for id in ["order-1", "order-2", "order-3"] {
        queue.offer_unique(id, timeout).await?;
        println!("placed    {id}: cancelled in {timeout:?} unless paid");
    }
    // order-1 is paid: the timeout is removed before it fires.
    orders.lock().unwrap().paid.insert("order-1".into());
    let removed = queue.remove("order-1").await?;
    println!("paid      order-1: timeout removed = {removed}");
    // order-2's customer asks for more time: the timeout moves, atomically.
    let moved = queue.reschedule("order-2", timeout * 2).await?;
    println!("extended  order-2: rescheduled = {moved}");

    // The worker cancels orders whose timeout fired. Cancelling is idempotent: a value can be
    // delivered again if a worker dies mid-job.
    let stop = CancellationToken::new();
    let worker = {
        let orders = orders.clone();
        queue
            .worker(4, move |job: Job<String>| {
                let orders = orders.clone();
                async move {
                    let id = job.value();
                    let mut orders = orders.lock().unwrap();
                    if orders.paid.contains(id) {
                        // Paid after the timeout fired: nothing to cancel.
                        println!("skipped   {id}: paid in the meantime");
                        return Ok(());
                    }
                    if id.is_empty() {
                        return Err(JobError::permanent("empty order id"));
                    }
                    orders.cancelled.insert(id.clone());
                    println!("cancelled {id} (attempt {})", job.attempt());
                    Ok(())
                }
            })
            .retry(RetryPolicy::exponential(
                5,
                Duration::from_secs(1),
                Duration::from_secs(60),
            ))
            .stop_on(stop.clone())
            .stop_on_signal()
            .spawn()?
    };

    // The demo ends once order-2 and order-3 are cancelled (or on Ctrl-C).
    while orders.lock().unwrap().cancelled.len() < 2 && !stop.is_cancelled() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stats = worker.shutdown().await?;
    println!(
        "worker: {} taken, {} acked, {} retried, {} dead",
        stats.taken, stats.acked, stats.retried, stats.dead
    );
    queue.destroy().await?;
    Ok(())
}
