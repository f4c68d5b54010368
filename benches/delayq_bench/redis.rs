//! Small Redis helpers for the benchmark: raw commands, filling queues in Redisson's layout,
//! and reading what the server measured (SLOWLOG, INFO commandstats).

use delayq::QueueKeys;
use fred::clients::Client;
use fred::interfaces::ClientLike;
use fred::prelude::Value;
use fred::types::{ClusterHash, CustomCommand};
use rand::Rng;
use std::collections::HashMap;

pub(crate) type BoxResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Runs one command with raw arguments.
pub(crate) async fn cmd(client: &Client, name: &'static str, args: Vec<Value>) -> BoxResult<Value> {
    let command = CustomCommand::new_static(name, ClusterHash::FirstKey, false);
    Ok(client.custom::<Value, Value>(command, args).await?)
}

fn s(text: &str) -> Value {
    Value::from(text.to_owned())
}

/// An integer reply.
pub(crate) async fn int(client: &Client, name: &'static str, key: &str) -> BoxResult<i64> {
    cmd(client, name, vec![s(key)])
        .await?
        .as_i64()
        .ok_or_else(|| format!("{name} {key}: not an integer").into())
}

/// Deletes every key of a queue (target, timeout set, order list, indexes, quarantine).
pub(crate) async fn unlink_queue(client: &Client, keys: &QueueKeys) -> BoxResult<()> {
    let args = [
        keys.target(),
        keys.timeout(),
        keys.order(),
        keys.index(),
        keys.values(),
        keys.quarantine(),
    ]
    .iter()
    .map(|k| s(k))
    .collect();
    cmd(client, "UNLINK", args).await?;
    Ok(())
}

/// The benchmark's values: 18 bytes, the same text as the Java side's.
pub(crate) fn value(i: u64) -> String {
    format!("value-{i:012}")
}

/// How due times are spread over the order list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// Order-list position = due order (every delay equal).
    Due,
    /// Due times drawn at random over an hour, independent of the position.
    Random,
}

impl Pattern {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Pattern::Due => "due-ordered",
            Pattern::Random => "random-delay",
        }
    }
}

/// Writes `n` pending entries straight into Redisson's layout (ZADD + RPUSH of `Bc0Lc0` entries,
/// what n offers leave), all already due: the backlog a scheduler meets after an outage.
/// Value `i` is [`value`]`(i)`; returns each value's score.
pub(crate) async fn fill(
    client: &Client,
    keys: &QueueKeys,
    n: usize,
    pattern: Pattern,
) -> BoxResult<Vec<i64>> {
    const CHUNK: usize = 1_000;
    const IN_FLIGHT: usize = 8;
    let base = delayq_now_ms() - 2 * 3_600_000;
    let mut rng = rand::rng();
    let scores: Vec<i64> = (0..n)
        .map(|i| match pattern {
            Pattern::Due => base + i as i64,
            Pattern::Random => base + rng.random_range(0..3_600_000),
        })
        .collect();
    let mut start = 0;
    while start < n {
        let pipeline = client.pipeline();
        for _ in 0..IN_FLIGHT {
            if start >= n {
                break;
            }
            let end = (start + CHUNK).min(n);
            let mut zadd = vec![s(keys.timeout())];
            let mut rpush = vec![s(keys.order())];
            for (i, score) in scores.iter().enumerate().take(end).skip(start) {
                let id: [u8; 8] = rng.random();
                let entry = delayq::entry::pack(&id, value(i as u64).as_bytes());
                zadd.push(Value::from(*score));
                zadd.push(Value::Bytes(entry.clone().into()));
                rpush.push(Value::Bytes(entry.into()));
            }
            let zadd_cmd = CustomCommand::new_static("ZADD", ClusterHash::FirstKey, false);
            let rpush_cmd = CustomCommand::new_static("RPUSH", ClusterHash::FirstKey, false);
            let _: () = pipeline.custom(zadd_cmd, zadd).await?;
            let _: () = pipeline.custom(rpush_cmd, rpush).await?;
            start = end;
        }
        let _: Vec<Value> = pipeline.all().await?;
    }
    let zcard = int(client, "ZCARD", keys.timeout()).await?;
    let llen = int(client, "LLEN", keys.order()).await?;
    if zcard != n as i64 || llen != n as i64 {
        return Err(format!("fill of {n}: zset has {zcard}, order list {llen}").into());
    }
    Ok(scores)
}

