//! How many replicas a wait for every replica waits for: the most any delayq process has seen
//! connected to the master, from a record in the master's own keyspace
//! ([`replicas_record`](crate::keys::replicas_record)) that every process reads and extends.
//!
//! Counted per process, a replica missing when the process started (a one-shot `delayq offer`
//! while a replica is partitioned off) would not be waited for, and a forced failover to that
//! replica would lose what was confirmed. The record lives on the master, so it goes with the
//! data to a promoted replica.
//!
//! The record is a hash of counts: field `N` → when (epoch ms) a process last saw `N` replicas
//! connected. It holds counts, not replicas' addresses, because the master does not know its
//! own address: after a failover, the promoted replica would be waited for as its own replica.
//! A count (3 nodes: 2 replicas) holds whichever node is master. Each process writes only its
//! own count's field, so two processes never overwrite each other's. An operator who removed a
//! replica for good deletes the record (`DEL delayq_replicas`; it is learned again from the
//! replicas connected at the next wait); a count not seen for [`FORGOTTEN_AFTER_MS`] is
//! forgotten by itself.

use crate::Result;
use fred::interfaces::{ClientLike, HashesInterface};
use fred::types::{ClusterHash, CustomCommand};
use std::collections::HashMap;

/// A replica no process has seen connected for this long (ms) is no longer waited for: Sentinel
/// and Cluster do not promote a replica cut off from its master for so long (Sentinel: ten
/// times `down-after-milliseconds`; Cluster: `cluster-replica-validity-factor`).
pub(crate) const FORGOTTEN_AFTER_MS: i64 = 24 * 3_600_000;

/// A replica's entry is rewritten when its last-seen time is older than this (ms), so that
/// waits read the record but seldom write it.
const REFRESH_AFTER_MS: i64 = 60_000;

/// What one process knows of the replicas without the record: the most it has seen, and
/// whether it already said that the record failed (said once, not at every wait).
#[derive(Debug, Default)]
pub(super) struct SeenHere {
    most: u32,
    record_failed: bool,
}

/// The replicas a wait for every replica waits for, at least one, on `client`'s connection
/// (the durable connection, with the options of the wait's node). `record`: the key of the
/// shared record (see [`replicas_record`](crate::keys::replicas_record)); `here`: what this
/// process has seen, used (and raised) when the record cannot be read or written.
pub(super) async fn every_replica(
    client: &impl HashesInterface,
    record: Option<&str>,
    now_ms: i64,
    here: &mut SeenHere,
) -> u32 {
    let connected = match connected(client).await {
        Ok(connected) => connected,
        Err(err) => {
            tracing::warn!(error = %err, "reading the master's replicas failed");
            0
        }
    };
    let shared = match record {
        Some(record) => match remembered(client, record, connected, now_ms).await {
            Ok(remembered) => Some(remembered),
            Err(err) => {
                if !std::mem::replace(&mut here.record_failed, true) {
                    tracing::warn!(
                        error = %err,
                        record,
                        "the shared record of replicas could not be read or written; waits \
                         for every replica count only the replicas this process has seen \
                         (said once)"
                    );
                }
                None
            }
        },
        None => None,
    };
    let wanted = match shared {
        // The record is the truth once it answers, so that a replica forgotten there is no
        // longer waited for by a process that saw it.
        Some(remembered) => {
            here.most = remembered.max(connected);
            here.most
        }
        None => {
            here.most = here.most.max(connected);
            here.most
        }
    };
    wanted.max(1)
}

/// Reads the record, records `connected` replicas seen now, forgets counts not seen for
/// [`FORGOTTEN_AFTER_MS`], and returns the most it then holds.
async fn remembered(
    client: &impl HashesInterface,
    record: &str,
    connected: u32,
    now_ms: i64,
) -> Result<u32> {
    let stored: HashMap<String, String> = client.hgetall(record).await?;
    let plan = plan(&stored, connected, now_ms);
    if plan.record {
        let _: i64 = client.hset(record, (connected.to_string(), now_ms)).await?;
    }
    if !plan.forget.is_empty() {
        let _: i64 = client.hdel(record, plan.forget).await?;
    }
    Ok(plan.most)
}

