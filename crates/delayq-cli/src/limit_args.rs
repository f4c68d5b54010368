//! `delayq limit`'s subcommands and their options (clap).

use crate::limit_view::{count_of, rate_of};
use crate::shard_args::ShardArgs;
use clap::{Args, Subcommand};
use delayq::limit::Rate;

/// A queue's flow-control limits: what every worker of it obeys, in every process.
#[derive(Debug, Subcommand)]
pub(crate) enum LimitAction {
    /// Change the queue's limits: each flag given replaces that limit (`off` removes it), the
    /// others stay as stored (with --replace: only the flags given). Every running worker of the
    /// queue (`delayq work` and the library's) obeys the new limits from its next take; Java
    /// consumers are not limited. Prints the limits now stored.
    Set(LimitSetArgs),
    /// Print the queue's limits and how much of them is in use (slots held, values held back
    /// per key); `none` when it has none.
    Get {
        /// The queue's name.
        queue: String,
        #[command(flatten)]
        sharding: ShardArgs,
    },
    /// Remove every limit of the queue; prints true if it had any.
    Clear {
        /// The queue's name.
        queue: String,
        /// Exit with status 1 when the queue had no limits (it still prints false).
        #[arg(long)]
        exit_status: bool,
        #[command(flatten)]
        sharding: ShardArgs,
    },
}

/// `delayq limit set`'s options.
#[derive(Debug, Args)]
pub(crate) struct LimitSetArgs {
    /// The queue's name (with --shards, a sharded queue's limits as a whole: queue-wide only).
    pub(crate) queue: String,
    #[command(flatten)]
    pub(crate) sharding: ShardArgs,
    /// Values handled at once across every worker process of the queue (slots are leases: a
    /// killed process's come back within the worker's --visibility); `off` removes the cap.
    #[arg(long, value_name = "N|off", value_parser = parse_count)]
    pub(crate) concurrency: Option<Setting<u32>>,
    /// Starts per period across every worker process, smooth (no burst at a window's start):
    /// N/PERIOD like 100/s, 5/min, 10/250ms, 1000/1h; `off` removes it.
    #[arg(long, value_name = "N/PERIOD|off", value_parser = parse_rate_setting)]
    pub(crate) rate: Option<Setting<Rate>>,
    /// The key of each value for the per-key limits: the string or number at this JSON pointer
    /// of the value (RFC 6901, e.g. /customer/id); a value without it has no key.
    #[arg(long, value_name = "POINTER", conflicts_with_all = ["key_regex", "no_key"])]
    pub(crate) key_pointer: Option<String>,
    /// The key of each value: the first capture group of this regular expression on the value's
    /// text (the whole match without a group); a value it does not match has no key.
    #[arg(long, value_name = "REGEX", conflicts_with = "no_key")]
    pub(crate) key_regex: Option<String>,
    /// Remove the key rule, and with it the per-key limits.
    #[arg(long, conflicts_with_all = ["key_concurrency", "key_rate"])]
    pub(crate) no_key: bool,
    /// Values of one key handled at once across every process; `off` removes it. `delayq work`
    /// needs a key rule (given or stored) for it; the library's workers may read keys their own
    /// way.
    #[arg(long, value_name = "N|off", value_parser = parse_count)]
    pub(crate) key_concurrency: Option<Setting<u32>>,
    /// Starts of one key's values per period across every process; `off` removes it; a key
    /// rule as for --key-concurrency.
    #[arg(long, value_name = "N/PERIOD|off", value_parser = parse_rate_setting)]
    pub(crate) key_rate: Option<Setting<Rate>>,
    /// Store exactly the limits given (every other limit removed) instead of changing the
    /// stored ones.
    #[arg(long)]
    pub(crate) replace: bool,
}

impl LimitSetArgs {
    /// Whether any limit flag was given (`--replace` alone would remove them all: that is
    /// `limit clear`).
    pub(crate) fn changes_anything(&self) -> bool {
        self.concurrency.is_some()
            || self.rate.is_some()
            || self.key_pointer.is_some()
            || self.key_regex.is_some()
            || self.no_key
            || self.key_concurrency.is_some()
            || self.key_rate.is_some()
    }
}

/// A limit as a flag sets it: to a value, or `off` (removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setting<T> {
    Off,
    To(T),
}

impl<T> Setting<T> {
    /// The value to store: `None` for `off`.
    pub(crate) fn value(self) -> Option<T> {
        match self {
            Setting::Off => None,
            Setting::To(value) => Some(value),
        }
    }
}

/// `N` from 1 to 4294967295, or `off`.
fn parse_count(text: &str) -> Result<Setting<u32>, String> {
    match text.trim() {
        "off" => Ok(Setting::Off),
        _ => count_of(text).map(Setting::To),
    }
}

/// A rate as `--rate` takes it, or `off`.
fn parse_rate_setting(text: &str) -> Result<Setting<Rate>, String> {
    match text.trim() {
        "off" => Ok(Setting::Off),
        _ => rate_of(text).map(Setting::To),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use std::time::Duration;

    fn set_args(args: &[&str]) -> Result<LimitSetArgs, clap::Error> {
        let argv = ["delayq", "limit", "set", "q"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Limit {
                action: LimitAction::Set(args),
            } => Ok(args),
            other => panic!("not limit set: {other:?}"),
        }
    }

    #[test]
    fn limit_flags() {
        let args = set_args(&["--concurrency", "3", "--rate", "off"]).unwrap();
        assert_eq!(args.concurrency, Some(Setting::To(3)));
        assert_eq!(args.rate, Some(Setting::Off));
        let args = set_args(&["--key-pointer", "/tenant", "--key-rate", "5/s"]).unwrap();
        let five = Rate::new(5, Duration::from_secs(1)).unwrap();
        assert_eq!(args.key_rate, Some(Setting::To(five)));
        assert!(set_args(&["--rate", "1/400d"]).is_err());
        assert!(set_args(&["--concurrency", "0"]).is_err());
        assert!(set_args(&["--concurrency", "x"]).is_err());
        assert!(set_args(&["--rate", "5"]).is_err());
        assert!(set_args(&["--key-pointer", "/a", "--key-regex", "(.)"]).is_err());
        assert!(set_args(&["--no-key", "--key-concurrency", "1"]).is_err());
        assert!(!set_args(&["--replace"]).unwrap().changes_anything());
    }
}
