//! A sharded queue: one logical queue over four Redisson queues `NAME:{0}` .. `NAME:{3}`. Values
//! are offered (each goes to the shard the JDK's CRC32 of its bytes picks), one is cancelled by
//! its handle and one removed by value; a sharded consumer takes the rest when due. On a Redis
//! Cluster the shards spread over the masters; on a single server the program works the same.
//!
//! `REDIS_URL=redis://127.0.0.1:6379 cargo run --example sharded`

use delayq::codec::StringCodec;
use delayq::ShardedQueue;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), delayq::Error> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = delayq::connect(&url).await?;
    let name = format!("example:sharded:{}", std::process::id());
    // Every shard joins the client's scheduler group: one pub/sub connection for all of them.
    let queue = ShardedQueue::new(client, name.as_str(), 4, StringCodec).await?;

    let values: Vec<String> = (1..=8).map(|i| format!("order-{i}")).collect();
    for value in &values {
        queue.offer(value, Duration::from_millis(300)).await?;
        println!("offered  {value:<10} shard {}", queue.shard_for(value)?);
    }
    let handle = queue
        .offer_with_handle("order-9", Duration::from_secs(60))
        .await?;
    println!("offered  order-9    handle {handle} (its shard first)");
    let cancelled = queue.cancel(&handle).await?;
    println!("cancelled order-9 by its handle: {cancelled}");
    let removed = queue.remove("order-8").await?;
    println!("removed  order-8 by value: {removed}");
    println!("pending over every shard: {}", queue.size().await?);

    let consumer = queue.consumer();
    for _ in 0..values.len() - 1 {
        match consumer.poll(Duration::from_secs(10)).await? {
            Some(value) => println!("took     {value}"),
            None => {
                println!("nothing arrived within 10 s");
                break;
            }
        }
    }
    queue.destroy().await?;
    for shard in queue.shards() {
        shard.delete().await?;
    }
    Ok(())
}
