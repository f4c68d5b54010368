//! `--shards` and `--previous-shards`: counts out of range are usage errors, a count that
//! disagrees with the one recorded for the queue is refused naming both, and changing the count
//! the documented way loses nothing and records the new count once the old layout drained.

use crate::cli::{delayq, text, BIN};
use crate::common::{unique_name, TestRedis, PATIENCE};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `args`; must succeed. Returns stdout.
fn ok(url: &str, args: &[&str]) -> String {
    let out = delayq(url, args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Runs `args`; must fail as a usage error (2). Returns stderr.
fn usage_error(url: &str, args: &[&str]) -> String {
    let out = delayq(url, args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    stderr
}

#[test]
fn shard_counts_out_of_range_are_usage_errors() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("range");
    for shards in ["0", "1025", "18446744073709551615", "many"] {
        let stderr = usage_error(&url, &["offer", &name, "v", "--shards", shards]);
        assert!(stderr.contains("from 1 to 1024"), "{shards}: {stderr}");
        let stderr = usage_error(&url, &["work", &name, "--shards", shards, "--", "true"]);
        assert!(stderr.contains("from 1 to 1024"), "{shards}: {stderr}");
    }
    let stderr = usage_error(
        &url,
        &["stats", &name, "--shards", "4", "--previous-shards", "5000"],
    );
    assert!(stderr.contains("from 1 to 1024"), "{stderr}");
    assert_eq!(redis.cli(&["DBSIZE"]), "0", "nothing written");
}

#[test]
fn a_count_that_disagrees_is_refused_and_changing_it_loses_nothing() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("count");
    let old: Vec<String> = (0..20).map(|i| format!("old{i}")).collect();
    for v in &old {
        ok(&url, &["offer", &name, v, "--shards", "4"]);
    }
    assert_eq!(
        redis.cli(&["GET", &delayq::names::shard_count_key(&name)]),
        "4"
    );
    for args in [
        vec!["work", &name, "--shards", "3", "--", "true"],
        vec!["offer", &name, "v", "--shards", "5"],
        vec!["stats", &name, "--shards", "6"],
    ] {
        let stderr = usage_error(&url, &args);
        assert!(stderr.contains("has 4 shards"), "{stderr}");
        let given = args[args.iter().position(|a| *a == "--shards").unwrap() + 1];
        assert!(stderr.contains(&format!("has {given}")), "{stderr}");
        assert!(stderr.contains("--previous-shards 4"), "{stderr}");
    }

    // Growing to 6: producers and the worker with --previous-shards 4.
    let new: Vec<String> = (0..10).map(|i| format!("new{i}")).collect();
    for v in &new {
        ok(
            &url,
            &["offer", &name, v, "--shards", "6", "--previous-shards", "4"],
        );
    }
    let during = |args: &[&str]| -> serde_json::Value {
        let mut all = vec!["--json", "stats", &name, "--shards", "6"];
        all.extend(args);
        serde_json::from_str(&ok(&url, &all)).unwrap()
    };
    let report = during(&["--previous-shards", "4"]);
    assert_eq!(report["drained"], false, "{report}");
    assert_eq!(report["pending"], 30, "{report}");
    let handled = redis.dir().join("handled.txt");
    let script = format!("echo \"$DELAYQ_VALUE\" >> {}", handled.display());
    let mut worker = Command::new(BIN)
        .args(["--url", &url, "work", &name, "--shards", "6"])
        .args(["--previous-shards", "4", "--", "sh", "-c", &script])
        .env_remove("REDIS_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while std::fs::read_to_string(&handled)
        .unwrap_or_default()
        .lines()
        .count()
        < old.len() + new.len()
    {
        assert!(Instant::now() < deadline, "not every value handled");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = Command::new("kill").arg(worker.id().to_string()).status();
    worker.wait().unwrap();
    let mut got: Vec<String> = std::fs::read_to_string(&handled)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    got.sort();
    let mut expected: Vec<String> = old.iter().chain(&new).cloned().collect();
    expected.sort();
    assert_eq!(got, expected, "every value handled once");

    let report = during(&["--previous-shards", "4"]);
    assert_eq!(report["drained"], true, "{report}");
    assert_eq!(
        redis.cli(&["GET", &delayq::names::shard_count_key(&name)]),
        "6"
    );
    let stderr = usage_error(&url, &["stats", &name, "--shards", "4"]);
    assert!(
        stderr.contains("has 6 shards") && stderr.contains("has 4"),
        "{stderr}"
    );
    let report = during(&[]);
    assert_eq!(report["pending"], 0, "{report}");
    assert_eq!(report["ready"], 0, "{report}");
}
