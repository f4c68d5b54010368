//! The registry of live delayq workers and schedulers. A queue's registry is a zset in its own
//! hash tag (`delayq_procs:{NAME}`): each process serving the queue by name adds its record as
//! a member scored by when it expires, again on every beat, and removes it at a clean stop;
//! every beat drops the members past their time (processes that died) and extends the key's
//! time to live, so a queue nobody serves any more loses the key. Schedulers that find queues
//! by discovery write one record naming their globs to `delayq_discovering:{delayq}` instead
//! of one per queue found. Every process also writes one record naming the queues it serves to
//! `delayq_live:{delayq}`, so that a console lists every process in one read however many
//! queues there are (a process whose rights do not reach that key leaves it out). A record is
//! the member itself, so a list is one `ZRANGEBYSCORE`.

use crate::error::Error;
use crate::keys::{discovering_processes, glob_match, live_processes, processes_key};
use crate::Result;
use fred::clients::Client;
use fred::interfaces::{KeysInterface, SortedSetsInterface};
use fred::types::{ExpireOptions, Value};
use std::collections::BTreeSet;

/// What separates a record's fields (none holds one: host names and numbers).
const FIELD_SEPARATOR: char = '\t';

/// What kind of delayq process a record is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessKind {
    /// A worker (taking values and running jobs).
    Worker,
    /// A scheduler group (moving due values).
    Scheduler,
}

impl ProcessKind {
    fn name(self) -> &'static str {
        match self {
            ProcessKind::Worker => "worker",
            ProcessKind::Scheduler => "scheduler",
        }
    }
}

/// One live delayq process, as its registry record says. Serializes with its fields' names.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ProcessInfo {
    /// The process's id (host, pid and a random part): every worker and scheduler group of one
    /// process has the same, and the delivery ids of its takes carry it
    /// ([`DeliveryOrigin`](crate::reliable::DeliveryOrigin)).
    pub id: String,
    /// `worker` or `scheduler`.
    pub kind: String,
    /// The host name it runs on.
    pub host: String,
    /// Its process id on that host.
    pub pid: u32,
    /// The delayq version it runs.
    pub version: String,
    /// When it started, epoch ms.
    pub started_ms: i64,
    /// When it last wrote its record, epoch ms (by its clock).
    pub beat_ms: i64,
    /// For a scheduler that finds queues by discovery, its globs (`*` for every queue); empty
    /// for a process serving the queue by name.
    pub patterns: Vec<String>,
    /// The queues it serves by name, as its record in the registry of every process says
    /// ([`live_processes`](crate::inspect::live_processes)); empty in a queue's own registry.
    pub queues: Vec<String>,
}

/// What a process says of itself.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    id: String,
    kind: ProcessKind,
    host: String,
    started_ms: i64,
}

