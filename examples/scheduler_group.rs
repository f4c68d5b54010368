//! One scheduler group for many queues: three queues whose producers run no scheduler get
//! values; one group, which finds the queues by a glob as `delayq transfer --all --match` does,
//! moves them all when due over one pub/sub connection. The program takes every value and exits.
//!
//! `REDIS_URL=redis://127.0.0.1:6379 cargo run --example scheduler_group`

use delayq::codec::StringCodec;
use delayq::{DelayedQueue, Discovery, GroupConfig, SchedulerGroup};
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), delayq::Error> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = delayq::connect(&url).await?;
    let prefix = format!("example:tenant-{}:", std::process::id());

    // Producers only: like Java services whose RDelayedQueue objects went away, nothing
    // transfers these queues yet.
    let mut queues = Vec::new();
    for tenant in ["a", "b", "c"] {
        let queue = DelayedQueue::builder(client.clone(), format!("{prefix}{tenant}"), StringCodec)
            .transfer(false)
            .build()
            .await?;
        for i in 0..2 {
            let delay = Duration::from_millis(300 + 200 * i);
            queue.offer(&format!("job-{tenant}{i}"), delay).await?;
        }
        queues.push(queue);
    }

    // One group for every queue whose name matches: one pub/sub connection, one timer.
    let group = SchedulerGroup::spawn(client.clone(), GroupConfig::default()).await?;
    group
        .discover(Discovery::all().matching(format!("{prefix}*")))
        .await?;
    println!("the group transfers {} queues", group.names().len());

    for queue in &queues {
        let consumer = queue.consumer().await?;
        for _ in 0..2 {
            match consumer.poll(Duration::from_secs(10)).await? {
                Some(value) => println!("{:<28} {value}", queue.name()),
                None => println!("{:<28} nothing arrived within 10 s", queue.name()),
            }
        }
        consumer.close().await;
    }

    let stats = group.stats();
    println!("moved {} values", stats.moved);
    group.shutdown().await;
    for queue in &queues {
        queue.delete().await?;
    }
    Ok(())
}
