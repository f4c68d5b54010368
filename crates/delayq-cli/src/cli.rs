//! The command line: options and subcommands (clap), and duration parsing.

use crate::durability_args::DurabilityArgs;
use crate::duration::parse_duration;
pub(crate) use crate::list_args::{
    DeadAction, DeadLetterArg, InflightAction, PageArgs, QuarantineAction, ReadyAction,
};
pub(crate) use crate::queue_arg::QueueArg;
use crate::text_codec::CodecName;
use clap::{Args, Parser, Subcommand};
use delayq::{Clock, EntryFormat, QueueOptions};
use std::time::Duration;

/// Operate Redisson-compatible delayed queues (RDelayedQueue) on Redis.
#[derive(Debug, Parser)]
#[command(
    name = "delayq",
    version,
    about,
    after_help = "Exit codes: 0 success; 1 false (remove/reschedule/cancel with --exit-status), \
                  warnings (check), a queue it could not read (queues) or no such schedule; 2 usage or invalid input; 3 cannot reach Redis; 4 \
                  authentication or ACL refused; 5 a key of the wrong type; 6 a value the codec \
                  cannot encode or decode; 7 Redis refused (out of memory, busy, read-only, \
                  loading); 8 any other error; 9 a durable write (--wait-replicas, --wait-aof) \
                  written on the master but not confirmed in time."
)]
pub(crate) struct Cli {
    #[command(flatten, next_help_heading = "Global options")]
    pub(crate) global: Global,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The options every command takes.
#[derive(Debug, Args)]
pub(crate) struct Global {
    // The text is --help's: rustdoc must not read `[user]` as a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Redis URL: redis://[[user]:password@]host:port[/db], redis-cluster://host:port?node=host:port,
    /// redis-sentinel://host:port?sentinelServiceName=NAME; TLS: rediss://, rediss-cluster://,
    /// rediss-sentinel://. Prefer REDIS_URL for a URL with a password (the process list shows
    /// flags; its password is never printed).
    #[arg(
        long,
        global = true,
        env = "REDIS_URL",
        hide_env_values = true,
        default_value = "redis://127.0.0.1:6379",
        value_parser = crate::connection::parse_url
    )]
    pub(crate) url: String,

    #[command(flatten)]
    pub(crate) connection: crate::connection::ConnectionArgs,

    /// Read the Redis password from this file (its first line) instead of the URL.
    #[arg(
        long,
        global = true,
        env = "DELAYQ_PASSWORD_FILE",
        value_name = "PATH",
        conflicts_with = "password_env"
    )]
    pub(crate) password_file: Option<std::path::PathBuf>,

    /// Take the Redis password from the environment variable REDIS_PASSWORD.
    #[arg(
        long = "password-from-env",
        global = true,
        env = "DELAYQ_PASSWORD_FROM_ENV"
    )]
    pub(crate) password_env: bool,

    /// The Redisson codec of the queue's values.
    #[arg(long, global = true, env = "DELAYQ_CODEC", value_enum, default_value_t = CodecName::String)]
    pub(crate) codec: CodecName,

    /// A codec per queue: PATTERN=CODEC (a glob on the queue's name, like 'orders:*=kryo'),
    /// repeatable or separated by commas or spaces; the first matching pattern wins, else
    /// --codec.
    #[arg(
        long,
        global = true,
        env = "DELAYQ_CODEC_FOR",
        value_name = "PATTERN=CODEC",
        value_parser = crate::codec_choice::parse_codec_rules
    )]
    pub(crate) codec_for: Vec<crate::codec_choice::CodecRules>,

    /// Java class written as `@class` for JSON object values (with --codec json or msgpack).
    #[arg(long, global = true, env = "DELAYQ_JAVA_CLASS")]
    pub(crate) java_class: Option<String>,

    /// Write legacy `dLc0` entries (for Java peers on Redisson older than 3.21.1).
    #[arg(long, global = true, env = "DELAYQ_LEGACY")]
    pub(crate) legacy: bool,

    /// Stamp due times and decide what is due with the Redis server's clock (TIME) instead of
    /// this host's (Java peers keep using their own clocks).
    #[arg(long, global = true, env = "DELAYQ_SERVER_CLOCK")]
    pub(crate) server_clock: bool,

    /// Print one JSON object per line for every value and result, with the queue's name in
    /// `queue` (a value in `value` in its JSON form: a string, a number, the JSON value itself,
    /// the JavaValue form for --codec kryo; `value_base64` for --codec bytes), and an error on
    /// stderr as `{"error":{...}}` (see "JSON output" in docs/cli.md).
    #[arg(long, global = true, conflicts_with = "null_data")]
    pub(crate) json: bool,

    /// Scripts: end every printed record with a NUL byte instead of a newline, and read
    /// NUL-separated values from --value-file / stdin (one command per value).
    #[arg(long, global = true)]
    pub(crate) null_data: bool,

    /// How stderr's lines are written: text, or one JSON object per line for a log collector.
    #[arg(long, global = true, env = "DELAYQ_LOG_FORMAT", value_enum, default_value_t = crate::logging::LogFormat::Text)]
    pub(crate) log_format: crate::logging::LogFormat,
}

