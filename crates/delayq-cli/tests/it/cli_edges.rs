//! Edges of the command and the dashboard's API against a real redis-server: a queue name too
//! long for a column, schedules in `queues`, paging offsets past what Redis's signed ranges
//! hold, a head due at `-inf`, exit statuses of bad input, `take` past its timeout, the header
//! of `transfer --once`, and readers that close the pipe early.

use crate::cli::{delayq, text};
use crate::common::{unique_name, TestRedis};
use crate::dashboard::{dashboard, json};
use crate::observe::BIN;
use std::process::{Command, Stdio};

#[test]
fn queues_cuts_a_name_too_long_for_its_column_and_shows_schedules() {
    let redis = TestRedis::start();
    let url = redis.url();
    let prefix = unique_name("long");
    // 70,000 bytes: past the formatter's widest column (65,535), as any Redisson client may make.
    let script = "redis.call('ZADD', 'redisson_delay_queue_timeout:{' .. ARGV[1] .. \
                  string.rep('n', 70000) .. '}', 9e12, 'e')";
    redis.cli(&["EVAL", script, "0", &prefix]);
    let scheduled = format!("{prefix}-scheduled");
    let set = ["schedule", "set", &scheduled, "hourly", "--every", "1h"];
    let out = delayq(&url, &[&set[..], &["--value", "v"]].concat());
    assert!(out.status.success(), "{out:?}");
    let pattern = format!("{prefix}*");

    let out = delayq(&url, &["queues", "--match", &pattern]);
    let table = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    assert!(lines[0].contains("SCHEDULES"), "{table}");
    // By name: `-scheduled` sorts before the `n`s.
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[0], scheduled);
    assert_eq!(row.last(), Some(&"1"), "no schedule shown: {table}");
    let long: Vec<&str> = lines[2].split_whitespace().collect();
    assert!(
        long[0].ends_with('…') && long[0].chars().count() == 64,
        "{}",
        long[0]
    );
    assert_eq!(long.last(), Some(&"0"), "{table}");

    let out = delayq(&url, &["--json", "queues", "--match", &pattern]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[1]["queue"].as_str().unwrap().len(),
        prefix.len() + 70_000
    );
    assert_eq!(rows[0]["schedules"], 1, "{}", rows[0]);
    assert_eq!(rows[1]["schedules"], 0);
}

#[test]
fn paging_offsets_never_wrap_and_a_head_at_minus_infinity_is_overdue() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("paging");
    let set = [
        "schedule", "set", &name, "hourly", "--every", "1h", "--value", "v",
    ];
    assert!(delayq(&url, &set).status.success());
    for value in ["v1", "v2", "v3"] {
        assert!(delayq(&url, &["offer", &name, value, "--delay", "1h"])
            .status
            .success());
    }
    let (_ui, port) = dashboard(&redis);
    let schedules = format!("/api/queues/{name}/schedules");
    // Past i64::MAX: refused, never wrapped into a range counted from the end.
    for offset in ["18446744073709551615", "9223372036854775808"] {
        json(port, &format!("{schedules}?offset={offset}&limit=200"), 400);
        json(port, &format!("/api/queues/{name}?q=v&from={offset}"), 400);
    }
    let page = json(
        port,
        &format!("{schedules}?offset=9223372036854775807&limit=200"),
        200,
    );
    assert_eq!(page["schedules"], serde_json::json!([]), "{page}");
    let page = json(port, &format!("{schedules}?offset=0"), 200);
    assert_eq!(page["schedules"].as_array().unwrap().len(), 1, "{page}");
    // A search from past the end: nothing further.
    for from in ["3", "1000000", "9223372036854775807"] {
        let found = json(port, &format!("/api/queues/{name}?q=v&from={from}"), 200);
        assert_eq!(
            found["next"],
            serde_json::Value::Null,
            "from {from}: {found}"
        );
        assert_eq!(found["rows"], serde_json::json!([]), "from {from}: {found}");
    }

    // A head another writer scored -inf: the most overdue there is, and stuck.
    let zset = format!("redisson_delay_queue_timeout:{{{name}}}");
    redis.cli(&["ZADD", &zset, "-inf", "foreign"]);
    let overview = json(port, &format!("/api/queues?q={name}"), 200);
    let row = &overview["queues"][0];
    assert_eq!(row["name"], name.as_str(), "{overview}");
    assert_eq!(row["overdue_ms"], i64::MAX, "{overview}");
    assert_eq!(row["stuck"], true, "{overview}");
}

#[test]
fn bad_input_exits_with_the_status_of_its_class() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("status");
    let dir = tempfile::tempdir().unwrap();
    let latin1 = dir.path().join("latin1");
    std::fs::write(&latin1, b"caf\xe9").unwrap();
    let value_file = ["offer", &name, "--value-file", latin1.to_str().unwrap()];
    let out = delayq(&url, &value_file);
    assert_eq!(out.status.code(), Some(6), "{out:?}");
    assert!(text(&out.stderr).contains("UTF-8"), "{out:?}");

    let port = url.rsplit(':').next().unwrap();
    for bad in ["-1", "x"] {
        let out = delayq(
            &format!("redis://127.0.0.1:{port}/{bad}"),
            &["stats", &name],
        );
        assert_eq!(out.status.code(), Some(2), "/{bad}: {out:?}");
        assert!(text(&out.stderr).contains("bad Redis URL"), "{out:?}");
    }
    assert_eq!(redis.cli(&["EXISTS", &name]), "0");
}

#[test]
fn take_says_when_its_timeout_passed_and_transfer_once_has_a_header() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("take");
    assert!(delayq(&url, &["offer", &name, "due", "--delay", "0s"])
        .status
        .success());
    // Nothing moved it: take waits out its timeout, says why, exits 1.
    let out = delayq(&url, &["take", &name, "--timeout", "200ms"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let said = text(&out.stderr);
    assert!(
        said.contains("took 0 of 1") && said.contains("delayq transfer"),
        "{said}"
    );

    let out = delayq(&url, &["transfer", "--once", &name]);
    assert_eq!(
        text(&out.stdout),
        format!("QUEUE\tMOVED\tQUARANTINED\n{name}\t1\t0\n")
    );
    let out = delayq(&url, &["--json", "transfer", "--once", &name]);
    let record: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(
        record,
        serde_json::json!({"queue": name, "moved": 0, "quarantined": 0})
    );
    // One of two: the one printed, then 1.
    let out = delayq(&url, &["take", &name, "--count", "2", "--timeout", "200ms"]);
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(1), "due\n".to_owned())
    );
    assert!(text(&out.stderr).contains("took 1 of 2"), "{out:?}");
}

#[test]
fn a_reader_that_closes_the_pipe_early_is_no_error() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("pipe");
    assert!(delayq(&url, &["offer", &name, "v", "--delay", "1h"])
        .status
        .success());
    for args in [
        vec!["completions", "bash"],
        vec!["man"],
        vec!["queues"],
        vec!["peek", &name],
    ] {
        // The reading end is closed before the command writes a byte: every write meets EPIPE.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(BIN)
            .args(["--url", &url])
            .args(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {said}");
        assert!(
            !said.contains("panicked") && said.is_empty(),
            "{args:?}: {said}"
        );
    }
}
