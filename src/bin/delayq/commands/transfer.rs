//! `delayq transfer`: schedulers for the named queues until a stop signal, or one catch-up.

use super::Ctx;
use anyhow::Context;
use delayq::{Scheduler, SchedulerConfig};

pub(crate) async fn transfer(ctx: &Ctx, queues: &[String], once: bool) -> anyhow::Result<()> {
    if once {
        return transfer_once(ctx, queues).await;
    }
    let mut handles = Vec::with_capacity(queues.len());
    for queue in queues {
        let handle = Scheduler::builder(ctx.client.clone(), queue.as_str())
            .entry_format(ctx.global.entry_format())
            .clock(ctx.global.clock())
            .config(SchedulerConfig::default())
            .spawn()
            .await?;
        handles.push(handle);
    }
    eprintln!(
        "delayq: transferring {} (Ctrl-C to stop)",
        queues.join(", ")
    );
    wait_for_stop_signal().await?;
    for handle in handles {
        let name = handle.name().to_owned();
        let stats = handle.stats();
        handle.shutdown().await;
        eprintln!(
            "delayq: {name}: moved {} in {} transfers, {} quarantined, {} errors",
            stats.moved, stats.transfers, stats.quarantined, stats.errors
        );
    }
    Ok(())
}

/// Moves everything due now in each queue; prints `NAME<TAB>moved<TAB>quarantined`.
async fn transfer_once(ctx: &Ctx, queues: &[String]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for name in queues {
        let queue = ctx.queue(name).await?;
        let (mut moved, mut quarantined) = (0, 0);
        loop {
            let outcome = queue
                .transfer_due(SchedulerConfig::default().batch_size())
                .await?;
            moved += outcome.moved;
            quarantined += outcome.quarantined;
            if outcome.moved + outcome.quarantined == 0 {
                break;
            }
        }
        ctx.print(
            &mut out,
            &format!("{name}\t{moved}\t{quarantined}"),
            || serde_json::json!({ "queue": name, "moved": moved, "quarantined": quarantined }),
        )?;
    }
    Ok(())
}

/// Waits for SIGINT (Ctrl-C) or SIGTERM.
async fn wait_for_stop_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result.context("cannot listen for SIGINT")?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c()
        .await
        .context("cannot listen for Ctrl-C")?;
    Ok(())
}
