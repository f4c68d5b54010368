//! Why an attempt failed: `delayq work` keeps the end of its command's stderr (never its
//! stdout) in the attempt's error, so the dead letter says what the command said, bounded
//! whatever the command prints; `--keep-stderr 0` leaves the stderr to the worker's log alone.

use crate::cli::{delayq, text};
use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::work_lifecycle::Worker;
use delayq::codec::StringCodec;
use delayq::reliable::DeadLetter;
use delayq::DelayedQueue;
use std::time::Duration;

async fn queue_on(redis: &TestRedis, prefix: &str) -> DelayedQueue<StringCodec> {
    let client = delayq::connect(&redis.url()).await.unwrap();
    DelayedQueue::builder(client, unique_name(prefix).as_str(), StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap()
}

/// Waits for the queue's one dead letter.
async fn dead_letter(queue: &DelayedQueue<StringCodec>, worker: &Worker) -> DeadLetter<String> {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let mut dead = queue.inspect().dead_letters(10).await.unwrap();
        if let Some(letter) = dead.pop() {
            assert!(dead.is_empty(), "more than one: {}", worker.log());
            return letter;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no dead letter: {}",
            worker.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The command's stderr ends the error (and still reaches the worker's log); its stdout is
/// in neither the error nor anything kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_ends_with_what_the_command_said_on_stderr() {
    let redis = TestRedis::start();
    let queue = queue_on(&redis, "stderr-kept").await;
    let handler = "echo 'order 7: a secret on stdout'; \
                   echo 'SMTP 550 5.1.1 mailbox unavailable' >&2; exit 3";
    let args = [
        queue.name(),
        "--max-attempts",
        "1",
        "--",
        "sh",
        "-c",
        handler,
    ];
    let worker = Worker::start(&redis.url(), redis.dir(), &args);
    queue.offer("welcome mail", Duration::ZERO).await.unwrap();
    let letter = dead_letter(&queue, &worker).await;
    assert_eq!(
        letter.error,
        "sh exited with exit status: 3; stderr: SMTP 550 5.1.1 mailbox unavailable"
    );
    assert!(worker.log().contains("SMTP 550 5.1.1 mailbox unavailable"));
    let out = delayq(&redis.url(), &["dead", "list", queue.name()]);
    let listed = text(&out.stdout);
    assert!(listed.contains("stderr: SMTP 550 5.1.1"), "{listed}");
    assert!(!listed.contains("secret"), "stdout was kept: {listed}");
}

/// A command that prints a megabyte on stderr: the error keeps its last `--keep-stderr` bytes
/// (the default, 4096), says how much there was, and stays within what a dead letter keeps.
/// With `--keep-stderr 0` the error is the exit status alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_megabyte_of_stderr_is_kept_to_its_last_bytes() {
    let redis = TestRedis::start();
    let handler = "head -c 1048576 /dev/zero | tr '\\0' a >&2; \
                   echo 'the last line' >&2; exit 4";
    let queue = queue_on(&redis, "stderr-huge").await;
    let args = [
        queue.name(),
        "--max-attempts",
        "1",
        "--",
        "sh",
        "-c",
        handler,
    ];
    let worker = Worker::start(&redis.url(), redis.dir(), &args);
    queue.offer("v", Duration::ZERO).await.unwrap();
    let letter = dead_letter(&queue, &worker).await;
    let (head, kept) = letter.error.split_once("): ").unwrap();
    assert_eq!(
        head,
        "sh exited with exit status: 4; stderr (last 4095 of 1048590 bytes"
    );
    assert_eq!(kept.len(), 4095, "4096 bytes less the line break");
    assert!(kept.ends_with("aaaathe last line"), "{kept:?}");
    assert!(letter.error.len() <= delayq::reliable::MAX_ERROR_BYTES);

    let quiet = queue_on(&redis, "stderr-off").await;
    let args = [
        quiet.name(),
        "--max-attempts",
        "1",
        "--keep-stderr",
        "0",
        "--",
        "sh",
        "-c",
        handler,
    ];
    let worker = Worker::start(&redis.url(), redis.dir(), &args);
    quiet.offer("v", Duration::ZERO).await.unwrap();
    let letter = dead_letter(&quiet, &worker).await;
    assert_eq!(letter.error, "sh exited with exit status: 4");
    wait_until("the stderr in the worker's log", PATIENCE, || match worker
        .log()
        .contains("the last line")
    {
        true => Ok(()),
        false => Err("not yet".to_owned()),
    });
}

/// More than a dead letter keeps is refused before the worker starts.
#[test]
fn keep_stderr_beyond_the_dead_letter_s_bound_is_refused() {
    let redis = TestRedis::start();
    let queue = unique_name("stderr-bound");
    let out = delayq(
        &redis.url(),
        &["work", &queue, "--keep-stderr", "8193", "--", "true"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("from 0 to 8192"), "{out:?}");
}
