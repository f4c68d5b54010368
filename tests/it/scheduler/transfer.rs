//! The transfer script (through `transfer_due` and a running scheduler): what moves, in which
//! order, what stays, large backlogs, hand-written legacy entries.

use crate::common::queue::*;
use crate::common::{unique_name, TestRedis};
use delayq::codec::StringCodec;
use delayq::entry::{pack, pack_legacy};
use delayq::{EntryFormat, Scheduler, TransferConfig};
use std::time::Duration;

#[tokio::test]
async fn transfer_moves_due_entries_only_in_due_order_as_bare_values() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("transfer-due")).await;
    let keys = queue.keys().clone();
    // Due order c, a, b (not offer order); "later" stays pending.
    queue
        .offer_all(&[
            (s("a"), Duration::from_millis(20)),
            (s("later"), Duration::from_secs(60)),
            (s("b"), Duration::from_millis(30)),
            (s("c"), Duration::from_millis(10)),
        ])
        .await
        .unwrap();
    let later_due = zset(&client, keys.timeout()).await[3].1;

    tokio::time::sleep(Duration::from_millis(80)).await;
    let outcome = queue.admin().transfer_due(100).await.unwrap();
    assert_eq!(outcome.moved, 3);
    assert_eq!(outcome.quarantined, 0);
    assert_eq!(outcome.next_due_ms, Some(later_due));

    // Bare encoded values on the target list, no packing, in due order.
    let target = list(&client, keys.target()).await;
    assert_eq!(target, vec![&b"c"[..], b"a", b"b"]);
    // The moved entries left both the order list and the zset.
    let order = list(&client, keys.order()).await;
    assert_eq!(order.len(), 1);
    assert_eq!(split_current(&order[0]).1, b"later");
    let zset = zset(&client, keys.timeout()).await;
    assert_eq!(zset.len(), 1);
    assert_eq!(zset[0].0, order[0]);
    assert_eq!(int(&client, "EXISTS", keys.quarantine()).await, 0);

    // Nothing due: nothing moves.
    let outcome = queue.admin().transfer_due(100).await.unwrap();
    assert_eq!((outcome.moved, outcome.quarantined), (0, 0));
    assert_eq!(outcome.next_due_ms, Some(later_due));
    // An empty queue reports no head.
    queue.clear().await.unwrap();
    assert_eq!(
        queue.admin().transfer_due(100).await.unwrap().next_due_ms,
        None
    );
}

#[tokio::test]
async fn batch_size_bounds_one_transfer() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("transfer-batch")).await;
    let items: Vec<(String, Duration)> = (0..5)
        .map(|i| (format!("v{i}"), Duration::from_millis(i + 1)))
        .collect();
    queue.offer_all(&items).await.unwrap();
    tokio::time::sleep(Duration::from_millis(30)).await;
    let first = queue.admin().transfer_due(2).await.unwrap();
    assert_eq!(first.moved, 2);
    assert!(
        first.next_due_ms.unwrap() <= now_ms(),
        "more is due already"
    );
    assert_eq!(
        list_str(&client, queue.keys().target()).await,
        vec!["v0", "v1"]
    );
    assert_eq!(queue.size().await.unwrap(), 3);
    // batch 0 is treated as 1.
    assert_eq!(queue.admin().transfer_due(0).await.unwrap().moved, 1);
    assert_eq!(queue.admin().transfer_due(100).await.unwrap().moved, 2);
    assert_eq!(
        list_str(&client, queue.keys().target()).await,
        vec!["v0", "v1", "v2", "v3", "v4"]
    );
}

#[tokio::test]
async fn scheduler_drains_a_backlog_of_1050_in_due_order() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("transfer-backlog");
    let queue = manual_queue(&client, &name).await;
    const N: u64 = 1_050;
    // Offer order is a permutation of due order; every due time is distinct (one `now` for the
    // whole batch, distinct delays), so due order is exact.
    let items: Vec<(String, Duration)> = (0..N)
        .map(|i| {
            let rank = (i * 37) % N;
            (format!("v{rank:04}"), Duration::from_millis(rank + 1))
        })
        .collect();
    queue.offer_all(&items).await.unwrap();
    tokio::time::sleep(Duration::from_millis(N + 50)).await;
    assert_eq!(int(&client, "LLEN", queue.keys().target()).await, 0);

    // One scheduler started now must move them all, batch after batch, without any new offer
    // or channel message (and without relying on the sweep: it is off).
    let handle = Scheduler::builder(client.clone(), name.as_str())
        .transfer_config(
            TransferConfig::default().with_adaptive_batch(100, Duration::from_millis(5)),
        )
        .group_config(delayq::GroupConfig::default().with_sweep_interval(None))
        .spawn()
        .await
        .unwrap();
    let target = queue.keys().target().to_owned();
    assert!(
        eventually(crate::common::PATIENCE, || async {
            int(&client, "LLEN", &target).await == N as i64
        })
        .await,
        "backlog not drained: {} of {N}",
        int(&client, "LLEN", &target).await
    );
    let moved = list_str(&client, &target).await;
    let expected: Vec<String> = (0..N).map(|r| format!("v{r:04}")).collect();
    assert_eq!(moved, expected, "due order");
    assert_eq!(queue.size().await.unwrap(), 0);
    assert_eq!(int(&client, "ZCARD", queue.keys().timeout()).await, 0);
    let stats = handle.stats();
    assert_eq!(stats.moved, N);
    assert!(stats.transfers >= 11, "batches of 100: {stats:?}");
    assert_eq!(stats.errors, 0);
    handle.shutdown().await;
}

