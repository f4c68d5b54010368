//! Sharded queues (`ShardedQueue`) on a standalone server and a real 3-master Cluster: shards
//! spread over masters with every key of a shard in one slot, operations by value and by handle
//! hit the value's shard, one worker takes every value of every shard once, changing the number
//! of shards loses nothing, and neither does moving a shard's slot to another master under load.

use crate::common::{unique_name, TestCluster, TestRedis, PATIENCE};
use delayq::codec::{Codec, StringCodec};
use delayq::names::shard_count_key;
use delayq::{shard_of, Job, JobError, ReliableConfig, ShardedQueue, WorkerHandle};
use fred::clients::Client;
use fred::interfaces::KeysInterface;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Seen = Arc<Mutex<HashMap<String, Vec<String>>>>;

/// A worker over every shard of `queue` recording value -> shards it was handled from.
fn recording_worker(queue: &ShardedQueue<StringCodec>, seen: &Seen) -> WorkerHandle {
    let seen = seen.clone();
    queue
        .worker(8, move |job: Job<String>| {
            seen.lock()
                .unwrap()
                .entry(job.value().clone())
                .or_default()
                .push(job.queue().to_owned());
            std::future::ready(Ok::<(), JobError>(()))
        })
        .reliable_config(
            ReliableConfig::default()
                .with_wait_slice(Duration::from_millis(100))
                .with_reap_interval(Duration::from_millis(200)),
        )
        .spawn()
        .unwrap()
}

