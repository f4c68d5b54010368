//! The API of `delayq ui` against a real redis-server: the overview lists every queue with a key
//! of its own, pages them with a total, shows a wrong-typed key in its queue's row; the detail
//! counts its chart with `ZCOUNT`s, previews values within bounds and answers 404 for a queue
//! with no key; `/metrics` exports the queues' gauges.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::observe::{delayq, free_port, get, Daemon, BIN};
use serde_json::Value;
use std::process::{Command, Stdio};

/// `delayq ui` on a free loopback port of `redis`, once it answers.
pub(crate) fn dashboard(redis: &TestRedis) -> (Daemon, u16) {
    dashboard_with(redis, &[])
}

/// `delayq ui` with the environment variables `vars` on a free loopback port of `redis`, once
/// it answers.
pub(crate) fn dashboard_with(redis: &TestRedis, vars: &[(&str, &str)]) -> (Daemon, u16) {
    let port = free_port();
    let daemon = Daemon(
        Command::new(BIN)
            .args(["--url", &redis.url(), "ui"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .envs(vars.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the dashboard", PATIENCE, || match get(port, "/healthz") {
        Ok((200, _)) => Ok(()),
        other => Err(format!("{other:?}")),
    });
    (daemon, port)
}

/// `GET path` as JSON, which must answer `status`.
pub(crate) fn json(port: u16, path: &str, status: u16) -> Value {
    let (got, body) = get(port, path).unwrap();
    assert_eq!(got, status, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// The overview's row of `name` among `rows`.
fn row<'a>(rows: &'a Value, name: &str) -> &'a Value {
    rows["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {rows}"))
}

#[test]
fn the_overview_lists_every_queue_with_a_key_and_a_wrong_typed_one_in_its_row() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("dash");
    let pending = format!("{prefix}-pending");
    delayq(&url, &["offer", &pending, "x", "--delay", "1h"]);
    // Nothing pending (so no timeout zset), only dead letters, in flight or quarantine.
    let dead = format!("{prefix}-dead");
    redis.cli(&["RPUSH", &format!("delayq_dead:{{{dead}}}"), "junk"]);
    let inflight = format!("{prefix}-inflight");
    redis.cli(&["ZADD", &format!("delayq_inflight:{{{inflight}}}"), "1", "v"]);
    let quarantined = format!("{prefix}-quarantined");
    redis.cli(&[
        "RPUSH",
        &format!("delayq_quarantine:{{{quarantined}}}"),
        "q",
    ]);
    // A queue whose order list is a string: its row says so, the others are shown.
    let wrong = format!("{prefix}-wrong");
    delayq(&url, &["offer", &wrong, "x", "--delay", "1h"]);
    redis.cli(&["DEL", &format!("redisson_delay_queue:{{{wrong}}}")]);
    redis.cli(&["SET", &format!("redisson_delay_queue:{{{wrong}}}"), "s"]);
    let (_ui, port) = dashboard(&redis);

    let all = json(port, "/api/queues", 200);
    assert_eq!(all["total"], 5, "{all}");
    assert_eq!(row(&all, &pending)["pending"], 1);
    assert_eq!(row(&all, &dead)["dead"], 1);
    assert_eq!(row(&all, &inflight)["in_flight"], 1);
    assert_eq!(row(&all, &quarantined)["quarantined"], 1);
    let error = row(&all, &wrong)["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("WRONGTYPE") || error.contains("type"),
        "{all}"
    );

    // Pages: two at a time, with the total; a part of the name filters.
    let first = json(port, "/api/queues?limit=2", 200);
    assert_eq!(
        (
            first["total"].clone(),
            first["queues"].as_array().unwrap().len()
        ),
        (5.into(), 2)
    );
    let last = json(port, "/api/queues?limit=2&offset=4", 200);
    assert_eq!(last["queues"].as_array().unwrap().len(), 1, "{last}");
    let some = json(port, "/api/queues?q=-dea", 200);
    assert_eq!(some["total"], 1, "{some}");
    json(port, "/api/queues?offset=x", 400);
}

#[test]
fn past_five_hundred_queues_the_overview_pages_with_a_total() {
    let redis = TestRedis::start_with(&[]);
    let prefix = unique_name("many");
    // 501 queues with one pending entry each, in one call.
    let script = "for i = 1, 501 do redis.call('ZADD', \
                  'redisson_delay_queue_timeout:{' .. ARGV[1] .. i .. '}', 9e12, 'e') end";
    redis.cli(&["EVAL", script, "0", &prefix]);
    let (_ui, port) = dashboard(&redis);
    let page = json(port, "/api/queues?limit=500&offset=500", 200);
    assert_eq!(page["total"], 501, "{page}");
    assert_eq!(page["queues"].as_array().unwrap().len(), 1, "{page}");
}

