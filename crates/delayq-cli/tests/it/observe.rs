//! `/metrics` and `/healthz` of `delayq transfer --listen` against a real redis-server: values
//! moved are counted, the health goes 503 while Redis is down and 200 once it is back (with the
//! reconnect and resubscribe counted), and the pause flag stops delayq's transfers.

use crate::common::{unique_name, wait_until, TestCluster, TestRedis, PATIENCE};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// A `delayq` child process, killed when dropped.
pub(crate) struct Daemon(pub(crate) Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` on 127.0.0.1:`port`: (status, body).
pub(crate) fn get(port: u16, path: &str) -> Result<(u16, String), String> {
    request(port, "GET", path, "")
}

/// `method path` on 127.0.0.1:`port` with `headers` (each ending in CRLF): (status, body).
pub(crate) fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &str,
) -> Result<(u16, String), String> {
    let text = exchange(port, method, path, headers)?;
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {text:?}"))?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((status, body.to_owned()))
}

/// `method path` on 127.0.0.1:`port` with `headers` (each ending in CRLF): the whole answer,
/// status line and headers included.
pub(crate) fn exchange(
    port: u16,
    method: &str,
    path: &str,
    headers: &str,
) -> Result<String, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n{headers}Connection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    Ok(text)
}

/// The value of the sample `name` (with its labels, as rendered) in Prometheus text.
fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let (key, value) = line.rsplit_once(' ')?;
        (key == name).then(|| value.parse().ok())?
    })
}

/// Runs `delayq --url URL args...`, which must succeed; its standard output, trimmed.
pub(crate) fn delayq(url: &str, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("--url")
        .arg(url)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn metric_at_least(port: u16, name: &str, min: f64) -> f64 {
    wait_until(&format!("{name} >= {min}"), PATIENCE, || {
        let (_, body) = get(port, "/metrics")?;
        match sample(&body, name) {
            Some(v) if v >= min => Ok(v),
            other => Err(format!("{other:?}")),
        }
    })
}

pub(crate) fn health_is(port: u16, want: u16) -> String {
    wait_until(&format!("/healthz {want}"), PATIENCE, || {
        match get(port, "/healthz") {
            Ok((status, body)) if status == want => Ok(body),
            other => Err(format!("{other:?}")),
        }
    })
}

#[test]
fn metrics_and_health_through_a_redis_restart() {
    let mut redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let queue = unique_name("observe");
    for value in ["a", "b", "c"] {
        delayq(&url, &["offer", &queue, value, "--delay", "200ms"]);
    }
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let _daemon = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "transfer", &queue, "--listen", &listen])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let moved = format!("delayq_moved_total{{queue=\"{queue}\"}}");
    assert_eq!(metric_at_least(port, &moved, 3.0), 3.0);
    let body = health_is(port, 200);
    assert!(
        body.contains("\"connected\":true") && body.contains("\"subscribed\":true"),
        "{body}"
    );
    let ready = format!("delayq_ready{{queue=\"{queue}\"}}");
    metric_at_least(port, &ready, 3.0);
    // Lateness is measured against the due time a drain was planned for. The first three may
    // have been due before the daemon started (a busy machine), so one more is offered to the
    // subscribed daemon, which plans its drain.
    delayq(&url, &["offer", &queue, "d", "--delay", "200ms"]);
    assert_eq!(metric_at_least(port, &moved, 4.0), 4.0);
    // The scheduler's histograms are one per process.
    let lateness = "delayq_transfer_lateness_seconds_count";
    assert!(metric_at_least(port, lateness, 1.0) >= 1.0);

    // Redis goes away: the health says so within seconds; errors are counted.
    redis.kill();
    // The pub/sub connection may notice first (subscribed false); both follow within seconds.
    wait_until("503, disconnected", PATIENCE, || {
        match get(port, "/healthz") {
            Ok((503, body)) if body.contains("\"connected\":false") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    metric_at_least(port, "delayq_connection_errors_total", 1.0);

    // Back: connected and subscribed again, the reconnects counted, transfers work.
    redis.restart();
    let body = health_is(port, 200);
    assert!(body.contains("\"subscribed\":true"), "{body}");
    metric_at_least(port, "delayq_reconnects_total", 1.0);
    metric_at_least(port, "delayq_resubscribes_total", 1.0);
    delayq(&url, &["offer", &queue, "e", "--delay", "100ms"]);
    metric_at_least(port, &moved, 5.0);
}

#[test]
fn a_paused_queue_is_left_alone_until_resumed() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let queue = unique_name("paused");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    assert_eq!(delayq(&url, &["pause", &queue]), "true");
    assert_eq!(delayq(&url, &["pause", &queue]), "false", "already paused");
    delayq(&url, &["offer", &queue, "x", "--delay", "100ms"]);
    let _daemon = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "transfer", &queue, "--listen", &listen])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let skips = format!("delayq_paused_skips_total{{queue=\"{queue}\"}}");
    metric_at_least(port, &skips, 2.0);
    assert_eq!(redis.cli(&["LLEN", &queue]), "0", "moved while paused");
    assert_eq!(delayq(&url, &["resume", &queue]), "true");
    wait_until("moved after resume", PATIENCE, || {
        match redis.cli(&["LLEN", &queue]).as_str() {
            "1" => Ok(()),
            other => Err(other.to_owned()),
        }
    });
}

#[test]
fn worker_settlements_are_counted() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let (good, bad) = (unique_name("w-good"), unique_name("w-bad"));
    delayq(&url, &["offer", &good, "ok", "--delay", "50ms"]);
    delayq(&url, &["offer", &bad, "fails", "--delay", "50ms"]);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let spawn = |queue: &str, port: Option<&str>, command: &str| {
        let mut cmd = Command::new(BIN);
        cmd.args(["--url", &url, "work", queue, "--max-attempts", "2"])
            .args(["--retry-delay", "100ms"]);
        if let Some(listen) = port {
            cmd.args(["--listen", listen]);
        }
        let child = cmd
            .args(["--", command])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Daemon(child)
    };
    let _bad = spawn(&bad, Some(&listen), "false");
    let label = |name: &str| format!("{name}{{queue=\"{bad}\"}}");
    // Two attempts, both failing: the second is a redelivery, then a dead letter.
    assert_eq!(
        metric_at_least(port, &label("delayq_taken_total"), 2.0),
        2.0
    );
    assert_eq!(
        metric_at_least(port, &label("delayq_dead_lettered_total"), 1.0),
        1.0
    );
    let (_, text) = get(port, "/metrics").unwrap();
    assert_eq!(
        sample(&text, &label("delayq_nacked_total")),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &label("delayq_retried_total")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &label("delayq_redelivered_total")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &label("delayq_acked_total")),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &label("delayq_worker_in_flight")),
        Some(0.0),
        "{text}"
    );
    let handled = label("delayq_handler_duration_seconds_count");
    assert_eq!(sample(&text, &handled), Some(2.0), "{text}");
    metric_at_least(port, &label("delayq_dead"), 1.0);
    health_is(port, 200);

    let good_port = free_port();
    let good_listen = format!("127.0.0.1:{good_port}");
    let _good = spawn(&good, Some(&good_listen), "true");
    let acked = format!("delayq_acked_total{{queue=\"{good}\"}}");
    assert_eq!(metric_at_least(good_port, &acked, 1.0), 1.0);
}

#[test]
fn the_dashboard_refuses_writes_and_remote_binds() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    // Anything but loopback needs --allow-remote; nothing is bound.
    let out = Command::new(BIN)
        .args(["--url", &url, "ui", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--allow-remote"),
        "{out:?}"
    );

    let queue = unique_name("ui");
    delayq(&url, &["offer", &queue, "x", "--delay", "1h"]);
    let port = free_port();
    let _ui = Daemon(
        Command::new(BIN)
            .args([
                "--url",
                &url,
                "ui",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let body = wait_until("the overview", PATIENCE, || {
        match get(port, "/api/queues") {
            Ok((200, body)) => Ok(body),
            other => Err(format!("{other:?}")),
        }
    });
    assert!(
        body.contains(&format!("\"name\":\"{queue}\",\"pending\":1")),
        "{body}"
    );
    let pause = format!("/api/queues/{queue}/pause");
    let (status, body) = request(port, "POST", &pause, "Authorization: Bearer x\r\n").unwrap();
    assert_eq!(status, 403, "{body}");
    let paused_key = delayq::QueueKeys::new(queue.as_str()).paused().to_owned();
    assert_eq!(redis.cli(&["EXISTS", &paused_key]), "0");
    let (status, _) = get(port, "/healthz").unwrap();
    assert_eq!(status, 200);

    // With writes allowed and the token, pause and resume reach the queue's flag.
    let port = free_port();
    let _ui = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "ui", "--allow-writes"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("DELAYQ_UI_TOKEN", "a-token-of-24-characters")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let bearer = "Authorization: Bearer a-token-of-24-characters\r\nX-Delayq-Write: 1\r\n";
    let (status, body) = wait_until("a pause", Duration::from_secs(10), || {
        request(port, "POST", &pause, bearer).map_err(|e| e.to_string())
    });
    assert_eq!(status, 200, "{body}");
    assert_eq!(redis.cli(&["EXISTS", &paused_key]), "1");
    let (_, body) = get(port, "/api/queues").unwrap();
    assert!(body.contains("\"paused\":true"), "{body}");
    let resume = format!("/api/queues/{queue}/resume");
    let (status, body) = request(port, "POST", &resume, bearer).unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(redis.cli(&["EXISTS", &paused_key]), "0");
}

#[test]
fn health_and_discovery_on_a_cluster() {
    let cluster = TestCluster::start(3);
    let url = cluster.url();
    let names: Vec<String> = (0..6).map(|i| unique_name(&format!("c{i}"))).collect();
    for name in &names {
        delayq(&url, &["offer", name, "v", "--delay", "300ms"]);
    }
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let _daemon = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "transfer", "--all", "--listen", &listen])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    for name in &names {
        metric_at_least(
            port,
            &format!("delayq_moved_total{{queue=\"{name}\"}}"),
            1.0,
        );
    }
    let body = health_is(port, 200);
    assert!(body.contains("\"subscribed\":true"), "{body}");
}

#[test]
fn pause_and_resume_reach_every_shard() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let queue = unique_name("paused-shards");
    let flags = || -> Vec<String> {
        (0..3)
            .map(|i| {
                let shard =
                    delayq::ShardedQueue::<delayq::codec::StringCodec>::shard_name(&queue, i);
                redis.cli(&["EXISTS", delayq::QueueKeys::new(shard).paused()])
            })
            .collect()
    };
    assert_eq!(delayq(&url, &["pause", &queue, "--shards", "3"]), "true");
    assert_eq!(flags(), ["1", "1", "1"]);
    assert_eq!(delayq(&url, &["resume", &queue, "--shards", "3"]), "true");
    assert_eq!(flags(), ["0", "0", "0"]);
    assert_eq!(delayq(&url, &["resume", &queue, "--shards", "3"]), "false");
    let json = delayq(&url, &["--json", "pause", &queue]);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["changed"], true, "{json}");
    assert_eq!(
        redis.cli(&["EXISTS", delayq::QueueKeys::new(queue.as_str()).paused()]),
        "1"
    );
}
