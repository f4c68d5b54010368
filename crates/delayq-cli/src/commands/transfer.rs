//! `delayq transfer`: schedulers for the named queues until a stop signal, or one catch-up.

use super::Ctx;
use crate::cli::TransferArgs;
use anyhow::Context;
use delayq::{Discovery, GroupConfig, SchedulerGroup, TransferConfig};
use std::time::Duration;

impl TransferArgs {
    /// The transfer settings these options ask for.
    pub(crate) fn transfer_config(&self) -> TransferConfig {
        let config = TransferConfig::default();
        let max = self.max_batch as usize;
        if max <= config.batch_size() {
            config.with_batch_size(max)
        } else {
            config.with_adaptive_batch(max, std::time::Duration::from_millis(5))
        }
    }
}

pub(crate) async fn transfer(ctx: &Ctx, args: &TransferArgs) -> anyhow::Result<()> {
    if args.once {
        return transfer_once(ctx, &args.queues, &args.transfer_config()).await;
    }
    // Bound before anything starts, so that a refused or busy address stops the command.
    let bound = match args.listen {
        Some(listen) => Some(crate::serve::bind(listen, &args.http).await?),
        None => None,
    };
    if bound.is_some() {
        // Before any queue is added: each makes its metric handles once, from the recorder.
        crate::serve::recorder(args.http.metrics)?;
    }
    // One group for every queue: one pub/sub connection, one timer, one budgeted sweep.
    let config = args.transfer_config();
    let group_config = group_config(args);
    let group = SchedulerGroup::spawn(ctx.client.clone(), group_config).await?;
    let options = ctx.global.options();
    for queue in &args.queues {
        group.add_with(queue.as_str(), options, config).await?;
    }
    if args.all {
        let mut discovery = Discovery::all()
            .rescan_every(args.rescan)
            .options(options)
            .transfer_config(config);
        if let Some(pattern) = &args.pattern {
            discovery = discovery.matching(pattern.as_str());
        }
        group.discover(discovery).await?;
        let which = args.pattern.as_deref().unwrap_or("*");
        let found = group.names().len();
        let queues = if found == 1 { "queue" } else { "queues" };
        crate::logging::status!(
            "transferring {found} delayed {queues} matching {which:?}, and those that \
             appear (Ctrl-C to stop)"
        );
    } else {
        crate::logging::status!("transferring {} (Ctrl-C to stop)", args.queues.join(", "));
    }
    let server = match bound {
        Some(bound) => Some(observe(ctx, bound, args, &group)?),
        None => None,
    };
    wait_for_stop_signal().await?;
    // Every queue of the run, those discovery dropped meanwhile (emptied, deleted) included.
    let now = group.names().len();
    let per_queue = group.totals();
    let total = group.stats();
    stop_within(args.shutdown_timeout, async {
        if let Some(server) = server {
            server.shutdown().await;
        }
        group.shutdown().await;
        Ok(())
    })
    .await?;
    if per_queue.len() <= 20 {
        for (name, stats) in &per_queue {
            crate::logging::status!(
                "{name}: moved {} in {} transfers, {} quarantined, {} errors",
                stats.moved,
                stats.transfers,
                stats.quarantined,
                stats.errors
            );
        }
    }
    crate::logging::status!(
        "{} queues ({now} at the end): moved {} in {} transfers, {} quarantined, {} errors",
        per_queue.len(),
        total.moved,
        total.transfers,
        total.quarantined,
        total.errors
    );
    Ok(())
}

/// Redis commands a second the process's other periodic work may take beside the sweep and
/// the gauges, kept out of the gauges' share: discovery's rescans, the schedules' registry
/// read, the process record's beats, the pulse, the server check.
const OTHER_READS: u32 = 10;

/// The gauges' share of `--metrics-read-budget`: what the sweep and the other periodic work
/// leave of it, so that the whole process keeps within it (at 10,000 idle queues, 1,000
/// commands a second by default). Never below 8, the least the option takes.
fn gauges_budget(args: &TransferArgs) -> u32 {
    args.http
        .metrics_read_budget
        .saturating_sub(args.sweep_budget.saturating_add(OTHER_READS))
        .max(8)
}

