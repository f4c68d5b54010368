//! Bad data on Redis: malformed entries (quarantined, reported, never a panic) and keys of the
//! wrong type (an error, and nothing lost or half-written).

mod common;
mod coreutil;

use bytes::Bytes;
use common::{unique_name, TestRedis};
use coreutil::*;
use delayq::codec::StringCodec;
use delayq::entry::pack;
use delayq::{DelayedQueue, Error, QueueKeys};
use fred::clients::Client;
use std::time::Duration;

fn s(v: &str) -> String {
    v.to_string()
}

/// Three kinds of malformed entry: garbage, a truncated entry, a wrong length field.
fn bad_entries() -> Vec<Vec<u8>> {
    let garbage = b"not an entry at all".to_vec();
    let mut truncated = pack(&[1; 8], b"truncated-value");
    truncated.truncate(truncated.len() - 3);
    let mut wrong_len = pack(&[2; 8], b"abc");
    wrong_len[9..17].copy_from_slice(&100u64.to_le_bytes());
    vec![garbage, truncated, wrong_len]
}

#[tokio::test]
async fn transfer_quarantines_malformed_entries_and_moves_their_neighbours() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("bad-transfer")).await;
    let keys = queue.keys().clone();
    let now = now_ms();
    let bad = bad_entries();
    // Due order: good0, bad0, good1, bad1, good2, bad2, good3 (good ones written by hand too,
    // in current packing).
    let mut due = now - 100;
    for i in 0..4 {
        let good = pack(&[i as u8 + 10; 8], format!("good{i}").as_bytes());
        push_raw_entry(&client, keys.timeout(), keys.order(), &good, due).await;
        due += 1;
        if let Some(b) = bad.get(i) {
            push_raw_entry(&client, keys.timeout(), keys.order(), b, due).await;
            due += 1;
        }
    }
    // One good entry not yet due.
    queue
        .offer(&s("future"), Duration::from_secs(60))
        .await
        .unwrap();

    let outcome = queue.transfer_due(100).await.unwrap();
    assert_eq!((outcome.moved, outcome.quarantined), (4, 3));
    assert_eq!(
        list_str(&client, keys.target()).await,
        vec!["good0", "good1", "good2", "good3"]
    );
    // The raw malformed entries, byte for byte, in due order.
    let quarantine: Vec<Vec<u8>> = list(&client, keys.quarantine())
        .await
        .iter()
        .map(|b| b.to_vec())
        .collect();
    assert_eq!(quarantine, bad);
    // They left the order list and the zset; the future entry stays.
    assert_eq!(queue.read_all().await.unwrap(), vec![s("future")]);
    assert_eq!(zset(&client, keys.timeout()).await.len(), 1);
    let stats = queue.stats().await.unwrap();
    assert_eq!((stats.pending, stats.quarantined, stats.ready), (1, 3, 4));
    // Transferring again changes nothing.
    let again = queue.transfer_due(100).await.unwrap();
    assert_eq!((again.moved, again.quarantined), (0, 0));
    assert_eq!(int(&client, "LLEN", keys.quarantine()).await, 3);
}

#[tokio::test]
async fn a_running_scheduler_quarantines_too() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("bad-scheduler");
    let keys = QueueKeys::new(name.as_str());
    let queue = DelayedQueue::new(client.clone(), name.as_str(), StringCodec)
        .await
        .unwrap();
    push_raw_entry(
        &client,
        keys.timeout(),
        keys.order(),
        b"\x08garbage",
        now_ms() + 100,
    )
    .await;
    queue
        .offer(&s("fine"), Duration::from_millis(150))
        .await
        .unwrap();
    let target = keys.target().to_owned();
    assert!(
        eventually(Duration::from_secs(3), || async {
            int(&client, "LLEN", &target).await == 1
        })
        .await
    );
    assert_eq!(list_str(&client, &target).await, vec!["fine"]);
    assert_eq!(
        list(&client, keys.quarantine()).await,
        vec![&b"\x08garbage"[..]]
    );
    assert_eq!(queue.size().await.unwrap(), 0);
    queue.destroy().await.unwrap();
}

#[tokio::test]
async fn read_all_and_peek_report_malformed_entries() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    for (i, bad) in bad_entries().into_iter().enumerate() {
        let queue = manual_queue(&client, &unique_name("bad-read")).await;
        let keys = queue.keys().clone();
        push_raw_entry(
            &client,
            keys.timeout(),
            keys.order(),
            &bad,
            now_ms() + 60_000,
        )
        .await;
        queue
            .offer(&s("good"), Duration::from_secs(60))
            .await
            .unwrap();

        match queue.peek().await {
            Err(Error::MalformedEntry { key, entry, .. }) => {
                assert_eq!(key, keys.order());
                assert_eq!(entry, Bytes::from(bad.clone()), "case {i}");
            }
            other => panic!("case {i}: peek gave {other:?}"),
        }
        match queue.read_all().await {
            Err(Error::MalformedEntry { entry, .. }) => assert_eq!(entry, Bytes::from(bad.clone())),
            other => panic!("case {i}: read_all gave {other:?}"),
        }
        // pending reports it and goes on.
        let pending = queue.pending(0).await.unwrap();
        assert_eq!(pending.len(), 2);
        match &pending[0].value {
            Err(e) => assert!(matches!(**e, Error::MalformedEntry { .. }), "{e:?}"),
            Ok(v) => panic!("case {i}: pending decoded {v:?}"),
        }
        assert_eq!(pending[1].value.as_deref().unwrap(), "good");
        // contains / remove walk past it; remove never touches it.
        assert!(queue.contains(&s("good")).await.unwrap());
        assert!(queue.remove(&s("good")).await.unwrap());
        assert_eq!(
            list(&client, keys.order()).await,
            vec![Bytes::from(bad.clone())]
        );
        assert!(queue.retain_all(&[]).await.is_ok());
        assert_eq!(list(&client, keys.order()).await, vec![Bytes::from(bad)]);
    }
}