/// What to write to the record, and the most it then holds.
#[derive(Debug, PartialEq, Eq)]
struct Plan {
    /// Whether to stamp the count connected now with now.
    record: bool,
    /// Counts not seen for too long.
    forget: Vec<String>,
    /// The most replicas the record holds afterwards (counting the ones connected now).
    most: u32,
}

fn plan(stored: &HashMap<String, String>, connected: u32, now_ms: i64) -> Plan {
    let mut forget = Vec::new();
    let mut most = connected;
    for (count, seen) in stored {
        // A field that is not a count (written by hand) is left alone and counts for nothing.
        let Ok(count) = count.parse::<u32>() else {
            continue;
        };
        match seen.parse::<i64>() {
            Ok(ms) if now_ms - ms > FORGOTTEN_AFTER_MS => forget.push(count),
            // Not a time (written by hand): counted, and only an operator removes it.
            _ => most = most.max(count),
        }
    }
    forget.sort_unstable();
    let last_seen = stored
        .get(&connected.to_string())
        .and_then(|ms| ms.parse::<i64>().ok());
    let stale = last_seen.is_none_or(|ms| now_ms - ms >= REFRESH_AFTER_MS);
    Plan {
        // Only the most is worth keeping fresh; fewer replicas are kept by no one, and expire.
        record: connected > 0 && connected >= most && stale,
        forget: forget.iter().map(u32::to_string).collect(),
        most,
    }
}

/// The replicas connected to the master now (`connected_slaves` of `INFO replication`).
async fn connected(client: &impl ClientLike) -> Result<u32> {
    let info: String = client
        .custom(
            CustomCommand::new_static("INFO", ClusterHash::Random, false),
            vec!["replication"],
        )
        .await?;
    info.lines()
        .find_map(|line| line.trim().strip_prefix("connected_slaves:"))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| crate::Error::UnexpectedReply {
            context: "INFO replication",
            detail: "no connected_slaves".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(fields: &[(&str, String)]) -> HashMap<String, String> {
        fields
            .iter()
            .map(|(count, seen)| ((*count).to_owned(), seen.clone()))
            .collect()
    }

    #[test]
    fn the_most_replicas_seen_within_a_day_are_waited_for() {
        let now = 100 * FORGOTTEN_AFTER_MS;
        let record = stored(&[
            ("1", (now - 1_000).to_string()),
            ("2", (now - FORGOTTEN_AFTER_MS).to_string()),
            ("3", (now - FORGOTTEN_AFTER_MS - 1).to_string()),
            ("seven", now.to_string()),
        ]);
        let plan = plan(&record, 1, now);
        assert_eq!(
            plan.most, 2,
            "2 a day ago still counts; 3 is older; names are ignored"
        );
        assert_eq!(plan.forget, ["3"]);
        assert!(!plan.record, "fewer than the most are not recorded");
    }

    #[test]
    fn the_count_seen_now_is_recorded_when_it_is_the_most_and_not_fresh() {
        let now = 100 * FORGOTTEN_AFTER_MS;
        assert!(plan(&stored(&[]), 2, now).record);
        assert_eq!(plan(&stored(&[]), 2, now).most, 2);
        assert!(
            !plan(&stored(&[]), 0, now).record,
            "no replica: nothing to keep"
        );
        let fresh = stored(&[("2", (now - REFRESH_AFTER_MS + 1).to_string())]);
        assert!(!plan(&fresh, 2, now).record);
        let old = stored(&[("2", (now - REFRESH_AFTER_MS).to_string())]);
        assert!(plan(&old, 2, now).record);
        assert!(plan(&old, 3, now).record, "more than recorded");
        let by_hand = stored(&[("4", "soon".to_owned())]);
        let plan = plan(&by_hand, 2, now);
        assert_eq!((plan.most, plan.forget.len()), (4, 0));
    }
}
