//! The page's lists and item actions from the command line: `dead list` (with ids, paged, not
//! taking), `dead retry ID` and `dead delete ID`, `inflight list`, `ready list`; their records
//! are the dashboard's rows under the same names (`error`, never `last_error`); a reader that
//! closes the pipe early is no error.

use crate::cli::{delayq, text, BIN};
use crate::common::{unique_name, TestRedis, PATIENCE};
use crate::dashboard::{dashboard, json};
use delayq::codec::StringCodec;
use delayq::{DelayedQueue, Job, JobError, ReliableConfig, RetryPolicy};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Each line of `out` as a JSON record.
fn records(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// `delayq --url URL ARGS`, which must succeed; its stdout.
fn ok(url: &str, args: &[&str]) -> String {
    let out = delayq(url, args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    text(&out.stdout)
}

/// `queue` with `values` dead-lettered by a real worker whose handler fails each for good,
/// saying why; in offer order.
async fn with_dead_letters(redis: &TestRedis, prefix: &str, values: &[&str]) -> String {
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::builder(client, unique_name(prefix), StringCodec)
        .build()
        .await
        .unwrap();
    let worker = queue
        .worker(1, |job: Job<String>| async move {
            Err::<(), _>(JobError::permanent(format!(
                "no such order {}",
                job.value()
            )))
        })
        .retry(RetryPolicy::fixed(1, Duration::from_millis(10)))
        .reliable_config(ReliableConfig::default().with_wait_slice(Duration::from_millis(100)))
        .spawn()
        .unwrap();
    // One millisecond apart: offers due in the same millisecond tie in the timeout zset, and
    // a tie is ordered by the entry's random id, so the dead letters would come in any order.
    for (at, value) in values.iter().enumerate() {
        queue
            .offer(value, Duration::from_millis(at as u64))
            .await
            .unwrap();
    }
    let deadline = Instant::now() + PATIENCE;
    while worker.stats().dead < values.len() as u64 {
        assert!(Instant::now() < deadline, "{:?}", worker.stats());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.shutdown().await.unwrap();
    queue.name().to_owned()
}

/// `dead list` shows each dead letter with its position and id, a page at a time, and takes
/// nothing; its `--json` records are the dashboard's rows of the dead tab (same fields, same
/// values) with `queue` and `at`. `dead retry ID` puts exactly that one back on the list,
/// `dead delete ID --at N` deletes exactly that one; an id no longer there prints false (exit
/// 1 with `--exit-status`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_listed_with_ids_and_retried_or_deleted_one_by_one() {
    let redis = TestRedis::start();
    let url = redis.url();
    let values = ["o-1", "o-2", "o-3", "o-4", "o-5"];
    let name = with_dead_letters(&redis, "list-dead", &values).await;
    let dead_key = format!("delayq_dead:{{{name}}}");

    let listed = ok(&url, &["dead", "list", &name]);
    let rows: Vec<Vec<&str>> = listed.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 5, "{listed}");
    for (at, (row, value)) in rows.iter().zip(values).enumerate() {
        let id = row[1];
        assert_eq!(row[0], at.to_string());
        assert!(
            id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
        assert_eq!(row[2], "1");
        assert_eq!(row[4], format!("no such order {value}"));
        assert_eq!(row[5], value);
    }
    assert_eq!(redis.cli(&["LLEN", &dead_key]), "5", "listing took nothing");

    // A page: from the second, two.
    let page = records(&ok(
        &url,
        &[
            "--json", "dead", "list", &name, "--from", "1", "--limit", "2",
        ],
    ));
    assert_eq!(page.len(), 2);
    assert_eq!((&page[0]["at"], &page[1]["at"]), (&1.into(), &2.into()));
    assert_eq!(page[0]["value"], "o-2");
    assert_eq!(page[0]["error"], "no such order o-2");
    assert_eq!(page[0]["id"], rows[1][1]);
    assert!(page[0].get("last_error").is_none(), "{}", page[0]);
    // The dashboard's rows of the same page: the same fields with the same values.
    let (_ui, port) = dashboard(&redis);
    let api = json(port, &format!("/api/queues/{name}?tab=dead&from=1"), 200);
    let api_rows = api["rows"].as_array().unwrap();
    for (record, row) in page.iter().zip(api_rows) {
        let mut record = record.as_object().unwrap().clone();
        record.remove("queue");
        record.remove("at");
        assert_eq!(&Value::Object(record), row);
    }
    // --limit 0: all of them from --from on.
    let all = records(&ok(
        &url,
        &[
            "--json", "dead", "list", &name, "--from", "3", "--limit", "0",
        ],
    ));
    let tail: Vec<&Value> = all.iter().map(|r| &r["value"]).collect();
    assert_eq!(tail, ["o-4", "o-5"]);

    // Retry o-2 by its id (looked for from the head): back on the list, the others stay.
    let o2 = rows[1][1];
    assert_eq!(ok(&url, &["dead", "retry", &name, o2]), "true\n");
    assert_eq!(redis.cli(&["LRANGE", &name, "0", "-1"]), "o-2");
    assert_eq!(redis.cli(&["LLEN", &dead_key]), "4");
    assert_eq!(ok(&url, &["dead", "retry", &name, o2]), "false\n");
    let out = delayq(&url, &["dead", "retry", &name, o2, "--exit-status"]);
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(1), "false\n".into())
    );

    // Delete o-4 by its id where the list showed it (3; it is at 2 now).
    let o4 = rows[3][1];
    let deleted = ok(&url, &["--json", "dead", "delete", &name, o4, "--at", "3"]);
    assert_eq!(
        records(&deleted),
        [serde_json::json!({"queue": name, "deleted": true})]
    );
    let left: Vec<Value> = records(&ok(&url, &["--json", "dead", "list", &name]))
        .into_iter()
        .map(|r| r["value"].clone())
        .collect();
    assert_eq!(left, ["o-1", "o-3", "o-5"]);
    assert_eq!(
        ok(&url, &["dead", "delete", &name, "0123456789abcdef"]),
        "false\n"
    );
}