/// Waits until `seen` holds `count` values.
async fn wait_for(seen: &Seen, count: usize) {
    let deadline = Instant::now() + PATIENCE;
    while seen.lock().unwrap().len() < count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every value of `expected` handled exactly once, from the shard its value maps to in one of
/// `layouts`; nothing else handled.
fn assert_exactly_once(seen: &Seen, expected: &[String], layouts: &[usize]) {
    let seen = seen.lock().unwrap();
    for value in expected {
        let from = seen
            .get(value)
            .unwrap_or_else(|| panic!("{value} never handled"));
        assert_eq!(from.len(), 1, "{value} handled {} times", from.len());
        let shard: usize = from[0]
            .rsplit_once(":{")
            .and_then(|(_, s)| s.strip_suffix('}'))
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            layouts
                .iter()
                .any(|&n| shard_of(value.as_bytes(), n) == shard),
            "{value} came from shard {shard}"
        );
    }
    assert_eq!(
        seen.len(),
        expected.len(),
        "values handled that were not offered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_spread_over_masters_with_each_shard_in_one_slot() {
    let cluster = TestCluster::start(3);
    let client = delayq::connect(&cluster.url()).await.unwrap();
    let name = unique_name("spread");
    let queue = ShardedQueue::new(client, &name, 12, StringCodec)
        .await
        .unwrap();
    let mut owners = Vec::new();
    for (i, shard) in queue.shards().iter().enumerate() {
        let keys = shard.keys();
        assert_eq!(keys.target(), format!("{name}:{{{i}}}"));
        assert_eq!(
            keys.timeout(),
            format!("redisson_delay_queue_timeout:{name}:{{{i}}}")
        );
        let slot = cluster.key_slot(&i.to_string());
        for key in [
            keys.target(),
            keys.timeout(),
            keys.order(),
            keys.channel(),
            keys.index(),
            keys.values(),
            keys.inflight(),
            keys.dead(),
        ] {
            assert_eq!(cluster.key_slot(key), slot, "{key}");
        }
        owners.push(cluster.slot_owner(slot));
    }
    let mut masters = owners.clone();
    masters.sort();
    masters.dedup();
    assert_eq!(masters, [0, 1, 2], "shards on masters {owners:?}");

    // Every shard works where it lives.
    for i in 0..24 {
        queue
            .offer(&format!("v{i}"), Duration::from_secs(60))
            .await
            .unwrap();
    }
    let stats = queue.shard_stats().await.unwrap();
    assert_eq!(stats.iter().map(|s| s.pending).sum::<u64>(), 24);
    assert!(
        stats.iter().filter(|s| s.pending > 0).count() >= 6,
        "{stats:?}"
    );
    assert!(queue.clear().await.unwrap());
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_by_value_and_by_handle_hit_the_values_shard() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = ShardedQueue::new(client, unique_name("byvalue"), 5, StringCodec)
        .await
        .unwrap();
    let values: Vec<String> = (0..40).map(|i| format!("order-{i}")).collect();
    for v in &values {
        queue.offer(v, Duration::from_secs(60)).await.unwrap();
    }
    for v in &values {
        let mine = shard_of(v.as_bytes(), 5);
        assert_eq!(queue.shard_for(v).unwrap(), mine);
        for (i, shard) in queue.shards().iter().enumerate() {
            assert_eq!(shard.contains(v).await.unwrap(), i == mine, "{v} in {i}");
        }
        assert!(queue.contains(v).await.unwrap());
    }
    assert_eq!(queue.size().await.unwrap(), 40);
    let stats = queue.stats().await.unwrap();
    assert_eq!((stats.pending, stats.scheduled), (40, 40));
    let mut all = queue.read_all().await.unwrap();
    all.sort();
    let mut sorted = values.clone();
    sorted.sort();
    assert_eq!(all, sorted);

    assert!(queue.remove("order-7").await.unwrap());
    assert!(!queue.remove("order-7").await.unwrap());
    assert!(!queue.contains("order-7").await.unwrap());
    assert_eq!(queue.size().await.unwrap(), 39);
    assert!(queue.reschedule("order-8", Duration::ZERO).await.unwrap());
    // An equal value is pending in its shard: replaced, not offered again.
    assert!(queue.offer_unique("order-9", Duration::ZERO).await.unwrap());

    // A handle carries its shard, prints and parses, and cancels exactly its entry.
    let handle = queue
        .offer_with_handle("order-7", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(handle.shard(), shard_of(b"order-7", 5));
    let parsed: delayq::ShardedHandle = handle.to_string().parse().unwrap();
    assert!(queue
        .reschedule_by_id(&parsed, Duration::from_secs(120))
        .await
        .unwrap());
    assert!(queue.cancel(&parsed).await.unwrap());
    assert!(!queue.cancel(&parsed).await.unwrap());
    let elsewhere = delayq::ShardedHandle::new(9, *handle.handle());
    assert!(queue.cancel(&elsewhere).await.is_err(), "no shard 9");

    // The two rescheduled values come due; the sharded consumer takes them from their shards.
    let consumer = queue.consumer();
    let mut got = Vec::new();
    while got.len() < 2 {
        let v = consumer.poll(PATIENCE).await.unwrap();
        got.push(v.unwrap());
    }
    got.sort();
    assert_eq!(got, ["order-8", "order-9"]);
    assert_eq!(
        consumer.poll(Duration::from_millis(200)).await.unwrap(),
        None
    );
    assert!(queue.clear().await.unwrap());
    assert!(queue.is_empty().await.unwrap());
    queue.destroy().await.unwrap();
}

/// [`StringCodec`], counting the values it encodes.
struct CountingCodec(Arc<AtomicUsize>);

impl Codec for CountingCodec {
    type Value = String;
    type Borrowed = str;
    type Error = <StringCodec as Codec>::Error;
    fn name(&self) -> &'static str {
        "counting-string"
    }
    fn encode(&self, value: &str) -> Result<Vec<u8>, Self::Error> {
        self.0.fetch_add(1, Ordering::SeqCst);
        StringCodec.encode(value)
    }
    fn decode(&self, bytes: &[u8]) -> Result<String, Self::Error> {
        StringCodec.decode(bytes)
    }
}

/// An operation by value puts each value through the codec once, to pick its shard and to send
/// it; also while the number of shards changes, when a value is looked for in two shards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_operation_encodes_a_value_once() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let delay = Duration::from_secs(60);
    // A value whose shard differs between 5 and 3 shards, so lookups visit two shards.
    let v = (0..)
        .map(|i| format!("v{i}"))
        .find(|v| shard_of(v.as_bytes(), 5) != shard_of(v.as_bytes(), 3))
        .unwrap();
    for previous in [None, Some(3)] {
        let encodes = Arc::new(AtomicUsize::new(0));
        let codec = CountingCodec(encodes.clone());
        let mut builder = ShardedQueue::builder(client.clone(), unique_name("once"), 5, codec);
        if let Some(previous) = previous {
            builder = builder.previous_shards(previous);
        }
        let queue = builder.transfer(false).build().await.unwrap();
        let once = |op: &str, values: usize| {
            let n = encodes.swap(0, Ordering::SeqCst);
            assert_eq!(n, values, "{op} with previous {previous:?}: {n} encodes");
        };
        queue.offer(&v, delay).await.unwrap();
        once("offer", 1);
        let items: Vec<(String, Duration)> = (0..4).map(|i| (format!("w{i}"), delay)).collect();
        queue.offer_all(&items).await.unwrap();
        once("offer_all", 4);
        queue.offer_with_handle(&v, delay).await.unwrap();
        once("offer_with_handle", 1);
        assert!(queue.contains(&v).await.unwrap());
        once("contains", 1);
        assert!(!queue.contains("absent").await.unwrap());
        once("contains of a value not pending", 1);
        assert!(queue.reschedule(&v, delay).await.unwrap());
        once("reschedule", 1);
        assert!(queue.offer_unique(&v, delay).await.unwrap());
        once("offer_unique", 1);
        assert!(queue.remove(&v).await.unwrap());
        once("remove", 1);
        assert!(!queue.remove("absent").await.unwrap());
        once("remove of a value not pending", 1);
        assert_eq!(queue.size().await.unwrap(), 4, "the four of offer_all");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_braces_and_no_shards_are_refused() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    for (name, shards) in [("{orders}", 4), ("orders}", 4), ("", 4), ("orders", 0)] {
        let built = ShardedQueue::new(client.clone(), name, shards, StringCodec).await;
        assert!(
            matches!(built, Err(delayq::Error::InvalidConfig(_))),
            "{name:?} x {shards}"
        );
    }
}

async fn offer_spread(queue: &ShardedQueue<StringCodec>, prefix: &str, n: usize) -> Vec<String> {
    let values: Vec<String> = (0..n).map(|i| format!("{prefix}-{i}")).collect();
    let items: Vec<(String, Duration)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (v.clone(), Duration::from_millis(100 + (i as u64 * 7) % 900)))
        .collect();
    queue.offer_all(&items).await.unwrap();
    values
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_takes_every_value_of_twelve_shards_once_on_a_cluster() {
    let cluster = TestCluster::start(3);
    let client: Client = delayq::connect(&cluster.url()).await.unwrap();
    let queue = ShardedQueue::new(client.clone(), unique_name("work"), 12, StringCodec)
        .await
        .unwrap();
    let seen: Seen = Arc::default();
    let worker = recording_worker(&queue, &seen);
    let values = offer_spread(&queue, "job", 600).await;
    wait_for(&seen, values.len()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stats = worker.shutdown().await.unwrap();
    assert_exactly_once(&seen, &values, &[12]);
    let shards_used: std::collections::HashSet<String> = seen
        .lock()
        .unwrap()
        .values()
        .map(|f| f[0].clone())
        .collect();
    assert_eq!(shards_used.len(), 12);
    assert_eq!(stats.acked, 600);
    let recorded: Option<String> = client.get(shard_count_key(queue.name())).await.unwrap();
    assert_eq!(recorded.as_deref(), Some("12"));
    assert_eq!(queue.size().await.unwrap(), 0);
    queue.destroy().await.unwrap();
}

/// The documented procedure, growing 4 -> 6 and shrinking 6 -> 3: build the queue with the new
/// count and `previous_shards(old)`; new offers go to the new layout, lookups by value find
/// values in their old shard, the worker covers both layouts; once `drained()`, the old
/// layout is gone and nothing was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_number_of_shards_loses_nothing() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("reshard");
    let mut expected = Vec::new();
    let mut old = 4;
    for new in [6, 3] {
        let before = ShardedQueue::new(client.clone(), &name, old, StringCodec)
            .await
            .unwrap();
        let tag = format!("n{old}");
        let early = offer_spread(&before, &tag, 300).await;
        // A value whose shard differs between the layouts, removed after the switch. Due in an
        // hour, so it is still pending when looked up however slow the machine is (the early
        // values may all have come due by then).
        let gone = (0..)
            .map(|i| format!("{tag}-gone-{i}"))
            .find(|v| shard_of(v.as_bytes(), old) != shard_of(v.as_bytes(), new))
            .unwrap();
        before
            .offer(&gone, Duration::from_secs(3600))
            .await
            .unwrap();
        before.destroy().await.unwrap();

        let during = ShardedQueue::builder(client.clone(), &name, new, StringCodec)
            .previous_shards(old)
            .build()
            .await
            .unwrap();
        assert_eq!(during.shards().len(), old.max(new));
        assert!(during.misplaced().await.unwrap() > 0);
        assert!(!during.drained().await.unwrap());
        assert!(
            during.contains(&gone).await.unwrap(),
            "found in its old shard"
        );
        assert!(during.remove(&gone).await.unwrap());
        let seen: Seen = Arc::default();
        let worker = recording_worker(&during, &seen);
        let late = offer_spread(&during, &format!("{tag}-late"), 300).await;
        let wanted: Vec<String> = early.iter().chain(&late).cloned().collect();
        wait_for(&seen, wanted.len()).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        worker.shutdown().await.unwrap();
        assert_exactly_once(&seen, &wanted, &[old, new]);
        for v in &late {
            let from = &seen.lock().unwrap()[v][0];
            assert!(from.ends_with(&format!("{{{}}}", shard_of(v.as_bytes(), new))));
        }
        // While the old layout drains, its count stays recorded: handles with the new count
        // alone are refused (they would not serve the old shards), and so on once drained.
        let recorded = || async {
            let count: Option<String> = client.get(shard_count_key(&name)).await.unwrap();
            count
        };
        assert_eq!(recorded().await, Some(old.to_string()));
        let refused = ShardedQueue::new(client.clone(), &name, new, StringCodec).await;
        assert!(
            refused.is_err(),
            "{new} shards before the old layout drained"
        );
        assert!(during.drained().await.unwrap());
        assert_eq!(recorded().await, Some(new.to_string()));
        let refused = ShardedQueue::new(client.clone(), &name, old, StringCodec).await;
        let refused = refused.map(|_| ()).unwrap_err().to_string();
        assert!(
            refused.contains(&format!("has {new} shards"))
                && refused.contains(&format!("has {old}")),
            "{refused}"
        );
        assert_eq!(during.size().await.unwrap(), 0);
        during.destroy().await.unwrap();
        expected.extend(wanted);
        old = new;
    }
    assert_eq!(expected.len(), 2 * 600);
}

/// One shard's slot moves to another master (IMPORTING/MIGRATING, MIGRATE of its keys, SETSLOT
/// NODE) while producers offer and the worker takes: every value is handled once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moving_a_shards_slot_under_load_loses_nothing() {
    let cluster = Arc::new(TestCluster::start(3));
    let client: Client = delayq::connect(&cluster.url()).await.unwrap();
    let queue = ShardedQueue::new(client, unique_name("migrate"), 12, StringCodec)
        .await
        .unwrap();
    let seen: Seen = Arc::default();
    let worker = recording_worker(&queue, &seen);
    let offered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // The producer and the move meet in two places, so that the move happens while values are
    // offered however the machine schedules them: it begins once 300 values are in, and the
    // producer holds its last 300 until it is over.
    let moved = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let producer = {
        let queue = queue.clone();
        let offered = offered.clone();
        let moved = moved.clone();
        tokio::spawn(async move {
            let mut values = Vec::new();
            // A refusal while the slot moves (TRYAGAIN, ASK) did not run: a careful producer
            // sets that value aside, goes on with the others (whose shards are not moving) and
            // sends it again later. Anything else fails the test, saying what it was.
            let mut set_aside: std::collections::VecDeque<(String, Duration, u32)> =
                Default::default();
            let attempt = |value: String, delay: Duration, tries: u32| {
                let queue = queue.clone();
                async move {
                    match queue.offer(&value, delay).await {
                        Ok(()) => None,
                        Err(err) => {
                            assert!(
                                err.is_transient() && !err.is_connection_error() && tries < 40,
                                "offer of {value} failed (try {}): {err}",
                                tries + 1
                            );
                            Some((value, delay, tries + 1))
                        }
                    }
                }
            };
            for i in 0..1_500u64 {
                if i == 1_200 {
                    let deadline = Instant::now() + PATIENCE;
                    while !moved.load(std::sync::atomic::Ordering::SeqCst) {
                        assert!(Instant::now() < deadline, "the slot never moved");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                let value = format!("m-{i}");
                // Due over the next 300 ms, so entries are pending, due and taken throughout.
                let delay = Duration::from_millis(i * 37 % 300);
                match attempt(value.clone(), delay, 0).await {
                    None => {
                        values.push(value);
                        offered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Some(refused) => set_aside.push_back(refused),
                }
                if i % 50 == 0 {
                    if let Some((value, delay, tries)) = set_aside.pop_front() {
                        match attempt(value.clone(), delay, tries).await {
                            None => {
                                values.push(value);
                                offered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Some(refused) => set_aside.push_back(refused),
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            while let Some((value, delay, tries)) = set_aside.pop_front() {
                match attempt(value.clone(), delay, tries).await {
                    None => values.push(value),
                    Some(refused) => {
                        set_aside.push_back(refused);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
            values
        })
    };
    let slot = cluster.key_slot("0");
    let from = cluster.slot_owner(slot);
    let to = (from + 1) % 3;
    let mover = cluster.clone();
    let count = offered.clone();
    let (at_start, at_end) = tokio::task::spawn_blocking(move || {
        let offered = || count.load(std::sync::atomic::Ordering::SeqCst);
        let deadline = Instant::now() + PATIENCE;
        let wait_for_offers = |n: usize| {
            while offered() < n {
                assert!(
                    Instant::now() < deadline,
                    "the producer stalled at {}",
                    offered()
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        wait_for_offers(300);
        let at_start = offered();
        mover.begin_slot_migration(slot, to);
        mover.move_slot_keys(slot, to);
        std::thread::sleep(Duration::from_millis(300));
        mover.move_slot_keys(slot, to);
        mover.finish_slot_migration(slot, to);
        let at_end = offered();
        moved.store(true, std::sync::atomic::Ordering::SeqCst);
        (at_start, at_end)
    })
    .await
    .unwrap();
    // Offered meanwhile: those to other shards go through, those to the moving one are refused
    // and sent again (an offer may also wait out the whole move on a busy machine).
    eprintln!(
        "{} offers went through while the slot moved",
        at_end - at_start
    );
    assert_eq!(cluster.slot_owner(slot), to);
    let values = producer.await.unwrap();
    assert_eq!(values.len(), 1_500, "every value was offered in the end");
    wait_for(&seen, values.len()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    worker.shutdown().await.unwrap();
    assert_exactly_once(&seen, &values, &[12]);
    let moved_shard = format!("{}:{{0}}", queue.name());
    let from_moved = seen
        .lock()
        .unwrap()
        .values()
        .filter(|f| f[0] == moved_shard)
        .count();
    assert!(from_moved > 50, "shard 0 handled {from_moved}");
    assert_eq!(queue.size().await.unwrap(), 0);
    queue.destroy().await.unwrap();
}