impl Identity {
    /// The identity of one worker or scheduler group of this process. Every one of a process
    /// has the process's id ([`crate::process::id`]): the id the delivery ids of its takes
    /// carry, so that the console finds the process that holds a delivery.
    pub(crate) fn new(kind: ProcessKind, started_ms: i64) -> Identity {
        Identity {
            id: crate::process::id().to_owned(),
            kind,
            host: crate::process::host_name(),
            started_ms,
        }
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The record: the same string for the process's whole life (given the same globs), so
    /// that a beat moves its score rather than adding a member.
    fn record(&self, ttl_ms: i64, patterns: &[String]) -> String {
        let sep = FIELD_SEPARATOR.to_string();
        [
            self.kind.name().to_owned(),
            self.id.clone(),
            self.host.clone(),
            std::process::id().to_string(),
            env!("CARGO_PKG_VERSION").to_owned(),
            self.started_ms.to_string(),
            ttl_ms.to_string(),
            patterns.join("\n"),
        ]
        .join(&sep)
    }

    /// The record in the registry of every process: [`record`](Self::record) and the names of
    /// the queues served.
    fn live_record(&self, ttl_ms: i64, patterns: &[String], queues: &BTreeSet<String>) -> String {
        let names: Vec<&str> = queues.iter().map(String::as_str).collect();
        format!(
            "{}{FIELD_SEPARATOR}{}",
            self.record(ttl_ms, patterns),
            names.join("\n")
        )
    }
}

/// What the last beat wrote, so the next one takes back what no longer holds.
#[derive(Debug, Default)]
pub(crate) struct Written {
    queues: BTreeSet<String>,
    discovering: Option<String>,
    live: Option<String>,
}

/// Writes the process's record to the registry of each queue in `queues`, with `patterns` to
/// the discovering registry, and to the registry of every process; takes it out of the queues
/// it no longer serves. One pipelined round trip: four commands per registry written, one per
/// registry left. A refusal of the registry of every process (the process's rights reach only
/// its queues' keys) is no error: the console then finds it through its queues only.
pub(crate) async fn beat(
    client: &Client,
    me: &Identity,
    (queues, patterns): (&BTreeSet<String>, &[String]),
    written: &mut Written,
    (ttl_ms, now_ms): (i64, i64),
) -> Result<()> {
    let pipeline = client.pipeline();
    let record = me.record(ttl_ms, &[]);
    for queue in queues {
        lease(&pipeline, &processes_key(queue), &record, ttl_ms, now_ms).await;
    }
    for left in written.queues.difference(queues) {
        let _: std::result::Result<(), _> = pipeline.zrem(processes_key(left), &record).await;
    }
    let discovering = (!patterns.is_empty()).then(|| me.record(ttl_ms, patterns));
    let global = discovering_processes();
    if let Some(old) = written
        .discovering
        .as_ref()
        .filter(|old| discovering.as_ref() != Some(old))
    {
        let _: std::result::Result<(), _> = pipeline.zrem(&global, old).await;
    }
    if let Some(record) = &discovering {
        lease(&pipeline, &global, record, ttl_ms, now_ms).await;
    }
    // The registry of every process last: its replies are the tail, whose refusal is no error.
    let live = me.live_record(ttl_ms, patterns, queues);
    let all = live_processes();
    let mut live_commands = LEASE_COMMANDS;
    if let Some(old) = written.live.as_ref().filter(|old| **old != live) {
        let _: std::result::Result<(), _> = pipeline.zrem(&all, old).await;
        live_commands += 1;
    }
    lease(&pipeline, &all, &live, ttl_ms, now_ms).await;
    let replies = pipeline.try_all::<Value>().await;
    let own_commands = replies.len().saturating_sub(live_commands);
    for (at, reply) in replies.into_iter().enumerate() {
        let Err(err) = reply else { continue };
        match (
            at < own_commands,
            Error::from_redis("ZADD", "delayq_procs", err),
        ) {
            (false, Error::Refused { .. }) => {}
            (_, err) => return Err(err),
        }
    }
    written.queues = queues.clone();
    written.discovering = discovering;
    written.live = Some(live);
    Ok(())
}

/// How many commands [`lease`] queues.
const LEASE_COMMANDS: usize = 4;

/// Queues the record's lease in one registry: its deadline, the expired members dropped, and
/// the key's time to live set when it has none (`NX`) or extended when shorter (`GT`).
async fn lease(
    pipeline: &fred::clients::Pipeline<Client>,
    key: &str,
    record: &str,
    ttl_ms: i64,
    now_ms: i64,
) {
    let deadline = (now_ms + ttl_ms) as f64;
    let _: std::result::Result<(), _> = pipeline
        .zadd(key, None, None, false, false, (deadline, record))
        .await;
    let _: std::result::Result<(), _> = pipeline
        .zremrangebyscore(key, f64::NEG_INFINITY, now_ms as f64)
        .await;
    let _: std::result::Result<(), _> =
        pipeline.pexpire(key, ttl_ms, Some(ExpireOptions::NX)).await;
    let _: std::result::Result<(), _> =
        pipeline.pexpire(key, ttl_ms, Some(ExpireOptions::GT)).await;
}

/// Takes the process's record out of every registry the last beat wrote it to.
pub(crate) async fn remove(
    client: &Client,
    me: &Identity,
    written: &Written,
    ttl_ms: i64,
) -> Result<()> {
    let pipeline = client.pipeline();
    let record = me.record(ttl_ms, &[]);
    for queue in &written.queues {
        let _: std::result::Result<(), _> = pipeline.zrem(processes_key(queue), &record).await;
    }
    if let Some(old) = &written.discovering {
        let _: std::result::Result<(), _> = pipeline.zrem(discovering_processes(), old).await;
    }
    if let Some(old) = &written.live {
        let _: std::result::Result<(), _> = pipeline.zrem(live_processes(), old).await;
    }
    match pipeline
        .try_all::<Value>()
        .await
        .into_iter()
        .find_map(Result::err)
    {
        Some(err) => Err(Error::from_redis("ZREM", "delayq_procs", err)),
        None => Ok(()),
    }
}

/// The live processes serving the queue `queue`, by kind then id: those of its registry, and
/// the discovering schedulers whose globs take it (left out when the user may not read that
/// registry). One pipelined round trip.
pub(crate) async fn list(client: &Client, queue: &str, now_ms: i64) -> Result<Vec<ProcessInfo>> {
    let (own, global) = (processes_key(queue), discovering_processes());
    let pipeline = client.pipeline();
    for key in [&own, &global] {
        let _: std::result::Result<(), _> = pipeline
            .zrangebyscore(key, now_ms, "+inf", true, None)
            .await;
    }
    let mut replies = pipeline.try_all::<Value>().await.into_iter();
    let mine = replies.next().unwrap_or(Ok(Value::Null));
    let mut found = members(mine.map_err(|e| Error::from_redis("ZRANGEBYSCORE", &own, e))?);
    match replies
        .next()
        .map(|r| r.map_err(|e| Error::from_redis("ZRANGEBYSCORE", &global, e)))
    {
        Some(Ok(reply)) => found.extend(
            members(reply)
                .into_iter()
                .filter(|p| p.patterns.iter().any(|glob| glob_match(glob, queue))),
        ),
        Some(Err(Error::Refused { .. })) | None => {}
        Some(Err(err)) => return Err(err),
    }
    found.sort_by(|a, b| (&a.kind, &a.id).cmp(&(&b.kind, &b.id)));
    Ok(found)
}

/// Every live process, as its record in the registry of every process says (with the queues
/// it serves), by kind then id. One `ZRANGEBYSCORE`.
pub(crate) async fn list_live(client: &Client, now_ms: i64) -> Result<Vec<ProcessInfo>> {
    let key = live_processes();
    let reply: Value = client
        .zrangebyscore(&key, now_ms, "+inf", true, None)
        .await
        .map_err(|e| Error::from_redis("ZRANGEBYSCORE", &key, e))?;
    let mut found = members(reply);
    found.sort_by(|a, b| (&a.kind, &a.id).cmp(&(&b.kind, &b.id)));
    Ok(found)
}

/// The records of a `ZRANGEBYSCORE … WITHSCORES` reply (flat pairs or, in RESP3, nested).
fn members(reply: Value) -> Vec<ProcessInfo> {
    let Value::Array(items) = reply else {
        return Vec::new();
    };
    let mut pairs = Vec::new();
    let mut items = items.into_iter();
    while let Some(item) = items.next() {
        match item {
            Value::Array(pair) if pair.len() == 2 => pairs.push((pair[0].clone(), pair[1].clone())),
            member => pairs.push((member, items.next().unwrap_or(Value::Null))),
        }
    }
    pairs
        .into_iter()
        .filter_map(|(member, score)| parse(member.as_str()?.as_ref(), score.as_f64()? as i64))
        .collect()
}

/// A record and its deadline, back into what it says.
fn parse(record: &str, deadline_ms: i64) -> Option<ProcessInfo> {
    let fields: Vec<&str> = record.splitn(9, FIELD_SEPARATOR).collect();
    // Eight fields, and in the registry of every process a ninth: the queues served.
    let (own, queues) = match fields.split_at_checked(8) {
        Some((own, [queues])) => (own, *queues),
        _ => (&fields[..], ""),
    };
    let &[kind, id, host, pid, version, started, ttl, patterns] = own else {
        return None;
    };
    let lines = |field: &str| -> Vec<String> {
        field
            .split('\n')
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect()
    };
    Some(ProcessInfo {
        id: id.to_owned(),
        kind: kind.to_owned(),
        host: host.to_owned(),
        pid: pid.parse().ok()?,
        version: version.to_owned(),
        started_ms: started.parse().ok()?,
        beat_ms: deadline_ms - ttl.parse::<i64>().ok()?,
        patterns: lines(patterns),
        queues: lines(queues),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back() {
        let me = Identity::new(ProcessKind::Scheduler, 5);
        let record = me.record(30, &["tenant-*".to_owned(), "b".to_owned()]);
        let info = parse(&record, 100).unwrap();
        assert_eq!(
            (info.kind.as_str(), info.id.as_str()),
            ("scheduler", me.id())
        );
        assert_eq!(
            (info.pid, info.started_ms, info.beat_ms),
            (std::process::id(), 5, 70)
        );
        assert_eq!(info.patterns, ["tenant-*", "b"]);
        assert!(parse(&me.record(30, &[]), 1).unwrap().patterns.is_empty());
        assert_eq!(parse("not a record", 1), None);
        let queues = BTreeSet::from(["a".to_owned(), "b:c".to_owned()]);
        let live = parse(&me.live_record(30, &[], &queues), 100).unwrap();
        assert_eq!(
            (live.queues, live.beat_ms),
            (vec!["a".to_owned(), "b:c".to_owned()], 70)
        );
        assert!(parse(&me.record(30, &[]), 1).unwrap().queues.is_empty());
    }

    #[test]
    fn scores_pair_with_members_flat_or_nested() {
        let me = Identity::new(ProcessKind::Worker, 5);
        let record = Value::from(me.record(10, &[]));
        let flat = Value::Array(vec![record.clone(), Value::from(20.0)]);
        let nested = Value::Array(vec![Value::Array(vec![record, Value::from(20.0)])]);
        for reply in [flat, nested] {
            let found = members(reply);
            assert_eq!((found.len(), found[0].beat_ms), (1, 10));
        }
    }
}
