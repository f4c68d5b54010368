//! How many replicas a wait for every replica waits for: the most any delayq process has seen
//! connected to the master, from a record in the master's own keyspace
//! ([`replicas_record`](crate::keys::replicas_record)) that every process reads and extends.
//!
//! Counted per process, a replica missing when the process started (a one-shot `delayq offer`
//! while a replica is partitioned off) would not be waited for, and a forced failover to that
//! replica would lose what was confirmed. The record lives on the master, so it goes with the
//! data to a promoted replica. An operator forgets a replica removed for good with
//! `HDEL delayq_replicas IP:PORT`; one not seen for [`FORGOTTEN_AFTER`] is forgotten by itself.

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

/// What the master says of its replicas now (`INFO replication`).
#[derive(Debug, Default, PartialEq, Eq)]
struct Connected {
    /// `connected_slaves`.
    count: u32,
    /// `ip:port` of each `slaveN` line.
    addresses: Vec<String>,
}

/// The replicas a wait for every replica waits for, at least one, on `client`'s connection
/// (the durable connection, with the options of the wait's node). `record`: the key of the
/// shared record (see [`replicas_record`](crate::keys::replicas_record)); `fallback`: the most
/// this process has seen, used (and raised) when the record cannot be read or written.
pub(super) async fn every_replica(
    client: &(impl ClientLike + HashesInterface),
    record: Option<&str>,
    now_ms: i64,
    fallback: &mut u32,
) -> u32 {
    let connected = match connected(client).await {
        Ok(connected) => connected,
        Err(err) => {
            tracing::warn!(error = %err, "reading the master's replicas failed");
            Connected::default()
        }
    };
    let shared = match record {
        Some(record) => match remembered(client, record, &connected.addresses, now_ms).await {
            Ok(remembered) => Some(remembered),
            Err(err) => {
                tracing::warn!(
                    error = %err,
                    record,
                    "the shared record of replicas could not be read or written; counting \
                     only the replicas this process has seen"
                );
                None
            }
        },
        None => None,
    };
    let wanted = match shared {
        // The record is the truth once it answers, so that a replica forgotten there is no
        // longer waited for by a process that saw it.
        Some(remembered) => {
            *fallback = remembered.max(connected.count);
            *fallback
        }
        None => {
            *fallback = (*fallback).max(connected.count);
            *fallback
        }
    };
    wanted.max(1)
}

/// Reads the record, adds the replicas connected now (`addresses`), drops those not seen for
/// [`FORGOTTEN_AFTER_MS`], and returns how many it then holds.
async fn remembered(
    client: &impl HashesInterface,
    record: &str,
    addresses: &[String],
    now_ms: i64,
) -> Result<u32> {
    let stored: HashMap<String, String> = client.hgetall(record).await?;
    let plan = plan(&stored, addresses, now_ms);
    if !plan.refresh.is_empty() {
        let fields: Vec<(String, i64)> = plan.refresh.iter().map(|a| (a.clone(), now_ms)).collect();
        let _: i64 = client.hset(record, fields).await?;
    }
    if !plan.forget.is_empty() {
        let _: i64 = client.hdel(record, plan.forget).await?;
    }
    Ok(plan.kept)
}

/// What to write to the record, and what it then holds.
#[derive(Debug, PartialEq, Eq)]
struct Plan {
    /// Replicas to stamp with now.
    refresh: Vec<String>,
    /// Replicas not seen for too long.
    forget: Vec<String>,
    /// Replicas the record holds afterwards.
    kept: u32,
}

fn plan(stored: &HashMap<String, String>, addresses: &[String], now_ms: i64) -> Plan {
    let refresh: Vec<String> = addresses
        .iter()
        .filter(|a| {
            let seen = stored.get(*a).and_then(|ms| ms.parse::<i64>().ok());
            seen.is_none_or(|ms| now_ms - ms >= REFRESH_AFTER_MS)
        })
        .cloned()
        .collect();
    let mut forget: Vec<String> = stored
        .iter()
        .filter(|(address, _)| !addresses.contains(address))
        // An entry that is not a time (written by hand) is kept: only an operator removes it.
        .filter(|(_, ms)| {
            ms.parse::<i64>()
                .is_ok_and(|ms| now_ms - ms > FORGOTTEN_AFTER_MS)
        })
        .map(|(address, _)| address.clone())
        .collect();
    forget.sort();
    let unrecorded = addresses
        .iter()
        .filter(|a| !stored.contains_key(*a))
        .count();
    let kept = stored.len() - forget.len() + unrecorded;
    Plan {
        refresh,
        forget,
        kept: u32::try_from(kept).unwrap_or(u32::MAX),
    }
}

/// The replicas connected to the master now, from `INFO replication`.
async fn connected(client: &impl ClientLike) -> Result<Connected> {
    let info: String = client
        .custom(
            CustomCommand::new_static("INFO", ClusterHash::Random, false),
            vec!["replication"],
        )
        .await?;
    parse_info(&info).ok_or_else(|| crate::Error::UnexpectedReply {
        context: "INFO replication",
        detail: "no connected_slaves".into(),
    })
}

/// `connected_slaves:N` and the `slaveN:ip=…,port=…,…` lines.
fn parse_info(info: &str) -> Option<Connected> {
    let mut count = None;
    let mut addresses = Vec::new();
    for line in info.lines().map(str::trim) {
        if let Some(n) = line.strip_prefix("connected_slaves:") {
            count = n.parse().ok();
            continue;
        }
        let Some((name, fields)) = line.split_once(':') else {
            continue;
        };
        let numbered = name
            .strip_prefix("slave")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !numbered {
            continue;
        }
        let field = |key: &str| {
            fields
                .split(',')
                .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
        };
        if let (Some(ip), Some(port)) = (field("ip"), field("port")) {
            addresses.push(format!("{ip}:{port}"));
        }
    }
    Some(Connected {
        count: count?,
        addresses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_gives_the_count_and_each_replicas_address() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
                    slave0:ip=127.0.0.1,port=7001,state=online,offset=10,lag=0\r\n\
                    slave1:ip=::1,port=7002,state=wait_bgsave,offset=0,lag=1\r\n\
                    slave_read_repl_offset:10\r\nmaster_repl_offset:10\r\n";
        let connected = parse_info(info).unwrap();
        assert_eq!(connected.count, 2);
        assert_eq!(connected.addresses, ["127.0.0.1:7001", "::1:7002"]);
        assert_eq!(parse_info("role:master\r\n"), None);
    }

    #[test]
    fn the_record_keeps_replicas_not_seen_now_until_they_are_a_day_old() {
        let now = 100 * FORGOTTEN_AFTER_MS;
        let stored: HashMap<String, String> = [
            ("a:1", now - 1_000),                  // seen lately: kept, not rewritten
            ("b:2", now - REFRESH_AFTER_MS),       // seen now, stamp old: rewritten
            ("c:3", now - FORGOTTEN_AFTER_MS),     // missing, a day old: kept
            ("d:4", now - FORGOTTEN_AFTER_MS - 1), // missing, over a day: forgotten
        ]
        .into_iter()
        .map(|(a, ms)| (a.to_owned(), ms.to_string()))
        .chain([("e:5".to_owned(), "by hand".to_owned())])
        .collect();
        let seen = ["a:1", "b:2", "f:6"].map(str::to_owned);
        let plan = plan(&stored, &seen, now);
        assert_eq!(plan.refresh, ["b:2", "f:6"]);
        assert_eq!(plan.forget, ["d:4"]);
        assert_eq!(plan.kept, 5, "a, b, c, e and the new f");
    }
}
