//! `delayq limit set|get|clear`: a queue's flow-control limits, stored in Redis and obeyed by
//! every worker of the queue in every process.

use super::target::{each, Target};
use super::Ctx;
use crate::exit::Usage;
use crate::limit_args::{LimitAction, LimitSetArgs};
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
            let had = each!(&target, q => q.clear_limits().await)?;
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
        false => each!(&queue, q => q.limits().await).context(
            "reading the stored limits to change them (`--replace` stores only the flags given)",
        )?,
    };
    let limits = merged(stored.unwrap_or_default(), args);
    if let Some(caution) = keyless_caution(&limits) {
        crate::logging::status_line(format_args!("{caution}"));
    }
    match is_empty(&limits) {
        true => {
            each!(&queue, q => q.clear_limits().await)?;
        }
        false => each!(&queue, q => q.set_limits(&limits).await)?,
    }
    print_limits(ctx, &args.queue, Some(&limits), None)
}

/// `stored` with the limits `args` gives replaced (`off`: removed).
fn merged(mut limits: Limits, args: &LimitSetArgs) -> Limits {
    if let Some(setting) = args.concurrency {
        limits.concurrency = setting.value();
    }
    if let Some(setting) = args.rate {
        limits.rate = setting.value();
    }
    if let Some(pointer) = &args.key_pointer {
        limits.key = Some(KeyRule::JsonPointer(pointer.clone()));
    }
    if let Some(regex) = &args.key_regex {
        limits.key = Some(KeyRule::Regex(regex.clone()));
    }
    if args.no_key {
        limits.key = None;
        limits.key_concurrency = None;
        limits.key_rate = None;
    }
    if let Some(setting) = args.key_concurrency {
        limits.key_concurrency = setting.value();
    }
    if let Some(setting) = args.key_rate {
        limits.key_rate = setting.value();
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
    let limits = each!(&queue, q => q.limits().await)?;
    let usage = each!(&queue, q => q.limit_usage().await)?;
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
