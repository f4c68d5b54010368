//! The dashboard's workers page (`GET /api/workers`) against two real `delayq work` processes
//! whose jobs hold their values until the test lets them go: each process with the queues it
//! serves and each delivery it holds (process, attempt, start); `delayq inflight list` and the
//! queue view's in-flight rows say the same of each delivery; a delivery id of the earlier form
//! is listed apart, its process unknown.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::dashboard::{dashboard, json};
use crate::observe::{delayq, Daemon, BIN};
use serde_json::Value;
use std::process::{Command, Stdio};

/// A `delayq work` over `queues`, two jobs at a time, retrying at once, running `job`.
fn worker(url: &str, queues: &[&str], job: &str) -> (Daemon, u32) {
    let child = Command::new(BIN)
        .args(["--url", url, "work"])
        .args(queues)
        .args(["--concurrency", "2", "--retry-delay", "0s", "--"])
        .args(["sh", "-c", job])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    (Daemon(child), pid)
}

/// The page's process whose pid is `pid`.
fn process_of(page: &Value, pid: u32) -> Option<Value> {
    page["processes"]
        .as_array()?
        .iter()
        .find(|p| p["pid"] == pid)
        .cloned()
}

/// `(queue, attempt)` of each delivery a process holds, sorted.
fn held(process: &Value) -> Vec<(String, u64)> {
    let mut held: Vec<(String, u64)> = process["in_flight"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let queue = d["queue"].as_str().unwrap().to_owned();
            (queue, d["attempt"].as_u64().unwrap_or(0))
        })
        .collect();
    held.sort();
    held
}

#[test]
fn the_workers_page_lists_each_process_its_queues_and_the_deliveries_it_holds() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("wk");
    let (q1, q2, q3) = (
        format!("{prefix}-a"),
        format!("{prefix}-b"),
        format!("{prefix}-c"),
    );
    let dir = tempfile::tempdir().unwrap();
    let (release, failed) = (dir.path().join("release"), dir.path().join("failed"));
    // `retry` fails its first attempt; every other attempt holds its value until released.
    let job = format!(
        "if [ \"$DELAYQ_VALUE\" = retry ] && [ ! -e {f} ]; then touch {f}; exit 3; fi; \
         while [ ! -e {r} ]; do sleep 0.05; done",
        f = failed.display(),
        r = release.display()
    );
    let (_ui, port) = dashboard(&redis);
    let before = delayq::time::now_ms();
    for (queue, value) in [(&q1, "one"), (&q2, "retry"), (&q3, "three")] {
        delayq(&url, &["offer", queue, value, "--delay", "0s"]);
    }
    let (_a, pid_a) = worker(&url, &[&q1, &q2], &job);
    let (_b, pid_b) = worker(&url, &[&q3], &job);

    let page = wait_until("both processes holding their values", PATIENCE, || {
        let page = json(port, "/api/workers", 200);
        let (Some(a), Some(b)) = (process_of(&page, pid_a), process_of(&page, pid_b)) else {
            return Err(format!("{page}"));
        };
        let want_a = vec![(q1.clone(), 1), (q2.clone(), 2)];
        match (held(&a) == want_a, held(&b) == [(q3.clone(), 1)]) {
            (true, true) => Ok(page),
            _ => Err(format!("{page}")),
        }
    });
    let after = delayq::time::now_ms();
    let (a, b) = (
        process_of(&page, pid_a).unwrap(),
        process_of(&page, pid_b).unwrap(),
    );
    assert_eq!(a["queues"], serde_json::json!([q1, q2]), "{a}");
    assert_eq!(b["queues"], serde_json::json!([q3]), "{b}");
    for process in [&a, &b] {
        assert!(
            process["kinds"]
                .as_array()
                .unwrap()
                .contains(&"worker".into()),
            "{process}"
        );
        assert_ne!(a["id"], b["id"]);
        for delivery in process["in_flight"].as_array().unwrap() {
            assert_eq!(delivery["process"], process["id"], "{delivery}");
            let started = delivery["started_ms"].as_i64().unwrap();
            assert!(
                (before..=after).contains(&started),
                "{before} {delivery} {after}"
            );
            let running = delivery["running_ms"].as_i64().unwrap();
            assert!(running >= 0, "{delivery}");
            assert!(
                delivery["deadline_ms"].as_i64().unwrap() > started,
                "{delivery}"
            );
        }
    }
    assert_eq!(page["unowned"], serde_json::json!([]), "{page}");

    // `inflight list`, the queue view's in-flight tab and its entry's detail say the same of
    // each delivery.
    for (queue, process) in [(&q1, &a), (&q2, &a), (&q3, &b)] {
        let listed = delayq(&url, &["--json", "inflight", "list", queue]);
        let rows: Vec<Value> = listed
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let tab = json(port, &format!("/api/queues/{queue}?tab=in_flight"), 200);
        let on_page = process["in_flight"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["queue"] == queue.as_str())
            .unwrap();
        assert_eq!(rows.len(), 1, "{listed}");
        let id = on_page["id"].as_str().unwrap();
        let job = json(
            port,
            &format!("/api/queues/{queue}/job/in_flight/{id}"),
            200,
        );
        for row in [&rows[0], &tab["rows"][0], &job] {
            for field in ["id", "process", "attempt", "started_ms", "deadline_ms"] {
                assert_eq!(row[field], on_page[field], "{field}: {row} {on_page}");
            }
        }
        let text = delayq(&url, &["inflight", "list", queue]);
        let columns: Vec<&str> = text.split('\t').collect();
        assert_eq!(columns[1], on_page["id"], "{text}");
        assert_eq!(columns[2], on_page["process"], "{text}");
        assert_eq!(columns[3], on_page["attempt"].to_string(), "{text}");
        assert!(columns[4].ends_with('Z'), "a start time: {text}");
    }

    // A delivery of the earlier id form (as an older delayq left it): listed apart, its
    // process, attempt and start unknown.
    let old = "00112233445566778899aabbccddeeff";
    redis.cli(&[
        "ZADD",
        &format!("delayq_inflight:{{{q3}}}"),
        "9999999999999",
        old,
    ]);
    redis.cli(&["HSET", &format!("delayq_inflight_data:{{{q3}}}"), old, "x"]);
    let unowned = wait_until("the old delivery listed apart", PATIENCE, || {
        let page = json(port, "/api/workers", 200);
        match page["unowned"].as_array().unwrap().as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(format!("{page}")),
        }
    });
    assert_eq!(
        (&unowned["id"], &unowned["queue"]),
        (&old.into(), &q3.as_str().into())
    );
    for field in ["process", "attempt", "started_ms", "running_ms"] {
        assert_eq!(unowned[field], Value::Null, "{field}: {unowned}");
    }
    redis.cli(&["ZREM", &format!("delayq_inflight:{{{q3}}}"), old]);

    // Released, every value is acknowledged: the page holds no delivery any more.
    std::fs::write(&release, "").unwrap();
    wait_until("no delivery held", PATIENCE, || {
        let page = json(port, "/api/workers", 200);
        let held: usize = page["processes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["in_flight"].as_array().unwrap().len())
            .sum();
        match held {
            0 => Ok(()),
            _ => Err(format!("{page}")),
        }
    });
}
