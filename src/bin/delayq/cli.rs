//! The command line: options and subcommands (clap), and duration parsing.

use crate::text_codec::CodecName;
use clap::{Args, Parser, Subcommand};
use delayq::{Clock, EntryFormat};
use std::time::Duration;

/// Operate Redisson-compatible delayed queues (RDelayedQueue) on Redis.
#[derive(Debug, Parser)]
#[command(name = "delayq", version, about)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The options every command takes.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// Redis URL: redis://, redis-cluster://host:port?node=host:port,
    /// redis-sentinel://host:port?sentinelServiceName=NAME
    #[arg(
        long,
        global = true,
        env = "REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    pub(crate) url: String,

    /// The Redisson codec of the queue's values.
    #[arg(long, global = true, value_enum, default_value_t = CodecName::String)]
    pub(crate) codec: CodecName,

    /// Java class written as `@class` for JSON object values (with --codec json or msgpack).
    #[arg(long, global = true)]
    pub(crate) java_class: Option<String>,

    /// Write legacy `dLc0` entries (for Java peers on Redisson older than 3.21.1).
    #[arg(long, global = true)]
    pub(crate) legacy: bool,

    /// Stamp due times and decide what is due with the Redis server's clock (TIME) instead of
    /// this host's (Java peers keep using their own clocks).
    #[arg(long, global = true)]
    pub(crate) server_clock: bool,

    /// Print one JSON document per line for every value and result (values in their JSON
    /// form: a string, a number, the JSON value itself, base64 for --codec bytes, the JavaValue
    /// form for --codec kryo).
    #[arg(long, global = true, conflicts_with = "null_data")]
    pub(crate) json: bool,

    /// Scripts: end every printed record with a NUL byte instead of a newline, and read
    /// NUL-separated values from --value-file / stdin (one command per value).
    #[arg(long, global = true)]
    pub(crate) null_data: bool,
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
    pub(crate) fn entry_format(&self) -> EntryFormat {
        if self.legacy {
            EntryFormat::Legacy
        } else {
            EntryFormat::Current
        }
    }

    pub(crate) fn clock(&self) -> Clock {
        if self.server_clock {
            Clock::Server
        } else {
            Clock::Client
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Offer a value, due after --delay.
    Offer {
        /// The destination queue's name.
        queue: String,
        #[command(flatten)]
        value: ValueArgs,
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
        #[command(flatten)]
        value: ValueArgs,
        /// The new delay from now.
        #[arg(long, value_parser = parse_duration)]
        delay: Duration,
    },
    /// Run a reliable worker: each value is handed to COMMAND (in the environment variables
    /// DELAYQ_VALUE, DELAYQ_ATTEMPT and DELAYQ_QUEUE); exit 0 acknowledges it, anything else is
    /// a failed attempt, retried with backoff and dead-lettered after --max-attempts. Runs until
    /// SIGINT or SIGTERM, then lets running commands finish (within --grace).
    Work(WorkArgs),
    /// Dead letters: values that failed every attempt.
    Dead {
        #[command(subcommand)]
        action: DeadAction,
    },
    /// Quarantined entries: malformed members taken out of the delayed queue.
    Quarantine {
        #[command(subcommand)]
        action: QuarantineAction,
    },
    /// Take due values off the target list, one per line (or per NUL with --null-data, one JSON
    /// document per line with --json).
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
        #[command(flatten)]
        value: ValueArgs,
    },
    /// Show pending values in offer order with their due times.
    Peek {
        /// The destination queue's name.
        queue: String,
        /// How many to show.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Counters of a queue (one JSON object with --json).
    Stats {
        /// The destination queue's name.
        queue: String,
    },
    /// Delete every pending entry (the target list stays); prints true if any was deleted.
    Clear {
        /// The destination queue's name.
        queue: String,
    },
    /// Run transfer schedulers for the queues until SIGINT or SIGTERM (or, with --once, move
    /// what is due now and exit).
    Transfer {
        /// The destination queues' names.
        #[arg(required = true)]
        queues: Vec<String>,
        /// Move every entry due now, print how many per queue, and exit (for cron-style runs).
        #[arg(long)]
        once: bool,
    },
}

/// `delayq work`'s options.
#[derive(Debug, Args)]
pub(crate) struct WorkArgs {
    /// The destination queue's name.
    pub(crate) queue: String,
    /// Commands run at once.
    #[arg(long, default_value_t = 1)]
    pub(crate) concurrency: usize,
    /// How long a value may go without a heartbeat before another worker gets it.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub(crate) visibility: Duration,
    /// Deliveries of a value in all before it becomes a dead letter.
    #[arg(long, default_value_t = 5)]
    pub(crate) max_attempts: u32,
    /// Wait before the first retry; doubles up to --max-retry-delay (with 20 % jitter).
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub(crate) retry_delay: Duration,
    /// Longest wait before a retry.
    #[arg(long, value_parser = parse_duration, default_value = "5m")]
    pub(crate) max_retry_delay: Duration,
    /// How long running commands get to finish at shutdown before they are killed and their
    /// values given back.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub(crate) grace: Duration,
    /// The command and its arguments (after --).
    #[arg(last = true, required = true)]
    pub(crate) command: Vec<String>,
}

/// What to do with the dead letters.
#[derive(Debug, Subcommand)]
pub(crate) enum DeadAction {
    /// Print them, oldest first: attempts, time, error, value.
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

/// What to do with the quarantine (malformed entries cannot be replayed).
#[derive(Debug, Subcommand)]
pub(crate) enum QuarantineAction {
    /// Print them, oldest first: length and hex.
    List {
        /// The destination queue's name.
        queue: String,
        /// How many to show (0: all).
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Delete them all; prints how many there were.
    Purge {
        /// The destination queue's name.
        queue: String,
    },
}

/// Parses `250ms`, `10s`, `15m`, `2h`, `1d` (and `0`).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
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

    #[test]
    fn quarantine_has_no_replay() {
        assert!(Cli::try_parse_from(["delayq", "quarantine", "replay", "q"]).is_err());
        assert!(Cli::try_parse_from(["delayq", "dead", "replay", "q"]).is_ok());
    }
}