#[tokio::test]
async fn poll_quarantines_a_malformed_head_and_takes_the_next_value() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("bad-poll")).await;
    let keys = queue.keys().clone();
    let bad = bad_entries();
    push_raw_entry(
        &client,
        keys.timeout(),
        keys.order(),
        &bad[0],
        now_ms() + 60_000,
    )
    .await;
    queue
        .offer(&s("good"), Duration::from_secs(60))
        .await
        .unwrap();
    push_raw_entry(
        &client,
        keys.timeout(),
        keys.order(),
        &bad[1],
        now_ms() + 60_000,
    )
    .await;
    queue
        .offer(&s("good2"), Duration::from_secs(60))
        .await
        .unwrap();

    // Documented: "A malformed head entry is quarantined and the next taken."
    let polled = queue.poll().await.unwrap();
    assert_eq!(
        list(&client, keys.quarantine()).await,
        vec![Bytes::from(bad[0].clone())],
        "the malformed head is quarantined"
    );
    assert_eq!(
        polled,
        Some(s("good")),
        "poll() must return the good value behind a malformed head, not None while values are \
         pending (pending now: {:?})",
        queue.read_all().await.map_err(|e| e.to_string())
    );
}

#[tokio::test]
async fn poll_many_and_poll_last_quarantine_malformed_entries() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("bad-poll-many")).await;
    let keys = queue.keys().clone();
    let bad = bad_entries();
    queue.offer(&s("a"), Duration::from_secs(60)).await.unwrap();
    push_raw_entry(
        &client,
        keys.timeout(),
        keys.order(),
        &bad[2],
        now_ms() + 60_000,
    )
    .await;
    queue.offer(&s("b"), Duration::from_secs(60)).await.unwrap();
    queue.offer(&s("c"), Duration::from_secs(60)).await.unwrap();
    push_raw_entry(
        &client,
        keys.timeout(),
        keys.order(),
        &bad[0],
        now_ms() + 60_000,
    )
    .await;

    // Last entry is malformed: quarantined, and "c" moved instead.
    let dest = format!("{{{}}}:dest", queue.name());
    assert_eq!(
        queue.poll_last_and_offer_first_to(&dest).await.unwrap(),
        Some(s("c"))
    );
    assert_eq!(list_str(&client, &dest).await, vec!["c"]);
    assert_eq!(
        list(&client, keys.quarantine()).await,
        vec![Bytes::from(bad[0].clone())]
    );

    // poll_many walks over the malformed one, which is quarantined, not returned.
    let values = queue.poll_many(3).await.unwrap();
    assert!(values.iter().all(|v| v == "a" || v == "b"), "{values:?}");
    assert_eq!(values.first().map(String::as_str), Some("a"));
    assert_eq!(
        list(&client, keys.quarantine()).await,
        vec![Bytes::from(bad[0].clone()), Bytes::from(bad[2].clone())]
    );
    assert_eq!(
        int(&client, "ZCARD", keys.timeout()).await as usize,
        2 - values.len()
    );
}

/// Readable snapshot of every key of a queue, to prove an error changed nothing.
async fn snapshot(client: &Client, keys: &QueueKeys) -> Vec<String> {
    let show = |b: &[u8]| b.escape_ascii().to_string();
    let mut out = Vec::new();
    for key in [
        keys.target(),
        keys.timeout(),
        keys.order(),
        keys.quarantine(),
    ] {
        let kind = key_type(client, key).await;
        let content: Vec<String> = match kind.as_str() {
            "list" => list(client, key).await.iter().map(|b| show(b)).collect(),
            "zset" => zset(client, key)
                .await
                .iter()
                .map(|(m, score)| format!("{}@{score}", show(m)))
                .collect(),
            "string" => vec![format!("{:?}", cmd(client, "GET", vec![arg(key)]).await)],
            _ => Vec::new(),
        };
        out.push(format!("{key} ({kind}): {content:?}"));
    }
    out
}

fn assert_wrong_type<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) {
    match result {
        Err(Error::WrongType { .. }) => {}
        other => panic!("{what}: expected Error::WrongType, got {other:?}"),
    }
}

