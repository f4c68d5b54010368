//! `delayq work`: a reliable worker that hands each value to a command.
//!
//! - `command.rs`: running the command for one value (stdin, environment, process group,
//!   `--timeout`); `stderr.rs`: the end of a command's stderr, kept for its failure;
//!   `watchdog.rs`: the process that ends the commands' groups should the worker die. (The
//!   library's worker says when a queue it serves is paused, and takes nothing from it
//!   meanwhile.)

mod command;
mod stderr;
mod watchdog;

use super::Ctx;
use crate::cli::WorkArgs;
use command::CommandRunner;
use delayq::worker::Priority;
use delayq::{GroupConfig, Job, ReliableConfig, RetryPolicy};
use std::sync::Arc;
use std::time::Duration;

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
        crate::serve::recorder(args.http.metrics)?;
    }
    let (queues, sharded) = open_queues(ctx, &args).await?;
    let server = match bound {
        Some(bound) => Some(observe(ctx, bound, &args.http, &queues)?),
        None => None,
    };
    let runner = Arc::new(CommandRunner::new(
        args.command.clone(),
        args.timeout.filter(|limit| !limit.is_zero()),
        args.keep_stderr,
        ctx.codecs.clone(),
    )?);
    crate::logging::status!(
        "working on {} with {} at a time (Ctrl-C to stop)",
        args.queues.join(", "),
        args.concurrency
    );
    let stats = run_worker(&queues, sharded.as_ref(), &args, runner.clone()).await;
    runner.wait_for_ends().await;
    let stats = stats?;
    crate::logging::status!(
        "{} taken, {} acked, {} retried, {} dead, {} given back, {} errors",
        stats.taken,
        stats.acked,
        stats.retried,
        stats.dead,
        stats.given_back,
        stats.errors
    );
    stop_schedulers(server, queues, args.shutdown_timeout).await
}

/// Stops the listener and the queues' transfer schedulers, waiting for Redis at most
/// `shutdown_timeout` (or until another stop signal), and saying so when it lasts.
async fn stop_schedulers(
    server: Option<crate::serve::Server>,
    queues: Vec<delayq::DelayedQueue<crate::text_codec::TextCodec>>,
    shutdown_timeout: Duration,
) -> anyhow::Result<()> {
    // The server holds the scheduler group: stop it first, so that destroy stops the group.
    super::transfer::stop_within(shutdown_timeout, async {
        if let Some(server) = server {
            server.shutdown().await;
        }
        for queue in queues {
            queue.destroy().await?;
        }
        anyhow::Ok(())
    })
    .await
}

/// Runs the worker on `queues` (the shards of `sharded`, whose limits as a whole it then
/// obeys) until a stop signal, each value through `runner`.
async fn run_worker(
    queues: &[delayq::DelayedQueue<crate::text_codec::TextCodec>],
    sharded: Option<&delayq::ShardedQueue<crate::text_codec::TextCodec>>,
    args: &WorkArgs,
    runner: Arc<CommandRunner>,
) -> delayq::Result<delayq::worker::WorkerStats> {
    let handler = move |job: Job<String>| {
        let runner = runner.clone();
        async move { runner.run(job).await }
    };
    let worker = match sharded {
        Some(sharded) => sharded.worker(args.concurrency, handler),
        None => {
            let mut worker = queues[0].worker(args.concurrency, handler);
            for queue in &queues[1..] {
                worker = worker.with_queue(queue);
            }
            worker
        }
    };
    let priority = match (&args.weights, args.strict) {
        (Some(weights), _) => Priority::weighted(weights.iter().copied()),
        (None, true) => Priority::Strict,
        (None, false) => Priority::Turns,
    };
    worker
        .priority(priority)
        .retry(RetryPolicy::exponential(
            args.max_attempts,
            args.retry_delay,
            args.max_retry_delay,
        ))
        .reliable_config(ReliableConfig::default().with_visibility(args.visibility))
        .shutdown_grace(args.grace)
        .abort_grace(command::ABORT_GRACE)
        .settle_timeout(args.shutdown_timeout)
        .server_check(args.watch.server_check)
        .stop_on_signal()
        .run()
        .await
}

/// The queues the worker serves: the named ones, or every shard of the one sharded queue.
/// Their scheduler group reads the server's eviction policy only at start: the worker reads it
/// again every --server-check, and one warning per change is enough.
async fn open_queues(ctx: &Ctx, args: &WorkArgs) -> anyhow::Result<OpenQueues> {
    let group_config = GroupConfig::default()
        .with_server_check(None)
        .with_schedules(args.firing.config());
    let mut queues = Vec::with_capacity(args.queues.len());
    let mut whole = None;
    match (args.shards, args.queues.as_slice()) {
        (Some(n), [name]) => {
            let sharded = ctx
                .sharded_builder(name, n, args.previous_shards)
                .group_config(group_config)
                .build()
                .await?;
            queues.extend(sharded.shards().iter().cloned());
            whole = Some(sharded);
        }
        (Some(_), _) => anyhow::bail!("--shards takes one sharded QUEUE"),
        (None, names) => {
            for name in names {
                let queue = ctx.queue_builder(name).group_config(group_config);
                queues.push(queue.build().await?);
            }
        }
    }
    Ok((queues, whole))
}

/// The queues a worker serves, and the sharded queue they are the shards of, if they are.
type OpenQueues = (
    Vec<delayq::DelayedQueue<crate::text_codec::TextCodec>>,
    Option<delayq::ShardedQueue<crate::text_codec::TextCodec>>,
);

/// Serves /metrics and /healthz for the worker's queues and their scheduler group.
fn observe(
    ctx: &Ctx,
    bound: crate::serve::Bound,
    http: &crate::serve::ListenArgs,
    queues: &[delayq::DelayedQueue<crate::text_codec::TextCodec>],
) -> anyhow::Result<crate::serve::Server> {
    let group = queues.first().and_then(|q| q.inspect().scheduler_group());
    let observed = crate::serve::Observed::new(&ctx.client, group, http)?;
    let names: Vec<String> = queues.iter().map(|q| q.name().to_owned()).collect();
    let gauges = crate::serve::Gauges {
        client: ctx.client.clone(),
        names: Box::new(move || names.clone()),
        budget: http.metrics_read_budget,
    };
    let pages = axum::Router::new();
    Ok(crate::serve::Server::start(
        bound,
        None,
        observed,
        pages,
        Some(gauges),
    ))
}
