//! `delayq pause` and `delayq resume`: delayq's schedulers stop (or go back to) moving a queue's
//! due values; prints true when the queue's state changed.

use super::target::Target;
use super::Ctx;
use crate::cli::QueueArg;

/// Pauses (`pause` true) or resumes the queue, or every shard of a sharded one.
pub(crate) async fn pause(ctx: &Ctx, target: &QueueArg, pause: bool) -> anyhow::Result<()> {
    let queue = ctx.target(target).await?;
    let changed = match (&queue, pause) {
        (Target::One(q), true) => q.admin().pause().await?,
        (Target::One(q), false) => q.admin().resume().await?,
        (Target::Sharded(q), true) => q.pause().await?,
        (Target::Sharded(q), false) => q.resume().await?,
    };
    ctx.print(
        &mut std::io::stdout(),
        &changed.to_string(),
        || serde_json::json!({ "queue": target.queue, "paused": pause, "changed": changed }),
    )?;
    Ok(())
}
