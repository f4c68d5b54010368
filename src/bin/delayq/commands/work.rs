//! `delayq work`: a reliable worker that hands each value to a command.

use super::Ctx;
use crate::cli::WorkArgs;
use delayq::{Job, ReliableConfig, RetryPolicy};

pub(crate) async fn work(ctx: &Ctx, args: WorkArgs) -> anyhow::Result<()> {
    // These queues run the transfer scheduler too (one group for all), so retries come back
    // on their own.
    let mut queues = Vec::with_capacity(args.queues.len());
    for name in &args.queues {
        queues.push(ctx.queue_builder(name).build().await?);
    }
    let command = std::sync::Arc::new(args.command);
    eprintln!(
        "delayq: working on {} with {} at a time (Ctrl-C to stop)",
        args.queues.join(", "),
        args.concurrency
    );
    let mut worker = queues[0].worker(args.concurrency, move |job: Job<String>| {
        let command = command.clone();
        async move { run_command(&command, job).await }
    });
    for queue in &queues[1..] {
        worker = worker.with_queue(queue);
    }
    let stats = worker
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
    for queue in queues {
        queue.destroy().await?;
    }
    Ok(())
}

/// Runs the worker's command for one value: exit 0 acknowledges it.
async fn run_command(command: &[String], job: Job<String>) -> anyhow::Result<()> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| delayq::JobError::permanent("no command"))?;
    let status = tokio::process::Command::new(program)
        .args(args)
        .env("DELAYQ_VALUE", job.value())
        .env("DELAYQ_ATTEMPT", job.attempt().to_string())
        .env("DELAYQ_QUEUE", job.queue())
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
