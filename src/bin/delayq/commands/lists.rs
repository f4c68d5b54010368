//! delayq's own lists: dead letters (list, replay, purge) and the quarantine (list, purge).

use super::Ctx;
use crate::cli::{DeadAction, QuarantineAction};
use std::io::Write;

pub(crate) async fn dead(ctx: &Ctx, action: DeadAction) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match action {
        DeadAction::List { queue, limit } => {
            for letter in ctx.queue(&queue).await?.dead_letters(limit).await? {
                let value = match &letter.value {
                    Ok(value) => value.clone(),
                    Err(err) => format!("<{err}>"),
                };
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}",
                    letter.attempts,
                    letter.dead_at_ms,
                    letter.error.replace(['\n', '\t'], " "),
                    value
                )?;
            }
        }
        DeadAction::Replay {
            queue,
            limit,
            delay,
        } => {
            let queue = ctx.queue(&queue).await?;
            let replayed = queue.replay_dead_letters(limit, delay).await?;
            writeln!(out, "{replayed}")?;
        }
        DeadAction::Purge { queue } => {
            let purged = ctx.queue(&queue).await?.purge_dead_letters().await?;
            writeln!(out, "{purged}")?;
        }
    }
    Ok(())
}

pub(crate) async fn quarantine(ctx: &Ctx, action: QuarantineAction) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match action {
        QuarantineAction::List { queue, limit } => {
            for entry in ctx.queue(&queue).await?.quarantined(limit).await? {
                let hex: String = entry.iter().map(|b| format!("{b:02x}")).collect();
                writeln!(out, "{}\t{hex}", entry.len())?;
            }
        }
        QuarantineAction::Purge { queue } => {
            let purged = ctx.queue(&queue).await?.purge_quarantine().await?;
            writeln!(out, "{purged}")?;
        }
    }
    Ok(())
}
