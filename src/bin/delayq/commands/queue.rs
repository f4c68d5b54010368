//! The queue commands: offer, reschedule, take, remove, peek, stats, clear.

use super::Ctx;
use crate::show;
use anyhow::bail;
use delayq::time::now_ms;
use std::io::Write;
use std::time::Duration;

pub(crate) async fn offer(
    ctx: &Ctx,
    queue: &str,
    value: &str,
    delay: Duration,
    unique: bool,
) -> anyhow::Result<()> {
    let queue = ctx.queue(queue).await?;
    if unique {
        let replaced = queue.offer_unique(value, delay).await?;
        writeln!(std::io::stdout(), "{replaced}")?;
    } else {
        queue.offer(value, delay).await?;
    }
    Ok(())
}

/// Prints whether an entry was rescheduled, and returns it.
pub(crate) async fn reschedule(
    ctx: &Ctx,
    queue: &str,
    value: &str,
    delay: Duration,
) -> anyhow::Result<bool> {
    let moved = ctx.queue(queue).await?.reschedule(value, delay).await?;
    writeln!(std::io::stdout(), "{moved}")?;
    Ok(moved)
}

pub(crate) async fn take(
    ctx: &Ctx,
    queue: &str,
    count: usize,
    timeout: Option<Duration>,
) -> anyhow::Result<()> {
    let consumer = ctx.queue(queue).await?.consumer().await?;
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
        writeln!(out, "{value}")?;
        out.flush()?;
    }
    consumer.close().await;
    Ok(())
}

/// A value taken off the list that does not decode has left Redis: the error carries its bytes,
/// so the operator can keep it.
fn not_lost(err: delayq::Error, queue: &str) -> anyhow::Error {
    match err {
        delayq::Error::Decode { codec, raw, source } => {
            let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
            anyhow::anyhow!(
                "a value taken from {queue} does not decode with the {codec} codec ({source}); it \
                 has left Redis, so here are its {} bytes in hex: {hex}",
                raw.len()
            )
        }
        other => other.into(),
    }
}

/// Prints whether an entry was removed, and returns it.
pub(crate) async fn remove(ctx: &Ctx, queue: &str, value: &str) -> anyhow::Result<bool> {
    let removed = ctx.queue(queue).await?.remove(value).await?;
    writeln!(std::io::stdout(), "{removed}")?;
    Ok(removed)
}

pub(crate) async fn peek(ctx: &Ctx, queue: &str, limit: usize) -> anyhow::Result<()> {
    if limit == 0 {
        bail!("--limit must be at least 1");
    }
    let now = now_ms();
    let mut out = std::io::stdout().lock();
    for pending in ctx.queue(queue).await?.pending(limit).await? {
        let due = match pending.due_ms {
            Some(due) => format!("{}\t{}", show::time(due), show::from_now(due, now)),
            None => "-\t(not scheduled)".to_owned(),
        };
        match pending.value {
            Ok(value) => writeln!(out, "{due}\t{value}")?,
            Err(err) => writeln!(out, "{due}\t<{err}>")?,
        }
    }
    Ok(())
}

pub(crate) async fn stats(ctx: &Ctx, queue: &str, json: bool) -> anyhow::Result<()> {
    let stats = ctx.queue(queue).await?.stats().await?;
    let now = now_ms();
    let overdue_ms = stats
        .next_due_ms
        .map_or(0, |due| show::overdue_ms(due, now));
    let mut out = std::io::stdout().lock();
    if json {
        let object = serde_json::json!({
            "queue": queue,
            "pending": stats.pending,
            "scheduled": stats.scheduled,
            "ready": stats.ready,
            "quarantined": stats.quarantined,
            "next_due_ms": stats.next_due_ms,
            "overdue_ms": overdue_ms,
        });
        writeln!(out, "{object}")?;
    } else {
        writeln!(out, "queue:       {queue}")?;
        writeln!(out, "pending:     {}", stats.pending)?;
        writeln!(out, "scheduled:   {}", stats.scheduled)?;
        writeln!(out, "ready:       {}", stats.ready)?;
        writeln!(out, "quarantined: {}", stats.quarantined)?;
        match stats.next_due_ms {
            Some(due) => writeln!(
                out,
                "next due:    {} ({})",
                show::time(due),
                show::from_now(due, now)
            )?,
            None => writeln!(out, "next due:    none")?,
        }
    }
    Ok(())
}

pub(crate) async fn clear(ctx: &Ctx, queue: &str) -> anyhow::Result<()> {
    let cleared = ctx.queue(queue).await?.clear().await?;
    writeln!(std::io::stdout(), "{cleared}")?;
    Ok(())
}
