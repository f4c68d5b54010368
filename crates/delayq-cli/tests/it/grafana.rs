//! The shipped Grafana dashboard and alert rules against a real Prometheus (Debian's
//! `prometheus`, the one `scripts/check_deploy.sh` installs for `promtool`) scraping real
//! `delayq transfer --all --listen` and `delayq work --listen` processes over loopback: every
//! query of `deploy/grafana/delayq.json` evaluates and returns data (no panel left empty by a
//! metric that is not there yet), and every rule of `deploy/prometheus/delayq-alerts.yml`
//! evaluates without error.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::metrics::scrape_until;
use crate::observe::{delayq, exchange, free_port, Daemon, BIN};
use delayq::QueueKeys;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `value` percent-encoded for a query string (unreserved characters kept).
fn encoded(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A chunked HTTP body put together.
fn dechunked(mut body: &str) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").ok_or("a chunk without its size")?;
        let size = usize::from_str_radix(size.trim(), 16).map_err(|e| e.to_string())?;
        if size == 0 {
            return Ok(out);
        }
        let chunk = rest.get(..size).ok_or("a chunk cut short")?;
        out.push_str(chunk);
        body = rest.get(size + 2..).ok_or("a chunk without its end")?;
    }
}

/// A Prometheus server on loopback scraping `targets` (job name, port) every second, with the
/// shipped alert rules, its data in a temp dir.
struct Prometheus {
    _daemon: Daemon,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(targets: &[(&str, u16)]) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let rules = root().join("deploy/prometheus/delayq-alerts.yml");
        let mut config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {:?}\n\
             scrape_configs:\n",
            rules.canonicalize().unwrap()
        );
        for (job, port) in targets {
            config.push_str(&format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
            ));
        }
        let file = dir.path().join("prometheus.yml");
        std::fs::write(&file, config).unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start prometheus ({e}): install Debian's `prometheus` package")
            });
        Prometheus {
            _daemon: Daemon(child),
            port,
            _dir: dir,
        }
    }

    /// `GET /api/v1/PATH`'s JSON, once Prometheus answers.
    fn api(&self, path: &str) -> Result<Value, String> {
        let answer = exchange(self.port, "GET", &format!("/api/v1/{path}"), "")?;
        let (head, body) = answer.split_once("\r\n\r\n").ok_or(answer.clone())?;
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        let body = if chunked {
            dechunked(body)?
        } else {
            body.to_owned()
        };
        let json: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        match (head.get(9..12), json["status"].as_str()) {
            (Some("200"), Some("success")) => Ok(json),
            _ => Err(format!("{head}: {body}")),
        }
    }

    /// The instant vector or scalar `expr` evaluates to now: its samples.
    fn query(&self, expr: &str) -> Result<Vec<Value>, String> {
        let json = self.api(&format!("query?query={}", encoded(expr)))?;
        match &json["data"]["result"] {
            Value::Array(samples) => Ok(samples.clone()),
            other => Ok(vec![other.clone()]),
        }
    }
}

/// Every query of the dashboard (its panels' targets and its variables'), as Grafana sends them
/// with every job and queue chosen and a rate interval of a minute: (panel title, query).
fn dashboard_queries() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("deploy/grafana/delayq.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&text).unwrap();
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                queries.push((panel["title"].to_string(), expr.to_owned()));
            }
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        // `label_values(SELECTOR, LABEL)`: the selector is the query Grafana sends.
        let definition = variable["definition"].as_str().unwrap_or_default();
        if let Some(inner) = definition.strip_prefix("label_values(") {
            let selector = inner.rsplit_once(',').unwrap().0;
            queries.push((variable["name"].to_string(), selector.to_owned()));
        }
    }
    queries
        .into_iter()
        .map(|(title, expr)| {
            let expr = expr
                .replace("$__rate_interval", "1m")
                .replace("$job", "delayq.*")
                .replace("$queue", ".*");
            (title, expr)
        })
        .collect()
}