/// A queue with two pending entries (one due) and one ready value, then `key` overwritten
/// with a string.
async fn broken_queue(
    client: &Client,
    prefix: &str,
    which: fn(&QueueKeys) -> &str,
) -> DelayedQueue<StringCodec> {
    let queue = manual_queue(client, &unique_name(prefix)).await;
    queue
        .offer_all(&[
            (s("due"), Duration::ZERO),
            (s("later"), Duration::from_secs(60)),
        ])
        .await
        .unwrap();
    let keys = queue.keys().clone();
    cmd(client, "DEL", vec![arg(which(&keys))]).await;
    cmd(client, "SET", vec![arg(which(&keys)), arg("a string")]).await;
    queue
}

#[tokio::test]
async fn wrong_type_order_list_reads_give_wrong_type() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = broken_queue(&client, "wt-order-read", |k| k.order()).await;
    let before = snapshot(&client, queue.keys()).await;
    assert_wrong_type(queue.size().await, "size");
    assert_wrong_type(queue.is_empty().await, "is_empty");
    assert_wrong_type(queue.peek().await, "peek");
    assert_wrong_type(queue.read_all().await, "read_all");
    assert_wrong_type(queue.contains(&s("due")).await, "contains");
    assert_wrong_type(queue.pending(0).await, "pending");
    assert_eq!(snapshot(&client, queue.keys()).await, before);
    // The string is still there.
    assert_eq!(
        cmd(&client, "GET", vec![arg(queue.keys().order())])
            .await
            .as_string()
            .unwrap(),
        "a string"
    );
}

#[tokio::test]
async fn wrong_type_order_list_offer_writes_nothing() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = broken_queue(&client, "wt-order-offer", |k| k.order()).await;
    let before = snapshot(&client, queue.keys()).await;
    assert_wrong_type(
        queue.offer(&s("new"), Duration::from_secs(5)).await,
        "offer",
    );
    assert_eq!(
        snapshot(&client, queue.keys()).await,
        before,
        "a failed offer must not leave a half-written entry (zset member without order entry)"
    );
}

#[tokio::test]
async fn wrong_type_order_list_transfer_loses_nothing() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = broken_queue(&client, "wt-order-transfer", |k| k.order()).await;
    let before = snapshot(&client, queue.keys()).await;
    assert_wrong_type(queue.transfer_due(100).await, "transfer_due");
    assert_eq!(snapshot(&client, queue.keys()).await, before);
}

#[tokio::test]
async fn wrong_type_target_list_transfer_loses_nothing() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = broken_queue(&client, "wt-target", |k| k.target()).await;
    let before = snapshot(&client, queue.keys()).await;
    assert_wrong_type(queue.transfer_due(100).await, "transfer_due");
    assert_eq!(
        snapshot(&client, queue.keys()).await,
        before,
        "a failed transfer must leave the order list and zset as they were"
    );
}

#[tokio::test]
async fn wrong_type_timeout_zset_poll_loses_nothing() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = broken_queue(&client, "wt-zset-poll", |k| k.timeout()).await;
    let before = snapshot(&client, queue.keys()).await;
    assert_wrong_type(queue.poll().await, "poll");
    assert_eq!(
        snapshot(&client, queue.keys()).await,
        before,
        "a failed poll must not pop the order list's head"
    );
}

#[tokio::test]
async fn wrong_type_timeout_zset_remove_loses_nothing() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = broken_queue(&client, "wt-zset-remove", |k| k.timeout()).await;
    let before = snapshot(&client, queue.keys()).await;
    assert_wrong_type(queue.remove(&s("later")).await, "remove");
    assert_eq!(snapshot(&client, queue.keys()).await, before);
}

#[tokio::test]
async fn wrong_type_quarantine_and_stats() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = broken_queue(&client, "wt-quarantine", |k| k.quarantine()).await;
    let before = snapshot(&client, queue.keys()).await;
    assert_wrong_type(queue.stats().await, "stats");
    assert_eq!(snapshot(&client, queue.keys()).await, before);
    // A transfer may refuse at once (checking every key first) or work, since only good
    // entries are due and the quarantine is never written; either way nothing is lost.
    match queue.transfer_due(100).await {
        Ok(outcome) => {
            assert_eq!(outcome.moved, 1);
            assert_eq!(list_str(&client, queue.keys().target()).await, vec!["due"]);
            assert_eq!(queue.read_all().await.unwrap(), vec![s("later")]);
        }
        Err(Error::WrongType { .. }) => assert_eq!(snapshot(&client, queue.keys()).await, before),
        Err(other) => panic!("transfer_due: {other:?}"),
    }
}

#[tokio::test]
async fn wrong_type_timeout_zset_poll_last_loses_nothing() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = broken_queue(&client, "wt-zset-plof", |k| k.timeout()).await;
    let dest = format!("{{{}}}:dest", queue.name());
    let before = snapshot(&client, queue.keys()).await;
    assert_wrong_type(
        queue.poll_last_and_offer_first_to(&dest).await,
        "poll_last_and_offer_first_to",
    );
    assert_eq!(
        snapshot(&client, queue.keys()).await,
        before,
        "a failed poll_last_and_offer_first_to must not pop the order list's tail"
    );
    assert_eq!(int(&client, "EXISTS", &dest).await, 0);
}
