//! Lookups through the value index on long queues that foreign writers (Java peers, or anyone
//! appending to the order list alone) keep changing: the first lookup completes the index in
//! short calls and the next ones answer in one or two, a foreign append at the tail keeps the
//! indexed prefix, and the scheduler brings an index that fell behind up to date ahead of
//! lookups.
//! Calls are counted on the server (`INFO commandstats`), so no figure depends on the machine's
//! speed.

use crate::common::queue::{
    build_index, connect, eventually, fill_pending, index_complete, manual_queue,
};
use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::{DelayedQueue, QueueKeys};
use fred::clients::Client;
use fred::interfaces::ListInterface;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Script calls a lookup may take once the index is complete, while a foreign writer appends
/// every 10 ms: one that indexes what was appended and answers, or, when more was appended
/// meanwhile, one more.
const LOOKUP_CALLS: u64 = 2;

/// Script calls (EVALSHA and EVAL) the server has run so far.
fn script_calls(redis: &TestRedis) -> u64 {
    let info = redis.cli(&["INFO", "commandstats"]);
    ["cmdstat_evalsha:", "cmdstat_eval:"]
        .iter()
        .filter_map(|prefix| {
            let line = info.lines().find(|l| l.starts_with(prefix))?;
            let calls = line.split("calls=").nth(1)?.split(',').next()?;
            Some(calls.parse::<u64>().expect("a call count"))
        })
        .sum()
}

/// An entry nobody else has, appended to the order list alone (no zset member): what a peer
/// that writes the list directly leaves, and what Redisson's contains still counts.
async fn append_list_only(client: &Client, keys: &QueueKeys, n: u64, value: &str) {
    let id = format!("f{n:07}");
    let entry = delayq::entry::pack(id.as_bytes(), value.as_bytes());
    let _: i64 = client.rpush(keys.order(), entry).await.unwrap();
}

/// Appends list-only entries every 10 ms from its own connection until stopped.
struct ForeignAppender {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<u64>,
}

impl ForeignAppender {
    async fn start(url: &str, keys: &QueueKeys) -> ForeignAppender {
        let client = connect(url).await;
        let keys = keys.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let mut appended = 0;
            while !stopped.load(Ordering::Relaxed) {
                append_list_only(&client, &keys, appended, &format!("foreign-{appended}")).await;
                appended += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            appended
        });
        ForeignAppender { stop, task }
    }

    async fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap()
    }
}

/// On a long queue nobody has indexed, with a foreign writer appending to the order list every
/// 10 ms (each append changes LLEN - ZCARD), the first lookup completes the index and every
/// lookup answers right, the later ones in at most [`LOOKUP_CALLS`] script calls each.
#[tokio::test(flavor = "multi_thread")]
async fn a_lookup_answers_in_bounded_calls_while_a_foreign_writer_appends() {
    const ENTRIES: i64 = 100_000;
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("bounded")).await;
    let keys = queue.keys().clone();
    // Loads the scripts (a first EVALSHA answered NOSCRIPT counts as a call).
    assert!(!queue.contains("target").await.unwrap());
    assert!(!queue.remove("target").await.unwrap());
    fill_pending(&client, &keys, (1, ENTRIES), &[(ENTRIES - 10, "target")]).await;
    let appender = ForeignAppender::start(&redis.url(), &keys).await;

    let calls = script_calls(&redis);
    assert!(queue.contains("filler-17").await.unwrap());
    let calls = script_calls(&redis) - calls;
    // 5,000 entries a call at most: the first lookup indexed the whole list.
    assert!(
        calls >= ENTRIES as u64 / 5_000,
        "{calls} calls indexed {ENTRIES} entries"
    );
    for (what, expected) in [
        ("contains target", true),
        ("contains absent", false),
        ("remove target", true),
        ("contains target", false),
    ] {
        let calls = script_calls(&redis);
        let answer = tokio::time::timeout(PATIENCE, async {
            match what {
                "remove target" => queue.remove("target").await,
                "contains absent" => queue.contains("absent").await,
                _ => queue.contains("target").await,
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {PATIENCE:?}"))
        .unwrap();
        let calls = script_calls(&redis) - calls;
        assert_eq!(answer, expected, "{what}");
        assert!(calls <= LOOKUP_CALLS, "{what} took {calls} script calls");
    }
    let appended = appender.stop().await;
    assert!(appended > 0, "the foreign writer never ran");
    assert_eq!(queue.size().await.unwrap(), ENTRIES as u64 - 1 + appended);
}

/// With the index complete, an entry a foreign writer appends to the order list alone (LLEN -
/// ZCARD grows by one) is indexed by the next lookup, in one call: the indexed prefix stays.
#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_append_at_the_tail_keeps_the_indexed_prefix() {
    const ENTRIES: i64 = 20_000;
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("prefix")).await;
    let keys = queue.keys().clone();
    fill_pending(&client, &keys, (1, ENTRIES), &[]).await;
    build_index(&client, &queue).await;

    append_list_only(&client, &keys, 1, "appended").await;
    let calls = script_calls(&redis);
    assert!(queue.contains("appended").await.unwrap());
    assert_eq!(
        script_calls(&redis) - calls,
        1,
        "the prefix was indexed again"
    );
    assert!(index_complete(&client, &keys).await);

    let calls = script_calls(&redis);
    assert!(queue.contains("filler-17").await.unwrap());
    assert!(!queue.contains("filler-0").await.unwrap());
    assert_eq!(script_calls(&redis) - calls, 2);
}

/// An index that fell behind (a Java peer offered many entries since the last lookup) is
/// brought up to date by the queue's scheduler when it transfers, not by the next lookup.
#[tokio::test(flavor = "multi_thread")]
async fn the_scheduler_brings_the_value_index_up_to_date() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("ahead");
    let manual = manual_queue(&client, &name).await;
    let keys = manual.keys().clone();
    fill_pending(&client, &keys, (1, 1_000), &[]).await;
    build_index(&client, &manual).await;
    fill_pending(&client, &keys, (1_001, 30_000), &[]).await;
    assert!(!index_complete(&client, &keys).await);

    let scheduled = DelayedQueue::builder(client.clone(), &name, StringCodec)
        .build()
        .await
        .unwrap();
    scheduled.offer("due-now", Duration::ZERO).await.unwrap();
    assert!(
        eventually(PATIENCE, || index_complete(&client, &keys)).await,
        "the scheduler left the value index behind"
    );
    drop(scheduled);
}
