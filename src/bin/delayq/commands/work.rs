//! `delayq work`: a reliable worker that hands each value to a command.

use super::Ctx;
use crate::cli::WorkArgs;
use delayq::{Job, ReliableConfig, RetryPolicy};

pub(crate) async fn work(ctx: &Ctx, args: WorkArgs) -> anyhow::Result<()> {
    // This queue runs the transfer scheduler too, so retries come back on their own.
    let queue = ctx.queue_builder(&args.queue).build().await?;
    let name = queue.name().to_owned();
    let command = std::sync::Arc::new(args.command);
    eprintln!(
        "delayq: working on {name} with {} at a time (Ctrl-C to stop)",
        args.concurrency
    );
    let stats = queue
        .worker(args.concurrency, move |job: Job<String>| {
            let command = command.clone();
            let name = name.clone();
            async move { run_command(&command, &name, job).await }
        })
        .retry(RetryPolicy::exponential(
            args.max_attempts,
            args.retry_delay,
            args.max_retry_delay,
        ))
        .reliable_config(ReliableConfig::default().with_visibility(args.visibility))
        .shutdown_grace(args.grace)
        .stop_on_signal()
        .run()
        .await?;
    eprintln!(
        "delayq: {} taken, {} acked, {} retried, {} dead, {} given back, {} errors",
        stats.taken, stats.acked, stats.retried, stats.dead, stats.given_back, stats.errors
    );
    queue.destroy().await?;
    Ok(())
}

/// Runs the worker's command for one value: exit 0 acknowledges it.
async fn run_command(command: &[String], queue: &str, job: Job<String>) -> anyhow::Result<()> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| delayq::JobError::permanent("no command"))?;
    let status = tokio::process::Command::new(program)
        .args(args)
        .env("DELAYQ_VALUE", job.value())
        .env("DELAYQ_ATTEMPT", job.attempt().to_string())
        .env("DELAYQ_QUEUE", queue)
        .stdin(std::process::Stdio::null())
        // A job abandoned at shutdown kills its command.
        .kill_on_drop(true)
        .status()
        .await?;
    if status.success() {
        Ok(())
    } else {
        anyhow::bail!("{program} exited with {status}")
    }
}
