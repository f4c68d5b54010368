//! `delayq limit set|get|clear`: a queue's flow-control limits, stored in Redis and obeyed by
//! every worker of the queue in every process.

use super::target::{each, Target};
use super::Ctx;
use crate::exit::Usage;
use crate::limit_args::{LimitAction, LimitSetArgs, Setting};
use crate::limit_view::{self, is_empty, keyless_caution, limits_json, summary};
use crate::shard_args::ShardArgs;
use anyhow::Context;
use delayq::limit::{KeyRule, LimitUsage, Limits};
use std::io::Write;

/// Runs the action; false when `clear --exit-status` found no limits.
pub(crate) async fn limit(ctx: &Ctx, action: LimitAction) -> anyhow::Result<bool> {
    match action {
        LimitAction::Set(args) => set(ctx, &args).await.map(|()| true),
        LimitAction::Get { queue, sharding } => get(ctx, &queue, &sharding).await.map(|()| true),
        LimitAction::Clear {
            queue,
            exit_status,
            sharding,
        } => {
            let target = limited(ctx, &queue, &sharding).await?;
            let had = each!(&target, q => q.limits().clear().await)?;
            ctx.print_answer(&mut std::io::stdout(), &queue, "cleared", had)?;
            Ok(had || !exit_status)
        }
    }
}

/// Stores the stored limits changed by the flags (or exactly the flags, `--replace`); prints
/// what is stored then.
async fn set(ctx: &Ctx, args: &LimitSetArgs) -> anyhow::Result<()> {
    if !args.changes_anything() {
        return Err(Usage(
            "give a limit to set (--concurrency, --rate, --key-pointer or --key-regex, \
             --key-concurrency, --key-rate, --no-key); `delayq limit clear` removes them all"
                .into(),
        )
        .into());
    }
    let queue = limited(ctx, &args.queue, &args.sharding).await?;
    let stored = match args.replace {
        true => None,
        false => each!(&queue, q => q.limits().get().await).context(
            "reading the stored limits to change them (`--replace` stores only the flags given)",
        )?,
    };
    let limits = merged(stored.unwrap_or_default(), args);
    if let Some(caution) = keyless_caution(&limits) {
        crate::logging::status_line(format_args!("{caution}"));
    }
    match is_empty(&limits) {
        true => {
            each!(&queue, q => q.limits().clear().await)?;
        }
        false => each!(&queue, q => q.limits().set(&limits).await)?,
    }
    print_limits(ctx, &args.queue, Some(&limits), None)
}

/// `stored` with the limits `args` gives replaced (`off`: removed).
fn merged(stored: Limits, args: &LimitSetArgs) -> Limits {
    fn pick<T>(arg: Option<Setting<T>>, stored: Option<T>) -> Option<T> {
        arg.map_or(stored, Setting::value)
    }
    let mut key = stored.key().cloned();
    let (mut key_concurrency, mut key_rate) = (stored.key_concurrency(), stored.key_rate());
    if let Some(pointer) = &args.key_pointer {
        key = Some(KeyRule::JsonPointer(pointer.clone()));
    }
    if let Some(regex) = &args.key_regex {
        key = Some(KeyRule::Regex(regex.clone()));
    }
    if args.no_key {
        (key, key_concurrency, key_rate) = (None, None, None);
    }
    let mut limits = Limits::default();
    if let Some(n) = pick(args.concurrency, stored.concurrency()) {
        limits = limits.with_concurrency(n);
    }
    if let Some(rate) = pick(args.rate, stored.rate()) {
        limits = limits.with_rate(rate);
    }
    if let Some(rule) = key {
        limits = limits.with_key(rule);
    }
    if let Some(n) = pick(args.key_concurrency, key_concurrency) {
        limits = limits.with_key_concurrency(n);
    }
    if let Some(rate) = pick(args.key_rate, key_rate) {
        limits = limits.with_key_rate(rate);
    }
    limits
}

/// The queue whose limits a command is about: one queue, or a sharded one as a whole.
async fn limited(ctx: &Ctx, name: &str, sharding: &ShardArgs) -> delayq::Result<Target> {
    Ok(match sharding.shards {
        None => Target::One(ctx.queue(name).await?),
        Some(n) => Target::Sharded(ctx.sharded(name, n, sharding.previous_shards).await?),
    })
}

/// Prints the queue's limits and what is in use of them.
async fn get(ctx: &Ctx, name: &str, sharding: &ShardArgs) -> anyhow::Result<()> {
    let queue = limited(ctx, name, sharding).await?;
    let limits = each!(&queue, q => q.limits().get().await)?;
    let usage = each!(&queue, q => q.limits().usage().await)?;
    print_limits(ctx, name, limits.as_ref(), Some(&usage))
}

/// One record: `{"queue", "limits": {...} or null, "usage": {...}}` with --json, else a line
/// per limit (`none` without any) and one of their use.
fn print_limits(
    ctx: &Ctx,
    name: &str,
    limits: Option<&Limits>,
    usage: Option<&LimitUsage>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if ctx.global.json {
        let mut record = serde_json::json!({ "queue": name, "limits": limits.map(limits_json) });
        if let Some(usage) = usage {
            record["usage"] = limit_view::usage_json(usage);
        }
        writeln!(out, "{record}")?;
        return Ok(());
    }
    let text = match limits {
        Some(limits) => summary(limits),
        None => "none".to_owned(),
    };
    writeln!(out, "limits: {text}")?;
    if let Some(usage) = usage {
        writeln!(out, "in use: {}", limit_view::usage_line(usage))?;
    }
    Ok(())
}
