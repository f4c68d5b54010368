//! Offers deduplicated by a business key (`offer_dedup`) against a real redis-server: concurrent
//! offers of one key leave one entry (throttle: the first; debounce: the one whose script ran
//! last), a mapping whose entry is gone counts as absent, the window's end lets a new entry in,
//! legacy entries and non-string codecs, bad input and a wrong-type mapping refused with
//! nothing written, and sharded queues on a standalone server and a real Cluster.

use crate::common::queue::*;
use crate::common::{unique_name, TestCluster, TestRedis, PATIENCE};
use delayq::codec::{LongCodec, StringCodec};
use delayq::dedup::{Dedup, DedupOutcome, MAX_DEDUP_KEY_LEN};
use delayq::{shard_of, DelayedQueue, EntryFormat, Error, OfferHandle, ShardedQueue};
use fred::clients::Client;
use std::collections::HashSet;
use std::time::{Duration, Instant};

const HOUR: Duration = Duration::from_secs(3_600);

/// The pending entries' handles with their due times, from the order list and the zset, which
/// must agree with each other.
async fn pending_handles(client: &Client, keys: &delayq::QueueKeys) -> Vec<(OfferHandle, i64)> {
    let order = list(client, keys.order()).await;
    let zset = zset(client, keys.timeout()).await;
    assert_eq!(order.len(), zset.len(), "order list and zset disagree");
    zset.iter()
        .map(|(entry, due)| {
            assert!(order.contains(entry), "zset member not in the order list");
            (OfferHandle::of_entry(entry).unwrap(), *due)
        })
        .collect()
}

/// `n` offers of one key, spread over tasks on `clients` queues (separate connections), all
/// at once; the outcomes in completion order and how long they took.
async fn offer_at_once(
    queues: &[DelayedQueue<StringCodec>],
    n: usize,
    dedup: &Dedup,
) -> (Vec<(String, DedupOutcome)>, Duration) {
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let queue = queues[i % queues.len()].clone();
        let dedup = dedup.clone();
        tasks.spawn(async move {
            let value = format!("v{i}");
            let outcome = queue
                .dedup(dedup.clone())
                .offer(&value, HOUR)
                .await
                .unwrap();
            (value, outcome)
        });
    }
    let mut outcomes = Vec::with_capacity(n);
    while let Some(done) = tasks.join_next().await {
        outcomes.push(done.unwrap());
    }
    (outcomes, start.elapsed())
}

async fn queues_on_clients(
    url: &str,
    name: &str,
    clients: usize,
) -> Vec<DelayedQueue<StringCodec>> {
    let mut queues = Vec::new();
    for _ in 0..clients {
        queues.push(manual_queue(&connect(url).await, name).await);
    }
    queues
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_throttled_offers_leave_the_first_entry() {
    let redis = TestRedis::start();
    let name = unique_name("dedup-throttle");
    let queues = queues_on_clients(&redis.url(), &name, 4).await;
    let dedup = Dedup::throttle("order-42", HOUR);
    let (outcomes, took) = offer_at_once(&queues, 1_000, &dedup).await;
    eprintln!("1,000 concurrent throttled offers of one key: {took:?}");

    let offered: Vec<&(String, DedupOutcome)> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, DedupOutcome::Offered { .. }))
        .collect();
    assert_eq!(offered.len(), 1, "exactly one offer goes in");
    let (first_value, first) = offered[0];
    for (_, outcome) in &outcomes {
        assert!(outcome.is_pending() == matches!(outcome, DedupOutcome::Offered { .. }));
        assert_eq!(outcome.handle(), first.handle());
        assert_eq!(outcome.due_ms(), first.due_ms());
    }
    let client = connect(&redis.url()).await;
    let keys = queues[0].keys();
    assert_eq!(
        pending_handles(&client, keys).await,
        [(first.handle(), first.due_ms())]
    );
    assert_eq!(queues[0].read_all().await.unwrap(), [first_value.as_str()]);
    // The value index finds it, and the handle cancels it.
    assert!(queues[0].contains(first_value).await.unwrap());
    assert!(queues[0].cancel(&first.handle()).await.unwrap());
    assert!(queues[0].is_empty().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_debounced_offers_leave_the_last_entry() {
    let redis = TestRedis::start();
    let name = unique_name("dedup-debounce");
    let queues = queues_on_clients(&redis.url(), &name, 4).await;
    let dedup = Dedup::debounce("customer-7", HOUR);
    let (outcomes, took) = offer_at_once(&queues, 1_000, &dedup).await;
    eprintln!("1,000 concurrent debounced offers of one key: {took:?}");

    let offered = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, DedupOutcome::Offered { .. }))
        .count();
    let replaced = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, DedupOutcome::Replaced { .. }))
        .count();
    assert_eq!((offered, replaced), (1, 999));
    // Every offer made its own entry; all but the one whose script ran last were replaced.
    let handles: HashSet<OfferHandle> = outcomes.iter().map(|(_, o)| o.handle()).collect();
    assert_eq!(handles.len(), 1_000);
    let client = connect(&redis.url()).await;
    let keys = queues[0].keys();
    let pending = pending_handles(&client, keys).await;
    assert_eq!(pending.len(), 1, "one entry left");
    let (last_value, last) = outcomes
        .iter()
        .find(|(_, o)| o.handle() == pending[0].0)
        .expect("the entry left is one an offer returned");
    assert_eq!(pending[0].1, last.due_ms(), "due at the last offer's time");
    assert_eq!(queues[0].read_all().await.unwrap(), [last_value.as_str()]);
    // The value index and the position index were kept in step: lookups by value and by
    // handle find only the last entry.
    for (value, outcome) in outcomes.iter().take(50) {
        let alive = outcome.handle() == last.handle();
        assert_eq!(queues[0].contains(value).await.unwrap(), alive, "{value}");
        assert_eq!(queues[0].cancel(&outcome.handle()).await.unwrap(), alive);
    }
    assert!(queues[0].cancel(&last.handle()).await.is_ok());
    assert!(queues[0].is_empty().await.unwrap());
}

