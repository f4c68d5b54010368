//! The queue commands: offer, reschedule, remove, peek, stats, clear (take has its own file);
//! each on one queue or a sharded one (`--shards N`, through [`Target`]).

use super::target::{each, Target};
use super::Ctx;
use crate::cli::QueueArg;
use crate::exit::Usage;
use crate::show;
use delayq::time::now_ms;
use delayq::QueueStats;
use std::io::Write;
use std::time::Duration;

pub(crate) async fn offer(
    ctx: &Ctx,
    target: &QueueArg,
    values: &[String],
    delay: Duration,
    unique: bool,
) -> anyhow::Result<()> {
    let queue = ctx.target(target).await?;
    if unique {
        let mut out = std::io::stdout().lock();
        for value in values {
            let replaced = each!(&queue, q => q.offer_unique(value.as_str(), delay).await)?;
            ctx.print(&mut out, &replaced.to_string(), || replaced.into())?;
        }
    } else if let [value] = values {
        each!(&queue, q => q.offer(value.as_str(), delay).await)?;
    } else {
        let items: Vec<(String, Duration)> = values.iter().map(|v| (v.clone(), delay)).collect();
        each!(&queue, q => q.offer_all(&items).await)?;
    }
    Ok(())
}

/// Prints whether an entry was rescheduled, and returns it.
pub(crate) async fn reschedule(
    ctx: &Ctx,
    target: &QueueArg,
    values: &[String],
    delay: Duration,
) -> anyhow::Result<bool> {
    let queue = ctx.target(target).await?;
    let mut out = std::io::stdout().lock();
    let mut all = true;
    for value in values {
        let moved = each!(&queue, q => q.reschedule(value.as_str(), delay).await)?;
        all &= moved;
        ctx.print(&mut out, &moved.to_string(), || moved.into())?;
    }
    Ok(all)
}

/// Prints whether each value was removed; true when every one was.
pub(crate) async fn remove(
    ctx: &Ctx,
    target: &QueueArg,
    values: &[String],
) -> anyhow::Result<bool> {
    let queue = ctx.target(target).await?;
    let mut out = std::io::stdout().lock();
    let mut all = true;
    for value in values {
        let removed = each!(&queue, q => q.remove(value.as_str()).await)?;
        all &= removed;
        ctx.print(&mut out, &removed.to_string(), || removed.into())?;
    }
    Ok(all)
}

pub(crate) async fn peek(ctx: &Ctx, target: &QueueArg, limit: usize) -> anyhow::Result<()> {
    if limit == 0 {
        return Err(Usage("--limit must be at least 1".into()).into());
    }
    let queue = ctx.one(target, "peek").await?;
    let now = now_ms();
    let mut out = std::io::stdout().lock();
    for pending in queue.pending(limit).await? {
        let due = match pending.due_ms {
            Some(due) => format!("{}\t{}", show::time(due), show::from_now(due, now)),
            None => "-\t(not scheduled)".to_owned(),
        };
        let (text, value) = match &pending.value {
            Ok(value) => (format!("{due}\t{value}"), ctx.codec.json_of(value)),
            Err(err) => (format!("{due}\t<{err}>"), serde_json::Value::Null),
        };
        ctx.print(&mut out, &text, || {
            let mut record = serde_json::json!({ "due_ms": pending.due_ms, "value": value });
            if let Err(err) = &pending.value {
                record["error"] = err.to_string().into();
            }
            record
        })?;
    }
    Ok(())
}

/// Prints a queue's counters (of all its shards, for a sharded one), whether it is paused, and
/// while a sharded queue's number of shards changes, whether the old layout has drained (which
/// records the new count once it has).
pub(crate) async fn stats(ctx: &Ctx, target: &QueueArg) -> anyhow::Result<()> {
    let queue = ctx.target(target).await?;
    let stats = each!(&queue, q => q.stats().await)?;
    let paused = each!(&queue, q => q.is_paused().await)?;
    let layout = match (&queue, target.previous_shards) {
        (Target::Sharded(q), Some(previous)) => Some(Layout {
            previous,
            misplaced: q.misplaced().await?,
            drained: q.drained().await?,
        }),
        _ => None,
    };
    print_stats(ctx, &target.queue, &stats, paused, layout)
}

/// How far a sharded queue's change of its number of shards has come.
struct Layout {
    /// The number of shards before.
    previous: usize,
    /// Entries pending outside their value's shard of the new layout.
    misplaced: u64,
    /// Whether the old layout has drained (and the new count is recorded).
    drained: bool,
}

impl Layout {
    fn describe(&self) -> String {
        match self.drained {
            true => format!(
                "drained from {} shards; the new count is recorded (drop --previous-shards)",
                self.previous
            ),
            false => format!(
                "changing from {} shards, not drained: {} entries pending in their old shard, \
                 or values ready on a shard beyond the new count",
                self.previous, self.misplaced
            ),
        }
    }
}

fn print_stats(
    ctx: &Ctx,
    queue: &str,
    stats: &QueueStats,
    paused: bool,
    layout: Option<Layout>,
) -> anyhow::Result<()> {
    let json = ctx.global.json;
    let now = now_ms();
    let overdue_ms = stats
        .next_due_ms
        .map_or(0, |due| show::overdue_ms(due, now));
    let mut out = std::io::stdout().lock();
    if json {
        let mut object = serde_json::json!({
            "queue": queue,
            "pending": stats.pending,
            "scheduled": stats.scheduled,
            "ready": stats.ready,
            "quarantined": stats.quarantined,
            "next_due_ms": stats.next_due_ms,
            "overdue_ms": overdue_ms,
            "paused": paused,
        });
        if let Some(layout) = &layout {
            object["previous_shards"] = layout.previous.into();
            object["misplaced"] = layout.misplaced.into();
            object["drained"] = layout.drained.into();
        }
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
        let paused = match paused {
            true => "yes (delayq's schedulers move nothing until `delayq resume`)",
            false => "no",
        };
        writeln!(out, "paused:      {paused}")?;
        if let Some(layout) = &layout {
            writeln!(out, "layout:      {}", layout.describe())?;
        }
    }
    Ok(())
}

pub(crate) async fn clear(ctx: &Ctx, target: &QueueArg) -> anyhow::Result<()> {
    let queue = ctx.target(target).await?;
    let cleared = each!(&queue, q => q.clear().await)?;
    ctx.print(&mut std::io::stdout(), &cleared.to_string(), || {
        cleared.into()
    })?;
    Ok(())
}
