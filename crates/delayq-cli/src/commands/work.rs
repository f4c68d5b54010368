//! `delayq work`: a reliable worker that hands each value to a command.

use super::Ctx;
use crate::cli::WorkArgs;
use delayq::{Job, ReliableConfig, RetryPolicy};

pub(crate) async fn work(ctx: &Ctx, args: WorkArgs) -> anyhow::Result<()> {
    // These queues run the transfer scheduler too (one group for all), so retries come back
    // on their own.
    // Bound before anything starts, so that a refused or busy address stops the command.
    let bound = match args.listen {
        Some(listen) => Some(crate::serve::bind(listen, &args.http).await?),
        None => None,
    };
    if bound.is_some() {
        // Before any queue or worker starts: each makes its metric handles once.
        crate::serve::recorder()?;
    }
    let mut queues = Vec::with_capacity(args.queues.len());
    match (args.shards, args.queues.as_slice()) {
        (Some(n), [name]) => {
            let sharded =
                delayq::ShardedQueue::builder(ctx.client.clone(), name, n, ctx.codec.clone())
                    .options(ctx.global.options())
                    .build()
                    .await?;
            queues.extend(sharded.shards().iter().cloned());
        }
        (Some(_), _) => anyhow::bail!("--shards takes one sharded QUEUE"),
        (None, names) => {
            for name in names {
                queues.push(ctx.queue_builder(name).build().await?);
            }
        }
    }
    let server = match bound {
        Some(bound) => Some(observe(ctx, bound, &args.http, &queues)?),
        None => None,
    };
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
    // The server holds the scheduler group: stop it first, so that destroy stops the group.
    if let Some(server) = server {
        server.shutdown().await;
    }
    for queue in queues {
        queue.destroy().await?;
    }
    Ok(())
}

/// Serves /metrics and /healthz for the worker's queues and their scheduler group.
fn observe(
    ctx: &Ctx,
    bound: crate::serve::Bound,
    http: &crate::serve::ListenArgs,
    queues: &[delayq::DelayedQueue<crate::text_codec::TextCodec>],
) -> anyhow::Result<crate::serve::Server> {
    let group = queues.first().and_then(|q| q.scheduler_group());
    let observed = crate::serve::Observed::new(&ctx.client, group, http)?;
    let names: Vec<String> = queues.iter().map(|q| q.name().to_owned()).collect();
    let gauges = crate::serve::Gauges {
        ctx_client: ctx.client.clone(),
        names: Box::new(move || names.clone()),
        codec: ctx.codec.clone(),
        options: ctx.global.options(),
    };
    let pages = axum::Router::new();
    Ok(crate::serve::Server::start(
        bound,
        observed,
        pages,
        Some(gauges),
    ))
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
