//! Stored limits that cannot be read (a hand-edited or foreign hash) fail closed: a worker
//! takes nothing from the queue until they are fixed or cleared, and says so once a minute,
//! not at every read.

use super::{eventually, push, setup, values, worker, Shared};
use crate::logs::Captured;
use delayq::limit::Limits;
use fred::interfaces::{HashesInterface, KeysInterface, ListInterface};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(5);
/// How long the tests watch a worker take nothing: over two reads of the limits (one a
/// second), long enough for an unlimited worker to take all of a few values many times over.
const WATCH: Duration = Duration::from_millis(2_500);

fn quick(_: &str) -> Duration {
    Duration::from_millis(10)
}

/// A fresh worker, with no limits read before, finds a concurrency of -5: it takes nothing and
/// logs it once; once the limits are stored again it runs under them.
#[tokio::test]
async fn a_fresh_worker_takes_nothing_under_malformed_limits_and_says_so_once() {
    let (captured, _guard) = Captured::start();
    let (_redis, client, queue) = setup("limit-malformed-fresh").await;
    let key = queue.keys().limits();
    let _: () = client
        .hset(&key, [("version", "v1"), ("concurrency", "-5")])
        .await
        .unwrap();
    push(&client, &queue, &values("v", 3)).await;
    let probe = Shared::default();
    let handle = worker(&queue, 8, &probe, LEASE, quick);
    eventually("the worker to read the limits", || {
        !captured.lines_with("\"-5\"").is_empty() || probe.lock().unwrap().done > 0
    })
    .await;
    tokio::time::sleep(WATCH).await;
    assert_eq!(
        probe.lock().unwrap().done,
        0,
        "a job ran under malformed limits"
    );
    let waiting: u64 = client.llen(queue.name()).await.unwrap();
    assert_eq!(waiting, 3, "values were taken under malformed limits");
    let said = captured.lines_with("\"-5\"");
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(
        said[0].contains("ERROR") && said[0].contains("nothing"),
        "{said:#?}"
    );

    queue
        .limits()
        .set(&Limits::default().with_concurrency(1))
        .await
        .unwrap();
    eventually("3 jobs done", || probe.lock().unwrap().done == 3).await;
    assert_eq!(probe.lock().unwrap().most, 1);
    handle.shutdown().await.unwrap();
}

/// A worker running under good limits whose stored cap turns to -5 (the version unchanged, as
/// a hand edit leaves it) takes nothing more until the limits are stored again.
#[tokio::test]
async fn a_running_worker_stops_taking_when_its_limits_turn_malformed() {
    let (_redis, client, queue) = setup("limit-malformed-later").await;
    queue
        .limits()
        .set(&Limits::default().with_concurrency(2))
        .await
        .unwrap();
    let probe = Shared::default();
    let handle = worker(&queue, 8, &probe, LEASE, quick);
    push(&client, &queue, &values("a", 2)).await;
    eventually("2 jobs done", || probe.lock().unwrap().done == 2).await;

    let key = queue.keys().limits();
    let _: () = client.hset(&key, ("concurrency", "-5")).await.unwrap();
    push(&client, &queue, &values("b", 3)).await;
    tokio::time::sleep(WATCH).await;
    assert_eq!(
        probe.lock().unwrap().done,
        2,
        "a job ran under malformed limits"
    );

    queue
        .limits()
        .set(&Limits::default().with_concurrency(2))
        .await
        .unwrap();
    eventually("5 jobs done", || probe.lock().unwrap().done == 5).await;
    handle.shutdown().await.unwrap();
}

/// A limits key of the wrong type (`SET delayq_limits:{q} junk`) fails closed like a malformed
/// hash: a fresh worker takes nothing, says so once naming the key and the type found (not at
/// every read), and takes again once the key is deleted.
#[tokio::test]
async fn a_fresh_worker_takes_nothing_when_the_limits_key_has_the_wrong_type() {
    let (captured, _guard) = Captured::start();
    let (_redis, client, queue) = setup("limit-wrong-type").await;
    let key = queue.keys().limits();
    let _: () = client.set(&key, "junk", None, None, false).await.unwrap();
    push(&client, &queue, &values("v", 3)).await;
    let probe = Shared::default();
    let handle = worker(&queue, 8, &probe, LEASE, quick);
    eventually("the worker to read the limits", || {
        !captured.lines_with("is a string, not a hash").is_empty() || probe.lock().unwrap().done > 0
    })
    .await;
    tokio::time::sleep(WATCH).await;
    assert_eq!(
        probe.lock().unwrap().done,
        0,
        "a job ran though the limits key is a string"
    );
    let waiting: u64 = client.llen(queue.name()).await.unwrap();
    assert_eq!(
        waiting, 3,
        "values were taken though the limits key is a string"
    );
    let said = captured.lines_with("is a string, not a hash");
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(
        said[0].contains("ERROR") && said[0].contains("string") && said[0].contains(&key),
        "{said:#?}"
    );
    let errors = captured.lines_with("ERROR");
    assert_eq!(errors.len(), 1, "logged more than once: {errors:#?}");

    let _: i64 = client.del(&key).await.unwrap();
    eventually("3 jobs done", || probe.lock().unwrap().done == 3).await;
    handle.shutdown().await.unwrap();
}
