//! `delayq offer --dedup-key K --dedup-window D [--debounce]`: what it prints (offered, kept,
//! replaced, with the key's entry's handle; a JSON record with --json; SHARD:HANDLE with
//! --shards), that a dropped offer exits 0, and that bad input and a wrong-type mapping exit
//! with their statuses and write nothing.

use crate::cli::{delayq, text};
use crate::common::{unique_name, TestRedis};
use delayq::QueueKeys;

#[test]
fn dedup_offers_say_what_happened_with_the_handle() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("cli-dedup");
    let order = QueueKeys::new(queue.as_str()).order().to_owned();
    let offer = |value: &str, args: &[&str]| {
        let base = ["offer", &queue, value, "--delay", "1h"];
        let dedup = ["--dedup-key", "order-42", "--dedup-window", "1h"];
        let out = delayq(&url, &[&base[..], &dedup, args].concat());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let line = text(&out.stdout).trim().to_owned();
        let (what, handle) = line.split_once(' ').unwrap();
        assert_eq!(handle.len(), 18, "{line}");
        (what.to_owned(), handle.to_owned())
    };
    let (what, first) = offer("one", &[]);
    assert_eq!(what, "offered");
    assert_eq!(offer("two", &[]), ("kept".to_owned(), first.clone()));
    assert_eq!(redis.cli(&["LLEN", &order]), "1");
    let (what, second) = offer("three", &["--debounce"]);
    assert_eq!(what, "replaced");
    assert_ne!(second, first);
    assert_eq!(redis.cli(&["LLEN", &order]), "1");
    let out = delayq(&url, &["cancel", &queue, &second]);
    assert_eq!(text(&out.stdout), "true\n");

    // --json, and a sharded queue's handle names its shard.
    let sharded = unique_name("cli-dedup-sharded");
    let args = [
        "--json",
        "offer",
        &sharded,
        "v",
        "--shards",
        "3",
        "--dedup-key",
        "k",
        "--dedup-window",
        "10m",
    ];
    let out = delayq(&url, &args);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["outcome"], "offered", "{record}");
    assert_eq!(record["queue"], sharded.as_str());
    assert!(record["due_ms"].as_i64().unwrap() > 0);
    let handle = record["handle"].as_str().unwrap().to_owned();
    assert!(handle.contains(':'), "{record}");
    let out = delayq(&url, &args);
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (again["outcome"].as_str(), again["handle"].as_str()),
        (Some("kept"), Some(handle.as_str()))
    );
}

#[test]
fn bad_dedup_input_exits_2_and_a_wrong_type_mapping_5_with_nothing_written() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("cli-dedup-bad");
    let keys = QueueKeys::new(queue.as_str());
    let cases: [&[&str]; 6] = [
        &["--dedup-key", "", "--dedup-window", "1m"],
        &["--dedup-key", "k", "--dedup-window", "0s"],
        &["--dedup-key", "k"],
        &["--debounce"],
        &["--dedup-window", "1m"],
        &["--dedup-key", "k", "--dedup-window", "1m", "--unique"],
    ];
    for args in cases {
        let out = delayq(&url, &[&["offer", &queue, "v"][..], args].concat());
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let long = "k".repeat(delayq::dedup::MAX_DEDUP_KEY_LEN + 1);
    let out = delayq(
        &url,
        &[
            "offer",
            &queue,
            "v",
            "--dedup-key",
            &long,
            "--dedup-window",
            "1m",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(redis.cli(&["EXISTS", keys.order()]), "0");

    redis.cli(&["RPUSH", &keys.dedup("k"), "mine"]);
    let out = delayq(
        &url,
        &[
            "offer",
            &queue,
            "v",
            "--dedup-key",
            "k",
            "--dedup-window",
            "1m",
        ],
    );
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&keys.dedup("k")),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(redis.cli(&["LRANGE", &keys.dedup("k"), "0", "-1"]), "mine");
    assert_eq!(redis.cli(&["EXISTS", keys.order()]), "0");
}

/// A durable dedup offer no replica confirms exits 9, and so does its retry (docs/durability.md's
/// remedy for 9), though the script kept the entry: nothing confirmed it. A `--wait-timeout`
/// over an hour is refused with exit 2 before anything is written.
#[test]
fn a_kept_retry_of_an_unconfirmed_durable_offer_is_not_confirmed() {
    // A server of its own: no replica.
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let queue = unique_name("cli-dedup-durable");
    let timeout = QueueKeys::new(queue.as_str()).timeout().to_owned();
    let offer = |wait: &str| {
        let args = [
            "offer",
            &queue,
            "v",
            "--delay",
            "1m",
            "--dedup-key",
            "k",
            "--dedup-window",
            "1m",
            "--wait-replicas",
            "1",
            "--wait-timeout",
            wait,
        ];
        delayq(&url, &args)
    };
    for attempt in ["first", "retry"] {
        let out = offer("200ms");
        assert_eq!(out.status.code(), Some(9), "{attempt}: {out:?}");
    }
    assert_eq!(redis.cli(&["ZCARD", &timeout]), "1");
    for too_long in ["1000y", "61m"] {
        let other = unique_name("cli-durable-long");
        let out = delayq(
            &url,
            &[
                "offer",
                &other,
                "v",
                "--wait-replicas",
                "1",
                "--wait-timeout",
                too_long,
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{too_long}: {out:?}");
        assert!(text(&out.stderr).contains("most"), "{}", text(&out.stderr));
        let other_timeout = QueueKeys::new(other.as_str()).timeout().to_owned();
        assert_eq!(redis.cli(&["EXISTS", &other_timeout]), "0");
    }
}
