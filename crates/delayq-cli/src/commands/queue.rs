//! The queue commands: offer, reschedule, remove, cancel, peek, stats, clear (take has its own
//! file); each on one queue or a sharded one (`--shards N`, through [`Target`]).

use super::target::{each, Target};
use super::Ctx;
use crate::cli::QueueArg;
use crate::exit::Usage;
use crate::limit_view;
use crate::show;
use delayq::dedup::Dedup;
use delayq::inspect::QueueStats;
use delayq::time::now_ms;
use delayq::{Durability, OfferHandle, ShardedHandle};
use std::io::Write;
use std::time::Duration;

/// Offers each value; prints whether an equal one was replaced (`unique`), or each new entry's
/// handle for `delayq cancel` (`handle`); each write waits for `durability`.
pub(crate) async fn offer(
    ctx: &Ctx,
    target: &QueueArg,
    values: &[String],
    delay: Duration,
    how: OfferHow,
    durability: Durability,
) -> anyhow::Result<()> {
    let queue = durable_target(ctx, target, durability).await?;
    let mut out = std::io::stdout().lock();
    let name = target.queue.as_str();
    match how {
        OfferHow::Unique => {
            for value in values {
                let replaced = each!(&queue, q => q.offer_unique(value.as_str(), delay).await)?;
                ctx.print_answer(&mut out, name, "replaced", replaced)?;
            }
        }
        OfferHow::WithHandle => {
            for value in values {
                let handle = match &queue {
                    Target::One(q) => q
                        .offer_with_handle(value.as_str(), delay)
                        .await?
                        .to_string(),
                    Target::Sharded(q) => q
                        .offer_with_handle(value.as_str(), delay)
                        .await?
                        .to_string(),
                };
                ctx.print_answer(&mut out, name, "handle", handle)?;
            }
        }
        OfferHow::Plain => match values {
            [value] => each!(&queue, q => q.offer(value.as_str(), delay).await)?,
            _ => {
                let items: Vec<(String, Duration)> =
                    values.iter().map(|v| (v.clone(), delay)).collect();
                each!(&queue, q => q.offer_all(&items).await)?
            }
        },
    }
    Ok(())
}

/// The queue `target` names, its writes waiting for `durability` (for a sharded queue, each
/// write confirmed on its shard's master).
async fn durable_target(
    ctx: &Ctx,
    target: &QueueArg,
    durability: Durability,
) -> anyhow::Result<Target> {
    Ok(match ctx.target(target).await? {
        Target::One(queue) => Target::One(queue.with_durability(durability)),
        Target::Sharded(queue) => Target::Sharded(queue.with_durability(durability)),
    })
}

/// Offers each value deduplicated by `dedup`'s key; prints what happened and the key's pending
/// entry's handle: `offered HANDLE`, `kept HANDLE` (dropped: that entry stays) or `replaced
/// HANDLE`, and with --json `{"queue", "outcome", "handle", "due_ms"}`. A dropped offer is no
/// error (exit 0). Each offer waits for `durability`.
pub(crate) async fn offer_dedup(
    ctx: &Ctx,
    target: &QueueArg,
    values: &[String],
    delay: Duration,
    dedup: &Dedup,
    durability: Durability,
) -> anyhow::Result<()> {
    let queue = durable_target(ctx, target, durability).await?;
    let mut out = std::io::stdout().lock();
    for value in values {
        let (outcome, handle) = match &queue {
            Target::One(q) => {
                let outcome = q.dedup(dedup.clone()).offer(value.as_str(), delay).await?;
                (outcome, outcome.handle().to_string())
            }
            Target::Sharded(q) => {
                let (shard, outcome) = q.dedup(dedup.clone()).offer(value.as_str(), delay).await?;
                let handle = ShardedHandle::new(shard, outcome.handle());
                (outcome, handle.to_string())
            }
        };
        let text = format!("{} {handle}", outcome.as_str());
        ctx.print(&mut out, &text, || {
            serde_json::json!({
                "queue": target.queue,
                "outcome": outcome.as_str(),
                "handle": handle,
                "due_ms": outcome.due_ms(),
            })
        })?;
    }
    Ok(())
}

/// What `offer` prints besides offering.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OfferHow {
    /// Nothing.
    Plain,
    /// Whether an equal pending value was replaced (`--unique`).
    Unique,
    /// The new entry's handle (`--handle`).
    WithHandle,
}

impl OfferHow {
    /// What `--unique` and `--handle` ask for (`--unique` wins; clap refuses both).
    pub(crate) fn of(unique: bool, handle: bool) -> OfferHow {
        match (unique, handle) {
            (true, _) => OfferHow::Unique,
            (_, true) => OfferHow::WithHandle,
            _ => OfferHow::Plain,
        }
    }
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
        ctx.print_answer(&mut out, &target.queue, "rescheduled", moved)?;
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
        ctx.print_answer(&mut out, &target.queue, "removed", removed)?;
    }
    Ok(all)
}

