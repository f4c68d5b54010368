//! The dashboard's search and entry detail against a real redis-server: a search reads at most a
//! window of entries per request, one per command and says where to carry on, finds a pending entry by its handle;
//! an entry's detail shows its value up to 64 KiB with its length, a dead letter's attempts and
//! error, and answers 404 once the entry is gone.

use crate::common::{unique_name, TestRedis};
use crate::dashboard::{dashboard, json};
use crate::observe::delayq;

#[test]
fn a_search_reads_one_window_per_request_and_carries_on_past_it() {
    let redis = TestRedis::start_with(&[]);
    let name = unique_name("search");
    // 1,100 ready values; the one sought is the 1,051st.
    let fill = "for i = 0, 1099 do redis.call('RPUSH', KEYS[1], \
                i == 1050 and 'needle-1050' or ('hay-' .. i)) end";
    redis.cli(&["EVAL", fill, "1", &name]);
    let (_ui, port) = dashboard(&redis);
    let (ranges, indexed) = (redis.command_calls("lrange"), redis.command_calls("lindex"));
    let first = json(port, &format!("/api/queues/{name}?tab=ready&q=needle"), 200);
    assert_eq!(first["rows"].as_array().unwrap().len(), 0, "{first}");
    assert_eq!(
        (first["scanned"].clone(), first["next"].clone()),
        (1000.into(), 1000.into())
    );
    // One window, read a member per command: no command copied more than one value.
    assert_eq!(redis.command_calls("lrange") - ranges, 0);
    assert_eq!(redis.command_calls("lindex") - indexed, 1000);
    let further = json(
        port,
        &format!("/api/queues/{name}?tab=ready&q=needle&from=1000"),
        200,
    );
    assert_eq!(further["rows"][0]["at"], 1050, "{further}");
    assert_eq!(further["rows"][0]["value"], "needle-1050");
    assert_eq!(
        further["next"],
        serde_json::Value::Null,
        "the end: {further}"
    );
    let long = "x".repeat(257);
    json(port, &format!("/api/queues/{name}?tab=ready&q={long}"), 400);
}

#[test]
fn a_pending_entry_is_found_by_its_handle_and_shown_in_detail_until_it_is_gone() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let name = unique_name("job");
    for value in ["first", "second", "third"] {
        delayq(&url, &["offer", &name, value, "--delay", "1h"]);
    }
    let (_ui, port) = dashboard(&redis);
    let page = json(port, &format!("/api/queues/{name}"), 200);
    let handle = page["rows"][1]["handle"].as_str().unwrap().to_owned();
    let found = json(port, &format!("/api/queues/{name}?q={handle}"), 200);
    let rows = found["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{found}");
    assert_eq!(
        (rows[0]["value"].clone(), rows[0]["at"].clone()),
        ("second".into(), 1.into())
    );

    let job = json(
        port,
        &format!("/api/queues/{name}/job/pending/{handle}?at=1"),
        200,
    );
    assert_eq!(job["value"], "second", "{job}");
    assert_eq!(job["due_ms"], page["rows"][1]["due_ms"]);
    // Without the position it was read at: looked for from the head.
    json(
        port,
        &format!("/api/queues/{name}/job/pending/{handle}"),
        200,
    );
    let zset = format!("redisson_delay_queue_timeout:{{{name}}}");
    delayq(&url, &["cancel", &name, &handle]);
    assert_eq!(redis.cli(&["ZCARD", &zset]), "2");
    json(
        port,
        &format!("/api/queues/{name}/job/pending/{handle}?at=1"),
        404,
    );
    json(port, &format!("/api/queues/{name}/job/pending/nothex"), 400);
    json(port, &format!("/api/queues/{name}/job/nothing/0"), 400);
}

#[test]
fn an_entry_detail_shows_a_dead_letter_up_to_64_kib_and_the_other_tabs_entries() {
    let redis = TestRedis::start_with(&[]);
    let name = unique_name("letter");
    // A dead letter (attempts 3, error "boom", dead at 1000 ms) around a 100,000-byte value.
    let record = "redis.call('RPUSH', KEYS[1], 'DQD1' .. string.char(0, 0, 0, 3) .. \
                  string.rep(string.char(0), 6) .. string.char(3, 232) .. \
                  string.char(0, 0, 0, 4) .. 'boom' .. string.rep('d', 100000))";
    redis.cli(&["EVAL", record, "1", &format!("delayq_dead:{{{name}}}")]);
    redis.cli(&["RPUSH", &name, "ready-0"]);
    redis.cli(&["ZADD", &format!("delayq_inflight:{{{name}}}"), "9e12", "d1"]);
    let data = format!("delayq_inflight_data:{{{name}}}");
    redis.cli(&["HSET", &data, "d1", "taken"]);
    redis.cli(&["RPUSH", &format!("delayq_quarantine:{{{name}}}"), "\x01q"]);
    let (_ui, port) = dashboard(&redis);

    let dead = json(port, &format!("/api/queues/{name}?tab=dead"), 200);
    let id = dead["rows"][0]["id"].as_str().unwrap();
    let job = json(port, &format!("/api/queues/{name}/job/dead/{id}?at=0"), 200);
    assert_eq!(
        (
            job["attempts"].clone(),
            job["error"].clone(),
            job["dead_at_ms"].clone()
        ),
        (3.into(), "boom".into(), 1000.into()),
        "{job}"
    );
    assert_eq!(
        (job["len"].clone(), job["cut"].clone()),
        (100_000.into(), true.into())
    );
    assert_eq!(job["value"].as_str().unwrap().len(), 64 * 1024);
    json(
        port,
        &format!("/api/queues/{name}/job/dead/0123456789abcdef"),
        404,
    );

    let taken = json(port, &format!("/api/queues/{name}/job/in_flight/d1"), 200);
    assert_eq!(
        (taken["value"].clone(), taken["deadline_ms"].clone()),
        ("taken".into(), 9_000_000_000_000_i64.into())
    );
    json(port, &format!("/api/queues/{name}/job/in_flight/d2"), 404);
    let ready = json(port, &format!("/api/queues/{name}/job/ready/0"), 200);
    assert_eq!(ready["value"], "ready-0");
    json(port, &format!("/api/queues/{name}/job/ready/1"), 404);
    let odd = json(port, &format!("/api/queues/{name}/job/quarantine/0"), 200);
    assert_eq!(odd["hex"], "0171");
    // The quarantined entry found by its bytes' start, shown only as hex.
    let found = json(
        port,
        &format!("/api/queues/{name}?tab=quarantine&q=%01q"),
        200,
    );
    assert_eq!(found["rows"].as_array().unwrap().len(), 1, "{found}");
}