#[tokio::test]
async fn debounce_replaces_the_value_and_due_time_and_opens_the_window_again() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("dedup-moves")).await;
    queue.offer("other", HOUR).await.unwrap();
    let debounce = Dedup::debounce("k", HOUR);
    let first = queue
        .dedup(debounce.clone())
        .offer("one", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(matches!(first, DedupOutcome::Offered { .. }), "{first:?}");
    let mapping = queue.keys().dedup("k");
    cmd(&client, "PEXPIRE", vec![arg(&mapping), arg("600000")]).await;
    let second = queue
        .dedup(debounce.clone())
        .offer("two", Duration::from_secs(120))
        .await
        .unwrap();
    assert!(
        matches!(second, DedupOutcome::Replaced { .. }),
        "{second:?}"
    );
    assert_ne!(second.handle(), first.handle());
    assert!(second.due_ms() >= first.due_ms() + 60_000);
    assert!(
        int(&client, "PTTL", &mapping).await > 600_000,
        "window opened again"
    );
    assert_eq!(queue.read_all().await.unwrap(), ["other", "two"]);
    assert!(!queue.contains("one").await.unwrap());

    // A throttled offer leaves the entry and the window as they are.
    let throttle = Dedup::throttle("k", HOUR);
    cmd(&client, "PEXPIRE", vec![arg(&mapping), arg("600000")]).await;
    let third = queue
        .dedup(throttle.clone())
        .offer("three", Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        third,
        DedupOutcome::Kept {
            handle: second.handle(),
            due_ms: second.due_ms()
        }
    );
    assert!(int(&client, "PTTL", &mapping).await <= 600_000);
    assert_eq!(queue.read_all().await.unwrap(), ["other", "two"]);
}

#[tokio::test]
async fn a_mapping_whose_entry_is_gone_counts_as_absent() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("dedup-stale")).await;
    for mode in [
        delayq::dedup::DedupMode::Throttle,
        delayq::dedup::DedupMode::Debounce,
    ] {
        let dedup = Dedup::new("k", HOUR, mode);
        let mut previous: Option<OfferHandle> = None;
        // Each way an entry leaves: transferred, polled (Redisson's poll), removed by value,
        // cancelled by handle.
        for gone_by in ["transfer", "poll", "remove", "cancel"] {
            let outcome = queue
                .dedup(dedup.clone())
                .offer("job", Duration::ZERO)
                .await
                .unwrap();
            assert!(
                matches!(outcome, DedupOutcome::Offered { .. }),
                "{mode:?} after {gone_by}: {outcome:?}"
            );
            assert_ne!(Some(outcome.handle()), previous);
            previous = Some(outcome.handle());
            match gone_by {
                "transfer" => {
                    assert_eq!(queue.admin().transfer_due(10).await.unwrap().moved, 1);
                    assert_eq!(list_str(&client, queue.name()).await, ["job"]);
                    cmd(&client, "DEL", vec![arg(queue.name())]).await;
                }
                "poll" => assert_eq!(queue.poll().await.unwrap().as_deref(), Some("job")),
                "remove" => assert!(queue.remove("job").await.unwrap()),
                _ => assert!(queue.cancel(&outcome.handle()).await.unwrap()),
            }
            assert!(queue.is_empty().await.unwrap());
        }
        let last = queue
            .dedup(dedup.clone())
            .offer("job", Duration::ZERO)
            .await
            .unwrap();
        assert!(matches!(last, DedupOutcome::Offered { .. }), "{mode:?}");
        assert!(queue.clear().await.unwrap());
    }
}

