//! The dashboard's overview over every queue, against a real redis-server: sorted by trouble
//! and filtered by state across pages (from the gauges' snapshot, whose age it gives); a real
//! `delayq work` shows up in the queue's activity counts and in its list of processes, and
//! leaves the list when it stops.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::dashboard::{dashboard, dashboard_with, json};
use crate::observe::{delayq, Daemon, BIN};
use serde_json::Value;
use std::process::{Command, Stdio};

/// The names of the overview's rows in `page`.
fn names(page: &Value) -> Vec<String> {
    let rows = page["queues"].as_array().unwrap();
    rows.iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Every page of `query` two rows at a time, their names in order.
fn all_pages(port: u16, query: &str) -> Vec<String> {
    let mut found = Vec::new();
    loop {
        let page = json(
            port,
            &format!("/api/queues?limit=2&offset={}&{query}", found.len()),
            200,
        );
        let more = names(&page);
        if more.is_empty() {
            return found;
        }
        found.extend(more);
    }
}

#[test]
fn problems_come_first_across_pages_and_the_state_filters_every_queue() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("ov");
    let q = |part: &str| format!("{prefix}-{part}");
    for part in ["a", "b", "c-stuck", "d-paused", "e-wrong", "f"] {
        delayq(&url, &["offer", &q(part), "x", "--delay", "1h"]);
    }
    // Due in 1970 and nothing transferring it: stuck.
    let stuck_zset = format!("redisson_delay_queue_timeout:{{{}}}", q("c-stuck"));
    redis.cli(&["ZADD", &stuck_zset, "1000", "late"]);
    delayq(&url, &["pause", &q("d-paused")]);
    // A wrong-typed key: its read fails.
    let wrong_order = format!("redisson_delay_queue:{{{}}}", q("e-wrong"));
    redis.cli(&["DEL", &wrong_order]);
    redis.cli(&["SET", &wrong_order, "s"]);
    let (_ui, port) = dashboard(&redis);

    // By name the stuck queue is on the second page of two.
    let by_name = json(port, "/api/queues?limit=2&offset=2", 200);
    assert_eq!(names(&by_name), [q("c-stuck"), q("d-paused")]);
    assert_eq!(
        by_name["snapshot"],
        Value::Null,
        "name order reads no snapshot"
    );

    // Problems first, over every page: unreadable, stuck, paused, then by name.
    let want = [
        q("e-wrong"),
        q("c-stuck"),
        q("d-paused"),
        q("a"),
        q("b"),
        q("f"),
    ];
    wait_until(
        "the snapshot to order every queue",
        PATIENCE,
        || match all_pages(port, "sort=problems") {
            got if got == want => Ok(()),
            got => Err(format!("{got:?}")),
        },
    );
    let first = json(port, "/api/queues?limit=2&sort=problems", 200);
    assert_eq!(first["total"], 6, "{first}");
    assert_eq!(first["snapshot"]["unread"], 0, "{first}");
    let age = first["snapshot"]["age_ms"].as_i64().unwrap();
    assert!((0..60_000).contains(&age), "{first}");
    // The rows of the page are read now: the stuck one says so itself.
    assert_eq!(first["queues"][1]["stuck"], true, "{first}");
    assert!(first["queues"][0]["error"].is_string(), "{first}");

    for (state, only) in [
        ("stuck", vec![q("c-stuck")]),
        ("paused", vec![q("d-paused")]),
        ("unreadable", vec![q("e-wrong")]),
        ("ok", vec![q("a"), q("b"), q("f")]),
    ] {
        assert_eq!(all_pages(port, &format!("state={state}")), only, "{state}");
    }
    // A count order, largest first: two dead letters put b first.
    let dead = format!("delayq_dead:{{{}}}", q("b"));
    redis.cli(&["RPUSH", &dead, "d1", "d2"]);
    wait_until("most dead letters first", PATIENCE, || {
        let page = json(port, "/api/queues?limit=1&sort=dead", 200);
        match names(&page) {
            got if got == [q("b")] => Ok(()),
            got => Err(format!("{got:?}")),
        }
    });
    json(port, "/api/queues?sort=size", 400);
    json(port, "/api/queues?state=slow", 400);
}