/// Where a command's value comes from: the argument, a file, or stdin.
#[derive(Debug, Args)]
pub(crate) struct ValueArgs {
    /// The value (hex for --codec bytes, JSON text for the JSON codecs and kryo); `-` reads
    /// it from stdin.
    #[arg(required_unless_present = "value_file", allow_hyphen_values = true)]
    pub(crate) value: Option<String>,
    /// Read the value from this file (`-`: stdin), byte for byte (raw bytes for --codec bytes,
    /// UTF-8 text otherwise). Values of any size; the command line cannot carry large ones.
    #[arg(long, value_name = "PATH", conflicts_with = "value")]
    pub(crate) value_file: Option<std::path::PathBuf>,
}

impl Global {
    /// The entry format (`--legacy`) and clock (`--server-clock`) every queue of the command
    /// goes by.
    pub(crate) fn options(&self) -> QueueOptions {
        let format = match self.legacy {
            true => EntryFormat::Legacy,
            false => EntryFormat::Current,
        };
        let clock = match self.server_clock {
            true => Clock::Server,
            false => Clock::Client,
        };
        QueueOptions::default().format(format).clock(clock)
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Offer a value, due after --delay.
    Offer {
        #[command(flatten)]
        target: QueueArg,
        #[command(flatten)]
        value: ValueArgs,
        /// Delay, like 250ms, 10s, 1.5s, 1h30m, 2d.
        #[arg(long, value_parser = parse_duration, default_value = "0s", allow_hyphen_values = true)]
        delay: Duration,
        /// Give an equal pending value this due time instead of a second entry; prints true if so.
        #[arg(long, conflicts_with = "handle")]
        unique: bool,
        /// Print the new entry's handle (SHARD:HANDLE with --shards), for `delayq cancel`.
        #[arg(long)]
        handle: bool,
        #[command(flatten)]
        dedup: crate::dedup_args::DedupArgs,
        #[command(flatten)]
        durability: DurabilityArgs,
    },
    /// Cancel the pending entry `offer --handle` printed HANDLE for, whatever its value; prints
    /// true or false (not pending: already due, removed or cancelled).
    Cancel {
        #[command(flatten)]
        target: QueueArg,
        /// The handle (18 hex digits; SHARD:HANDLE with --shards).
        handle: String,
        /// Exit with status 1 when nothing was cancelled (it still prints false).
        #[arg(long)]
        exit_status: bool,
    },
    /// List every queue with any key in the Redis (on every master of a Cluster): pending,
    /// ready, in flight, dead, paused; a queue whose keys cannot be read shows why in its row,
    /// and the command exits 1.
    Queues {
        /// Only queues whose name matches this glob (`*`, `?`), e.g. 'tenant-*'.
        #[arg(long = "match", value_name = "PATTERN", value_parser = glob_pattern)]
        pattern: Option<String>,
    },
    /// Give every pending entry equal to VALUE a new due time; prints true or false (not
    /// pending: already due, removed, or never offered).
    Reschedule {
        #[command(flatten)]
        target: QueueArg,
        #[command(flatten)]
        value: ValueArgs,
        /// The new delay from now.
        #[arg(long, value_parser = parse_duration)]
        delay: Duration,
        /// Exit with status 1 when no entry was rescheduled (it still prints false).
        #[arg(long)]
        exit_status: bool,
    },
    /// Run a reliable worker: each value is handed to COMMAND on its stdin and in the
    /// environment variable DELAYQ_VALUE (left out, with DELAYQ_VALUE_ON_STDIN_ONLY=1, for a
    /// value over 64 KiB or with a NUL byte), with DELAYQ_ATTEMPT and DELAYQ_QUEUE (and, when
    /// the queue has limits, DELAYQ_ADMITTED_MS: when they granted the job, by the Redis
    /// server's clock, epoch ms); exit 0 acknowledges it, anything else is a failed attempt, retried with backoff and
    /// dead-lettered after --max-attempts. Each command runs in a process group of its own.
    /// Runs until SIGINT or SIGTERM, then lets running commands finish (within --grace; a
    /// second signal ends the wait).
    Work(WorkArgs),
    /// Dead letters: values that failed every attempt.
    Dead {
        #[command(subcommand)]
        action: DeadAction,
    },
    /// Values taken by reliable consumers (`work`) and not yet settled.
    Inflight {
        #[command(subcommand)]
        action: InflightAction,
    },
    /// Values on the target list, ready to take.
    Ready {
        #[command(subcommand)]
        action: ReadyAction,
    },
    /// Quarantined entries: malformed members taken out of the delayed queue.
    Quarantine {
        #[command(subcommand)]
        action: QuarantineAction,
    },
    /// Take due values off the target list, one per line (or per NUL with --null-data, one JSON
    /// document per line with --json).
    Take {
        #[command(flatten)]
        target: QueueArg,
        /// How many values to take.
        #[arg(long, default_value_t = 1)]
        count: usize,
        /// Give up when nothing arrives for this long (default: wait forever).
        #[arg(long, value_parser = parse_duration)]
        timeout: Option<Duration>,
    },
    /// Remove the first pending entry equal to VALUE; prints true or false.
    Remove {
        #[command(flatten)]
        target: QueueArg,
        #[command(flatten)]
        value: ValueArgs,
        /// Exit with status 1 when nothing was removed (it still prints false).
        #[arg(long)]
        exit_status: bool,
    },
    /// Show pending values in offer order with their due times.
    Peek {
        #[command(flatten)]
        target: QueueArg,
        /// How many to show.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Counters of a queue (one JSON object with --json).
    Stats {
        #[command(flatten)]
        target: QueueArg,
    },
    /// Check a queue's server and counters: version, maxmemory-policy (warns unless
    /// noeviction), persistence, whether this user's ACL allows every command, key and channel
    /// the queue needs, pending/ready/in-flight/dead counts. Exits 1 when it warns.
    Check {
        #[command(flatten)]
        target: QueueArg,
    },
    /// Delete every pending entry (the target list stays); prints true if any was deleted.
    Clear {
        #[command(flatten)]
        target: QueueArg,
    },
    /// Pause a queue for delayq's schedulers and workers: due values stay pending and ready ones
    /// stay ready (jobs running finish) until `delayq resume` (Java's schedulers and consumers
    /// do not know the flag); prints true if it was not paused.
    Pause {
        #[command(flatten)]
        target: QueueArg,
    },
    /// Let delayq's schedulers transfer a paused queue and its workers take from it again;
    /// prints true if it was paused.
    Resume {
        #[command(flatten)]
        target: QueueArg,
    },
    /// Recurring schedules: cron expressions or intervals that offer a value at every
    /// occurrence, fired by every running `transfer` and `work` of the queue, each occurrence
    /// once (see docs/schedules.md).
    Schedule {
        #[command(subcommand)]
        action: crate::schedule_args::ScheduleAction,
    },
    /// Run transfer schedulers for the queues until SIGINT or SIGTERM (or, with --once, move
    /// what is due now and exit).
    Transfer(TransferArgs),
    /// Serve a web dashboard of every delayed queue in the Redis (counts, due times, dead
    /// letters, quarantine; replay, pause with an operator's token, purge with an admin's), with
    /// its JSON API under /api and /metrics, /healthz beside it.
    Ui(UiArgs),
    /// Serve a QStash-compatible HTTP API (publish, messages, DLQ) and deliver its messages as
    /// signed webhooks, the official QStash SDKs as clients (see docs/gateway.md).
    Gateway(crate::gateway_args::GatewayArgs),
    /// A queue's flow-control limits across every worker process: a concurrency cap, a rate,
    /// per-key caps and rates (see docs/limits.md).
    Limit {
        #[command(subcommand)]
        action: crate::limit_args::LimitAction,
    },
    /// Print a completion script for SHELL (e.g. `delayq completions bash >
    /// /etc/bash_completion.d/delayq`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `delayq man > /usr/local/share/man/man1/delayq.1`.
    Man,
}

/// `delayq transfer`'s options.
#[derive(Debug, Args)]
pub(crate) struct TransferArgs {
    /// The destination queues' names (with --all, queues to transfer besides those found).
    #[arg(required_unless_present = "all")]
    pub(crate) queues: Vec<String>,
    /// Move every entry due now, print how many per queue, and exit (for cron-style runs).
    #[arg(long, env = "DELAYQ_ONCE", conflicts_with = "all")]
    pub(crate) once: bool,
    /// Find and transfer every Redisson delayed queue of the Redis (on every master of a
    /// Cluster), keep finding new ones while running, drop those that vanish: one sidecar for
    /// every Java service's queues.
    #[arg(long, env = "DELAYQ_ALL")]
    pub(crate) all: bool,
    /// With --all, only queues whose name matches this glob (`*`, `?`), e.g. 'tenant-*'.
    #[arg(
        long = "match",
        env = "DELAYQ_MATCH",
        value_name = "PATTERN",
        value_parser = glob_pattern,
        requires = "all"
    )]
    pub(crate) pattern: Option<String>,
    /// With --all, how often to scan for queues (new ones are also found by their first
    /// channel message).
    #[arg(long, env = "DELAYQ_RESCAN", value_parser = parse_duration, default_value = "30s", requires = "all")]
    pub(crate) rescan: Duration,
    /// The most entries one script call may move. The default, 100, is Redisson's batch; a
    /// larger N lets calls grow while they stay near 5 ms (on a long list with due entries all
    /// over it, up to the 20 ms call budget), which catches up a backlog of millions much
    /// faster.
    #[arg(long, env = "DELAYQ_MAX_BATCH", value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) max_batch: u32,
    /// At shutdown: how long to wait for Redis while the schedulers stop (each transfer is one
    /// script: it happened or it did not). A second SIGINT or SIGTERM ends the wait at once.
    #[arg(long, env = "DELAYQ_SHUTDOWN_TIMEOUT", value_parser = parse_duration, default_value = "10s")]
    pub(crate) shutdown_timeout: Duration,
    /// How many queues a second the safety sweep may look at (one `ZRANGE` each): each queue
    /// is looked at every second, or every QUEUES / N seconds when there are more. With
    /// --listen, the gauges' reads take what is left of --metrics-read-budget.
    #[arg(long, env = "DELAYQ_SWEEP_BUDGET", value_name = "N", default_value_t = 200, hide = true,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) sweep_budget: u32,
    #[command(flatten)]
    pub(crate) firing: crate::schedule_args::FiringArgs,
    /// Serve /metrics (Prometheus text) and /healthz on this address, e.g. 127.0.0.1:9464; a
    /// loopback address unless --allow-remote.
    #[arg(long, env = "DELAYQ_LISTEN", value_name = "ADDR")]
    pub(crate) listen: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub(crate) watch: ServerWatchArgs,
    #[command(flatten, next_help_heading = "HTTP listener (--listen)")]
    pub(crate) http: crate::serve::ListenArgs,
    #[cfg(feature = "otel")]
    #[command(flatten, next_help_heading = "OpenTelemetry")]
    pub(crate) otlp: OtlpArgs,
}

