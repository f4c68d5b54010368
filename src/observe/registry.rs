//! The registry of live delayq workers and schedulers: a record per process (a hash with a
//! time to live, written again on every beat) and one zset of the processes by when their
//! records expire, so that a list is one `ZRANGEBYSCORE` and one pipelined read of the
//! records, whatever the number of queues. Every beat drops the members whose records have
//! expired (processes that died without removing theirs).

use crate::error::Error;
use crate::keys::{glob_match, process_index, process_record};
use crate::Result;
use fred::clients::Client;
use fred::interfaces::{HashesInterface, KeysInterface, SortedSetsInterface};
use std::collections::HashMap;

/// What kind of delayq process a record is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessKind {
    /// A worker (taking values and running jobs).
    Worker,
    /// A scheduler group (moving due values).
    Scheduler,
}

impl ProcessKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ProcessKind::Worker => "worker",
            ProcessKind::Scheduler => "scheduler",
        }
    }
}

/// One live delayq process, as its registry record says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessInfo {
    /// The process's id in the registry (host, pid and a random part).
    pub id: String,
    /// `worker` or `scheduler`.
    pub kind: String,
    /// The host name it runs on.
    pub host: String,
    /// Its process id on that host.
    pub pid: u32,
    /// The delayq version it runs.
    pub version: String,
    /// The queues it serves by name (at most 1,000 listed; see `queue_count`).
    pub queues: Vec<String>,
    /// How many queues it serves by name.
    pub queue_count: usize,
    /// The globs of the queues it finds by discovery (`*` for every queue).
    pub patterns: Vec<String>,
    /// When it started, epoch ms.
    pub started_ms: i64,
    /// When it last wrote its record, epoch ms.
    pub beat_ms: i64,
}

impl ProcessInfo {
    /// Whether the process serves the queue `name`: by name, or by a discovery glob.
    pub fn serves(&self, name: &str) -> bool {
        self.queues.iter().any(|q| q == name) || self.patterns.iter().any(|p| glob_match(p, name))
    }
}

/// What a process says of itself, the beat time apart.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub(crate) id: String,
    pub(crate) kind: ProcessKind,
    pub(crate) host: String,
    pub(crate) started_ms: i64,
}

impl Identity {
    pub(crate) fn new(kind: ProcessKind, started_ms: i64) -> Identity {
        let host = host_name();
        Identity {
            id: format!(
                "{host}-{}-{:08x}",
                std::process::id(),
                rand::random::<u32>()
            ),
            kind,
            host,
            started_ms,
        }
    }
}

/// The host's name, as the kernel has it (or the environment says), else `unknown`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The queues a record says a process serves.
#[derive(Debug)]
pub(crate) struct Serving {
    /// Names, the first ones only when there are many.
    pub(crate) listed: Vec<String>,
    /// How many names in all.
    pub(crate) count: usize,
    /// Discovery globs.
    pub(crate) patterns: Vec<String>,
}

/// Writes the process's record with its time to live, its deadline in the index, and drops
/// the expired members of the index: one pipelined round trip of four commands.
pub(crate) async fn beat(
    client: &Client,
    me: &Identity,
    serving: &Serving,
    ttl_ms: i64,
    now_ms: i64,
) -> Result<()> {
    let record = process_record(&me.id);
    let fields: Vec<(&str, String)> = vec![
        ("kind", me.kind.name().to_owned()),
        ("host", me.host.clone()),
        ("pid", std::process::id().to_string()),
        ("version", env!("CARGO_PKG_VERSION").to_owned()),
        ("queues", serving.listed.join("\n")),
        ("queue_count", serving.count.to_string()),
        ("patterns", serving.patterns.join("\n")),
        ("started_ms", me.started_ms.to_string()),
        ("beat_ms", now_ms.to_string()),
    ];
    let index = process_index();
    let pipeline = client.pipeline();
    let _: std::result::Result<(), _> = pipeline.hset(&record, fields).await;
    let _: std::result::Result<(), _> = pipeline.pexpire(&record, ttl_ms, None).await;
    let _: std::result::Result<(), _> = pipeline
        .zadd(
            &index,
            None,
            None,
            false,
            false,
            ((now_ms + ttl_ms) as f64, me.id.as_str()),
        )
        .await;
    let _: std::result::Result<(), _> = pipeline
        .zremrangebyscore(&index, f64::NEG_INFINITY, now_ms as f64)
        .await;
    let replies = pipeline.try_all::<fred::types::Value>().await;
    match replies.into_iter().find_map(Result::err) {
        Some(err) => Err(Error::from_redis("HSET", &record, err)),
        None => Ok(()),
    }
}