#[tokio::test]
async fn the_windows_end_lets_a_new_entry_in() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("dedup-window")).await;
    for dedup in [
        Dedup::throttle("t", Duration::from_millis(50)),
        Dedup::debounce("d", Duration::from_millis(50)),
    ] {
        let first = queue.dedup(dedup.clone()).offer("x", HOUR).await.unwrap();
        assert!(matches!(first, DedupOutcome::Offered { .. }));
        let mapping = queue.keys().dedup(dedup.key());
        let deadline = Instant::now() + PATIENCE;
        while int(&client, "EXISTS", &mapping).await == 1 {
            assert!(Instant::now() < deadline, "the mapping never expired");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let second = queue.dedup(dedup.clone()).offer("x", HOUR).await.unwrap();
        assert!(matches!(second, DedupOutcome::Offered { .. }), "{second:?}");
        // The first entry was not the key's any more: both are pending.
        assert!(queue.cancel(&first.handle()).await.unwrap());
        assert!(queue.cancel(&second.handle()).await.unwrap());
    }
}

#[tokio::test]
async fn legacy_entries_and_a_non_string_codec() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("dedup-legacy");
    let queue = manual_queue_with(&client, &name, LongCodec, EntryFormat::Legacy).await;
    let throttle = Dedup::throttle("n", HOUR);
    let first = queue.dedup(throttle.clone()).offer(&7, HOUR).await.unwrap();
    let kept = queue.dedup(throttle.clone()).offer(&8, HOUR).await.unwrap();
    assert_eq!(kept.handle(), first.handle());
    assert!(matches!(kept, DedupOutcome::Kept { .. }));
    let debounce = Dedup::debounce("n", HOUR);
    let replaced = queue.dedup(debounce.clone()).offer(&9, HOUR).await.unwrap();
    assert!(matches!(replaced, DedupOutcome::Replaced { .. }));
    assert_eq!(queue.read_all().await.unwrap(), [9]);
    let order = list(&client, queue.keys().order()).await;
    let entry = delayq::entry::unpack(&order[0], EntryFormat::Legacy).unwrap();
    assert_eq!(entry.format, EntryFormat::Legacy);
    assert_eq!(OfferHandle::of_entry(&order[0]), Some(replaced.handle()));
    assert!(queue.cancel(&replaced.handle()).await.unwrap());
    assert!(queue.is_empty().await.unwrap());
}

#[tokio::test]
async fn a_debounce_finds_its_entry_behind_many_unindexed_ones() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("dedup-index")).await;
    let keys = queue.keys().clone();
    fill_pending(&client, &keys, (0, 3_000), &[]).await;
    let debounce = Dedup::debounce("k", HOUR);
    let first = queue
        .dedup(debounce.clone())
        .offer("a", HOUR)
        .await
        .unwrap();
    fill_pending(&client, &keys, (3_000, 3_000), &[]).await;
    let second = queue
        .dedup(debounce.clone())
        .offer("b", HOUR)
        .await
        .unwrap();
    assert!(
        matches!(second, DedupOutcome::Replaced { .. }),
        "{second:?}"
    );
    assert_eq!(queue.size().await.unwrap(), 6_001);
    assert!(!queue.contains("a").await.unwrap());
    assert!(!queue.cancel(&first.handle()).await.unwrap());
    assert!(queue.contains("b").await.unwrap());
    assert_eq!(
        list(&client, keys.order())
            .await
            .last()
            .map(|e| e.ends_with(b"b")),
        Some(true)
    );
}

#[tokio::test]
async fn bad_input_is_refused_and_nothing_written() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("dedup-bad")).await;
    let long = "k".repeat(MAX_DEDUP_KEY_LEN + 1);
    let cases = [
        (Dedup::throttle("", HOUR), "empty"),
        (Dedup::throttle(long, HOUR), "more than 512"),
        (Dedup::debounce("k", Duration::ZERO), "at least 1 ms"),
        (
            Dedup::debounce("k", Duration::from_micros(999)),
            "at least 1 ms",
        ),
    ];
    for (dedup, says) in cases {
        match queue.dedup(dedup.clone()).offer("v", HOUR).await {
            Err(Error::InvalidConfig(text)) => assert!(text.contains(says), "{text}"),
            other => panic!("{dedup:?}: {other:?}"),
        }
    }
    let max = Dedup::throttle("k".repeat(MAX_DEDUP_KEY_LEN), HOUR);
    assert!(queue.dedup(max.clone()).offer("v", HOUR).await.is_ok());
    assert_eq!(queue.size().await.unwrap(), 1);
}

