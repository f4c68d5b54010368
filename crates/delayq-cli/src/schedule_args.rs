//! `delayq schedule`'s subcommands and their options (clap).

use crate::duration::parse_duration;
use crate::shard_args::{parse_shards, ShardArgs};
use clap::{ArgGroup, Args, Subcommand};
use std::time::Duration;

/// A recurring schedule's action.
#[derive(Debug, Subcommand)]
pub(crate) enum ScheduleAction {
    /// Create or replace the schedule ID of QUEUE: every occurrence offers the value, due at
    /// the occurrence's time; prints the next occurrence. Any running `delayq transfer QUEUE`,
    /// `transfer --all` or `work QUEUE` fires it, each occurrence once.
    Set(ScheduleSetArgs),
    /// List schedules: next and last occurrence, paused (every queue's without QUEUE).
    List {
        /// The queue (default: every queue with schedules, on every master of a Cluster).
        queue: Option<String>,
        /// The queue is sharded over N shards: its schedules are those of every shard.
        #[arg(long, value_name = "N", value_parser = parse_shards, requires = "queue")]
        shards: Option<usize>,
        /// While changing a sharded queue's number of shards: it had P before.
        #[arg(long, value_name = "P", value_parser = parse_shards, requires = "shards")]
        previous_shards: Option<usize>,
    },
    /// Remove a schedule (entries it offered stay pending); prints true or false.
    Remove {
        #[command(flatten)]
        target: ScheduleTarget,
        /// Exit with status 1 when there was no such schedule (it still prints false).
        #[arg(long)]
        exit_status: bool,
    },
    /// Pause a schedule: nothing fires until `schedule resume`.
    Pause {
        #[command(flatten)]
        target: ScheduleTarget,
    },
    /// Resume a schedule from its first occurrence after now (the pause's are not fired).
    Resume {
        #[command(flatten)]
        target: ScheduleTarget,
    },
    /// Offer the schedule's value now, once, apart from its occurrences; prints the entry's
    /// handle.
    Trigger {
        #[command(flatten)]
        target: ScheduleTarget,
    },
}

/// The schedule an action is about.
#[derive(Debug, Args)]
pub(crate) struct ScheduleTarget {
    /// The queue (with --shards, a sharded queue: a schedule lives in the shard its id picks).
    pub(crate) queue: String,
    /// The schedule's id.
    pub(crate) id: String,
    #[command(flatten)]
    pub(crate) sharding: ShardArgs,
}

/// `delayq schedule set`'s options.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("when").required(true).args(["cron", "every"])))]
#[command(group(ArgGroup::new("what").required(true).args(["value", "value_file"])))]
pub(crate) struct ScheduleSetArgs {
    #[command(flatten)]
    pub(crate) target: ScheduleTarget,
    /// A cron expression: 5 fields (minute hour day month weekday) or 6 with seconds first;
    /// `L`, `W`, `#`, names and `@daily`-style aliases too.
    #[arg(long, value_name = "EXPR")]
    pub(crate) cron: Option<String>,
    /// A fixed interval of real time, like 30s, 5m, 1h.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) every: Option<Duration>,
    /// The IANA time zone the cron expression is read in (zone database built in).
    #[arg(long, value_name = "ZONE", default_value = "UTC", requires = "cron")]
    pub(crate) tz: String,
    /// The value each occurrence offers (as `offer` takes it; `-` reads stdin).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) value: Option<String>,
    /// Read the value from this file (`-`: stdin).
    #[arg(long, value_name = "PATH")]
    pub(crate) value_file: Option<std::path::PathBuf>,
    /// Occurrences found older than a minute (nothing fired them): skip them, fire the
    /// latest once, or all of them (all:CAP: the latest CAP; all: 100).
    #[arg(long, value_name = "POLICY", default_value = "skip")]
    pub(crate) missed: String,
    /// No occurrence before this time (RFC 3339, e.g. 2026-12-01T00:00:00Z, or epoch ms); an
    /// interval counts from it. In the past: the occurrences since are missed ones.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub(crate) start: Option<i64>,
    /// No occurrence after this time (RFC 3339 or epoch ms).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub(crate) end: Option<i64>,
}

/// An instant as RFC 3339 with its offset, or epoch milliseconds.
fn parse_time(text: &str) -> Result<i64, String> {
    delayq::time::parse_instant(text).map_err(|err| err.to_string())
}

/// How a `transfer` or `work` process fires the recurring schedules of its queues.
#[derive(Debug, Args)]
pub(crate) struct FiringArgs {
    /// How far ahead of its time a recurring schedule's occurrence is offered (due at its time
    /// all the same); `off` fires no schedules.
    #[arg(long, env = "DELAYQ_SCHEDULE_LEAD", value_name = "DURATION", default_value = "2s", value_parser = parse_lead)]
    pub(crate) schedule_lead: Lead,
    /// How often each queue's due recurring schedules are read (one read by score a queue).
    #[arg(long, env = "DELAYQ_SCHEDULE_TICK", value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub(crate) schedule_tick: Duration,
}

impl FiringArgs {
    /// The firing settings, or `None` with `--schedule-lead off`.
    pub(crate) fn config(&self) -> Option<delayq::FiringConfig> {
        self.schedule_lead.0.map(|lead| {
            delayq::FiringConfig::default()
                .with_lead(lead)
                .with_tick(self.schedule_tick)
        })
    }
}

/// `--schedule-lead`: how far ahead occurrences are offered; `None`: no schedules fired.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lead(pub(crate) Option<Duration>);

/// `--schedule-lead`: a duration, or `off`.
pub(crate) fn parse_lead(text: &str) -> Result<Lead, String> {
    match text {
        "off" => Ok(Lead(None)),
        _ => parse_duration(text).map(|lead| Lead(Some(lead))),
    }
}
