//! `delayq check` and `stats` on what an operator must see: a user with exactly the ACL
//! docs/production.md documents (every command works, check passes without false warnings), a
//! server busy with a runaway script, and a paused queue.

use crate::cli::{delayq, text};
use crate::common::queue::{connect, manual_queue};
use crate::common::{cli_conn, documented_acl, resp_call, unique_name, TestRedis, PATIENCE};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `args` as the documented ACL user; it must succeed and say nothing on stderr (no
/// warning, no NOPERM). Returns stdout.
fn as_app(url: &str, args: &[&str]) -> String {
    let out = delayq(url, args);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    assert_eq!(stderr, "", "{args:?}");
    text(&out.stdout)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_command_works_and_check_passes_under_the_documented_acl() {
    let redis = TestRedis::start_with(&["--appendonly", "yes"]);
    let name = unique_name("acl");
    let mut setuser = vec!["ACL".to_owned(), "SETUSER".to_owned(), "app".to_owned()];
    setuser.extend(documented_acl(&name, "app-pass", &[]));
    let setuser: Vec<&str> = setuser.iter().map(String::as_str).collect();
    assert_eq!(redis.cli(&setuser), "OK");
    let url = format!("redis://app:app-pass@127.0.0.1:{}", redis.port);

    as_app(&url, &["offer", &name, "later", "--delay", "1h"]);
    as_app(&url, &["offer", &name, "now"]);
    as_app(
        &url,
        &["offer", &name, "again", "--delay", "1h", "--unique"],
    );
    as_app(&url, &["transfer", "--once", &name]);
    assert_eq!(as_app(&url, &["take", &name, "--timeout", "5s"]), "now\n");
    assert_eq!(
        as_app(&url, &["reschedule", &name, "later", "--delay", "2h"]),
        "true\n"
    );
    assert!(as_app(&url, &["peek", &name]).contains("later"));
    assert!(as_app(&url, &["stats", &name]).contains("pending:     2"));
    assert_eq!(as_app(&url, &["remove", &name, "again"]), "true\n");
    assert_eq!(as_app(&url, &["pause", &name]), "true\n");
    assert_eq!(as_app(&url, &["resume", &name]), "true\n");
    as_app(&url, &["dead", "list", &name]);
    as_app(&url, &["dead", "replay", &name]);
    as_app(&url, &["dead", "purge", &name]);
    as_app(&url, &["quarantine", "list", &name]);
    as_app(&url, &["quarantine", "purge", &name]);

    let report = as_app(&url, &["check", &name, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["warnings"], serde_json::json!([]), "{report}");
    assert_eq!(report["denied"], serde_json::json!([]), "{report}");
    assert!(
        report["access_checked"]
            .as_str()
            .unwrap()
            .starts_with("keys only"),
        "{report}"
    );
    assert_eq!(report["maxmemory_policy"], "noeviction", "{report}");
    assert_eq!(report["aof"], true, "{report}");
    assert_eq!(report["pending"], 1, "{report}");
    assert_eq!(as_app(&url, &["clear", &name]), "true\n");

    // Recurring schedules, whose registry of scheduled queues is outside the queue's tag.
    let schedule = |verb: &str| as_app(&url, &["schedule", verb, &name, "hourly"]);
    as_app(
        &url,
        &[
            "schedule", "set", &name, "hourly", "--every", "1h", "--value", "tick",
        ],
    );
    assert!(as_app(&url, &["schedule", "list", &name]).contains("hourly"));
    for verb in ["pause", "resume", "trigger", "remove"] {
        schedule(verb);
    }
    assert_eq!(as_app(&url, &["clear", &name]), "true\n");

    // The worker (with its transfer scheduler and reliable consumer) hands a value over and
    // says nothing but that it started and stopped.
    as_app(&url, &["offer", &name, "job", "--delay", "200ms"]);
    let log = redis.dir().join("work.log");
    let mut worker = Command::new(crate::cli::BIN)
        .args(["--url", &url, "work", &name, "--", "true"])
        .env_remove("REDIS_URL")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &name).await;
    let deadline = Instant::now() + PATIENCE;
    loop {
        let stats = queue.inspect().stats().await.unwrap();
        if stats.pending + stats.ready == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{stats:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Taken: at SIGTERM the worker lets the command finish and acknowledges it.
    let _ = Command::new("kill").arg(worker.id().to_string()).status();
    worker.wait().unwrap();
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("1 acked"), "{said}");
    assert!(!said.contains("WARN") && !said.contains("NOPERM"), "{said}");

    // A key outside the user's patterns is still found by the probe.
    let other = unique_name("acl-other");
    let out = delayq(&url, &["check", &other, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report["denied"].to_string().contains("NOPERM"), "{report}");

    // Without the right to run the probe, check says it could not check, and warns of nothing
    // it did not see.
    redis.cli(&["ACL", "SETUSER", "app", "-evalsha"]);
    let out = delayq(&url, &["check", &name]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("could not check"), "{stdout}");
    assert!(!stdout.contains("may not use"), "{stdout}");
}

/// A script that never ends makes the server answer BUSY to everything: `check` says so (as a
/// warning, exit 1), on a fresh connection and on one made before; SCRIPT KILL ends it.
#[tokio::test(flavor = "multi_thread")]
async fn check_says_when_the_server_is_busy_with_a_script() {
    let redis = TestRedis::start_with(&["--busy-reply-threshold", "100"]);
    let name = unique_name("busy");
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &name).await;
    let mut runaway = Command::new("redis-cli")
        .args(cli_conn(redis.port))
        .args(["EVAL", "while true do end", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let reply = format!("{:?}", resp_call(redis.port, &["PING"]));
        if reply.contains("BUSY") {
            break;
        }
        assert!(Instant::now() < deadline, "never busy: {reply}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let out = delayq(&redis.url(), &["check", &name]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("server:       busy (BUSY"), "{stdout}");
    assert!(
        stdout.contains("warning:      the server is busy running a script"),
        "{stdout}"
    );
    assert!(stdout.contains("SCRIPT KILL"), "{stdout}");
    let out = delayq(&redis.url(), &["check", &name, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["busy"].as_str().unwrap().starts_with("BUSY"),
        "{report}"
    );

    let report = queue.inspect().check().await.unwrap();
    assert!(report.busy.is_some(), "{report:?}");
    assert_eq!(report.warnings().len(), 1, "{report:?}");

    assert_eq!(redis.cli(&["SCRIPT", "KILL"]), "OK");
    runaway.wait().unwrap();
    let report = queue.inspect().check().await.unwrap();
    assert!(report.busy.is_none(), "{report:?}");
    let out = delayq(&redis.url(), &["check", &name]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("server:       redis") || stdout.contains("server:       valkey"));
}

/// A paused queue shows as paused in `stats` (one queue and a sharded one) and `check`.
#[tokio::test(flavor = "multi_thread")]
async fn stats_and_check_show_a_paused_queue() {
    let redis = TestRedis::start_with(&["--appendonly", "yes"]);
    let url = redis.url();
    let name = unique_name("paused");
    let stats = |args: &[&str]| -> serde_json::Value {
        let out = delayq(&url, args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert!(text(&delayq(&url, &["stats", &name]).stdout).contains("paused:      no"));
    assert_eq!(stats(&["--json", "stats", &name])["paused"], false);
    assert!(text(&delayq(&url, &["check", &name]).stdout).contains("paused:       no"));

    delayq(&url, &["pause", &name]);
    assert!(text(&delayq(&url, &["stats", &name]).stdout).contains("paused:      yes"));
    assert_eq!(stats(&["--json", "stats", &name])["paused"], true);
    let out = delayq(&url, &["check", &name]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("paused:       yes"), "{stdout}");
    assert!(
        stdout.contains("warning:      the queue is paused"),
        "{stdout}"
    );
    let out = delayq(&url, &["check", &name, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["paused"], true, "{report}");

    let sharded = unique_name("paused-shards");
    delayq(&url, &["pause", &sharded, "--shards", "3"]);
    let report = stats(&["--json", "stats", &sharded, "--shards", "3"]);
    assert_eq!(report["paused"], true, "{report}");
}
