//! `delayq schedule`: set, list (text and JSON), pause, resume, trigger, remove, with the exit
//! statuses of docs/cli.md; and three real `delayq transfer` processes firing the same
//! schedules, one of them SIGKILLed over and over, one offering 2 s further ahead (as a clock
//! 2 s ahead would; it joins half-way, so that before it the other two race for every
//! occurrence): every occurrence delivered once, none early.

use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::time::now_ms;
use fred::interfaces::{ListInterface, SortedSetsInterface};
use std::collections::HashMap;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

fn delayq(redis: &TestRedis, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["--url", &redis.url()])
        .args(args)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn set_list_pause_resume_trigger_remove() {
    let redis = TestRedis::start();
    let q = unique_name("sched");
    let set = delayq(
        &redis,
        &[
            "--json",
            "schedule",
            "set",
            &q,
            "nightly",
            "--cron",
            "30 2 * * *",
        ],
    );
    // No value: clap's usage error.
    assert_eq!(set.status.code(), Some(2), "{set:?}");
    let set = delayq(
        &redis,
        &[
            "--json",
            "schedule",
            "set",
            &q,
            "nightly",
            "--cron",
            "30 2 * * *",
            "--tz",
            "Europe/Berlin",
            "--value",
            "report",
            "--missed",
            "latest",
        ],
    );
    assert!(set.status.success(), "{set:?}");
    let record: serde_json::Value = serde_json::from_str(stdout(&set).trim()).unwrap();
    assert_eq!(record["queue"], q.as_str());
    assert_eq!(record["id"], "nightly");
    assert!(record["next_ms"].as_i64().unwrap() > now_ms());

    let list = delayq(&redis, &["--json", "schedule", "list", &q]);
    let record: serde_json::Value = serde_json::from_str(stdout(&list).trim()).unwrap();
    assert_eq!(record["cron"], "30 2 * * *");
    assert_eq!(record["zone"], "Europe/Berlin");
    assert_eq!(record["value"], "report");
    assert_eq!(record["missed"], "latest");
    assert_eq!(record["paused"], false);
    assert_eq!(record["last_ms"], serde_json::Value::Null);
    // Without a queue: every queue's schedules.
    let all = delayq(&redis, &["schedule", "list"]);
    assert!(stdout(&all).contains(&format!("{q}\tnightly\tcron '30 2 * * *' Europe/Berlin")));

    assert!(delayq(&redis, &["schedule", "pause", &q, "nightly"])
        .status
        .success());
    let paused = stdout(&delayq(&redis, &["schedule", "list", &q]));
    assert!(paused.contains("\tpaused\t"), "{paused}");
    assert!(delayq(&redis, &["schedule", "resume", &q, "nightly"])
        .status
        .success());
    let trigger = delayq(&redis, &["schedule", "trigger", &q, "nightly"]);
    assert!(trigger.status.success(), "{trigger:?}");
    let peek = stdout(&delayq(&redis, &["peek", &q]));
    assert!(peek.contains("report"), "{peek}");

    // Bad input: exit 2 with what is wrong, nothing written.
    let bad = delayq(
        &redis,
        &[
            "schedule",
            "set",
            &q,
            "x",
            "--cron",
            "0 25 * * *",
            "--value",
            "v",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("cron expression"));
    let zone = delayq(
        &redis,
        &[
            "schedule",
            "set",
            &q,
            "x",
            "--cron",
            "0 * * * *",
            "--tz",
            "Nowhere/Land",
            "--value",
            "v",
        ],
    );
    assert_eq!(zone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&zone.stderr).contains("unknown time zone"));
    // No such schedule: exit 1.
    assert_eq!(
        delayq(&redis, &["schedule", "pause", &q, "x"])
            .status
            .code(),
        Some(1)
    );
    let removed = delayq(&redis, &["--json", "schedule", "remove", &q, "nightly"]);
    assert_eq!(
        stdout(&removed).trim(),
        format!(r#"{{"queue":"{q}","id":"nightly","removed":true}}"#)
    );
    let again = delayq(
        &redis,
        &["schedule", "remove", &q, "nightly", "--exit-status"],
    );
    assert_eq!(
        (again.status.code(), stdout(&again).trim()),
        (Some(1), "false")
    );
}

/// A `delayq transfer` process of `queue` offering `lead` ahead.
fn transfer(redis: &TestRedis, queue: &str, lead: &str) -> Child {
    Command::new(BIN)
        .args([
            "--url",
            &redis.url(),
            "transfer",
            queue,
            "--schedule-lead",
            lead,
        ])
        // Short ticks, so that the processes race for the same occurrences.
        .args(["--schedule-tick", "20ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

const SCHEDULES: usize = 3;
const EVERY_MS: i64 = 500;
const OCCURRENCES: i64 = 20;

#[tokio::test(flavor = "multi_thread")]
async fn three_transfer_processes_one_killed_one_ahead_deliver_each_occurrence_once() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let q = unique_name("fire");
    let start = now_ms() + 3_000;
    let end = start + (OCCURRENCES - 1) * EVERY_MS;
    for i in 0..SCHEDULES {
        let (id, start, end) = (format!("s{i}"), start.to_string(), end.to_string());
        let set = delayq(
            &redis,
            &[
                "schedule", "set", &q, &id, "--every", "500ms", "--value", &id, "--start", &start,
                "--end", &end,
            ],
        );
        assert!(set.status.success(), "{set:?}");
    }
    let mut steady = transfer(&redis, &q, "2s");
    let mut ahead: Option<Child> = None;
    let mut killed = transfer(&redis, &q, "2s");
    let mut arrivals: HashMap<String, Vec<i64>> = HashMap::new();
    let (deadline, mut kills, mut last_kill) = (Instant::now() + PATIENCE, 0, Instant::now());
    let keys = delayq::QueueKeys::new(q.as_str());
    let (timeout, schedules) = (keys.timeout(), keys.schedules());
    loop {
        let value: Option<String> = client.lpop(q.as_str(), None).await.unwrap();
        if let Some(value) = value {
            arrivals.entry(value).or_default().push(now_ms());
            continue;
        }
        let pending: u64 = client.zcard(timeout).await.unwrap();
        // Schedules not ended yet are scored by their next occurrence, ended ones `+inf`.
        let running: u64 = client.zcount(schedules, f64::MIN, f64::MAX).await.unwrap();
        if running == 0 && pending == 0 || Instant::now() > deadline {
            break;
        }
        if ahead.is_none() && now_ms() > start + OCCURRENCES * EVERY_MS / 2 {
            ahead = Some(transfer(&redis, &q, "4s"));
        }
        if last_kill.elapsed() > Duration::from_millis(700) {
            killed.kill().unwrap();
            killed.wait().unwrap();
            killed = transfer(&redis, &q, "2s");
            (kills, last_kill) = (kills + 1, Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for child in [Some(&mut steady), ahead.as_mut(), Some(&mut killed)]
        .into_iter()
        .flatten()
    {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    // Whatever is left on the list arrived too.
    while let Some(value) = client
        .lpop::<Option<String>, _>(q.as_str(), None)
        .await
        .unwrap()
    {
        arrivals.entry(value).or_default().push(now_ms());
    }
    assert!(kills >= 5, "killed {kills} times");
    for i in 0..SCHEDULES {
        let times = arrivals.remove(&format!("s{i}")).unwrap_or_default();
        assert_eq!(
            times.len() as i64,
            OCCURRENCES,
            "s{i}: duplicated or missed occurrences"
        );
        for (k, at) in times.iter().enumerate() {
            let due = start + k as i64 * EVERY_MS;
            assert!(
                *at >= due,
                "s{i}: occurrence {k} delivered at {at}, due at {due}"
            );
        }
    }
    assert!(arrivals.is_empty(), "values nobody scheduled: {arrivals:?}");
}

/// `transfer --all` finds a queue that has schedules and nothing pending, and fires them; the
/// value arrives like any offer's.
#[tokio::test(flavor = "multi_thread")]
async fn transfer_all_fires_the_schedules_of_a_queue_with_nothing_pending() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let q = unique_name("all");
    let set = delayq(
        &redis,
        &[
            "schedule", "set", &q, "tick", "--every", "200ms", "--value", "t",
        ],
    );
    assert!(set.status.success(), "{set:?}");
    let mut child = Command::new(BIN)
        .args([
            "--url",
            &redis.url(),
            "transfer",
            "--all",
            "--schedule-tick",
            "50ms",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let mut taken = None;
    while taken.is_none() && Instant::now() < deadline {
        taken = client
            .lpop::<Option<String>, _>(q.as_str(), None)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(taken.as_deref(), Some("t"));
}

/// `delayq work QUEUE` fires the queue's schedules too, and hands each occurrence's value to
/// its command.
#[tokio::test(flavor = "multi_thread")]
async fn work_fires_its_queues_schedules() {
    let redis = TestRedis::start();
    let q = unique_name("work");
    let set = delayq(
        &redis,
        &[
            "schedule", "set", &q, "w", "--every", "200ms", "--value", "job",
        ],
    );
    assert!(set.status.success(), "{set:?}");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("handled.log");
    let script = format!("echo \"$DELAYQ_VALUE\" >> {}", log.display());
    let mut child = Command::new(BIN)
        .args(["--url", &redis.url(), "work", &q, "--schedule-tick", "50ms"])
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let handled = loop {
        let handled = std::fs::read_to_string(&log).unwrap_or_default();
        if handled.lines().count() >= 2 || Instant::now() > deadline {
            break handled;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(handled.lines().take(2).all(|l| l == "job"), "{handled:?}");
    assert!(handled.lines().count() >= 2, "{handled:?}");
}

/// Schedules that could never fire are refused with exit 2 and nothing written: dates that do
/// not exist (30 and 31 February, 31 April…), an end in the past, a start past 2^53 ms (no
/// entry can be due then), and an interval under 10 ms (it could never catch up).
#[test]
fn schedules_that_can_never_fire_are_refused() {
    let redis = TestRedis::start();
    let q = unique_name("never");
    let keys = delayq::QueueKeys::new(q.as_str());
    let refused: [&[&str]; 7] = [
        &["--cron", "0 0 30 2 *"],
        &["--cron", "0 0 31 2 *"],
        &["--cron", "0 0 31 4,6,9,11 *"],
        &["--every", "1m", "--end", "2020-01-01T00:00:00Z"],
        &["--every", "1m", "--start", "99999999999999999"],
        &["--every", "1ms"],
        &["--every", "9ms"],
    ];
    for how in refused {
        let mut args = vec!["schedule", "set", &q, "s", "--value", "v"];
        args.extend_from_slice(how);
        let out = delayq(&redis, &args);
        assert_eq!(out.status.code(), Some(2), "{how:?}: {out:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).trim().is_empty());
        assert_eq!(redis.cli(&["EXISTS", &keys.schedule("s")]).trim(), "0");
        assert_eq!(
            redis.cli(&["ZCARD", keys.schedules()]).trim(),
            "0",
            "{how:?}"
        );
    }
    // The edge that can fire is taken.
    let ok = delayq(
        &redis,
        &[
            "schedule", "set", &q, "s", "--value", "v", "--every", "10ms",
        ],
    );
    assert!(ok.status.success(), "{ok:?}");
}

/// A schedule hash of the wrong type and one whose fields do not parse are rows of their own
/// in `schedule list` (text and JSON), beside the healthy schedule, exit 0.
#[test]
fn unreadable_schedules_are_error_rows_of_the_listing() {
    let redis = TestRedis::start();
    let q = unique_name("rows");
    let keys = delayq::QueueKeys::new(q.as_str());
    let set = delayq(
        &redis,
        &[
            "schedule", "set", &q, "good", "--every", "1h", "--value", "v",
        ],
    );
    assert!(set.status.success(), "{set:?}");
    redis.cli(&["SET", &keys.schedule("wt"), "junk"]);
    redis.cli(&["ZADD", keys.schedules(), "0", "wt"]);
    redis.cli(&[
        "HSET",
        &keys.schedule("bad"),
        "cron",
        "garbage",
        "value",
        "v",
    ]);
    redis.cli(&["ZADD", keys.schedules(), "1", "bad"]);
    // Error rows make it exit 1, as `delayq queues` does; the good rows are listed all the same.
    let list = delayq(&redis, &["schedule", "list", &q]);
    assert_eq!(list.status.code(), Some(1), "{list:?}");
    let text = stdout(&list);
    assert!(text.contains(&format!("{q}\tgood\tevery 1h")), "{text}");
    assert!(text.contains(&format!("{q}\twt\terror: ")), "{text}");
    assert!(text.contains(&format!("{q}\tbad\terror: ")), "{text}");
    let json = delayq(&redis, &["--json", "schedule", "list", &q]);
    assert_eq!(json.status.code(), Some(1), "{json:?}");
    let records: Vec<serde_json::Value> = stdout(&json)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 3, "{records:?}");
    let errors: Vec<&str> = records
        .iter()
        .filter(|r| r["error"].is_string())
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(errors, ["wt", "bad"]);
}
