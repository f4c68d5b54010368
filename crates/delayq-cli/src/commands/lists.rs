//! delayq's own lists: dead letters (list, replay, purge) and the quarantine (list, purge).

use super::queue::undecodable;
use super::Ctx;
use crate::cli::{DeadAction, QuarantineAction, QueueArg};
use crate::progress::Progress;
use crate::text_codec::base64_of;
use delayq::Durability;
use std::time::Duration;

pub(crate) async fn dead(ctx: &Ctx, action: DeadAction) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match action {
        DeadAction::List { target, limit } => {
            let queue = ctx.one(&target, "dead list").await?;
            for letter in queue.inspect().dead_letters(limit).await? {
                let value = match &letter.value {
                    Ok(value) => value.clone(),
                    Err(err) => format!("<{err}>"),
                };
                let text = format!(
                    "{}\t{}\t{}\t{}",
                    letter.attempts,
                    crate::show::time(letter.dead_at_ms),
                    letter.error.replace(['\n', '\t'], " "),
                    value
                );
                ctx.print(&mut out, &text, || {
                    let mut record = match &letter.value {
                        Ok(value) => ctx.value_record(&target.queue, value),
                        Err(err) => undecodable(&target.queue, &letter.raw, err),
                    };
                    record["attempts"] = letter.attempts.into();
                    record["dead_at_ms"] = letter.dead_at_ms.into();
                    record["last_error"] = letter.error.as_str().into();
                    record
                })?;
            }
        }
        DeadAction::Replay {
            target,
            limit,
            delay,
            durability,
        } => {
            let replayed = replay(ctx, &target, limit, delay, durability.durability()).await?;
            ctx.print_answer(&mut out, &target.queue, "replayed", replayed)?;
        }
        DeadAction::Purge { target } => {
            let queue = ctx.one(&target, "dead purge").await?;
            let purged = queue.admin().purge_dead_letters().await?;
            ctx.print_answer(&mut out, &target.queue, "purged", purged)?;
        }
    }
    Ok(())
}

/// Dead letters replayed a chunk at a time (one short script each), with progress; stops at a
/// chunk of records that do not parse. Each chunk waits for `durability`.
async fn replay(
    ctx: &Ctx,
    target: &QueueArg,
    limit: usize,
    delay: Duration,
    durability: Durability,
) -> anyhow::Result<u64> {
    const CHUNK: usize = 1_000;
    let queue = ctx.one(target, "dead replay").await?;
    let queue = queue.with_durability(durability);
    let dead = queue.inspect().reliable_stats().await?.dead;
    let total = if limit == 0 {
        dead
    } else {
        dead.min(limit as u64)
    };
    let mut progress = Progress::new("replayed", total);
    let mut replayed = 0;
    while replayed < total {
        let chunk = CHUNK.min((total - replayed) as usize);
        let n = queue.admin().replay_dead_letters(chunk, delay).await?;
        if n == 0 {
            break;
        }
        replayed += n;
        progress.update(replayed);
    }
    progress.finish(replayed);
    Ok(replayed)
}

pub(crate) async fn quarantine(ctx: &Ctx, action: QuarantineAction) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match action {
        QuarantineAction::List { target, limit } => {
            let queue = ctx.one(&target, "quarantine list").await?;
            for entry in queue.inspect().quarantined(limit).await? {
                let hex = crate::text_codec::encode_hex(&entry);
                ctx.print(&mut out, &format!("{}\t{hex}", entry.len()), || {
                    serde_json::json!({
                        "queue": target.queue,
                        "len": entry.len(),
                        "entry_base64": base64_of(&entry),
                    })
                })?;
            }
        }
        QuarantineAction::Purge { target } => {
            let queue = ctx.one(&target, "quarantine purge").await?;
            let purged = queue.admin().purge_quarantine().await?;
            ctx.print_answer(&mut out, &target.queue, "purged", purged)?;
        }
    }
    Ok(())
}