/// Pushes `n` bare values onto a list (a backlog for consumers).
pub(crate) async fn fill_list(client: &Client, list: &str, n: u64) -> BoxResult<()> {
    let mut i = 0;
    while i < n {
        let end = (i + 1_000).min(n);
        let mut args = vec![s(list)];
        args.extend((i..end).map(|j| Value::from(value(j))));
        cmd(client, "RPUSH", args).await?;
        i = end;
    }
    Ok(())
}

pub(crate) fn delayq_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Epoch microseconds.
pub(crate) fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// Clears the server's command statistics and slow log, logging every command slower than
/// `threshold_us`.
pub(crate) async fn reset_server_stats(client: &Client, threshold_us: u64) -> BoxResult<()> {
    let set = |k: &str, v: String| vec![s("SET"), s(k), Value::from(v)];
    cmd(
        client,
        "CONFIG",
        set("slowlog-log-slower-than", threshold_us.to_string()),
    )
    .await?;
    cmd(client, "CONFIG", set("slowlog-max-len", "1000000".into())).await?;
    cmd(client, "SLOWLOG", vec![s("RESET")]).await?;
    cmd(client, "CONFIG", vec![s("RESETSTAT")]).await?;
    Ok(())
}

/// Script calls since [`reset_server_stats`]: count and total server time, from INFO
/// commandstats (EVAL + EVALSHA).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ScriptCalls {
    pub(crate) calls: u64,
    pub(crate) usec: u64,
}

pub(crate) async fn script_calls(client: &Client) -> BoxResult<ScriptCalls> {
    let stats = command_stats(client).await?;
    let mut out = ScriptCalls::default();
    for command in ["evalsha", "eval", "evalsha_ro", "eval_ro"] {
        let Some(fields) = stats.get(command) else {
            continue;
        };
        out.calls += fields.get("calls").copied().unwrap_or(0.0) as u64;
        out.usec += fields.get("usec").copied().unwrap_or(0.0) as u64;
    }
    Ok(out)
}

/// How many times the server ran `command` (lower case) since its stats were last reset.
pub(crate) async fn command_calls(client: &Client, command: &str) -> BoxResult<u64> {
    let stats = command_stats(client).await?;
    Ok(stats
        .get(command)
        .and_then(|fields| fields.get("calls"))
        .map_or(0, |calls| *calls as u64))
}

/// INFO commandstats: command (lower case) -> its numeric fields (`calls`, `usec`,
/// `usec_per_call`, ...).
pub(crate) async fn command_stats(
    client: &Client,
) -> BoxResult<HashMap<String, HashMap<String, f64>>> {
    let info = cmd(client, "INFO", vec![s("commandstats")]).await?;
    let text = info.as_string().ok_or("INFO: not text")?;
    Ok(text
        .lines()
        .filter_map(|l| l.strip_prefix("cmdstat_")?.split_once(':'))
        .map(|(command, rest)| {
            let fields = rest
                .split(',')
                .filter_map(|f| f.split_once('='))
                .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
                .collect();
            (command.to_owned(), fields)
        })
        .collect())
}

/// Durations (µs) of the script calls in the slow log, newest first.
pub(crate) async fn slow_script_calls(client: &Client) -> BoxResult<Vec<u64>> {
    let reply = cmd(client, "SLOWLOG", vec![s("GET"), Value::from(-1)]).await?;
    let Value::Array(entries) = reply else {
        return Err(format!("SLOWLOG GET: {reply:?}").into());
    };
    let mut out = Vec::new();
    for entry in entries {
        let Value::Array(fields) = entry else {
            return Err("SLOWLOG entry is not an array".into());
        };
        let duration = fields
            .get(2)
            .and_then(Value::as_u64)
            .ok_or("SLOWLOG duration")?;
        let command = match fields.get(3) {
            Some(Value::Array(args)) => args
                .first()
                .and_then(Value::as_string)
                .unwrap_or_default()
                .to_ascii_lowercase(),
            _ => String::new(),
        };
        // Redisson sends read-only scripts (contains) as EVAL_RO / EVALSHA_RO on Redis 7.
        if ["eval", "evalsha", "eval_ro", "evalsha_ro"].contains(&command.as_str()) {
            out.push(duration);
        }
    }
    Ok(out)
}

