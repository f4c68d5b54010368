//! `/metrics` and `/healthz` of `delayq transfer --listen` against a real redis-server: values
//! moved are counted, the health goes 503 while Redis is down and 200 once it is back (with the
//! reconnect and resubscribe counted), and the pause flag stops delayq's transfers.

use crate::common::{unique_name, wait_until, TestRedis};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// A `delayq` child process, killed when dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` on 127.0.0.1:`port`: (status, body).
fn get(port: u16, path: &str) -> Result<(u16, String), String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {text:?}"))?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((status, body.to_owned()))
}

/// The value of the sample `name` (with its labels, as rendered) in Prometheus text.
fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let (key, value) = line.rsplit_once(' ')?;
        (key == name).then(|| value.parse().ok())?
    })
}

fn delayq(url: &str, args: &[&str]) {
    let out = Command::new(BIN)
        .arg("--url")
        .arg(url)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
}

fn metric_at_least(port: u16, name: &str, min: f64) -> f64 {
    wait_until(&format!("{name} >= {min}"), Duration::from_secs(20), || {
        let (_, body) = get(port, "/metrics")?;
        match sample(&body, name) {
            Some(v) if v >= min => Ok(v),
            other => Err(format!("{other:?}")),
        }
    })
}

fn health_is(port: u16, want: u16, timeout: Duration) -> String {
    wait_until(&format!("/healthz {want}"), timeout, || {
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
    let body = health_is(port, 200, Duration::from_secs(10));
    assert!(
        body.contains("\"connected\":true") && body.contains("\"subscribed\":true"),
        "{body}"
    );
    let ready = format!("delayq_ready{{queue=\"{queue}\"}}");
    metric_at_least(port, &ready, 3.0);
    let (_, text) = get(port, "/metrics").unwrap();
    let lateness = format!("delayq_transfer_lateness_seconds_count{{queue=\"{queue}\"}}");
    assert!(sample(&text, &lateness).unwrap() >= 1.0, "{text}");

    // Redis goes away: the health says so within seconds; errors are counted.
    redis.kill();
    let body = health_is(port, 503, Duration::from_secs(10));
    assert!(body.contains("\"connected\":false"), "{body}");
    metric_at_least(port, "delayq_connection_errors_total", 1.0);

    // Back: connected and subscribed again, the reconnects counted, transfers work.
    redis.restart();
    let body = health_is(port, 200, Duration::from_secs(20));
    assert!(body.contains("\"subscribed\":true"), "{body}");
    metric_at_least(port, "delayq_reconnects_total", 1.0);
    metric_at_least(port, "delayq_resubscribes_total", 1.0);
    delayq(&url, &["offer", &queue, "d", "--delay", "100ms"]);
    metric_at_least(port, &moved, 4.0);
}

#[test]
fn a_paused_queue_is_left_alone_until_resumed() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let queue = unique_name("paused");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    redis.cli(&["SET", &format!("delayq_paused:{{{queue}}}"), "1"]);
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
    redis.cli(&["DEL", &format!("delayq_paused:{{{queue}}}")]);
    wait_until("moved after resume", Duration::from_secs(5), || match redis
        .cli(&["LLEN", &queue])
        .as_str()
    {
        "1" => Ok(()),
        other => Err(other.to_owned()),
    });
}