/// How a daemon (`transfer`, `work`) watches the server's settings while it runs.
#[derive(Args, Debug, Clone)]
pub(crate) struct ServerWatchArgs {
    /// How often to read the server's maxmemory-policy again, to warn (once) when a later
    /// CONFIG SET makes it one that evicts keys.
    #[arg(long, env = "DELAYQ_SERVER_CHECK", value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub(crate) server_check: Duration,
}

/// Where `transfer` and `work` export their spans (the `otel` feature).
#[cfg(feature = "otel")]
#[derive(Args, Debug, Clone)]
pub(crate) struct OtlpArgs {
    /// Export spans over OTLP/HTTP to this collector, e.g. http://127.0.0.1:4318 (spans go to
    /// its /v1/traces); the same as OTEL_EXPORTER_OTLP_ENDPOINT, which it overrides.
    #[arg(long, value_name = "URL", env = "DELAYQ_OTLP_ENDPOINT")]
    pub(crate) otlp_endpoint: Option<String>,
}

/// `delayq ui`'s options.
#[derive(Debug, Args)]
pub(crate) struct UiArgs {
    /// Where to serve the page; a loopback address unless --allow-remote.
    #[arg(
        long,
        env = "DELAYQ_LISTEN",
        value_name = "ADDR",
        default_value = "127.0.0.1:8080"
    )]
    pub(crate) listen: std::net::SocketAddr,
    #[command(flatten, next_help_heading = "HTTP listener")]
    pub(crate) http: crate::serve::ListenArgs,
    /// Allow every write with one token, the admin's (see --token-file): as
    /// --admin-token-file with a token found or made up.
    #[arg(long, env = "DELAYQ_ALLOW_WRITES", conflicts_with = "admin_token_file")]
    pub(crate) allow_writes: bool,
    /// A file (mode 0600, first line at least 16 characters) holding the operator's token: it
    /// may replay and retry dead letters, run an entry now, give a delivery back, pause and
    /// resume.
    #[arg(long, env = "DELAYQ_OPERATOR_TOKEN_FILE", value_name = "PATH")]
    pub(crate) operator_token_file: Option<std::path::PathBuf>,
    /// A file (mode 0600, first line at least 16 characters) holding the admin's token: it may
    /// do all the operator may, and what loses values (purge dead letters or the quarantine,
    /// delete a dead letter, cancel a pending entry).
    #[arg(long, env = "DELAYQ_ADMIN_TOKEN_FILE", value_name = "PATH")]
    pub(crate) admin_token_file: Option<std::path::PathBuf>,
    /// A file (mode 0600, first line at least 16 characters) holding the reader's token; with
    /// it, every read (the API, /metrics) needs a role's token too, not only writes. The page
    /// itself and /healthz stay open.
    #[arg(long, env = "DELAYQ_READ_TOKEN_FILE", value_name = "PATH")]
    pub(crate) read_token_file: Option<std::path::PathBuf>,
    /// Serve every route (page, API, /metrics, /healthz) under this path, e.g. /delayq, for a
    /// reverse proxy that forwards that path; the path itself redirects to PATH/.
    #[arg(long, env = "DELAYQ_BASE_PATH", value_name = "PATH", value_parser = crate::serve::parse_base_path)]
    pub(crate) base_path: Option<crate::serve::BasePath>,
    /// With --allow-writes: a file whose first line is the admin's token (made up and written there, mode
    /// 0600, when the file does not exist); else DELAYQ_UI_TOKEN; else one is made up into
    /// $XDG_RUNTIME_DIR (or the temp dir)/delayq-ui-PID.token, removed at exit. The token is
    /// printed only to a terminal.
    #[arg(long, env = "DELAYQ_TOKEN_FILE", value_name = "PATH")]
    pub(crate) token_file: Option<std::path::PathBuf>,
    /// Only queues whose name matches this glob (`*`, `?`).
    #[arg(long = "match", env = "DELAYQ_MATCH", value_name = "PATTERN", value_parser = glob_pattern)]
    pub(crate) pattern: Option<String>,
    /// A queue whose list has held values this long without emptying, fewer taken over the
    /// last 5 minutes than wait, reads "lagging" (docs/dashboard.md, "Health") [default: 5m]
    #[arg(long, env = "DELAYQ_LAGGING_AFTER", value_name = "DURATION", value_parser = crate::duration::parse_duration)]
    pub(crate) lagging_after: Option<std::time::Duration>,
}