#[test]
fn a_queue_whose_jobs_all_fail_and_one_whose_values_wait_are_judged_and_come_first() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("health");
    let q = |part: &str| format!("{prefix}-{part}");
    let (fine, failing, lagging) = (q("a-fine"), q("b-failing"), q("c-lagging"));
    for name in [&fine, &failing, &lagging] {
        delayq(&url, &["offer", name, "later", "--delay", "1h"]);
    }
    // 200 values on the list and nobody taking them.
    let values: Vec<String> = (0..200).map(|n| format!("v{n}")).collect();
    let mut push = vec!["RPUSH", lagging.as_str()];
    push.extend(values.iter().map(String::as_str));
    redis.cli(&push);
    // Every job of `failing` fails at its only attempt: six dead letters, none acked.
    for n in 0..6 {
        delayq(
            &url,
            &["offer", &failing, &format!("job{n}"), "--delay", "0s"],
        );
    }
    let worker = Command::new(BIN)
        .args(["--url", &url, "work", &failing, "--max-attempts", "1"])
        .args(["--", "sh", "-c", "exit 3"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _worker = Daemon(worker);
    let dead = format!("delayq_dead:{{{failing}}}");
    wait_until("six dead letters", PATIENCE, || {
        match redis.cli(&["LLEN", &dead]) {
            n if n == "6" => Ok(()),
            n => Err(n),
        }
    });
    let (_ui, port) = dashboard_with(&redis, &[("DELAYQ_LAGGING_AFTER", "2s")]);

    let page = wait_until("both judged, first", PATIENCE, || {
        let page = json(port, &format!("/api/queues?sort=problems&q={prefix}"), 200);
        match names(&page) {
            got if got == [failing.clone(), lagging.clone(), fine.clone()] => Ok(page),
            got => Err(format!("{got:?} {page}")),
        }
    });
    let health = |i: usize| page["queues"][i]["health"].clone();
    assert_eq!(health(0)["state"], "failing", "{page}");
    assert_eq!(health(0)["reason"], "6 dead, 0 acked in 5 min", "{page}");
    assert_eq!(health(1)["state"], "lagging", "{page}");
    let reason = health(1)["reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with("oldest ready "), "{reason}");
    assert!(
        reason.ends_with(", 200 waiting, 0 taken in 5 min"),
        "{reason}"
    );
    assert!(
        page["queues"][1]["ready_age_ms"].as_i64().unwrap() >= 2_000,
        "{page}"
    );
    assert_eq!(health(2)["state"], "ok", "{page}");
    assert_eq!(page["lagging_after_ms"], 2_000, "{page}");
    // The state filter over every queue knows lag from the snapshot.
    assert_eq!(
        all_pages(port, &format!("state=lagging&q={prefix}")),
        [lagging]
    );
}

/// The dashboard's processes of `name`.
fn processes(port: u16, name: &str) -> Vec<Value> {
    let answer = json(port, &format!("/api/queues/{name}/processes"), 200);
    answer["processes"].as_array().unwrap().clone()
}

/// The queue's activity of the last hour, summed per kind.
fn activity_totals(port: u16, name: &str) -> [u64; 4] {
    let answer = json(port, &format!("/api/queues/{name}/activity"), 200);
    let minutes = answer["minutes"].as_array().unwrap();
    assert_eq!(minutes.len(), 60, "{answer}");
    ["moved", "taken", "acked", "failed"]
        .map(|k| minutes.iter().map(|m| m[k].as_u64().unwrap()).sum::<u64>())
}

#[test]
fn a_real_worker_shows_in_the_activity_and_the_processes_until_it_stops() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let name = unique_name("act");
    for value in ["ok1", "ok2", "ok3", "bad1", "bad2"] {
        delayq(&url, &["offer", &name, value, "--delay", "0s"]);
    }
    let (_ui, port) = dashboard(&redis);
    assert!(processes(port, &name).is_empty());
    // Acks a value starting "ok", fails the others for good at their first attempt.
    let worker = Command::new(BIN)
        .args(["--url", &url, "work", &name, "--max-attempts", "1", "--"])
        .args([
            "sh",
            "-c",
            "case \"$DELAYQ_VALUE\" in ok*) exit 0;; *) exit 1;; esac",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = worker.id();
    let mut worker = Daemon(worker);

    let listed = wait_until("the worker listed", PATIENCE, || {
        let listed = processes(port, &name);
        match listed.iter().find(|p| p["kind"] == "worker") {
            Some(p) => Ok(p.clone()),
            None => Err(format!("{listed:?}")),
        }
    });
    assert_eq!(listed["pid"], pid, "{listed}");
    assert!(listed["beat_ms"].as_i64().unwrap() > 0, "{listed}");
    // Five moved by its scheduler, five taken, three acked, two failed.
    wait_until("the worker's counts", PATIENCE, || {
        match activity_totals(port, &name) {
            [5, 5, 3, 2] => Ok(()),
            got => Err(format!("{got:?}")),
        }
    });
    let row = json(port, &format!("/api/queues?q={name}"), 200)["queues"][0].clone();
    assert_eq!(
        ["moved", "taken", "acked", "failed"].map(|k| row["activity"][k].clone()),
        [5, 5, 3, 2].map(Value::from),
        "{row}"
    );
    assert!(row["processes"].as_u64().unwrap() >= 1, "{row}");

    // A clean stop takes its record out.
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(worker.0.wait().unwrap().success());
    wait_until("no process listed", PATIENCE, || {
        match processes(port, &name) {
            listed if listed.is_empty() => Ok(()),
            listed => Err(format!("{listed:?}")),
        }
    });
}
