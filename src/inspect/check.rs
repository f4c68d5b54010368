//! [`CheckReport`] and [`AccessCheck`]: what `check` found about the server a queue lives on.

use super::{QueueStats, ReliableStats};
use crate::redis::server;

/// What [`Inspect::check`](super::Inspect) found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CheckReport {
    /// The server's `BUSY` refusal, when it is running a script past `busy-reply-threshold`
    /// and refuses every other command: then nothing else could be read.
    pub busy: Option<String>,
    /// The server's name and version, e.g. `redis 7.0.15` or `valkey 8.1.0` (`None`: INFO
    /// refused).
    pub server: Option<String>,
    /// `maxmemory-policy` (`None`: CONFIG refused).
    pub maxmemory_policy: Option<String>,
    /// Whether the append-only file is on (`None`: not readable).
    pub aof: Option<bool>,
    /// The `save` setting of RDB snapshots (`None`: not readable; empty: none).
    pub rdb_save: Option<String>,
    /// The ACL user this client is (`ACL WHOAMI`).
    pub user: Option<String>,
    /// How the user's rights were checked.
    pub access: AccessCheck,
    /// Commands, keys and channels the queue needs that the user may not use.
    pub denied: Vec<String>,
    /// The queue's counters, or why they could not be read (e.g. NOPERM).
    pub stats: std::result::Result<QueueStats, String>,
    /// The reliable consumer's counters, or why they could not be read.
    pub reliable: std::result::Result<ReliableStats, String>,
    /// Whether delayq's schedulers are paused for the queue
    /// ([`Admin::pause`](crate::admin::Admin)), or why that could not be read.
    pub paused: std::result::Result<bool, String>,
}

/// How [`CheckReport::denied`] was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AccessCheck {
    /// Every command, key and channel the queue uses, with `ACL DRYRUN` (nothing run).
    DryRun,
    /// Only the keys, with an `EVALSHA` of a loaded script that declares them and does nothing
    /// (`ACL DRYRUN` is not allowed to this user); commands and the channel are not checked.
    KeysOnly,
    /// Nothing: neither `ACL DRYRUN` nor the probe (`SCRIPT LOAD`, `EVALSHA`) is allowed.
    NotChecked,
}

impl CheckReport {
    /// The report on a server that refused even the connection's first command as `busy`
    /// (`detail`: its reply): everything else is unknown.
    pub fn of_busy_server(detail: String) -> CheckReport {
        fn unknown<T>() -> std::result::Result<T, String> {
            Err("the server is busy".to_owned())
        }
        CheckReport {
            busy: Some(detail),
            server: None,
            maxmemory_policy: None,
            aof: None,
            rdb_save: None,
            user: None,
            access: AccessCheck::NotChecked,
            denied: Vec::new(),
            stats: unknown(),
            reliable: unknown(),
            paused: unknown(),
        }
    }

    /// What an operator should fix, in words; empty when nothing.
    pub fn warnings(&self) -> Vec<String> {
        if self.busy.is_some() {
            return vec![
                "the server is busy running a script: it refuses every command until \
                 the script ends; SCRIPT KILL stops a script that has not written yet (see \
                 \"Stopping a runaway script\" in docs/operations.md)"
                    .to_owned(),
            ];
        }
        let mut out = Vec::new();
        match self.maxmemory_policy.as_deref() {
            Some(policy) if server::evicts(policy) => out.push(format!(
                "maxmemory-policy is {policy}: under memory pressure Redis may delete pending \
                 values without an error; use noeviction"
            )),
            Some(_) => {}
            None => out.push("maxmemory-policy is not readable (CONFIG refused)".to_owned()),
        }
        if self.aof == Some(false) && self.rdb_save.as_deref() == Some("") {
            out.push(
                "no persistence (appendonly no, save \"\"): a restart loses every pending value"
                    .to_owned(),
            );
        }
        if !self.denied.is_empty() {
            out.push(format!(
                "user {} may not use: {}",
                self.user.as_deref().unwrap_or("?"),
                self.denied.join(", ")
            ));
        }
        match &self.stats {
            Ok(stats) if stats.quarantined > 0 => out.push(format!(
                "{} malformed entries in quarantine",
                stats.quarantined
            )),
            Ok(_) => {}
            Err(err) => out.push(format!("the queue's counters are not readable: {err}")),
        }
        if let Err(err) = &self.reliable {
            out.push(format!(
                "the reliable consumer's counters are not readable: {err}"
            ));
        }
        if self.paused == Ok(true) {
            out.push(
                "the queue is paused: delayq's schedulers leave its due values pending and its \
                 workers take none of its ready values until `delayq resume`"
                    .to_owned(),
            );
        }
        out
    }
}
