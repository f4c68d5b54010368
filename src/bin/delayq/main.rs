//! `delayq`: operate Redisson-compatible delayed queues from the shell.

mod text_codec;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use delayq::{
    Clock, DelayedQueue, EntryFormat, Job, JobError, ReliableConfig, RetryPolicy, Scheduler,
    SchedulerConfig,
};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use text_codec::{CodecName, TextCodec};

/// Operate Redisson-compatible delayed queues (RDelayedQueue) on Redis.
#[derive(Debug, Parser)]
#[command(name = "delayq", version, about)]
struct Cli {
    /// Redis URL: redis://, redis-cluster://host:port?node=host:port,
    /// redis-sentinel://host:port?sentinelServiceName=NAME
    #[arg(
        long,
        global = true,
        env = "REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    url: String,

    /// The Redisson codec of the queue's values.
    #[arg(long, global = true, value_enum, default_value_t = CodecName::String)]
    codec: CodecName,

    /// Java class written as `@class` for JSON object values (with --codec json or msgpack).
    #[arg(long, global = true)]
    java_class: Option<String>,

    /// Write legacy `dLc0` entries (for Java peers on Redisson older than 3.21.1).
    #[arg(long, global = true)]
    legacy: bool,

    /// Stamp due times and decide what is due with the Redis server's clock (TIME) instead of
    /// this host's (Java peers keep using their own clocks).
    #[arg(long, global = true)]
    server_clock: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Offer a value, due after --delay.
    Offer {
        /// The destination queue's name.
        queue: String,
        /// The value (hex for --codec bytes, JSON text for the JSON codecs).
        value: String,
        /// Delay, like 250ms, 10s, 15m, 2h.
        #[arg(long, value_parser = parse_duration, default_value = "0s", allow_hyphen_values = true)]
        delay: Duration,
        /// Replace an equal pending value's due time instead of adding a second entry; prints
        /// true when one was replaced.
        #[arg(long)]
        unique: bool,
    },
    /// Give every pending entry equal to VALUE a new due time; prints true or false (not
    /// pending: already due, removed, or never offered).
    Reschedule {
        /// The destination queue's name.
        queue: String,
        /// The value, as for offer.
        value: String,
        /// The new delay from now.
        #[arg(long, value_parser = parse_duration)]
        delay: Duration,
    },
    /// Run a reliable worker: each value is handed to COMMAND (in the environment variables
    /// DELAYQ_VALUE, DELAYQ_ATTEMPT and DELAYQ_QUEUE); exit 0 acknowledges it, anything else is
    /// a failed attempt, retried with backoff and dead-lettered after --max-attempts. Runs until
    /// SIGINT or SIGTERM, then lets running commands finish (within --grace).
    Work {
        /// The destination queue's name.
        queue: String,
        /// Commands run at once.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// How long a value may go without a heartbeat before another worker gets it.
        #[arg(long, value_parser = parse_duration, default_value = "30s")]
        visibility: Duration,
        /// Deliveries of a value in all before it becomes a dead letter.
        #[arg(long, default_value_t = 5)]
        max_attempts: u32,
        /// Wait before the first retry; doubles up to --max-retry-delay (with 20 % jitter).
        #[arg(long, value_parser = parse_duration, default_value = "1s")]
        retry_delay: Duration,
        /// Longest wait before a retry.
        #[arg(long, value_parser = parse_duration, default_value = "5m")]
        max_retry_delay: Duration,
        /// How long running commands get to finish at shutdown before they are killed and their
        /// values given back.
        #[arg(long, value_parser = parse_duration, default_value = "30s")]
        grace: Duration,
        /// The command and its arguments (after --).
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Dead letters: values that failed every attempt.
    Dead {
        #[command(subcommand)]
        action: ListAction,
    },
    /// Quarantined entries: malformed members taken out of the delayed queue.
    Quarantine {
        #[command(subcommand)]
        action: ListAction,
    },
    /// Take due values off the target list, one per line.
    Take {
        /// The destination queue's name.
        queue: String,
        /// How many values to take.
        #[arg(long, default_value_t = 1)]
        count: usize,
        /// Give up when nothing arrives for this long (default: wait forever).
        #[arg(long, value_parser = parse_duration)]
        timeout: Option<Duration>,
    },
    /// Remove the first pending entry equal to VALUE; prints true or false.
    Remove {
        /// The destination queue's name.
        queue: String,
        /// The value, as for offer.
        value: String,
    },
    /// Show pending values in offer order with their due times.
    Peek {
        /// The destination queue's name.
        queue: String,
        /// How many to show.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Counters of a queue.
    Stats {
        /// The destination queue's name.
        queue: String,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete every pending entry (the target list stays); prints true if any was deleted.
    Clear {
        /// The destination queue's name.
        queue: String,
    },
    /// Run transfer schedulers for the queues until SIGINT or SIGTERM.
    Transfer {
        /// The destination queues' names.
        #[arg(required = true)]
        queues: Vec<String>,
    },
}

/// What to do with one of delayq's own lists (dead letters, quarantine).
#[derive(Debug, Subcommand)]
enum ListAction {
    /// Print the entries, oldest first (dead letters: attempts, time, error, value; quarantine:
    /// length and hex).
    List {
        /// The destination queue's name.
        queue: String,
        /// How many to show (0: all).
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Put dead letters back into the queue with fresh attempt counts; prints how many.
    Replay {
        /// The destination queue's name.
        queue: String,
        /// How many, oldest first (0: all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
        /// Due after this delay (0: straight onto the target list).
        #[arg(long, value_parser = parse_duration, default_value = "0s")]
        delay: Duration,
    },
    /// Delete them all; prints how many there were.
    Purge {
        /// The destination queue's name.
        queue: String,
    },
}

/// Parses `250ms`, `10s`, `15m`, `2h`, `1d` (and `0`).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.starts_with('-') {
        return Err(format!(
            "{text:?} is negative; a delay must be zero or more"
        ));
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text:?} needs a unit: ms, s, m, h or d"))?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number followed by a unit"))?;
    let unit_ms: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {text:?}: use ms, s, m, h or d"
            ))
        }
    };
    number
        .checked_mul(unit_ms)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is too long"))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("delayq: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("delayq: {}", error_chain(&err));
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let codec = TextCodec::new(cli.codec, cli.java_class.clone()).map_err(anyhow::Error::msg)?;
    let format = if cli.legacy {
        EntryFormat::Legacy
    } else {
        EntryFormat::Current
    };
    let client = delayq::connect(&cli.url)
        .await
        .with_context(|| format!("cannot connect to {}", cli.url))?;
    let clock = if cli.server_clock {
        Clock::Server
    } else {
        Clock::Client
    };
    let queue_of = |name: &str| {
        DelayedQueue::builder(client.clone(), name, codec.clone())
            .entry_format(format)
            .clock(clock)
            .transfer(false)
            .build()
    };
    let mut out = std::io::stdout().lock();

    match cli.command {
        Command::Offer {
            queue,
            value,
            delay,
            unique,
        } => {
            let queue = queue_of(&queue).await?;
            if unique {
                let replaced = queue.offer_unique(&value, delay).await?;
                writeln!(out, "{replaced}")?;
            } else {
                queue.offer(&value, delay).await?;
            }
        }
        Command::Reschedule {
            queue,
            value,
            delay,
        } => {
            let moved = queue_of(&queue).await?.reschedule(&value, delay).await?;
            writeln!(out, "{moved}")?;
        }
        Command::Work {
            queue,
            concurrency,
            visibility,
            max_attempts,
            retry_delay,
            max_retry_delay,
            grace,
            command,
        } => {
            // This queue runs the transfer scheduler too, so retries come back on their own.
            let queue = DelayedQueue::builder(client.clone(), queue.as_str(), codec.clone())
                .entry_format(format)
                .clock(clock)
                .build()
                .await?;
            let name = queue.name().to_owned();
            let command = std::sync::Arc::new(command);
            eprintln!("delayq: working on {name} with {concurrency} at a time (Ctrl-C to stop)");
            let stats = queue
                .worker(concurrency, move |job: Job<String>| {
                    let command = command.clone();
                    let name = name.clone();
                    async move { run_command(&command, &name, job).await }
                })
                .retry(RetryPolicy::exponential(
                    max_attempts,
                    retry_delay,
                    max_retry_delay,
                ))
                .reliable_config(ReliableConfig::default().with_visibility(visibility))
                .shutdown_grace(grace)
                .stop_on_signal()
                .run()
                .await?;
            eprintln!(
                "delayq: {} taken, {} acked, {} retried, {} dead, {} given back, {} errors",
                stats.taken, stats.acked, stats.retried, stats.dead, stats.given_back, stats.errors
            );
            queue.destroy().await?;
        }
        Command::Dead { action } => match action {
            ListAction::List { queue, limit } => {
                for letter in queue_of(&queue).await?.dead_letters(limit).await? {
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
            ListAction::Replay {
                queue,
                limit,
                delay,
            } => {
                let replayed = queue_of(&queue)
                    .await?
                    .replay_dead_letters(limit, delay)
                    .await?;
                writeln!(out, "{replayed}")?;
            }
            ListAction::Purge { queue } => {
                let purged = queue_of(&queue).await?.purge_dead_letters().await?;
                writeln!(out, "{purged}")?;
            }
        },
        Command::Quarantine { action } => match action {
            ListAction::List { queue, limit } => {
                for entry in queue_of(&queue).await?.quarantined(limit).await? {
                    let hex: String = entry.iter().map(|b| format!("{b:02x}")).collect();
                    writeln!(out, "{}\t{hex}", entry.len())?;
                }
            }
            ListAction::Replay { .. } => {
                bail!("quarantined entries are malformed; they cannot be replayed (list or purge them)")
            }
            ListAction::Purge { queue } => {
                let purged = queue_of(&queue).await?.purge_quarantine().await?;
                writeln!(out, "{purged}")?;
            }
        },
        Command::Take {
            queue,
            count,
            timeout,
        } => {
            let queue = queue_of(&queue).await?;
            let consumer = queue.consumer().await?;
            let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
            for _ in 0..count {
                let value = match deadline {
                    None => consumer.take().await?,
                    Some(deadline) => {
                        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        match consumer.poll(left).await? {
                            Some(value) => value,
                            None => break,
                        }
                    }
                };
                writeln!(out, "{value}")?;
                out.flush()?;
            }
            consumer.close().await;
        }
        Command::Remove { queue, value } => {
            let removed = queue_of(&queue).await?.remove(&value).await?;
            writeln!(out, "{removed}")?;
        }
        Command::Peek { queue, limit } => {
            if limit == 0 {
                bail!("--limit must be at least 1");
            }
            let now = now_ms();
            for pending in queue_of(&queue).await?.pending(limit).await? {
                let due = match pending.due_ms {
                    Some(due) => format!("{due}\t{:+}ms", due - now),
                    None => "-\t(not scheduled)".to_owned(),
                };
                match pending.value {
                    Ok(value) => writeln!(out, "{due}\t{value}")?,
                    Err(err) => writeln!(out, "{due}\t<{err}>")?,
                }
            }
        }
        Command::Stats { queue, json } => {
            let stats = queue_of(&queue).await?.stats().await?;
            let overdue_ms = stats.next_due_ms.map_or(0, |due| (now_ms() - due).max(0));
            if json {
                let object = serde_json::json!({
                    "queue": queue,
                    "pending": stats.pending,
                    "scheduled": stats.scheduled,
                    "ready": stats.ready,
                    "quarantined": stats.quarantined,
                    "next_due_ms": stats.next_due_ms,
                    "overdue_ms": overdue_ms,
                });
                writeln!(out, "{object}")?;
            } else {
                writeln!(out, "queue:       {queue}")?;
                writeln!(out, "pending:     {}", stats.pending)?;
                writeln!(out, "scheduled:   {}", stats.scheduled)?;
                writeln!(out, "ready:       {}", stats.ready)?;
                writeln!(out, "quarantined: {}", stats.quarantined)?;
                match stats.next_due_ms {
                    Some(due) => writeln!(out, "next due:    {due} (overdue by {overdue_ms} ms)")?,
                    None => writeln!(out, "next due:    none")?,
                }
            }
        }
        Command::Clear { queue } => {
            let cleared = queue_of(&queue).await?.clear().await?;
            writeln!(out, "{cleared}")?;
        }
        Command::Transfer { queues } => {
            let config = SchedulerConfig::default().with_entry_format(format);
            let mut handles = Vec::with_capacity(queues.len());
            for queue in &queues {
                handles
                    .push(Scheduler::spawn(client.clone(), queue.as_str(), config.clone()).await?);
            }
            eprintln!(
                "delayq: transferring {} (Ctrl-C to stop)",
                queues.join(", ")
            );
            wait_for_stop_signal().await?;
            for handle in handles {
                let name = handle.queue().to_owned();
                let stats = handle.stats();
                handle.shutdown().await;
                eprintln!(
                    "delayq: {name}: moved {} in {} transfers, {} quarantined, {} errors",
                    stats.moved, stats.transfers, stats.quarantined, stats.errors
                );
            }
        }
    }
    Ok(())
}

/// Runs the worker's command for one value: exit 0 acknowledges it.
async fn run_command(command: &[String], queue: &str, job: Job<String>) -> Result<(), JobError> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| JobError::permanent("no command"))?;
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
        Err(JobError::new(format!("{program} exited with {status}")))
    }
}

/// The error and its causes, leaving out a cause its parent's message already includes.
fn error_chain(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let message = cause.to_string();
        if !text.contains(&message) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&message);
        }
    }
    text
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("15m").unwrap(), Duration::from_secs(900));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("-5s").unwrap_err().contains("negative"));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5y").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
    }
}