/// `delayq work`'s options.
#[derive(Debug, Args)]
pub(crate) struct WorkArgs {
    /// The destination queues' names: one worker serves them all in turn (DELAYQ_QUEUE tells
    /// the command which one a value came from).
    #[arg(required = true, num_args = 1.., value_name = "QUEUE")]
    pub(crate) queues: Vec<String>,
    /// The queue is sharded over N shards: the worker serves every shard of the one QUEUE.
    #[arg(long, env = "DELAYQ_SHARDS", value_name = "N", value_parser = crate::shard_args::parse_shards)]
    pub(crate) shards: Option<usize>,
    /// While changing the number of shards: it was P before; the worker serves the shards of
    /// both layouts (see docs/sharding.md).
    #[arg(long, env = "DELAYQ_PREVIOUS_SHARDS", value_name = "P", value_parser = crate::shard_args::parse_shards, requires = "shards")]
    pub(crate) previous_shards: Option<usize>,
    /// Commands run at once.
    #[arg(long, env = "DELAYQ_CONCURRENCY", default_value_t = 1)]
    pub(crate) concurrency: usize,
    /// Serve the queues in the order named: never a value from a queue while one named before
    /// it has values ready (a busy first queue starves the others). Default: in turn.
    #[arg(long, env = "DELAYQ_STRICT", conflicts_with_all = ["weights", "shards"])]
    pub(crate) strict: bool,
    /// Serve the queues by weight, one weight (at least 1) per QUEUE in the order named: with
    /// `a b c --weights 6,3,1`, 60 %, 30 % and 10 % of the values while all three have some.
    /// Default: in turn (all weights 1).
    #[arg(
        long,
        env = "DELAYQ_WEIGHTS",
        value_name = "W,W,...",
        value_delimiter = ',',
        conflicts_with = "shards"
    )]
    pub(crate) weights: Option<Vec<u32>>,
    /// How long a value may go without a heartbeat before another worker gets it.
    #[arg(long, env = "DELAYQ_VISIBILITY", value_parser = parse_duration, default_value = "30s")]
    pub(crate) visibility: Duration,
    /// Deliveries of a value in all before it becomes a dead letter.
    #[arg(long, env = "DELAYQ_MAX_ATTEMPTS", default_value_t = 5)]
    pub(crate) max_attempts: u32,
    /// Wait before the first retry; doubles up to --max-retry-delay (with 20 % jitter).
    #[arg(long, env = "DELAYQ_RETRY_DELAY", value_parser = parse_duration, default_value = "1s")]
    pub(crate) retry_delay: Duration,
    /// Longest wait before a retry.
    #[arg(long, env = "DELAYQ_MAX_RETRY_DELAY", value_parser = parse_duration, default_value = "5m")]
    pub(crate) max_retry_delay: Duration,
    /// How long running commands get to finish at shutdown before their process groups are
    /// ended (SIGTERM, SIGKILL 2 s later) and their values given back, once no process of the
    /// group runs. A second SIGINT or SIGTERM ends it at once.
    #[arg(long, env = "DELAYQ_GRACE", value_parser = parse_duration, default_value = "30s")]
    pub(crate) grace: Duration,
    /// Longest run of one command: past it, its process group is ended (SIGTERM, SIGKILL 2 s
    /// later) and, once no process of the group runs, the attempt counts as failed. Default
    /// (and 0): no limit.
    #[arg(long, env = "DELAYQ_TIMEOUT", value_parser = parse_duration)]
    pub(crate) timeout: Option<Duration>,
    /// Keep the last BYTES of a command's stderr with its failed attempt: the attempt's error,
    /// and so the dead letter's, ends with them (`sh exited with exit status: 3; stderr:
    /// ...`), cut at a character, saying how much was printed when it was more. Its stderr is
    /// still passed on to the worker's own as it comes; its stdout is never kept. 0: not read
    /// (the command writes to the worker's stderr itself).
    #[arg(long, env = "DELAYQ_KEEP_STDERR", value_name = "BYTES", default_value_t = 4096, value_parser = parse_keep_stderr)]
    pub(crate) keep_stderr: usize,
    /// At shutdown, after --grace: how long to wait for Redis to take the outcomes and the
    /// values handed back, then again for the transfer schedulers to stop. Values Redis has not
    /// taken stay in flight; the reaper of any worker gives them back after --visibility.
    #[arg(long, env = "DELAYQ_SHUTDOWN_TIMEOUT", value_parser = parse_duration, default_value = "10s")]
    pub(crate) shutdown_timeout: Duration,
    /// Serve /metrics (Prometheus text) and /healthz on this address, e.g. 127.0.0.1:9464; a
    /// loopback address unless --allow-remote.
    #[arg(long, env = "DELAYQ_LISTEN", value_name = "ADDR")]
    pub(crate) listen: Option<std::net::SocketAddr>,
    #[command(flatten, next_help_heading = "HTTP listener (--listen)")]
    pub(crate) http: crate::serve::ListenArgs,
    #[command(flatten)]
    pub(crate) watch: ServerWatchArgs,
    #[cfg(feature = "otel")]
    #[command(flatten, next_help_heading = "OpenTelemetry")]
    pub(crate) otlp: OtlpArgs,
    #[command(flatten)]
    pub(crate) firing: crate::schedule_args::FiringArgs,
    /// The command and its arguments (after --).
    #[arg(last = true, required = true)]
    pub(crate) command: Vec<String>,
}