#[test]
fn the_detail_counts_its_chart_previews_values_and_knows_no_unknown_queue() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let name = unique_name("detail");
    let big = "v".repeat(100_000);
    delayq(&url, &["offer", &name, &big, "--delay", "10m"]);
    for delay in ["20m", "40m"] {
        delayq(&url, &["offer", &name, "small", "--delay", delay]);
    }
    // A dead letter (attempts 3, error "boom") around a 100 000-byte value.
    let record = "redis.call('RPUSH', KEYS[1], 'DQD1' .. string.char(0, 0, 0, 3) .. \
                  string.rep(string.char(0), 8) .. string.char(0, 0, 0, 4) .. 'boom' .. \
                  string.rep('d', 100000))";
    redis.cli(&["EVAL", record, "1", &format!("delayq_dead:{{{name}}}")]);
    let (_ui, port) = dashboard(&redis);

    // Nothing else this test runs reads members by score (the rows' scripts read the head by
    // rank).
    let members_read = redis.command_calls("zrangebyscore");
    let detail = json(port, &format!("/api/queues/{name}"), 200);
    let counts: Vec<u64> = serde_json::from_value(detail["chart"]["counts"].clone()).unwrap();
    assert_eq!(counts.len(), 60);
    assert_eq!(counts.iter().sum::<u64>(), 3, "{counts:?}");
    assert_eq!(
        redis.command_calls("zrangebyscore"),
        members_read,
        "the chart read members"
    );
    assert!(redis.command_calls("zcount") >= 61);

    let pending = &detail["rows"][0];
    assert_eq!(detail["tab"], "pending");
    assert_eq!(pending["len"], 100_000, "{pending}");
    assert_eq!(pending["cut"], true);
    assert_eq!(pending["value"].as_str().unwrap().len(), 256);
    assert_eq!(detail["rows"][1]["value"], "small");
    let dead = json(port, &format!("/api/queues/{name}?tab=dead"), 200);
    let letter = &dead["rows"][0];
    assert_eq!(
        (letter["attempts"].clone(), letter["error"].clone()),
        (3.into(), "boom".into())
    );
    assert_eq!(letter["len"], 100_000, "{letter}");
    assert_eq!(letter["value"].as_str().unwrap().len(), 256);

    let later = json(port, &format!("/api/queues/{name}?from=1"), 200);
    assert_eq!(later["rows"].as_array().unwrap().len(), 2, "{later}");
    json(port, &format!("/api/queues/{name}?tab=nothing"), 400);
    let unknown = unique_name("nobody");
    json(port, &format!("/api/queues/{unknown}"), 404);
}

#[test]
fn the_dashboard_exports_the_queues_gauges() {
    let redis = TestRedis::start_with(&[]);
    let name = unique_name("gauged");
    delayq(&redis.url(), &["offer", &name, "x", "--delay", "1h"]);
    let overdue = unique_name("overdue");
    delayq(&redis.url(), &["offer", &overdue, "x", "--delay", "1ms"]);
    let ranges = redis.command_calls("zrange");
    let (_ui, port) = dashboard(&redis);
    let line = format!("delayq_pending{{queue=\"{name}\"}} 1");
    wait_until("the pending gauge", PATIENCE, || {
        let (_, body) = get(port, "/metrics")?;
        match body.lines().any(|l| l == line) {
            true => Ok(()),
            false => Err(body),
        }
    });
    let series = format!("delayq_oldest_overdue_seconds{{queue=\"{overdue}\"}} ");
    wait_until("the overdue gauge", PATIENCE, || {
        let (_, body) = get(port, "/metrics")?;
        let age = body.lines().find_map(|l| l.strip_prefix(series.as_str()));
        match age.and_then(|a| a.parse::<f64>().ok()) {
            Some(age) if age > 0.0 => Ok(()),
            _ => Err(body),
        }
    });
    // The entry not yet due was not read (it may hold a value of many MiB).
    assert_eq!(redis.command_calls("zrange"), ranges, "the head was read");
}

