//! The queue commands with `--shards N`: offer, take, remove and stats on a sharded queue.

use super::queue::{not_lost, print_stats};
use super::Ctx;
use std::io::Write;
use std::time::Duration;

pub(crate) async fn offer(
    ctx: &Ctx,
    queue: &str,
    shards: usize,
    values: &[String],
    delay: Duration,
    unique: bool,
) -> anyhow::Result<()> {
    let queue = ctx.sharded(queue, shards).await?;
    if unique {
        let mut out = std::io::stdout().lock();
        for value in values {
            let replaced = queue.offer_unique(value.as_str(), delay).await?;
            ctx.print(&mut out, &replaced.to_string(), || replaced.into())?;
        }
    } else {
        let items: Vec<(String, Duration)> = values.iter().map(|v| (v.clone(), delay)).collect();
        queue.offer_all(&items).await?;
    }
    Ok(())
}

pub(crate) async fn take(
    ctx: &Ctx,
    queue: &str,
    shards: usize,
    count: usize,
    timeout: Option<Duration>,
) -> anyhow::Result<()> {
    let consumer = ctx.sharded(queue, shards).await?.consumer();
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let mut out = std::io::stdout().lock();
    for _ in 0..count {
        let taken = match deadline {
            None => consumer.take().await.map(Some),
            Some(deadline) => {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                consumer.poll(left).await
            }
        };
        let value = match taken {
            Ok(Some(value)) => value,
            Ok(None) => break,
            Err(err) => return Err(not_lost(err, queue)),
        };
        ctx.print_value(&mut out, &value)?;
        out.flush()?;
    }
    Ok(())
}

pub(crate) async fn remove(
    ctx: &Ctx,
    queue: &str,
    shards: usize,
    values: &[String],
) -> anyhow::Result<bool> {
    let queue = ctx.sharded(queue, shards).await?;
    let mut out = std::io::stdout().lock();
    let mut all = true;
    for value in values {
        let removed = queue.remove(value.as_str()).await?;
        all &= removed;
        ctx.print(&mut out, &removed.to_string(), || removed.into())?;
    }
    Ok(all)
}

pub(crate) async fn stats(ctx: &Ctx, queue: &str, shards: usize) -> anyhow::Result<()> {
    let stats = ctx.sharded(queue, shards).await?.stats().await?;
    print_stats(ctx, queue, &stats)
}