/// What any removal from the middle of a Redis list costs on `list` (no script involved): one
/// LREM-like pass over the whole list (LPOS of a value it does not hold), and reaching one random
/// position (LINDEX, which walks the list's nodes from the nearer end, as LSET does). Server
/// times from INFO commandstats; clears the command statistics.
pub(crate) async fn list_floor(client: &Client, list: &str) -> BoxResult<serde_json::Value> {
    let length = int(client, "LLEN", list).await?;
    cmd(client, "CONFIG", vec![s("RESETSTAT")]).await?;
    for _ in 0..3 {
        let absent = Value::from("delayq-bench:no-such-element");
        cmd(client, "LPOS", vec![s(list), absent]).await?;
    }
    let walks = 2_000;
    for _ in 0..walks {
        let at = rand::random_range(0..length.max(1));
        cmd(client, "LINDEX", vec![s(list), Value::from(at)]).await?;
    }
    let stats = command_stats(client).await?;
    let per_call = |command: &str| -> BoxResult<f64> {
        let fields = stats
            .get(command)
            .ok_or_else(|| format!("INFO commandstats: no {command}"))?;
        Ok(fields.get("usec_per_call").copied().unwrap_or(0.0))
    };
    Ok(serde_json::json!({
        "length": length,
        "pass_us": per_call("lpos")?,
        "walk_us": per_call("lindex")?,
    }))
}

/// Redis's CPU time so far (user + system, seconds), from INFO cpu.
pub(crate) async fn server_cpu_secs(client: &Client) -> BoxResult<f64> {
    let info = cmd(client, "INFO", vec![s("cpu")]).await?;
    let text = info.as_string().ok_or("INFO: not text")?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .ok_or_else(|| format!("INFO cpu: no {name}"))
    };
    Ok(field("used_cpu_user:")? + field("used_cpu_sys:")?)
}

/// `redis_version` from INFO server.
pub(crate) async fn redis_version(client: &Client) -> BoxResult<String> {
    let info = cmd(client, "INFO", vec![s("server")]).await?;
    let text = info.as_string().ok_or("INFO: not text")?;
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("unknown")
        .trim()
        .to_owned())
}

/// A client of its own sending PING every 2 ms until stopped: how long other clients wait for
/// Redis while a case runs.
pub(crate) struct PingLoop {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<BoxResult<Vec<u64>>>,
}

impl PingLoop {
    pub(crate) async fn start(url: &str) -> BoxResult<PingLoop> {
        let client = delayq::connect(url).await?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let mut us = Vec::new();
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let sent = std::time::Instant::now();
                let _: Value = cmd(&client, "PING", Vec::new()).await?;
                us.push(sent.elapsed().as_micros() as u64);
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            let _ = fred::interfaces::ClientLike::quit(&client).await;
            Ok(us)
        });
        Ok(PingLoop { stop, task })
    }

    /// Stops the loop; returns (samples, p50, p99, max) in ms.
    pub(crate) async fn stop(self) -> BoxResult<serde_json::Value> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut us = self.task.await.map_err(|e| e.to_string())??;
        us.sort_unstable();
        let q = |p: f64| {
            us.get(((us.len().max(1) - 1) as f64 * p).round() as usize)
                .copied()
                .unwrap_or(0) as f64
                / 1_000.0
        };
        Ok(serde_json::json!({
            "samples": us.len(),
            "p50_ms": q(0.5),
            "p99_ms": q(0.99),
            "max_ms": q(1.0),
        }))
    }
}

/// A standalone redis-server a phase starts for itself (`--save "" --appendonly no`, loopback,
/// a free port), killed when dropped: the phase's keys and memory go with it.
pub(crate) struct OwnServer {
    child: std::process::Child,
    pub(crate) port: u16,
}

impl OwnServer {
    /// Starts one, its directory and log `WORK_DIR/NAME/`, and waits until it answers PING.
    pub(crate) async fn start(work_dir: &str, name: &str) -> BoxResult<OwnServer> {
        let dir = format!("{work_dir}/{name}");
        std::fs::create_dir_all(&dir)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--dir", &dir])
            .args(["--logfile", "redis.log"])
            .stdin(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server: {e}"))?;
        let server = OwnServer { child, port };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let answered = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok();
            if answered {
                let client = delayq::connect(&server.url()).await?;
                cmd(&client, "PING", Vec::new()).await?;
                let _ = client.quit().await;
                return Ok(server);
            }
            if std::time::Instant::now() > deadline {
                return Err(
                    format!("redis-server on {port} did not start (see {dir}/redis.log)").into(),
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
