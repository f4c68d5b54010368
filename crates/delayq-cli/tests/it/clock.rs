//! Clocks: with `--server-clock` (`Clock::Server`) what is due is decided by the Redis server's
//! `TIME`, whatever this host's clock says. The host is skewed by running the `delayq` binary
//! under libfaketime (Debian's `faketime`): its clock an hour ahead of the server's.

use crate::common::queue::{connect, eventually, list_str, manual_queue};
use crate::common::{unique_name, TestRedis, PATIENCE};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// libfaketime's preload library (package `faketime`, which scripts/lib.sh installs).
fn libfaketime() -> PathBuf {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ];
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!("libfaketime not found (apt-get install faketime): {candidates:?}")
        })
}

/// `delayq ARGS` on a host whose clock is `skew` ahead (libfaketime's `+1h` form). Timers keep
/// the real monotonic clock.
fn skewed_delayq(url: &str, skew: &str, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["--url", url])
        .args(args)
        .env("LD_PRELOAD", libfaketime())
        .env("FAKETIME", skew)
        .env("DONT_FAKE_MONOTONIC", "1");
    command
}

fn run(mut command: Command) -> Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// EVALSHA calls the server has run so far.
fn evalsha_calls(redis: &TestRedis) -> u64 {
    let stats = redis.cli(&["INFO", "commandstats"]);
    stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn one_off_transfers_go_by_the_servers_clock() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("clock-once");
    let queue = manual_queue(&client, &name).await;
    queue.offer("now", Duration::ZERO).await.unwrap();
    queue
        .offer("in-ten-minutes", Duration::from_secs(600))
        .await
        .unwrap();

    // Server clock: only "now" is due, although this host's clock says both are.
    let out = run(skewed_delayq(
        &redis.url(),
        "+1h",
        &["--server-clock", "transfer", "--once", &name],
    ));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("QUEUE\tMOVED\tQUARANTINED\n{name}\t1\t0\n")
    );
    assert_eq!(list_str(&client, &name).await, vec!["now"]);
    assert_eq!(queue.size().await.unwrap(), 1);

    // The same host with its own clock moves the other one too: the skew is real.
    let out = run(skewed_delayq(
        &redis.url(),
        "+1h",
        &["transfer", "--once", &name],
    ));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("QUEUE\tMOVED\tQUARANTINED\n{name}\t1\t0\n")
    );
    assert_eq!(
        list_str(&client, &name).await,
        vec!["now", "in-ten-minutes"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_transfer_daemon_goes_by_the_servers_clock_and_sleeps_by_it() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("clock-daemon");
    let queue = manual_queue(&client, &name).await;
    queue
        .offer("in-ten-minutes", Duration::from_secs(600))
        .await
        .unwrap();

    let mut daemon = skewed_delayq(&redis.url(), "+1h", &["--server-clock", "transfer", &name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    queue
        .offer("soon", Duration::from_millis(300))
        .await
        .unwrap();
    let moved = eventually(PATIENCE, || async {
        !list_str(&client, &name).await.is_empty()
    })
    .await;
    // Then it sleeps until the next due time by the server's clock (ten minutes away) or its
    // 1 s sweep; a scheduler sleeping by its own clock, an hour ahead, would transfer in a
    // tight loop. A busy machine only makes it call less.
    let before = evalsha_calls(&redis);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let calls = evalsha_calls(&redis) - before;
    let _ = Command::new("kill").arg(daemon.id().to_string()).status();
    daemon.wait().unwrap();

    assert!(moved, "soon was never moved");
    assert_eq!(list_str(&client, &name).await, vec!["soon"]);
    assert_eq!(
        queue.size().await.unwrap(),
        1,
        "in-ten-minutes must still be pending"
    );
    assert!(calls < 30, "{calls} script calls in 1.5 s");
}
