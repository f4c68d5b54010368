//! `delayq limit set|get|clear` and the dashboard's limits against a real redis-server: set
//! changes the limits given and keeps the others, `off`, `--no-key` and `--replace`; bad input
//! exits 2 and stores nothing; `stats` shows them; the dashboard shows them to anyone and lets
//! only the admin change or clear them.

use crate::access::{bearer, dashboard, snapshot, ADMIN, OPERATOR};
use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::dashboard::json;
use crate::observe::{delayq, BIN};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::process::Command;

/// `delayq --json limit get NAME`'s record.
fn stored(url: &str, name: &str) -> Value {
    serde_json::from_str(&delayq(url, &["--json", "limit", "get", name])).unwrap()
}

/// Runs `delayq --url URL args...`; its exit status and stderr.
fn status_of(url: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["--url", url])
        .args(args)
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    (code, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn limit_set_changes_what_it_is_given_and_clear_removes_them() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("limit-cli");
    let set = |args: &[&str]| {
        let mut all = vec!["--json", "limit", "set", &name];
        all.extend_from_slice(args);
        let record: Value = serde_json::from_str(&delayq(&url, &all)).unwrap();
        record["limits"].clone()
    };
    assert_eq!(stored(&url, &name)["limits"], Value::Null);
    set(&["--concurrency", "3", "--rate", "100/s"]);
    let limits = set(&["--key-pointer", "/customer", "--key-rate", "5/250ms"]);
    let want = json!({"concurrency": 3, "rate": "100/1s", "key_pointer": "/customer",
        "key_regex": null, "key_concurrency": null, "key_rate": "5/250ms"});
    assert_eq!(limits, want);
    assert_eq!(stored(&url, &name)["limits"], want);
    let usage = &stored(&url, &name)["usage"];
    assert_eq!(
        (&usage["slots_held"], &usage["values_held"]),
        (&json!(0), &json!(0))
    );

    // `off` removes one, --no-key the key rule with the per-key limits, --replace the rest.
    let limits = set(&["--rate", "off", "--key-regex", "^(\\w+):"]);
    assert_eq!(
        (&limits["rate"], &limits["key_regex"]),
        (&Value::Null, &json!("^(\\w+):"))
    );
    assert_eq!(limits["key_pointer"], Value::Null, "{limits}");
    let limits = set(&["--no-key"]);
    assert_eq!(
        limits,
        json!({"concurrency": 3, "rate": null, "key_pointer": null,
        "key_regex": null, "key_concurrency": null, "key_rate": null})
    );
    let limits = set(&["--replace", "--rate", "10/min"]);
    assert_eq!(
        (&limits["concurrency"], &limits["rate"]),
        (&Value::Null, &json!("10/1m"))
    );

    // Bad input: exit 2, nothing stored.
    let before = snapshot(&redis, &name);
    for bad in [
        &["--concurrency", "0"][..],
        &["--rate", "100"],
        &["--rate", "0/s"],
        &["--rate", "4294967296/s"],
        &["--key-regex", "("],
        &["--key-pointer", "customer"],
        &["--key-pointer", "/a", "--key-regex", "a"],
        &[],
    ] {
        let mut args = vec!["limit", "set", &name];
        args.extend_from_slice(bad);
        let (code, stderr) = status_of(&url, &args);
        assert_eq!(code, 2, "{bad:?}: {stderr}");
        assert!(!stderr.is_empty(), "{bad:?}");
    }
    assert_eq!(snapshot(&redis, &name), before);

    // stats shows them; clear removes them, once.
    let stats: Value = serde_json::from_str(&delayq(&url, &["--json", "stats", &name])).unwrap();
    assert_eq!(stats["limits"]["rate"], "10/1m", "{stats}");
    assert_eq!(stats["limit_usage"]["slots_held"], 0, "{stats}");
    let text = delayq(&url, &["stats", &name]);
    assert!(text.contains("limits:      rate 10/1m"), "{text}");
    assert_eq!(delayq(&url, &["limit", "clear", &name]), "true");
    assert_eq!(
        status_of(&url, &["limit", "clear", &name, "--exit-status"]).0,
        1
    );
    assert_eq!(
        delayq(&url, &["limit", "get", &name]).lines().next(),
        Some("limits: none")
    );
}