/// Queues in the states the dashboard charts, two daemons serving them, Prometheus scraping
/// both: every query of the dashboard has data, every alert rule evaluates.
#[test]
fn every_dashboard_query_has_data_and_every_rule_evaluates() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("grafana");
    let q = |name: &str| format!("{prefix}-{name}");
    // Moved and taken by a worker under a concurrency cap.
    let (limited, paused, broken, malformed, scheduled) = (
        q("limited"),
        q("paused"),
        q("broken"),
        q("malformed"),
        q("scheduled"),
    );
    delayq(&url, &["limit", "set", &limited, "--concurrency", "2"]);
    for value in ["a", "b", "c"] {
        delayq(&url, &["offer", &limited, value, "--delay", "10ms"]);
    }
    // Paused with a due entry: its drains are skipped.
    delayq(&url, &["pause", &paused]);
    delayq(&url, &["offer", &paused, "p", "--delay", "10ms"]);
    // A target list overwritten by a string: unreadable, its transfers fail.
    delayq(&url, &["offer", &broken, "x", "--delay", "10ms"]);
    redis.cli(&["SET", &broken, "not a list"]);
    // A malformed member among the pending entries: quarantined.
    delayq(&url, &["offer", &malformed, "m", "--delay", "1h"]);
    redis.cli(&[
        "ZADD",
        QueueKeys::new(malformed.as_str()).timeout(),
        "1",
        "garbage",
    ]);
    // A schedule (not due for an hour).
    let start = (delayq::time::now_ms() + 3_600_000).to_string();
    let set = [
        "schedule", "set", &scheduled, "hourly", "--every", "1h", "--value", "v", "--start", &start,
    ];
    delayq(&url, &set);

    let pattern = format!("{prefix}-*");
    let transfer_port = free_port();
    let transfer_listen = format!("127.0.0.1:{transfer_port}");
    let _transfer = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "transfer", "--all", "--match", &pattern])
            .args(["--listen", &transfer_listen])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let work_port = free_port();
    let work_listen = format!("127.0.0.1:{work_port}");
    let _work = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "work", &limited, "--listen", &work_listen])
            .args(["--", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The states reached before Prometheus starts scraping.
    let acked = format!("delayq_acked_total{{queue=\"{limited}\"}}");
    scrape_until(work_port, &acked, |v| v == 3.0);
    let quarantined = format!("delayq_quarantine_size{{queue=\"{malformed}\"}}");
    scrape_until(transfer_port, &quarantined, |v| v == 1.0);
    let skips = format!("delayq_paused_skips_total{{queue=\"{paused}\"}}");
    scrape_until(transfer_port, &skips, |v| v >= 1.0);

    let prometheus = Prometheus::start(&[
        ("delayq-transfer", transfer_port),
        ("delayq-work", work_port),
    ]);
    // Three scrapes of each: a rate over a minute has two samples.
    wait_until("three scrapes of each target", PATIENCE, || {
        let counts = prometheus.query("count_over_time(up[1m]) >= 3")?;
        match counts.len() {
            2 => Ok(()),
            n => Err(format!("{n} targets scraped thrice")),
        }
    });

    let queries = dashboard_queries();
    assert!(queries.len() >= 40, "{queries:?}");
    let mut empty = Vec::new();
    for (title, expr) in &queries {
        let samples = prometheus
            .query(expr)
            .unwrap_or_else(|err| panic!("{title}: {expr} fails: {err}"));
        if samples.is_empty() {
            empty.push(format!("{title}: {expr}"));
        }
    }
    assert!(
        empty.is_empty(),
        "queries with no data:\n{}",
        empty.join("\n")
    );

    // Every rule evaluated at least once, none with an error.
    let rules = wait_until("every rule evaluated", PATIENCE, || {
        let json = prometheus.api("rules")?;
        let rules: Vec<Value> = json["data"]["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|group| group["rules"].as_array().cloned().unwrap_or_default())
            .collect();
        let unevaluated = rules
            .iter()
            .filter(|rule| rule["health"] == "unknown")
            .count();
        match (rules.is_empty(), unevaluated) {
            (false, 0) => Ok(rules),
            _ => Err(format!(
                "{} rules, {unevaluated} not evaluated",
                rules.len()
            )),
        }
    });
    let failing: Vec<String> = rules
        .iter()
        .filter(|rule| rule["health"] != "ok")
        .map(|rule| format!("{}: {}", rule["name"], rule["lastError"]))
        .collect();
    assert!(failing.is_empty(), "{failing:?}");
}