/// Removes the process's record and its member of the index.
pub(crate) async fn remove(client: &Client, id: &str) -> Result<()> {
    let record = process_record(id);
    let pipeline = client.pipeline();
    let _: std::result::Result<(), _> = pipeline.del(&record).await;
    let _: std::result::Result<(), _> = pipeline.zrem(process_index(), id).await;
    match pipeline
        .try_all::<fred::types::Value>()
        .await
        .into_iter()
        .find_map(Result::err)
    {
        Some(err) => Err(Error::from_redis("DEL", &record, err)),
        None => Ok(()),
    }
}

/// Every live process, by kind then id: the members of the index not past their deadline at
/// `now_ms`, whose records still exist.
pub(crate) async fn list(client: &Client, now_ms: i64) -> Result<Vec<ProcessInfo>> {
    let index = process_index();
    let ids: Vec<String> = client
        .zrangebyscore(&index, now_ms, "+inf", false, None)
        .await
        .map_err(|e| Error::from_redis("ZRANGEBYSCORE", &index, e))?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let pipeline = client.pipeline();
    for id in &ids {
        let _: std::result::Result<(), _> = pipeline.hgetall(process_record(id)).await;
    }
    let replies = pipeline.try_all::<HashMap<String, String>>().await;
    let mut found = Vec::with_capacity(ids.len());
    for (id, reply) in ids.into_iter().zip(replies) {
        let fields = reply.map_err(|e| Error::from_redis("HGETALL", &process_record(&id), e))?;
        if !fields.is_empty() {
            found.push(parse(id, &fields));
        }
    }
    found.sort_by(|a, b| (&a.kind, &a.id).cmp(&(&b.kind, &b.id)));
    Ok(found)
}

fn parse(id: String, fields: &HashMap<String, String>) -> ProcessInfo {
    let text = |name: &str| fields.get(name).cloned().unwrap_or_default();
    let number = |name: &str| fields.get(name).and_then(|n| n.parse().ok());
    ProcessInfo {
        id,
        kind: text("kind"),
        host: text("host"),
        pid: number("pid").unwrap_or(0) as u32,
        version: text("version"),
        queues: split(&text("queues")),
        queue_count: number("queue_count").unwrap_or(0) as usize,
        patterns: split(&text("patterns")),
        started_ms: number("started_ms").unwrap_or(0),
        beat_ms: number("beat_ms").unwrap_or(0),
    }
}

/// The names of a record's field, one a line (a queue name with a line break is listed
/// split).
fn split(text: &str) -> Vec<String> {
    text.split('\n')
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_serves_by_name_or_glob() {
        let fields: HashMap<String, String> = [
            ("kind", "scheduler"),
            ("pid", "42"),
            ("queues", "a\nb"),
            ("queue_count", "2"),
            ("patterns", "tenant-*"),
            ("beat_ms", "7"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let info = parse("h-1".into(), &fields);
        assert_eq!((info.pid, info.queue_count, info.beat_ms), (42, 2, 7));
        assert!(info.serves("a") && info.serves("tenant-9"));
        assert!(!info.serves("c"));
    }
}
