//! `delayq pause` and `delayq resume`: delayq's schedulers stop (or go back to) moving a queue's
//! due values; prints true when the queue's state changed.

use super::Ctx;

/// Pauses (`pause` true) or resumes the queue, or every shard of a sharded one.
pub(crate) async fn pause(
    ctx: &Ctx,
    queue: &str,
    shards: Option<usize>,
    pause: bool,
) -> anyhow::Result<()> {
    let changed = match (shards, pause) {
        (Some(n), true) => ctx.sharded(queue, n).await?.pause().await?,
        (Some(n), false) => ctx.sharded(queue, n).await?.resume().await?,
        (None, true) => ctx.queue(queue).await?.pause().await?,
        (None, false) => ctx.queue(queue).await?.resume().await?,
    };
    ctx.print(
        &mut std::io::stdout(),
        &changed.to_string(),
        || serde_json::json!({ "queue": queue, "paused": pause, "changed": changed }),
    )?;
    Ok(())
}