/// `POST path` with a JSON body on 127.0.0.1:`port`: status and body.
fn post(port: u16, path: &str, headers: &str, body: &str) -> (u16, Value) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n{headers}Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[test]
fn the_dashboard_shows_limits_to_all_and_lets_only_the_admin_change_them() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let name = unique_name("limit-ui");
    delayq(&url, &["offer", &name, "x", "--delay", "1h"]);
    delayq(&url, &["limit", "set", &name, "--concurrency", "3"]);
    let dir = tempfile::tempdir().unwrap();
    let (_ui, port) = dashboard(&redis, dir.path(), &[], &[], "/healthz");
    let path = format!("/api/queues/{name}/limits");
    let shown = json(port, &path, 200);
    assert_eq!(shown["limits"]["concurrency"], 3, "{shown}");
    assert_eq!(shown["usage"]["slots_held"], 0, "{shown}");

    let body = r#"{"concurrency":"5","rate":"20/s","key_pointer":"/k","key_concurrency":1}"#;
    let before = snapshot(&redis, &name);
    for action in ["set-limits", "clear-limits"] {
        let at = format!("{path}/{action}");
        assert_eq!(post(port, &at, "", body).0, 401, "{action}");
        assert_eq!(post(port, &at, &bearer(OPERATOR), body).0, 403, "{action}");
    }
    let at = format!("{path}/set-limits");
    for bad in [
        r#"{"rate":"20"}"#,
        r#"{"frequency":"1"}"#,
        r#"{"key_regex":"("}"#,
        "{}",
    ] {
        let (status, answer) = post(port, &at, &bearer(ADMIN), bad);
        assert_eq!(status, 400, "{bad}: {answer}");
    }
    assert_eq!(
        snapshot(&redis, &name),
        before,
        "a refused write changed Redis"
    );

    let (status, answer) = post(port, &at, &bearer(ADMIN), body);
    assert_eq!(status, 200, "{answer}");
    let want = json!({"concurrency": 5, "rate": "20/1s", "key_pointer": "/k", "key_regex": null,
        "key_concurrency": 1, "key_rate": null});
    assert_eq!(answer["limits"], want);
    assert_eq!(stored(&url, &name)["limits"], want);
    let at = format!("{path}/clear-limits");
    assert_eq!(post(port, &at, &bearer(ADMIN), "").0, 200);
    assert_eq!(stored(&url, &name)["limits"], Value::Null);
}

/// `delayq ui`'s /metrics: what a queue's limits hold, while a real worker holds two slots of a
/// cap of 2 (and a third value waits); no limit series for a queue without limits.
#[test]
fn the_dashboards_metrics_show_what_the_limits_hold() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let (limited, plain) = (unique_name("limit-gauge"), unique_name("plain-gauge"));
    delayq(&url, &["limit", "set", &limited, "--concurrency", "2"]);
    delayq(&url, &["offer", &plain, "x", "--delay", "1h"]);
    // The commands last until the worker is stopped, so the slots stay held however slow the
    // machine is.
    let mut worker = crate::observe::Daemon(
        Command::new(BIN)
            .args([
                "--url",
                &url,
                "work",
                &limited,
                "--concurrency",
                "3",
                "--grace",
                "1s",
            ])
            .args(["--", "sleep", "600"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    for value in ["a", "b", "c"] {
        delayq(&url, &["offer", &limited, value]);
    }
    // Started after the offers: it finds the queues at its start (a later one at its rescan).
    let dir = tempfile::tempdir().unwrap();
    let (_ui, port) = dashboard(&redis, dir.path(), &[], &[], "/healthz");
    let slots = format!("delayq_limit_slots_held{{queue=\"{limited}\"}} 2");
    let values = format!("delayq_limit_held_values{{queue=\"{limited}\"}} 0");
    let metrics = wait_until("two slots held on /metrics", PATIENCE, || {
        let (_, body) = crate::observe::get(port, "/metrics")?;
        match body.lines().any(|l| l == slots) {
            true => Ok(body),
            false => Err(body),
        }
    });
    assert!(metrics.lines().any(|l| l == values), "{metrics}");
    assert!(
        !metrics.contains(&format!("delayq_limit_slots_held{{queue=\"{plain}\"}}")),
        "{metrics}"
    );
    // SIGTERM: the worker ends its commands after --grace, leaving no `sleep` behind.
    let pid = worker.0.id().to_string();
    assert!(Command::new("kill").arg(&pid).status().unwrap().success());
    worker.0.wait().unwrap();
}

/// A limits hash delayq did not write (a hand edit) is malformed data, not bad input: `limit
/// get` exits 8 naming the field, and `limit set` without `--replace` refuses to merge into it.
#[test]
fn malformed_stored_limits_exit_8_naming_the_field() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("limit-malformed");
    let key = format!("delayq_limits:{{{name}}}");
    redis.cli(&["hset", &key, "version", "v1", "concurrency", "-5"]);
    let (code, stderr) = status_of(&url, &["limit", "get", &name]);
    assert_eq!(code, 8, "{stderr}");
    assert!(
        stderr.contains("concurrency") && stderr.contains("-5"),
        "{stderr}"
    );
    let (code, stderr) = status_of(&url, &["limit", "set", &name, "--rate", "5/s"]);
    assert_eq!(code, 8, "{stderr}");
    let (code, stderr) = status_of(
        &url,
        &["limit", "set", &name, "--replace", "--concurrency", "2"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stored(&url, &name)["limits"]["concurrency"], 2);
}
