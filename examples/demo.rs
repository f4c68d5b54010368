//! The main demo: offer values with delays, let the transfer scheduler move them when due, and
//! take them from the target list, printing how late each one arrived.
//!
//! Run with `scripts/demo.sh` (starts a throwaway Redis), or `REDIS_URL=... cargo run --example demo`.

use delayq::codec::StringCodec;
use delayq::DelayedQueue;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[tokio::main]
async fn main() -> Result<(), delayq::Error> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = delayq::connect(&url).await?;
    let name = format!("demo:orders:{}", std::process::id());

    // The same keys a Java `redisson.getDelayedQueue(redisson.getBlockingQueue(name))` uses;
    // building the queue starts its transfer scheduler, as in Java.
    let queue = DelayedQueue::new(client.clone(), name.as_str(), StringCodec).await?;
    println!("queue {name}");
    println!("  timeout zset: {}", queue.keys().timeout());
    println!("  order list:   {}", queue.keys().order());
    println!("  channel:      {}", queue.keys().channel());

    let started = Instant::now();
    let offers = [
        ("cancel unpaid order 17", 1500),
        ("send reminder to ana", 300),
        ("retry webhook 9", 800),
        ("cancel unpaid order 18", 1200),
        ("expire session 4", 0),
    ];
    let mut due_at = std::collections::HashMap::new();
    for (value, delay_ms) in offers {
        due_at.insert(value.to_string(), now_ms() + delay_ms);
        queue
            .offer(value, Duration::from_millis(delay_ms as u64))
            .await?;
        println!("offered  {value:<24} due in {delay_ms:>5} ms");
    }

    // Cancel one before it is due: remove finds it by value, as Java's remove(o) does.
    let cancelled = queue.remove("cancel unpaid order 18").await?;
    println!("removed  cancel unpaid order 18 before it was due: {cancelled}");
    let stats = queue.inspect().stats().await?;
    println!(
        "pending {} (next due in {} ms)",
        stats.pending,
        stats.next_due_ms.map_or(0, |d| d - now_ms())
    );

    let consumer = queue.consumer().await?;
    for _ in 0..offers.len() - 1 {
        let value = consumer.take().await?;
        let late = now_ms() - due_at[&value];
        println!(
            "took     {value:<24} at {:>5} ms, {late} ms after its due time",
            started.elapsed().as_millis()
        );
    }
    assert!(queue.is_empty().await?);
    consumer.close().await;
    queue.destroy().await?;
    println!("done: every value arrived once, none early");
    Ok(())
}
