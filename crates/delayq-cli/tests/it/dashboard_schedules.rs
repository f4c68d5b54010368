//! A queue's recurring schedules through `delayq ui`, against a real redis-server: the API
//! pages them with their recurrence, next and last occurrence, paused flag, policy and value;
//! pause, resume and trigger are the operator's, remove the admin's (refused: 401 or 403, and
//! Redis unchanged).

use crate::access::{bearer, dashboard, snapshot, ADMIN, OPERATOR};
use crate::common::{unique_name, TestRedis};
use crate::dashboard::json;
use crate::observe::{delayq, request};

#[test]
fn schedules_are_paged_and_their_actions_go_by_role() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let name = unique_name("sched-ui");
    let set = |id: &str, how: &[&str], value: &str| {
        let mut args = vec!["schedule", "set", &name, id];
        args.extend_from_slice(how);
        args.extend_from_slice(&["--value", value]);
        delayq(&url, &args);
    };
    set(
        "nightly",
        &["--cron", "30 2 * * *", "--tz", "Europe/Berlin"],
        "build",
    );
    set("hourly", &["--every", "1h", "--missed", "latest"], "tick");
    set("daily", &["--every", "1d"], "sum");
    let dir = tempfile::tempdir().unwrap();
    let (_ui, port) = dashboard(&redis, dir.path(), &[], &[], "/healthz");
    let q = format!("/api/queues/{name}/schedules");

    // Paged by next occurrence: the hour first.
    let page = json(port, &format!("{q}?limit=2"), 200);
    assert_eq!(page["total"], 3, "{page}");
    let rows = page["schedules"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{page}");
    let hourly = &rows[0];
    assert_eq!(hourly["id"], "hourly", "{page}");
    assert_eq!(hourly["every_ms"], 3_600_000, "{page}");
    assert_eq!(hourly["missed"], "latest", "{page}");
    assert_eq!(hourly["value"]["value"], "tick", "{page}");
    assert!(hourly["next_ms"].as_i64().unwrap() > page["now_ms"].as_i64().unwrap());
    assert_eq!(hourly["last_ms"], serde_json::Value::Null, "{page}");
    assert_eq!(hourly["paused"], false, "{page}");
    let rest = json(port, &format!("{q}?offset=2&limit=2"), 200);
    let rest = rest["schedules"].as_array().unwrap().clone();
    let all: Vec<_> = rows.iter().chain(&rest).map(|r| r["id"].clone()).collect();
    assert_eq!(all.len(), 3, "{all:?}");
    let nightly = json(port, &q, 200)["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "nightly")
        .cloned()
        .unwrap();
    assert_eq!(
        (&nightly["cron"], &nightly["zone"]),
        (&"30 2 * * *".into(), &"Europe/Berlin".into())
    );
    assert_eq!(
        json(port, &format!("{q}?limit=x"), 400)["error"],
        "limit=\"x\": not a whole number from 0 to 9223372036854775807"
    );

    // Refused: no token (401), remove with the operator's (403); nothing changes.
    let before = snapshot(&redis, &name);
    for action in ["pause", "resume", "trigger", "remove"] {
        let path = format!("{q}/hourly/{action}");
        let (status, body) = request(port, "POST", &path, "").unwrap();
        assert_eq!(status, 401, "{path}: {body}");
    }
    let (status, body) = request(
        port,
        "POST",
        &format!("{q}/hourly/remove"),
        &bearer(OPERATOR),
    )
    .unwrap();
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("needs the admin role"), "{body}");
    assert_eq!(
        snapshot(&redis, &name),
        before,
        "a refused write changed Redis"
    );

    // The operator pauses, resumes and triggers; the admin removes.
    let post = |path: &str, token: &str| {
        let (status, body) = request(port, "POST", &format!("{q}/{path}"), &bearer(token)).unwrap();
        (status, body)
    };
    assert_eq!(post("hourly/pause", OPERATOR).0, 200);
    let paused = json(port, &q, 200);
    assert_eq!(
        paused["schedules"][2]["id"], "hourly",
        "paused ones last: {paused}"
    );
    assert_eq!(paused["schedules"][2]["paused"], true, "{paused}");
    assert_eq!(post("hourly/resume", OPERATOR).0, 200);
    assert_eq!(json(port, &q, 200)["schedules"][0]["paused"], false);
    let (status, body) = post("daily/trigger", OPERATOR);
    assert_eq!(status, 200, "{body}");
    let timeout = format!("redisson_delay_queue_timeout:{{{name}}}");
    assert_eq!(
        redis.cli(&["ZCARD", &timeout]),
        "1",
        "the trigger offered one entry"
    );
    assert_eq!(post("daily/remove", ADMIN).0, 200);
    assert_eq!(json(port, &q, 200)["total"], 2);
    let (status, body) = post("daily/remove", ADMIN);
    assert_eq!(status, 404, "{body}");
    assert_eq!(post("nope/pause", OPERATOR).0, 404);
    assert_eq!(post("hourly/explode", ADMIN).0, 404);
}

/// A schedule key of the wrong type is an error row of the dashboard's page (`id`, `error`),
/// beside the healthy schedule, not a 502 for the whole tab.
#[test]
fn an_unreadable_schedule_is_an_error_row() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let name = unique_name("sched-ui-bad");
    let keys = delayq::QueueKeys::new(name.as_str());
    delayq(
        &url,
        &[
            "schedule", "set", &name, "good", "--every", "1h", "--value", "v",
        ],
    );
    redis.cli(&["SET", &keys.schedule("wt"), "junk"]);
    redis.cli(&["ZADD", keys.schedules(), "0", "wt"]);
    let dir = tempfile::tempdir().unwrap();
    let (_ui, port) = dashboard(&redis, dir.path(), &[], &[], "/healthz");
    let page = json(port, &format!("/api/queues/{name}/schedules"), 200);
    let rows = page["schedules"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{page}");
    assert_eq!(rows[0]["id"], "wt", "{page}");
    assert!(
        rows[0]["error"].as_str().unwrap().contains("wrong kind"),
        "{page}"
    );
    assert_eq!(rows[1]["id"], "good", "{page}");
}
