//! `delayq offer`'s deduplication options (clap): a business key, its window, and whether later
//! offers are dropped (throttle, the default) or replace the pending entry (`--debounce`).

use crate::duration::parse_duration;
use clap::Args;
use delayq::dedup::Dedup;
use std::time::Duration;

/// `--dedup-key K --dedup-window D [--debounce]`.
#[derive(Debug, Args)]
pub(crate) struct DedupArgs {
    /// Deduplicate by this business key (docs/dedup.md): while the key's entry is pending and
    /// its window open, the offer is dropped (prints `kept` and that entry's handle), or with
    /// --debounce replaces it (`replaced`); else it is offered (`offered`).
    #[arg(long, value_name = "KEY", requires = "dedup_window", conflicts_with_all = ["unique", "handle"])]
    pub(crate) dedup_key: Option<String>,
    /// How long the key's window lasts from the offer that opened it, like 30s or 5m.
    #[arg(long, value_name = "D", value_parser = parse_duration, requires = "dedup_key")]
    pub(crate) dedup_window: Option<Duration>,
    /// Replace the key's pending entry (value and due time) and open its window again, instead
    /// of dropping the offer.
    #[arg(long, requires = "dedup_key")]
    pub(crate) debounce: bool,
}

impl DedupArgs {
    /// The deduplication asked for, if any.
    pub(crate) fn dedup(&self) -> Option<Dedup> {
        let key = self.dedup_key.clone()?;
        let window = self.dedup_window?;
        Some(match self.debounce {
            true => Dedup::debounce(key, window),
            false => Dedup::throttle(key, window),
        })
    }
}