#[test]
fn the_detail_lists_ready_and_in_flight_values_and_acts_on_one_entry_and_one_delivery() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let name = unique_name("tabs");
    redis.cli(&["RPUSH", &name, "ready-1", "ready-2"]);
    redis.cli(&["ZADD", &format!("delayq_inflight:{{{name}}}"), "9e12", "d1"]);
    redis.cli(&[
        "HSET",
        &format!("delayq_inflight_data:{{{name}}}"),
        "d1",
        "taken",
    ]);
    for value in ["a", "b"] {
        delayq(&url, &["offer", &name, value, "--delay", "1h"]);
    }
    let port = free_port();
    let token = "a-token-of-24-characters";
    let _ui = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "ui", "--allow-writes"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("DELAYQ_UI_TOKEN", token)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the dashboard", PATIENCE, || match get(port, "/healthz") {
        Ok((200, _)) => Ok(()),
        other => Err(format!("{other:?}")),
    });
    let ready = json(port, &format!("/api/queues/{name}?tab=ready"), 200);
    let values: Vec<&Value> = ready["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["value"])
        .collect();
    assert_eq!(values, ["ready-1", "ready-2"], "{ready}");
    let taken = json(port, &format!("/api/queues/{name}?tab=in_flight"), 200);
    assert_eq!(
        (
            taken["rows"][0]["id"].clone(),
            taken["rows"][0]["value"].clone()
        ),
        ("d1".into(), "taken".into())
    );

    let pending = json(port, &format!("/api/queues/{name}"), 200);
    let handle = |i: usize| pending["rows"][i]["handle"].as_str().unwrap().to_owned();
    let bearer = format!("Authorization: Bearer {token}\r\nX-Delayq-Write: 1\r\n");
    let act = |handle: &str, action: &str| {
        let path = format!("/api/queues/{name}/pending/{handle}/{action}");
        crate::observe::request(port, "POST", &path, &bearer).unwrap()
    };
    assert_eq!(act(&handle(0), "run-now").0, 200);
    let zset = format!("redisson_delay_queue_timeout:{{{name}}}");
    // Counted by score, not read as text: a member's random id may hold a newline byte, which
    // would split redis-cli's output of the member.
    let due_now = redis.cli(&["ZCOUNT", &zset, "-inf", &delayq::time::now_ms().to_string()]);
    assert_eq!(due_now, "1", "the entry run now is due now");
    assert_eq!(act(&handle(1), "cancel").0, 200);
    assert_eq!(redis.cli(&["ZCARD", &zset]), "1");
    assert_eq!(act(&handle(1), "cancel").0, 404, "cancelled twice");
    assert_eq!(act("nothex", "cancel").0, 400);
    // The in-flight value, given back: at the head of the target list, no longer in flight.
    let path = format!("/api/queues/{name}/in_flight/d1/give-back");
    let (status, body) = crate::observe::request(port, "POST", &path, &bearer).unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(redis.cli(&["LINDEX", &name, "0"]), "taken");
    assert_eq!(
        redis.cli(&["ZCARD", &format!("delayq_inflight:{{{name}}}")]),
        "0"
    );
    // A second click is taken for a retried call (the delivery was settled just now): the value
    // is on the list once.
    let (status, _) = crate::observe::request(port, "POST", &path, &bearer).unwrap();
    assert_eq!(status, 200);
    assert_eq!(redis.cli(&["LLEN", &name]), "3");
    let gone = format!("/api/queues/{name}/in_flight/nobody/give-back");
    let (status, _) = crate::observe::request(port, "POST", &gone, &bearer).unwrap();
    assert_eq!(status, 404, "a delivery never in flight");
    let (status, _) = crate::observe::request(
        port,
        "POST",
        &format!("/api/queues/{name}/pending/{}/cancel", handle(0)),
        "",
    )
    .unwrap();
    assert_eq!(status, 401, "without the token");
}

/// Pushes a dead-letter record (attempts 1, error "e") of each of `values` onto the dead
/// letters of the queue `name`; their key.
pub(crate) fn dead_letters(redis: &TestRedis, name: &str, values: &[&str]) -> String {
    let dead = format!("delayq_dead:{{{name}}}");
    let record = "for _, v in ipairs(ARGV) do redis.call('RPUSH', KEYS[1], 'DQD1' .. \
                  string.char(0, 0, 0, 1) .. string.rep(string.char(0), 8) .. \
                  string.char(0, 0, 0, 1) .. 'e' .. v) end";
    let mut args = vec!["EVAL", record, "1", &dead];
    args.extend_from_slice(values);
    redis.cli(&args);
    dead
}

