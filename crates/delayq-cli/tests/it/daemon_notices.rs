//! What `delayq transfer` tells an operator while it runs: a paused queue (once when seen
//! paused, once when resumed), a queue name discovery cannot read, a later change of the
//! server's eviction policy (`work` too), and an exit summary that counts every queue of the run.

use crate::cli::{delayq, Running};
use crate::common::queue::{arg, cmd, connect, eventually, list_str, manual_queue};
use crate::common::{unique_name, TestRedis, PATIENCE};
use std::time::Duration;

/// Lines of `said` that contain `what`.
fn lines_with(said: &str, what: &str) -> usize {
    said.lines().filter(|l| l.contains(what)).count()
}

/// Waits until the server has run `command` `more` times after `from` calls.
async fn calls_after(redis: &TestRedis, command: &str, from: u64, more: u64) {
    let reached = eventually(PATIENCE, || async {
        redis.command_calls(command) >= from + more
    })
    .await;
    assert!(reached, "{command}: fewer than {more} calls");
}

/// Queues moved and then dropped by discovery (their keys gone once empty) still count in
/// the exit summary.
#[tokio::test(flavor = "multi_thread")]
async fn the_exit_summary_counts_queues_discovery_dropped() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let prefix = unique_name("summary");
    let pattern = format!("{prefix}-*");
    let daemon = Running::start(
        &redis.url(),
        &[
            "transfer", "--all", "--match", &pattern, "--rescan", "100ms",
        ],
    );
    daemon.wait_for("transferring 0 delayed queues").await;
    let names: Vec<String> = (0..3).map(|i| format!("{prefix}-{i}")).collect();
    for name in &names {
        manual_queue(&client, name)
            .await
            .offer("v", Duration::from_millis(100))
            .await
            .unwrap();
    }
    for name in &names {
        let moved = eventually(PATIENCE, || async {
            list_str(&client, name).await == ["v"]
        })
        .await;
        assert!(moved, "{name}");
    }
    daemon.wait_for("dropped=3").await;
    let said = daemon.stop();
    assert!(
        said.contains("delayq: 3 queues (0 at the end): moved 3 in "),
        "{said}"
    );
    for name in &names {
        assert!(
            said.contains(&format!("delayq: {name}: moved 1 in ")),
            "{said}"
        );
    }
}

/// A paused queue is said once while it stays paused (its flag read again every second), and
/// once when it is resumed.
#[tokio::test(flavor = "multi_thread")]
async fn a_paused_queue_is_said_once_and_its_resume_once() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("paused");
    assert!(delayq(&url, &["pause", &name]).status.success());
    let daemon = Running::start(&url, &["transfer", &name]);
    daemon.wait_for("the queue is paused").await;
    // Two more looks at the flag.
    calls_after(&redis, "evalsha", redis.command_calls("evalsha"), 2).await;
    assert!(delayq(&url, &["resume", &name]).status.success());
    daemon.wait_for("the queue is resumed").await;
    let said = daemon.stop();
    assert_eq!(lines_with(&said, "the queue is paused"), 1, "{said}");
    assert_eq!(lines_with(&said, "the queue is resumed"), 1, "{said}");
}

/// A delayed queue whose name is not UTF-8 is named (hex-escaped) once, whatever the number of
/// rescans.
#[tokio::test(flavor = "multi_thread")]
async fn a_queue_name_that_is_not_utf8_is_warned_about_once() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let mut key = b"redisson_delay_queue_timeout:{caf".to_vec();
    key.extend_from_slice(b"\xe9}");
    cmd(&client, "ZADD", vec![arg(&key), arg("1"), arg("entry")]).await;
    let daemon = Running::start(&redis.url(), &["transfer", "--all", "--rescan", "100ms"]);
    daemon.wait_for("transferring 0 delayed queues").await;
    calls_after(&redis, "scan", redis.command_calls("scan"), 3).await;
    let said = daemon.stop();
    assert_eq!(
        lines_with(&said, r"redisson_delay_queue_timeout:{caf\xe9}"),
        1,
        "{said}"
    );
    assert!(said.contains("not UTF-8"), "{said}");
}

/// `CONFIG SET maxmemory-policy allkeys-lru` while `transfer` runs: it warns, once, at its
/// next check of the server.
#[tokio::test(flavor = "multi_thread")]
async fn a_later_evicting_policy_is_warned_about_once() {
    let name = unique_name("policy");
    let args = ["transfer", &name, "--server-check", "100ms"];
    warns_once_of_a_later_evicting_policy(&args, "transferring").await;
}

/// The same for `work` (its queues' scheduler group and the worker read the same server).
#[tokio::test(flavor = "multi_thread")]
async fn a_later_evicting_policy_is_warned_about_once_by_a_worker() {
    let name = unique_name("policy-work");
    let args = ["work", &name, "--server-check", "100ms", "--", "true"];
    warns_once_of_a_later_evicting_policy(&args, "working on").await;
}

/// Starts `delayq ARGS`, waits for `started` in its log, makes the server evict keys, and
/// checks the daemon says so once however many checks follow.
async fn warns_once_of_a_later_evicting_policy(args: &[&str], started: &str) {
    let redis = TestRedis::start();
    let daemon = Running::start(&redis.url(), args);
    daemon.wait_for(started).await;
    redis.cli(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    daemon.wait_for("may evict keys").await;
    // More checks of the unchanged policy say nothing more.
    calls_after(&redis, "config|get", redis.command_calls("config|get"), 3).await;
    let said = daemon.stop();
    assert_eq!(lines_with(&said, "may evict keys"), 1, "{said}");
    assert!(said.contains("allkeys-lru"), "{said}");
}
