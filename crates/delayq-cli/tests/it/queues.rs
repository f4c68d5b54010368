//! `delayq queues` (every queue with any key, a row each, an unreadable one shown in its row)
//! and `delayq cancel` (by the handle `offer --handle` prints, one queue or sharded).

use crate::cli::{delayq, text};
use crate::common::{unique_name, TestCluster, TestRedis};
use delayq::QueueKeys;

/// The JSON rows of `delayq --json queues ARGS`, by queue, and the exit status.
fn json_rows(url: &str, args: &[&str]) -> (Vec<serde_json::Value>, Option<i32>) {
    let out = delayq(url, &[&["--json", "queues"], args].concat());
    let rows = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (rows, out.status.code())
}

#[test]
fn every_queue_with_any_key_is_listed_and_a_bad_one_in_its_row() {
    let redis = TestRedis::start();
    let url = redis.url();
    let prefix = unique_name("listed");
    let name = |what: &str| format!("{prefix}-{what}");
    let (pending, dead, bad, paused) = (name("pending"), name("dead"), name("bad"), name("paused"));
    delayq(&url, &["offer", &pending, "v", "--delay", "1h"]);
    // Dead letters and nothing pending: no timeout zset, no order list.
    redis.cli(&["RPUSH", QueueKeys::new(dead.as_str()).dead(), "a", "b"]);
    redis.cli(&["SET", QueueKeys::new(bad.as_str()).inflight(), "not a zset"]);
    redis.cli(&["SET", QueueKeys::new(paused.as_str()).paused(), "1"]);
    delayq(&url, &["offer", "elsewhere", "v", "--delay", "1h"]);

    let pattern = format!("{prefix}-*");
    let (rows, status) = json_rows(&url, &["--match", &pattern]);
    assert_eq!(status, Some(1), "a row with an error exits 1: {rows:?}");
    let names: Vec<&str> = rows.iter().map(|r| r["queue"].as_str().unwrap()).collect();
    assert_eq!(names, [&bad, &dead, &paused, &pending]);
    let counts = serde_json::json!({
        "queue": dead, "pending": 0, "ready": 0, "in_flight": 0, "dead": 2, "quarantined": 0,
        "paused": false, "schedules": 0,
    });
    assert_eq!(rows[1], counts);
    assert_eq!(rows[2]["paused"], true);
    assert_eq!(rows[3]["pending"], 1);
    let error = &rows[0]["error"];
    assert_eq!(error["exit_status"], 5, "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("wrong"),
        "{error}"
    );

    let out = delayq(&url, &["queues", "--match", &pattern]);
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("QUEUE"), "{table}");
    assert!(
        lines[1].starts_with(&bad) && lines[1].contains("error: "),
        "{table}"
    );
    let dead_row: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        dead_row,
        [dead.as_str(), "0", "0", "0", "2", "0", "no", "0"],
        "{table}"
    );

    let (rows, status) = json_rows(&url, &["--match", &name("d*")]);
    assert_eq!(status, Some(0));
    assert_eq!(rows, [counts]);
}

#[test]
fn queues_on_every_master_of_a_cluster() {
    let cluster = TestCluster::start(3);
    let url = cluster.url();
    let prefix = unique_name("spread");
    let names: Vec<String> = (0..6).map(|i| format!("{prefix}-{i}")).collect();
    for name in &names {
        delayq(&url, &["offer", name, "v", "--delay", "1h"]);
    }
    let (rows, status) = json_rows(&url, &["--match", &format!("{prefix}-*")]);
    assert_eq!(status, Some(0), "{rows:?}");
    let listed: Vec<&str> = rows.iter().map(|r| r["queue"].as_str().unwrap()).collect();
    assert_eq!(listed, names);
    assert!(rows.iter().all(|r| r["pending"] == 1), "{rows:?}");
}

#[test]
fn cancel_takes_the_entry_of_its_handle_only() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("cancel");
    let offer = |args: &[&str]| {
        let out = delayq(
            &url,
            &[&["offer", &queue, "same", "--delay", "1h"], args].concat(),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).trim().to_owned()
    };
    let first = offer(&["--handle"]);
    let second = offer(&["--handle"]);
    assert_ne!(first, second);
    let cancel = |handle: &str, args: &[&str]| {
        let out = delayq(&url, &[&["cancel", &queue, handle], args].concat());
        (text(&out.stdout), out.status.code())
    };
    assert_eq!(cancel(&first, &[]), ("true\n".to_owned(), Some(0)));
    let order = QueueKeys::new(queue.as_str()).order().to_owned();
    assert_eq!(
        redis.cli(&["LLEN", &order]),
        "1",
        "the other equal entry stays"
    );
    assert_eq!(cancel(&first, &[]), ("false\n".to_owned(), Some(0)));
    assert_eq!(
        cancel(&first, &["--exit-status"]),
        ("false\n".to_owned(), Some(1))
    );
    let (_, status) = cancel("not-a-handle", &[]);
    assert_eq!(status, Some(2));
    assert_eq!(
        redis.cli(&["LLEN", &order]),
        "1",
        "a bad handle cancels nothing"
    );

    // Sharded: the handle names its shard.
    let sharded = unique_name("cancel-sharded");
    let args = [
        "--json", "offer", &sharded, "v", "--handle", "--shards", "3",
    ];
    let out = delayq(&url, &args);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let handle = record["handle"].as_str().unwrap().to_owned();
    assert!(handle.contains(':'), "{record}");
    let out = delayq(&url, &["cancel", &sharded, &handle, "--shards", "3"]);
    assert_eq!(text(&out.stdout), "true\n", "{}", text(&out.stderr));
    let out = delayq(&url, &["cancel", &sharded, &first, "--shards", "3"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a one-queue handle with --shards"
    );
}

/// The listings' smaller edges: a queue name with control characters is shown escaped (one
/// row, no terminal escape), `schedule list` exits 1 when a row is an error (as `queues`
/// does), and a `--match` pattern with `[...]`, which delayq's globs do not know, is refused
/// with a clear error (exit 2) rather than matching nothing.
#[test]
fn listings_escape_names_exit_1_on_error_rows_and_refuse_bracket_globs() {
    let redis = TestRedis::start();
    let url = redis.url();
    let prefix = unique_name("edges");
    let odd = format!("{prefix}-a\u{1b}[2Jb\nc");
    let out = delayq(&url, &["offer", &odd, "v", "--delay", "1h"]);
    assert!(out.status.success(), "{out:?}");
    let out = delayq(&url, &["queues", "--match", &format!("{prefix}-*")]);
    let table = text(&out.stdout);
    assert_eq!(table.lines().count(), 2, "{table:?}");
    assert!(!table.contains('\u{1b}'), "{table:?}");
    assert!(table.contains("a\\u{1b}[2Jb\\nc"), "{table:?}");

    let bad = format!("{prefix}-sched");
    redis.cli(&["SET", QueueKeys::new(bad.as_str()).schedules(), "junk"]);
    let out = delayq(&url, &["schedule", "list", &bad]);
    assert!(text(&out.stdout).contains("error: "), "{out:?}");
    assert_eq!(out.status.code(), Some(1), "{out:?}");

    let out = delayq(&url, &["queues", "--match", &format!("{prefix}-[ab]*")]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains('['), "{out:?}");
}