/// Serves /metrics and /healthz for `group`, reading the gauges of its queues and of those its
/// discovery lists with nothing to transfer (dead letters, deliveries in flight, a quarantine):
/// a queue whose pending entries are gone keeps the gauges its alerts read.
fn observe(
    ctx: &Ctx,
    bound: crate::serve::Bound,
    args: &TransferArgs,
    group: &SchedulerGroup,
) -> anyhow::Result<crate::serve::Server> {
    let observed = crate::serve::Observed::new(&ctx.client, Some(group.clone()), &args.http)?;
    let names = group.clone();
    let gauges = crate::serve::Gauges {
        client: ctx.client.clone(),
        names: Box::new(move || {
            let mut all = names.names();
            all.extend(names.listed());
            all
        }),
        budget: gauges_budget(args),
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

/// Moves everything due now in each queue; prints the header `QUEUE<TAB>MOVED<TAB>QUARANTINED`
/// (not with --json), then `NAME<TAB>moved<TAB>quarantined` for each queue.
async fn transfer_once(
    ctx: &Ctx,
    queues: &[String],
    config: &TransferConfig,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if !ctx.global.json {
        ctx.print(
            &mut out,
            "QUEUE\tMOVED\tQUARANTINED",
            serde_json::Value::default,
        )?;
    }
    for name in queues {
        let queue = ctx.queue(name).await?;
        let (mut moved, mut quarantined) = (0, 0);
        loop {
            let outcome = queue.admin().transfer_due_with(config).await?;
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

/// Awaits `stopping` (transfer schedulers stopping: their last calls need Redis) for at most
/// `timeout`, or until another SIGINT or SIGTERM; says what it waits for when that lasts.
/// Nothing is lost by not waiting: each transfer is one script, done or not.
pub(crate) async fn stop_within(
    timeout: Duration,
    stopping: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    // Listening from the start: a signal sent meanwhile is not missed.
    let mut signals = StopSignals::listen()?;
    tokio::pin!(stopping);
    // Stopping takes a round trip or two; say what it waits for only when it lasts.
    if let Ok(stopped) = tokio::time::timeout(Duration::from_millis(100), &mut stopping).await {
        return stopped;
    }
    tracing::info!(
        up_to_s = timeout.as_secs_f64(),
        "waiting for Redis while the transfer schedulers stop (a second Ctrl-C or SIGTERM \
         ends the wait)"
    );
    tokio::select! {
        stopped = tokio::time::timeout(timeout, &mut stopping) => match stopped {
            Ok(stopped) => stopped,
            Err(_) => {
                tracing::warn!(
                    up_to_s = timeout.as_secs_f64(),
                    "Redis did not answer while the transfer schedulers stopped; exiting \
                     without them"
                );
                Ok(())
            }
        },
        () = signals.recv() => {
            tracing::warn!(
                "a second stop signal: exiting without waiting for the transfer schedulers"
            );
            Ok(())
        }
    }
}

/// Waits for SIGINT (Ctrl-C) or SIGTERM.
pub(crate) async fn wait_for_stop_signal() -> anyhow::Result<()> {
    StopSignals::listen()?.recv().await;
    Ok(())
}

/// Listeners for SIGINT and SIGTERM: a signal that comes once they exist is not missed.
struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn listen() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(StopSignals {
                interrupt: signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?,
                terminate: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(StopSignals {})
    }

    /// The next SIGINT or SIGTERM.
    async fn recv(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The group's settings: the server check, and how it fires recurring schedules.
fn group_config(args: &TransferArgs) -> GroupConfig {
    GroupConfig::default()
        .with_sweep_budget(args.sweep_budget)
        .with_server_check(args.watch.server_check)
        .with_schedules(args.firing.config())
}
