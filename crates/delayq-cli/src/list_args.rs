//! The subcommands over a queue's lists: `dead`, `inflight`, `ready` and `quarantine`, and
//! the page and the dead letter they name.

use crate::durability_args::DurabilityArgs;
use crate::duration::parse_duration;
use crate::queue_arg::QueueArg;
use clap::{Args, Subcommand};
use std::time::Duration;

/// A page of one of a queue's lists: from a position, how many.
#[derive(Debug, Args)]
pub(crate) struct PageArgs {
    /// The position to start from (0: the first; each line says its own).
    #[arg(long, default_value_t = 0)]
    pub(crate) from: usize,
    /// How many to show (0: all from --from on).
    #[arg(long, default_value_t = 20)]
    pub(crate) limit: usize,
}

/// A dead letter named by its id, as `dead list` and the dashboard show it.
#[derive(Debug, Args)]
pub(crate) struct DeadLetterArg {
    #[command(flatten)]
    pub(crate) target: QueueArg,
    /// The dead letter's id (16 hex digits, from `dead list` or the dashboard).
    pub(crate) id: String,
    /// Where `dead list` showed it: it is looked for among the 1,000 records up to there
    /// (records only move nearer the head). Default: among the first 1,000.
    #[arg(long, value_name = "POSITION")]
    pub(crate) at: Option<usize>,
    /// Exit with status 1 when there was no such dead letter (it still prints false).
    #[arg(long)]
    pub(crate) exit_status: bool,
}

/// What to do with the dead letters.
#[derive(Debug, Subcommand)]
pub(crate) enum DeadAction {
    /// Print them, oldest first, without taking them: position, id, attempts, time, error
    /// (why the last attempt failed: for `work`, the end of the command's stderr), value (its
    /// first 64 KiB).
    List {
        #[command(flatten)]
        target: QueueArg,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Put one dead letter back onto the target list with a fresh attempt count; prints true,
    /// or false when it is not there (retried, deleted or trimmed meanwhile).
    Retry(DeadLetterArg),
    /// Delete one dead letter; prints true, or false when it is not there.
    Delete(DeadLetterArg),
    /// Put dead letters back into the queue with fresh attempt counts; prints how many.
    Replay {
        #[command(flatten)]
        target: QueueArg,
        /// How many, oldest first (0: all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
        /// Due after this delay (0: straight onto the target list).
        #[arg(long, value_parser = parse_duration, default_value = "0s")]
        delay: Duration,
        #[command(flatten)]
        durability: DurabilityArgs,
    },
    /// Delete them all; prints how many there were.
    Purge {
        #[command(flatten)]
        target: QueueArg,
    },
}

/// What to do with the values in flight.
#[derive(Debug, Subcommand)]
pub(crate) enum InflightAction {
    /// Print them, nearest deadline first, without touching them: position, delivery id,
    /// deadline, value (its first 64 KiB).
    List {
        #[command(flatten)]
        target: QueueArg,
        #[command(flatten)]
        page: PageArgs,
    },
}

/// What to do with the ready values.
#[derive(Debug, Subcommand)]
pub(crate) enum ReadyAction {
    /// Print them from the head of the list (the next one taken), without taking them:
    /// position, value (its first 64 KiB).
    List {
        #[command(flatten)]
        target: QueueArg,
        #[command(flatten)]
        page: PageArgs,
    },
}

/// What to do with the quarantine (malformed entries cannot be replayed).
#[derive(Debug, Subcommand)]
pub(crate) enum QuarantineAction {
    /// Print them, oldest first: length and hex.
    List {
        #[command(flatten)]
        target: QueueArg,
        /// How many to show (0: all).
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Delete them all; prints how many there were.
    Purge {
        #[command(flatten)]
        target: QueueArg,
    },
}