#[tokio::test]
async fn a_wrong_type_at_the_mappings_name_is_refused_and_nothing_lost() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("dedup-type")).await;
    queue.offer("before", HOUR).await.unwrap();
    let mapping = queue.keys().dedup("k");
    cmd(&client, "RPUSH", vec![arg(&mapping), arg("someone else's")]).await;
    for dedup in [Dedup::throttle("k", HOUR), Dedup::debounce("k", HOUR)] {
        match queue.dedup(dedup.clone()).offer("v", HOUR).await {
            Err(Error::WrongType { key, .. }) => assert_eq!(key, mapping),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(list_str(&client, &mapping).await, ["someone else's"]);
    assert_eq!(queue.read_all().await.unwrap(), ["before"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_offers_dedup_in_the_keys_shard() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = ShardedQueue::builder(client, unique_name("dedup-sharded"), 5, StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    sharded_dedup_round(&queue).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_offers_dedup_on_a_cluster() {
    let cluster = TestCluster::start(3);
    let client = connect(&cluster.url()).await;
    let queue = ShardedQueue::builder(client, unique_name("dedup-cluster"), 6, StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    for (i, shard) in queue.shards().iter().enumerate() {
        assert_eq!(
            cluster.key_slot(&shard.keys().dedup("k")),
            cluster.key_slot(shard.keys().timeout()),
            "shard {i}"
        );
    }
    sharded_dedup_round(&queue).await;
}

/// Throttle and debounce through a sharded queue behave as on one queue, whatever values a
/// key's offers carry: the key's shard holds the mapping and the entry, a throttled offer of
/// another value is dropped, a debounced one replaces the entry (one entry pending per key),
/// and a cancelled entry's mapping counts as absent.
async fn sharded_dedup_round(queue: &ShardedQueue<StringCodec>) {
    let keys = 10;
    for i in 0..keys {
        let key = format!("key-{i}");
        let throttle = Dedup::throttle(&key, HOUR);
        let home = queue.dedup(throttle.clone()).shard();
        assert_eq!(home, shard_of(key.as_bytes(), queue.shard_count()));
        let (shard, first) = queue
            .dedup(throttle.clone())
            .offer(&format!("order-{i}-a"), HOUR)
            .await
            .unwrap();
        assert_eq!(shard, home);
        assert!(matches!(first, DedupOutcome::Offered { .. }));
        // Values of one key land on several shards by their bytes; the key keeps them in one.
        for n in 0..6 {
            let value = format!("order-{i}-throttled-{n}");
            let (shard, again) = queue
                .dedup(throttle.clone())
                .offer(&value, HOUR)
                .await
                .unwrap();
            assert_eq!(shard, home);
            assert_eq!(
                again,
                DedupOutcome::Kept {
                    handle: first.handle(),
                    due_ms: first.due_ms()
                },
                "{value}"
            );
        }
        let debounce = Dedup::debounce(&key, HOUR);
        let mut last = first;
        for n in 0..6 {
            let value = format!("order-{i}-debounced-{n}");
            let (shard, moved) = queue
                .dedup(debounce.clone())
                .offer(&value, Duration::from_secs(7_200))
                .await
                .unwrap();
            assert_eq!(shard, home);
            assert!(matches!(moved, DedupOutcome::Replaced { .. }), "{moved:?}");
            last = moved;
        }
        let pending = queue.shards()[home].read_all().await.unwrap();
        let of_key: Vec<_> = pending
            .iter()
            .filter(|v| v.starts_with(&format!("order-{i}-")))
            .collect();
        assert_eq!(of_key, [&format!("order-{i}-debounced-5")]);
        let handle = delayq::ShardedHandle::new(home, last.handle());
        assert!(queue.cancel(&handle).await.unwrap());
        let (_, fresh) = queue
            .dedup(throttle.clone())
            .offer("again", HOUR)
            .await
            .unwrap();
        assert!(matches!(fresh, DedupOutcome::Offered { .. }), "{fresh:?}");
    }
    assert_eq!(queue.size().await.unwrap(), keys as u64);
    assert!(queue.clear().await.unwrap());
}