/// Cancels the pending entry an offer returned `handle` for (`SHARD:HANDLE` with `--shards`);
/// prints whether it was pending, and returns it.
pub(crate) async fn cancel(ctx: &Ctx, target: &QueueArg, handle: &str) -> anyhow::Result<bool> {
    let queue = ctx.target(target).await?;
    let cancelled = match &queue {
        Target::One(q) => {
            let handle: OfferHandle = handle.parse().map_err(|err| bad_handle(handle, err))?;
            q.cancel(&handle).await?
        }
        Target::Sharded(q) => {
            let handle: ShardedHandle = handle.parse().map_err(|err| bad_handle(handle, err))?;
            q.cancel(&handle).await?
        }
    };
    let mut out = std::io::stdout().lock();
    ctx.print_answer(&mut out, &target.queue, "cancelled", cancelled)?;
    Ok(cancelled)
}

/// A handle that does not parse: a usage error that says what one looks like.
fn bad_handle(handle: &str, err: impl std::fmt::Display) -> Usage {
    Usage(format!(
        "{handle:?} is not a handle: {err} (as `delayq offer --handle` prints it)"
    ))
}

pub(crate) async fn peek(ctx: &Ctx, target: &QueueArg, limit: usize) -> anyhow::Result<()> {
    if limit == 0 {
        return Err(Usage("--limit must be at least 1".into()).into());
    }
    let queue = ctx.one(target, "peek").await?;
    let now = now_ms();
    let mut out = std::io::stdout().lock();
    for pending in queue.inspect().pending(limit).await? {
        let due = match pending.due_ms {
            Some(due) => format!("{}\t{}", show::time(due), show::from_now(due, now)),
            None => "-\t(not scheduled)".to_owned(),
        };
        let text = match &pending.value {
            Ok(value) => format!("{due}\t{value}"),
            Err(err) => format!("{due}\t<{err}>"),
        };
        ctx.print(&mut out, &text, || {
            let mut record = match &pending.value {
                Ok(value) => ctx.value_record(&target.queue, value),
                Err(err) => undecodable(&target.queue, &pending.raw, err),
            };
            record["due_ms"] = pending.due_ms.into();
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
    let (stats, paused) = match &queue {
        Target::One(q) => (q.inspect().stats().await?, q.inspect().is_paused().await?),
        Target::Sharded(q) => (q.stats().await?, q.is_paused().await?),
    };
    let layout = match (&queue, target.previous_shards) {
        (Target::Sharded(q), Some(previous)) => Some(Layout {
            previous,
            misplaced: q.misplaced().await?,
            drained: q.drained().await?,
        }),
        _ => None,
    };
    // A sharded queue's: its limits as a whole.
    let limits = each!(&queue, q => Some((q.limits().get().await?, q.limits().usage().await?)));
    print_stats(ctx, &target.queue, &stats, paused, layout, limits)
}

/// A queue's stored limits, if any, and what is in use of them.
type StoredLimits = (Option<delayq::limit::Limits>, delayq::limit::LimitUsage);

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
    limits: Option<StoredLimits>,
) -> anyhow::Result<()> {
    let json = ctx.global.json;
    let now = now_ms();
    let overdue_ms = stats
        .next_due_ms
        .map_or(0, |due| show::overdue_ms(due, now));
    let mut out = std::io::stdout().lock();
    if json {
        // The counters by the library's own names (QueueStats serializes with them).
        let mut fields = serde_json::Map::from_iter([("queue".to_owned(), queue.into())]);
        if let serde_json::Value::Object(counts) = serde_json::to_value(stats)? {
            fields.extend(counts);
        }
        let mut object = serde_json::Value::Object(fields);
        object["overdue_ms"] = overdue_ms.into();
        object["paused"] = paused.into();
        if let Some(layout) = &layout {
            object["previous_shards"] = layout.previous.into();
            object["misplaced"] = layout.misplaced.into();
            object["drained"] = layout.drained.into();
        }
        if let Some((limits, usage)) = &limits {
            object["limits"] = limits.as_ref().map(limit_view::limits_json).into();
            object["limit_usage"] = limit_view::usage_json(usage);
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
            true => {
                "yes (delayq's schedulers and workers move and take nothing until `delayq resume`)"
            }
            false => "no",
        };
        writeln!(out, "paused:      {paused}")?;
        if let Some(layout) = &layout {
            writeln!(out, "layout:      {}", layout.describe())?;
        }
        if let Some((limits, usage)) = &limits {
            let text = limits
                .as_ref()
                .map_or("none".to_owned(), limit_view::summary);
            writeln!(out, "limits:      {text}")?;
            if limits.is_some() {
                writeln!(out, "limit use:   {}", limit_view::usage_line(usage))?;
            }
        }
    }
    Ok(())
}

/// The JSON record of a value of `queue` that does not decode: its raw bytes and why.
pub(crate) fn undecodable(
    queue: &str,
    raw: &[u8],
    err: &dyn std::fmt::Display,
) -> serde_json::Value {
    serde_json::json!({
        "queue": queue,
        "value_base64": crate::text_codec::base64_of(raw),
        "value_error": err.to_string(),
    })
}

pub(crate) async fn clear(ctx: &Ctx, target: &QueueArg) -> anyhow::Result<()> {
    let queue = ctx.target(target).await?;
    let cleared = each!(&queue, q => q.clear().await)?;
    ctx.print_answer(&mut std::io::stdout(), &target.queue, "cleared", cleared)?;
    Ok(())
}