#[test]
fn one_dead_letter_is_retried_and_another_deleted() {
    let redis = TestRedis::start_with(&[]);
    let name = unique_name("letters");
    let dead = dead_letters(&redis, &name, &["first", "second"]);
    let port = free_port();
    let token = "a-token-of-24-characters";
    let _ui = Daemon(
        Command::new(BIN)
            .args(["--url", &redis.url(), "ui", "--allow-writes"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("DELAYQ_UI_TOKEN", token)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the dashboard", PATIENCE, || match get(port, "/healthz") {
        Ok((200, _)) => Ok(()),
        other => Err(format!("{other:?}")),
    });
    let page = json(port, &format!("/api/queues/{name}?tab=dead"), 200);
    let id = |i: usize| page["rows"][i]["id"].as_str().unwrap().to_owned();
    let bearer = format!("Authorization: Bearer {token}\r\nX-Delayq-Write: 1\r\n");
    let act = |at: usize, id: &str, action: &str| {
        let path = format!("/api/queues/{name}/dead/{at}/{id}/{action}");
        crate::observe::request(port, "POST", &path, &bearer)
            .unwrap()
            .0
    };
    assert_eq!(act(0, &id(0), "retry"), 200);
    assert_eq!(redis.cli(&["LRANGE", &name, "0", "-1"]), "first");
    // The second, read at 1, is at 0 now that the first is gone: found nearer the head.
    assert_eq!(act(1, &id(1), "delete"), 200);
    assert_eq!(redis.cli(&["LLEN", &dead]), "0");
    assert_eq!(act(0, &id(0), "retry"), 404, "retried twice");
}

/// Every tab of a queue whose values are 2 MiB each answers with their previews, on a Redis
/// that closes any connection whose replies outgrow 5 MiB: no command copies the page's three
/// values at once (a page of 16 MiB values read in one command held Redis 65 ms). The limit
/// leaves room for two replies of one value each: the page's counters read the head entry (a
/// 2 MiB one here) on the same connection while the rows are read, and on a loaded machine the
/// dashboard may not have read the first reply when the second is written (a 3 MiB limit closed
/// the connection on the quarantine tab that way, at a load of 9 on 2 cores).
#[test]
fn no_command_of_a_page_copies_more_than_one_big_value() {
    let redis = TestRedis::start_with(&["--client-output-buffer-limit", "normal 5mb 5mb 0"]);
    let name = unique_name("big");
    let fill = "local v = string.rep('b', 2 * 1024 * 1024) \
                for i = 1, 3 do \
                  redis.call('RPUSH', KEYS[1], v) \
                  local entry = struct.pack('Bc0Lc0', 8, '1234567' .. i, #v, v) \
                  redis.call('ZADD', KEYS[2], 1000 * i, entry) \
                  redis.call('ZADD', KEYS[3], 2000 * i, 'delivery' .. i) \
                  redis.call('HSET', KEYS[4], 'delivery' .. i, v) \
                  redis.call('RPUSH', KEYS[5], 'DQD1' .. string.char(0, 0, 0, 3) .. \
                    string.rep(string.char(0), 8) .. string.char(0, 0, 0, 4) .. 'boom' .. v) \
                  redis.call('RPUSH', KEYS[6], 'q' .. v) \
                end";
    let keys = [
        name.clone(),
        format!("redisson_delay_queue_timeout:{{{name}}}"),
        format!("delayq_inflight:{{{name}}}"),
        format!("delayq_inflight_data:{{{name}}}"),
        format!("delayq_dead:{{{name}}}"),
        format!("delayq_quarantine:{{{name}}}"),
    ];
    let mut args = vec!["EVAL", fill, "6"];
    args.extend(keys.iter().map(String::as_str));
    redis.cli(&args);
    let (_ui, port) = dashboard(&redis);
    let two_mib = 2 * 1024 * 1024;
    for tab in ["pending", "ready", "in_flight", "dead"] {
        let detail = json(port, &format!("/api/queues/{name}?tab={tab}"), 200);
        let rows = detail["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 3, "{tab}: {detail}");
        for row in rows {
            assert_eq!(row["len"], two_mib, "{tab}: {row}");
            assert_eq!(row["cut"], true, "{tab}: {row}");
            assert_eq!(row["value"], "b".repeat(256), "{tab}: {row}");
        }
    }
    let quarantine = json(port, &format!("/api/queues/{name}?tab=quarantine"), 200);
    let rows = quarantine["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{quarantine}");
    assert_eq!(rows[0]["len"], two_mib + 1, "{quarantine}");
    assert_eq!(rows[0]["hex"].as_str().unwrap().len(), 512, "{quarantine}");
}
