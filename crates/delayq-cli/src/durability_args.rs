//! What a write of the command line waits for (`offer`, `dead replay`): replicas, the AOF.

use crate::duration::parse_duration;
use clap::Args;
use delayq::Durability;
use std::time::Duration;

/// The options of a durable write.
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct DurabilityArgs {
    /// Wait until N replicas acknowledged each write (Redis WAIT), or `all`: the most replicas
    /// any delayq process has seen connected to the master in the last 24 hours, recorded on
    /// the master (delayq_replicas), so a replica missing now is still waited for (a forced
    /// failover then loses nothing that was confirmed; after removing a replica for good:
    /// redis-cli DEL delayq_replicas). A write they do not confirm within --wait-timeout exits
    /// 9: it IS on the master, but may or may not survive a failover.
    #[arg(long, value_name = "N|all", value_parser = parse_replicas)]
    pub(crate) wait_replicas: Option<Replicas>,
    /// How long a write waits for --wait-replicas / --wait-aof (at most 1h).
    #[arg(long, value_name = "DURATION", value_parser = parse_wait_timeout, default_value = "1s")]
    pub(crate) wait_timeout: Duration,
    /// Also wait until the master fsynced the write to its append-only file (WAITAOF: Redis
    /// 7.2+ or Valkey, with appendonly yes); replicas then count once they fsynced theirs.
    #[arg(long)]
    pub(crate) wait_aof: bool,
}

/// How many replicas `--wait-replicas` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replicas {
    /// This many.
    Count(u32),
    /// Every replica the master has had (`Durability::every_replica`).
    All,
}

fn parse_replicas(text: &str) -> Result<Replicas, String> {
    match text {
        "all" => Ok(Replicas::All),
        _ => text
            .parse()
            .map(Replicas::Count)
            .map_err(|_| format!("{text:?}: a number of replicas, or all")),
    }
}

/// A wait timeout, at most [`Durability::MAX_TIMEOUT`].
fn parse_wait_timeout(text: &str) -> Result<Duration, String> {
    let timeout = parse_duration(text)?;
    match timeout <= Durability::MAX_TIMEOUT {
        true => Ok(timeout),
        false => Err(format!(
            "{text} is over the most a write may wait, {}: a wait holds the queue's durable \
             connection that long",
            humantime::format_duration(Durability::MAX_TIMEOUT)
        )),
    }
}

impl DurabilityArgs {
    /// What these options ask for ([`Durability::none`] without --wait-replicas or --wait-aof).
    pub(crate) fn durability(&self) -> Durability {
        let replicas = match self.wait_replicas {
            Some(Replicas::All) => Durability::every_replica(),
            Some(Replicas::Count(n)) => Durability::replicas(n),
            None => Durability::none(),
        };
        let wanted = if self.wait_aof {
            replicas.local_aof()
        } else {
            replicas
        };
        wanted.timeout(self.wait_timeout)
    }
}
