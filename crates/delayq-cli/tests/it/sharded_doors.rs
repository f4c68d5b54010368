//! `--shards N` with the features of a plain queue: a durable offer (it waits, and says when the
//! replicas did not confirm it, rather than refusing `--shards`), schedules of the sharded queue
//! (set, list, trigger with a `SHARD:HANDLE`, remove) and its limits as a whole (set, get,
//! shown by `stats`, per-key ones refused with nothing stored).

use crate::cli::{delayq, text};
use crate::common::{unique_name, TestRedis};
use delayq::shard_of;

#[test]
fn a_durable_offer_to_a_sharded_queue_waits_for_its_replicas() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("cli-durable-sharded");
    // This server has no replica: the offer is written and never confirmed (exit 9).
    let args = [
        "offer",
        &queue,
        "a",
        "--shards",
        "3",
        "--wait-replicas",
        "1",
        "--wait-timeout",
        "50ms",
    ];
    let out = delayq(&url, &args);
    assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
    let waits = redis.command_calls("wait");
    assert!(waits > 0, "the offer waited ({waits} WAIT)");
    let out = delayq(&url, &["--json", "stats", &queue, "--shards", "3"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["pending"], 1, "{stats}");
}

#[test]
fn schedules_of_a_sharded_queue_live_in_the_shard_of_their_id() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("cli-sched-sharded");
    let shards = ["--shards", "4"];
    let set = [
        "schedule", "set", &queue, "nightly", "--every", "1h", "--value", "report",
    ];
    let out = delayq(&url, &[&set[..], &shards].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let home = shard_of(b"nightly", 4);
    let shard = format!("{queue}:{{{home}}}");
    let hash = delayq::QueueKeys::new(shard.as_str()).schedule("nightly");
    assert_eq!(redis.cli(&["EXISTS", &hash]), "1", "{hash}");

    let out = delayq(&url, &[&["schedule", "list", &queue][..], &shards].concat());
    assert!(
        text(&out.stdout).contains("nightly"),
        "{}",
        text(&out.stdout)
    );
    let out = delayq(
        &url,
        &[&["schedule", "trigger", &queue, "nightly"][..], &shards].concat(),
    );
    let handle = text(&out.stdout).trim().to_owned();
    assert!(handle.starts_with(&format!("{home}:")), "{handle}");
    let out = delayq(&url, &[&["cancel", &queue, &handle][..], &shards].concat());
    assert_eq!(text(&out.stdout), "true\n");
    let remove = ["schedule", "remove", &queue, "nightly"];
    let out = delayq(&url, &[&remove[..], &shards].concat());
    assert_eq!(text(&out.stdout), "true\n");
    assert_eq!(redis.cli(&["EXISTS", &hash]), "0");
}

#[test]
fn limits_of_a_sharded_queue_as_a_whole() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("cli-limit-sharded");
    let shards = ["--shards", "3"];
    let set = [
        "limit",
        "set",
        &queue,
        "--concurrency",
        "2",
        "--rate",
        "5/s",
    ];
    let out = delayq(&url, &[&set[..], &shards].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stored = delayq::QueueKeys::new(queue.as_str()).limits();
    assert_eq!(redis.cli(&["HGET", &stored, "concurrency"]), "2");
    let get = ["--json", "limit", "get", &queue];
    let out = delayq(&url, &[&get[..], &shards].concat());
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["limits"]["concurrency"], 2, "{record}");
    let out = delayq(&url, &[&["stats", &queue][..], &shards].concat());
    assert!(
        text(&out.stdout).contains("limits"),
        "{}",
        text(&out.stdout)
    );
    // Per-key limits are each shard's own: refused for the whole, nothing changed.
    let per_key = [
        "limit",
        "set",
        &queue,
        "--key-regex",
        "(.*)",
        "--key-concurrency",
        "1",
    ];
    let out = delayq(&url, &[&per_key[..], &shards].concat());
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("per-key"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(redis.cli(&["HEXISTS", &stored, "key_concurrency"]), "0");
    let clear = ["limit", "clear", &queue];
    let out = delayq(&url, &[&clear[..], &shards].concat());
    assert_eq!(text(&out.stdout), "true\n");
}