/// `--keep-stderr`: 0 to [`delayq::reliable::MAX_ERROR_BYTES`], what a dead letter keeps of
/// an error.
fn parse_keep_stderr(text: &str) -> Result<usize, String> {
    let most = delayq::reliable::MAX_ERROR_BYTES;
    match text.trim().parse::<usize>() {
        Ok(bytes) if bytes <= most => Ok(bytes),
        _ => Err(format!(
            "{text:?}: a number of bytes from 0 to {most} (a dead letter keeps at most {most} \
             bytes of an error)"
        )),
    }
}

/// A `--match` glob: `*` and `?` only. Redis's `[...]` classes (and `\` escapes) are refused
/// rather than matched as literal characters, which would match nothing, silently.
fn glob_pattern(pattern: &str) -> Result<String, String> {
    match pattern.find(['[', ']', '\\']) {
        Some(at) => Err(format!(
            "{:?} at byte {at}: --match knows only `*` (any run of characters) and `?` (one \
             character), not `[...]` classes or `\\` escapes; for a name with `[`, `]` or `\\` \
             in it, put `?` in their place",
            &pattern[at..=at]
        )),
        None => Ok(pattern.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarantine_has_no_replay() {
        assert!(Cli::try_parse_from(["delayq", "quarantine", "replay", "q"]).is_err());
        assert!(Cli::try_parse_from(["delayq", "dead", "replay", "q"]).is_ok());
    }
}