#[tokio::test]
async fn a_large_batch_size_works_and_keeps_the_keys_in_step() {
    // `transfer_due` and `TransferConfig::with_batch_size` accept any batch size; a batch
    // larger than Lua's C stack (about 8000 values for `unpack`) must still work, and no call
    // may leave the order list and the zset out of step.
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("transfer-big-batch")).await;
    const N: usize = 9_000;
    let items: Vec<(String, Duration)> = (0..N)
        .map(|i| {
            (
                format!("v{i:04}"),
                Duration::from_millis((i / 1_000) as u64),
            )
        })
        .collect();
    queue.offer_all(&items).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut calls = 0;
    loop {
        calls += 1;
        let outcome = queue.admin().transfer_due(10_000).await;
        let stats = queue.inspect().stats().await.unwrap();
        assert!(
            outcome.is_ok(),
            "transfer_due(10_000) with {N} due failed: {outcome:?}; afterwards pending (order \
             list) {}, scheduled (zset) {}, ready {}",
            stats.pending,
            stats.scheduled,
            stats.ready
        );
        assert_eq!(
            stats.pending, stats.scheduled,
            "order list and zset out of step"
        );
        assert_eq!(stats.pending + stats.ready, N as u64, "entries lost");
        if stats.pending == 0 || calls == 1_000 {
            break;
        }
    }
    assert_eq!(
        queue.size().await.unwrap(),
        0,
        "not drained in {calls} calls"
    );
    // Due order: groups of 1000 share a due time (ties are ordered by the random ids), and the
    // groups arrive in order.
    let moved = list_str(&client, queue.keys().target()).await;
    let groups: Vec<usize> = moved
        .iter()
        .map(|v| v[1..].parse::<usize>().unwrap() / 1_000)
        .collect();
    assert!(groups.windows(2).all(|w| w[0] <= w[1]), "not in due order");
    let mut sorted = moved.clone();
    sorted.sort();
    let expected: Vec<String> = (0..N).map(|i| format!("v{i:04}")).collect();
    assert_eq!(sorted, expected);
}

#[tokio::test]
async fn hand_written_legacy_entries_are_moved() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    for format in [EntryFormat::Current, EntryFormat::Legacy] {
        let queue = manual_queue_with(
            &client,
            &unique_name("transfer-legacy"),
            StringCodec,
            format,
        )
        .await;
        let keys = queue.keys().clone();
        let now = now_ms();
        // What Redisson < 3.21.1 leaves: a random long as a double, then length and value.
        let legacy1 = pack_legacy(-4_611_686_018_427_387_904.0, b"old-1");
        let legacy2 = pack_legacy(123_456_789.0, b"old-2");
        let current = pack(&[7; 8], b"new");
        push_raw_entry(&client, keys.timeout(), keys.order(), &legacy2, now - 5).await;
        push_raw_entry(&client, keys.timeout(), keys.order(), &current, now - 7).await;
        push_raw_entry(&client, keys.timeout(), keys.order(), &legacy1, now - 10).await;
        let future = pack_legacy(9.0, b"old-future");
        push_raw_entry(&client, keys.timeout(), keys.order(), &future, now + 60_000).await;

        let outcome = queue.admin().transfer_due(100).await.unwrap();
        assert_eq!((outcome.moved, outcome.quarantined), (3, 0), "{format:?}");
        assert_eq!(
            list_str(&client, keys.target()).await,
            vec!["old-1", "new", "old-2"],
            "{format:?}"
        );
        assert_eq!(list(&client, keys.order()).await, vec![future.clone()]);
        assert_eq!(zset(&client, keys.timeout()).await.len(), 1);
        // The remaining legacy entry reads back through the queue too.
        assert_eq!(queue.peek().await.unwrap(), Some(s("old-future")));
    }
}