/// `ready list` and `inflight list` read the target list and the deliveries in flight without
/// taking or settling anything: position and value (a long one cut at 64 KiB, saying so), and a
/// delivery's id, process, attempt, start and deadline; `--json` values in the codec's JSON form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_and_in_flight_values_are_listed_without_taking_them() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("list-ready");
    let long = "x".repeat(100 * 1024);
    redis.cli(&["RPUSH", &name, "r-1", "r-2", "r-3"]);
    redis.cli(&["RPUSH", &name, &long]);

    assert_eq!(
        ok(&url, &["ready", "list", &name, "--limit", "3"]),
        "0\tr-1\n1\tr-2\n2\tr-3\n"
    );
    assert_eq!(
        ok(
            &url,
            &["ready", "list", &name, "--from", "1", "--limit", "1"]
        ),
        "1\tr-2\n"
    );
    let all = records(&ok(&url, &["--json", "ready", "list", &name]));
    assert_eq!(all.len(), 4);
    assert_eq!(
        all[0],
        serde_json::json!({"queue": name, "at": 0, "value": "r-1", "len": 3, "cut": false,
            "codec": "string"})
    );
    let cut = &all[3];
    assert_eq!(
        (&cut["len"], &cut["cut"]),
        (&(100 * 1024).into(), &true.into())
    );
    assert_eq!(cut["value"].as_str().unwrap().len(), 64 * 1024);
    assert_eq!(redis.cli(&["LLEN", &name]), "4", "listing took nothing");

    // Two values taken by a reliable consumer and held, unsettled.
    let client = delayq::connect(&url).await.unwrap();
    let queue = DelayedQueue::builder(client, name.as_str(), StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let consumer = queue.reliable_consumer().await.unwrap();
    let first = consumer.take().await.unwrap();
    let second = consumer.take().await.unwrap();
    let inflight_key = format!("delayq_inflight:{{{name}}}");
    let listed = ok(&url, &["inflight", "list", &name]);
    let rows: Vec<Vec<&str>> = listed.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 2, "{listed}");
    let ids = [first.id(), second.id()];
    let mut listed_ids = [rows[0][1], rows[1][1]];
    listed_ids.sort();
    let mut taken_ids = ids;
    taken_ids.sort();
    assert_eq!(listed_ids, taken_ids);
    let mut values = [rows[0][6], rows[1][6]];
    values.sort();
    assert_eq!(values, ["r-1", "r-2"]);
    // Who took it (this test's process), which attempt, when: read from the delivery id.
    let me = format!("-{}-", std::process::id());
    for row in &rows {
        assert!(row[2].contains(&me), "the process: {listed}");
        assert!(row[1].starts_with(&format!("{}.", row[2])), "{listed}");
        assert_eq!(row[3], "1", "the attempt: {listed}");
        assert!(
            row[4].ends_with('Z') && row[5].ends_with('Z'),
            "start, deadline: {listed}"
        );
    }
    let json = records(&ok(
        &url,
        &["--json", "inflight", "list", &name, "--limit", "1"],
    ));
    assert_eq!(json.len(), 1);
    assert!(json[0]["deadline_ms"].as_i64().unwrap() > 0, "{}", json[0]);
    assert_eq!(json[0]["process"], rows[0][2], "{}", json[0]);
    assert_eq!(json[0]["attempt"], 1, "{}", json[0]);
    assert!(json[0]["started_ms"].as_i64().unwrap() > 0, "{}", json[0]);
    assert!(ids.contains(&json[0]["id"].as_str().unwrap()));
    assert_eq!(
        redis.cli(&["ZCARD", &inflight_key]),
        "2",
        "listing settled nothing"
    );
    assert!(first.ack().await.unwrap() && second.ack().await.unwrap());
}

/// A reader that stops reading (`| head -1`, or a pipe closed before the first line) ends a
/// list quietly with status 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_whose_reader_goes_away_ends_quietly() {
    let redis = TestRedis::start();
    let url = redis.url();
    let values: Vec<String> = (0..3).map(|i| format!("o-{i}")).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    let name = with_dead_letters(&redis, "list-pipe", &refs).await;
    // A long ready list, so the list is still printing when `head` has gone.
    let script = "for i = 1, 5000 do redis.call('RPUSH', KEYS[1], 'value-' .. i) end";
    redis.cli(&["EVAL", script, "1", &name]);
    redis.cli(&["ZADD", &format!("delayq_inflight:{{{name}}}"), "1", "d-1"]);
    redis.cli(&[
        "HSET",
        &format!("delayq_inflight_data:{{{name}}}"),
        "d-1",
        "v",
    ]);
    for list in ["dead", "inflight", "ready"] {
        // The reading end closed before the command writes a byte: every write meets EPIPE.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(BIN)
            .args(["--url", &url, list, "list", &name])
            .env_remove("REDIS_URL")
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let said = text(&out.stderr);
        assert_eq!((out.status.code(), said.as_str()), (Some(0), ""), "{list}");
    }
    // `| head -1` on 5,000 lines: head exits after the first, the list after its next write.
    let pipeline = format!("'{BIN}' --url '{url}' ready list '{name}' --limit 0 | head -1");
    let out = Command::new("bash")
        .args(["-o", "pipefail", "-c", &pipeline])
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "0\tvalue-1\n");
    assert_eq!(
        (out.status.code(), text(&out.stderr).as_str()),
        (Some(0), ""),
        "the list's status through pipefail"
    );
}
