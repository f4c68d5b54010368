//! The reliable consumer on a real redis-server: take, ack, nack, visibility deadlines, the
//! reaper, heartbeats, dropped deliveries, dead letters, poison entries and the server clock,
//! with Java-style (`BLPOP`) consumers and Redisson's keys alongside.

use crate::common::{unique_name, TestRedis, PATIENCE};
use bytes::Bytes;
use delayq::codec::{LongCodec, StringCodec};
use delayq::time::now_ms;
use delayq::{Clock, Consumer, DelayedQueue, ReliableConfig};
use fred::clients::Client;
use fred::interfaces::{HashesInterface, KeysInterface, ListInterface, SortedSetsInterface};
use std::time::Duration;

async fn setup(prefix: &str) -> (TestRedis, Client, DelayedQueue<StringCodec>) {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::builder(client.clone(), unique_name(prefix), StringCodec)
        .build()
        .await
        .unwrap();
    (redis, client, queue)
}

fn fast(visibility_ms: u64) -> ReliableConfig {
    ReliableConfig::default()
        .with_visibility(Duration::from_millis(visibility_ms))
        .with_wait_slice(Duration::from_millis(100))
        .with_reap_interval(Duration::from_millis(50))
}

async fn target(client: &Client, queue: &DelayedQueue<StringCodec>) -> Vec<String> {
    client.lrange(queue.name(), 0, -1).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn take_registers_in_flight_and_ack_forgets() {
    let (_redis, client, queue) = setup("rel-ack").await;
    queue
        .offer_all(&[
            ("a".into(), Duration::ZERO),
            ("b".into(), Duration::from_millis(1)),
        ])
        .await
        .unwrap();
    let consumer = queue.reliable_consumer_with(fast(5_000)).await.unwrap();
    let before = now_ms();
    let first = consumer.take_timeout(PATIENCE).await.unwrap().unwrap();
    let after = now_ms();
    assert_eq!(first.value().map(String::as_str), Some("a"));
    assert_eq!(first.attempt(), 1);
    let keys = queue.keys();
    let deadline: Option<f64> = client.zscore(keys.inflight(), first.id()).await.unwrap();
    let deadline = deadline.unwrap() as i64;
    assert_eq!(deadline, first.deadline_ms());
    // Stamped during the take: the visibility after a moment between `before` and `after`.
    assert!(
        (before + 5_000..=after + 5_000).contains(&deadline),
        "{before} {deadline} {after}"
    );
    let held: Option<String> = client.hget(keys.inflight_data(), first.id()).await.unwrap();
    assert_eq!(held.as_deref(), Some("a"));
    let count: Option<i64> = client.hget(keys.attempts(), "a").await.unwrap();
    assert_eq!(count, Some(1));

    let stats = queue.inspect().reliable_stats().await.unwrap();
    assert_eq!((stats.in_flight, stats.overdue), (1, 0));

    assert!(first.ack().await.unwrap());
    assert_eq!(queue.inspect().reliable_stats().await.unwrap().in_flight, 0);
    let held: Option<String> = client.hget(keys.inflight_data(), "a").await.unwrap();
    assert!(held.is_none());
    assert!(!client
        .hexists::<bool, _, _>(keys.attempts(), "a")
        .await
        .unwrap());

    let second = consumer.take().await.unwrap();
    assert_eq!(second.value().map(String::as_str), Some("b"));
    let id = second.id().to_owned();
    assert!(second.ack().await.unwrap());
    // Settling twice is refused, not an error.
    let again: i64 = client.zcard(keys.inflight()).await.unwrap();
    assert_eq!(again, 0, "{id}");
    consumer.close().await;
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn nack_with_delay_is_a_normal_pending_entry_and_counts_attempts() {
    let (_redis, client, queue) = setup("rel-nack").await;
    queue.offer("job-1", Duration::ZERO).await.unwrap();
    let consumer = queue.reliable_consumer_with(fast(5_000)).await.unwrap();
    let delivery = consumer.take().await.unwrap();
    assert_eq!(delivery.attempt(), 1);
    // Retried in an hour: still pending when looked at below, however slow the machine.
    let hour = Duration::from_secs(3_600);
    let before = now_ms();
    assert!(delivery.nack(hour).await.unwrap());
    let after = now_ms();

    // What a Java peer sees: one pending Bc0Lc0 entry with the unchanged value bytes.
    let order: Vec<Bytes> = client.lrange(queue.keys().order(), 0, -1).await.unwrap();
    assert_eq!(order.len(), 1);
    let entry = delayq::entry::unpack(&order[0], delayq::EntryFormat::Current).unwrap();
    assert_eq!(entry.value, b"job-1");
    assert_eq!(entry.id.len(), 8);
    let pending = queue.inspect().pending(0).await.unwrap();
    assert_eq!(pending.len(), 1);
    let due = pending[0].due_ms.unwrap();
    assert!(
        (before + 3_600_000..=after + 3_600_000).contains(&due),
        "due {due}, nacked between {before} and {after}"
    );
    assert!(target(&client, &queue).await.is_empty());

    // The scheduler moves it like any entry once it is due (here: brought forward).
    let soon = Duration::from_millis(300);
    let brought_forward = now_ms();
    assert!(queue.reschedule("job-1", soon).await.unwrap());
    let again = consumer.take().await.unwrap();
    let late = now_ms() - (brought_forward + 300);
    assert_eq!(again.value().map(String::as_str), Some("job-1"));
    assert_eq!(again.attempt(), 2);
    assert!(late >= 0, "delivered {late} ms early");
    // Zero delay: straight back onto the tail of the target list.
    assert!(again.nack(Duration::ZERO).await.unwrap());
    assert_eq!(target(&client, &queue).await, ["job-1"]);
    let third = consumer.take().await.unwrap();
    assert_eq!(third.attempt(), 3);
    // Given back unprocessed: uncounted, at the head.
    queue.offer("other", Duration::ZERO).await.unwrap();
    wait_for_len(&client, queue.name(), 1).await;
    assert!(third.give_back().await.unwrap());
    assert_eq!(target(&client, &queue).await, ["job-1", "other"]);
    let fourth = consumer.take().await.unwrap();
    assert_eq!(fourth.value().map(String::as_str), Some("job-1"));
    assert_eq!(fourth.attempt(), 3, "a give-back is not an attempt");
    fourth.ack().await.unwrap();
    consumer.close().await;
    queue.destroy().await.unwrap();
}

/// Waits until the list `key` has `len` members.
async fn wait_for_len(client: &Client, key: &str, len: i64) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while std::time::Instant::now() < deadline {
        if client.llen::<i64, _>(key).await.unwrap() == len {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{key} never reached {len} members");
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_values_are_reaped_and_late_settlements_refused() {
    let (_redis, client, queue) = setup("rel-reap").await;
    queue.offer("slow", Duration::ZERO).await.unwrap();
    let consumer = queue.reliable_consumer_with(fast(300)).await.unwrap();
    let stuck = consumer.take().await.unwrap();
    // Nothing comes back before the deadline: the redelivery is taken after it.
    let again = consumer
        .take_timeout(PATIENCE)
        .await
        .unwrap()
        .expect("redelivered after the visibility timeout");
    let late = now_ms() - stuck.deadline_ms();
    assert_eq!(again.value().map(String::as_str), Some("slow"));
    assert_eq!(again.attempt(), 2);
    assert!(late >= 0, "redelivered {} ms before the deadline", -late);
    // The first holder lost it: its ack and heartbeat are refused.
    let mut stuck = stuck;
    assert!(!stuck.extend(Duration::from_secs(5)).await.unwrap());
    assert!(!stuck.ack().await.unwrap());
    assert!(again.ack().await.unwrap());
    // Several reapers at once move nothing twice.
    queue.offer("x", Duration::ZERO).await.unwrap();
    let held = consumer.take().await.unwrap();
    tokio::time::sleep(Duration::from_millis(350)).await;
    let outcomes = futures::future::join_all((0..4).map(|_| queue.admin().reap_expired(10))).await;
    let returned: u64 = outcomes.into_iter().map(|o| o.unwrap().returned).sum();
    assert_eq!(returned, 1);
    assert_eq!(target(&client, &queue).await, ["x"]);
    drop(held);
    consumer.close().await;
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn heartbeats_keep_a_long_job_and_dropped_deliveries_come_back() {
    let (_redis, client, queue) = setup("rel-extend").await;
    queue
        .offer_all(&[
            ("long".into(), Duration::ZERO),
            ("dropped".into(), Duration::from_millis(1)),
        ])
        .await
        .unwrap();
    // A visibility of 3 s, each heartbeat renewing it for a minute: the reaper runs past the
    // first deadline, and a slow moment of the machine does not outlast a renewal.
    let consumer = queue.reliable_consumer_with(fast(3_000)).await.unwrap();
    let mut long = consumer.take().await.unwrap();
    assert_eq!(long.value().map(String::as_str), Some("long"));
    let dropped = consumer.take().await.unwrap();
    assert_eq!(dropped.value().map(String::as_str), Some("dropped"));
    drop(dropped);
    // Keep "long" alive past its first deadline, reaping meanwhile.
    let first_deadline = long.deadline_ms();
    while now_ms() <= first_deadline + 500 {
        assert!(long.extend(Duration::from_secs(60)).await.unwrap());
        tokio::time::sleep(Duration::from_millis(250)).await;
        consumer.reap().await.unwrap();
    }
    // The dropped one was given back at the consumer's next call.
    let back = consumer.take_timeout(PATIENCE).await.unwrap().unwrap();
    assert_eq!(back.value().map(String::as_str), Some("dropped"));
    assert_eq!(back.attempt(), 2);
    back.ack().await.unwrap();
    assert!(long.ack().await.unwrap(), "the heartbeat kept it ours");
    assert!(target(&client, &queue).await.is_empty());
    consumer.close().await;
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn blpop_consumers_and_reliable_waiters_share_the_list_without_loss() {
    let (_redis, client, queue) = setup("rel-share").await;
    let plain: Consumer<StringCodec> = queue.consumer().await.unwrap();
    let reliable = queue.reliable_consumer_with(fast(5_000)).await.unwrap();
    let total = 40;
    let producer = {
        let queue = queue.clone();
        tokio::spawn(async move {
            for i in 0..total {
                queue
                    .offer(&format!("v{i}"), Duration::from_millis(i % 7))
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
        })
    };
    // Both take until every value is taken (counted across the two), not until a quiet spell:
    // a slow producer on a busy machine is no end of the values.
    let taken = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let all_taken = move |taken: &std::sync::atomic::AtomicU64| {
        taken.load(std::sync::atomic::Ordering::SeqCst) >= total
    };
    let deadline = std::time::Instant::now() + PATIENCE;
    let java_like = {
        let taken = taken.clone();
        tokio::spawn(async move {
            let mut got = Vec::new();
            while !all_taken(&taken) && std::time::Instant::now() < deadline {
                if let Some(v) = plain.poll(Duration::from_millis(100)).await.unwrap() {
                    got.push(v);
                    taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
            got
        })
    };
    let mut ours = Vec::new();
    while !all_taken(&taken) && std::time::Instant::now() < deadline {
        if let Some(d) = reliable
            .take_timeout(Duration::from_millis(100))
            .await
            .unwrap()
        {
            ours.push(d.value().unwrap().clone());
            taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            d.ack().await.unwrap();
        }
    }
    producer.await.unwrap();
    let theirs = java_like.await.unwrap();
    let mut all: Vec<String> = ours.iter().chain(&theirs).cloned().collect();
    all.sort();
    let mut expected: Vec<String> = (0..total).map(|i| format!("v{i}")).collect();
    expected.sort();
    assert_eq!(all, expected, "ours {} theirs {}", ours.len(), theirs.len());
    assert!(!theirs.is_empty(), "the BLPOP consumer was starved");
    assert!(!ours.is_empty(), "the reliable consumer was starved");
    assert!(target(&client, &queue).await.is_empty());

    // Waiting with BLMOVE NAME NAME LEFT LEFT never reorders or takes anything.
    let waiter = queue.reliable_consumer_with(fast(5_000)).await.unwrap();
    client
        .rpush::<i64, _, _>(queue.name(), vec!["p", "q", "r"])
        .await
        .unwrap();
    let mut order = Vec::new();
    for _ in 0..3 {
        let d = waiter.take().await.unwrap();
        order.push(d.value().unwrap().clone());
        d.ack().await.unwrap();
    }
    assert_eq!(order, ["p", "q", "r"]);
    waiter.close().await;
    reliable.close().await;
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_letters_list_replay_and_purge() {
    let (_redis, client, queue) = setup("rel-dead").await;
    queue
        .offer_all(&[
            ("bad-1".into(), Duration::ZERO),
            ("bad-2".into(), Duration::from_millis(1)),
        ])
        .await
        .unwrap();
    let consumer = queue.reliable_consumer_with(fast(5_000)).await.unwrap();
    let before = now_ms();
    for _ in 0..2 {
        let d = consumer.take().await.unwrap();
        let error = format!("payment API said 503 for {}", d.value().unwrap());
        assert!(d.dead_letter(&error).await.unwrap());
    }
    let after = now_ms();
    let letters = queue.inspect().dead_letters(0).await.unwrap();
    assert_eq!(letters.len(), 2);
    assert_eq!(letters[0].value.as_ref().unwrap(), "bad-1");
    assert_eq!(letters[0].attempts, 1);
    assert_eq!(letters[0].error, "payment API said 503 for bad-1");
    assert!((before..=after).contains(&letters[0].dead_at_ms));
    assert_eq!(queue.inspect().reliable_stats().await.unwrap().dead, 2);
    assert_eq!(queue.inspect().reliable_stats().await.unwrap().in_flight, 0);

    // A record someone else wrote is reported, not fatal, and never replayed.
    client
        .rpush::<i64, _, _>(queue.keys().dead(), "garbage")
        .await
        .unwrap();
    let letters = queue.inspect().dead_letters(0).await.unwrap();
    assert_eq!(letters.len(), 3);
    assert!(letters[2].value.is_err());

    // Two replays of every record at once replay each record once, however their calls
    // interleave (one may find the list already replayed, or replay part of it).
    let (a, b) = tokio::join!(
        queue.admin().replay_dead_letters(0, Duration::ZERO),
        queue.admin().replay_dead_letters(0, Duration::ZERO)
    );
    assert_eq!(a.unwrap() + b.unwrap(), 2);
    assert_eq!(target(&client, &queue).await, ["bad-1", "bad-2"]);
    let replayed = consumer.take().await.unwrap();
    assert_eq!(replayed.value().unwrap(), "bad-1");
    assert_eq!(replayed.attempt(), 1, "replay starts the count again");
    replayed.ack().await.unwrap();
    let again = consumer.take().await.unwrap();
    assert_eq!(again.value().unwrap(), "bad-2");
    assert!(again.dead_letter("503 again").await.unwrap());
    // Replayed with a delay (an hour: still pending when counted, however slow the machine).
    assert_eq!(
        queue
            .admin()
            .replay_dead_letters(0, Duration::from_secs(3_600))
            .await
            .unwrap(),
        1
    );
    assert_eq!(queue.inspect().pending(0).await.unwrap().len(), 1);
    assert_eq!(
        queue.admin().purge_dead_letters().await.unwrap(),
        1,
        "the garbage"
    );
    assert!(queue.inspect().dead_letters(0).await.unwrap().is_empty());

    // The dead-letter list is bounded.
    let bounded = queue
        .reliable_consumer_with(fast(5_000).with_dead_letter_limit(2))
        .await
        .unwrap();
    for i in 0..4 {
        client
            .rpush::<i64, _, _>(queue.name(), format!("d{i}"))
            .await
            .unwrap();
        bounded
            .take()
            .await
            .unwrap()
            .dead_letter("no")
            .await
            .unwrap();
    }
    let kept: Vec<String> = queue
        .inspect()
        .dead_letters(0)
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.value.unwrap())
        .collect();
    assert!(
        kept.ends_with(&["d2".to_string(), "d3".to_string()]),
        "{kept:?}"
    );
    assert_eq!(kept.len(), 2);
    bounded.close().await;
    consumer.close().await;
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn poison_entries_are_quarantined_and_undecodable_values_delivered_raw() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("rel-poison");
    let queue = DelayedQueue::builder(client.clone(), name.as_str(), LongCodec)
        .build()
        .await
        .unwrap();
    let keys = queue.keys().clone();
    // Malformed members written by hand, as a foreign writer or truncation would leave them,
    // between good ones; plus a well-formed entry whose value is not a LongCodec number.
    queue.offer(&1, Duration::ZERO).await.unwrap();
    let not_a_number = delayq::entry::pack(&[7; 8], b"twelve");
    for junk in [
        &b"\x08short"[..],
        b"",
        &[0xff; 10][..],
        &[0x08; 30][..],
        &not_a_number[..],
    ] {
        let junk = Bytes::copy_from_slice(junk);
        // Order list first, then the zset, so a transfer running meanwhile never sees a zset
        // member whose order-list copy is not there yet.
        let _: i64 = client.rpush(keys.order(), junk.clone()).await.unwrap();
        let _: i64 = client
            .zadd(
                keys.timeout(),
                None,
                None,
                false,
                false,
                (now_ms() as f64 - 10.0, junk),
            )
            .await
            .unwrap();
    }
    queue.offer(&2, Duration::from_millis(50)).await.unwrap();

    let consumer = queue.reliable_consumer_with(fast(5_000)).await.unwrap();
    let mut good = Vec::new();
    let mut undecodable = Vec::new();
    // "2" was not the earliest entry when offered, so no message announced it: the
    // scheduler's 1 s safety sweep finds it. Three values come: 1, 2 and "twelve".
    while good.len() + undecodable.len() < 3 {
        let Some(d) = consumer.take_timeout(PATIENCE).await.unwrap() else {
            break;
        };
        match d.value() {
            Some(v) => {
                good.push(*v);
                d.ack().await.unwrap();
            }
            None => {
                assert!(d.decode_error().unwrap().is_codec_error());
                undecodable.push(d.raw().clone());
                d.dead_letter("not a LongCodec value").await.unwrap();
            }
        }
    }
    let extra = consumer
        .take_timeout(Duration::from_millis(300))
        .await
        .unwrap();
    assert!(extra.is_none(), "a fourth value came");
    good.sort();
    assert_eq!(
        good,
        [1, 2],
        "the queue kept moving past the poison; {:?} {:?}",
        queue.inspect().stats().await,
        queue.inspect().quarantined(0).await
    );
    assert_eq!(undecodable, [Bytes::from_static(b"twelve")]);
    let quarantined = queue.inspect().quarantined(0).await.unwrap();
    assert_eq!(quarantined.len(), 4, "{quarantined:?}");
    assert_eq!(queue.inspect().stats().await.unwrap().pending, 0);
    assert_eq!(
        queue.inspect().dead_letters(0).await.unwrap()[0]
            .raw
            .as_ref(),
        b"twelve"
    );
    assert_eq!(queue.admin().purge_quarantine().await.unwrap(), 4);
    assert!(queue.inspect().quarantined(0).await.unwrap().is_empty());
    consumer.close().await;
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn server_clock_stamps_with_redis_time() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("rel-clock");
    let queue = DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
        .options(delayq::QueueOptions::default().clock(Clock::Server))
        .build()
        .await
        .unwrap();
    assert_eq!(queue.options().clock, Clock::Server);
    let server_ms = |redis: &TestRedis| -> i64 {
        let out = redis.cli(&["TIME"]);
        let mut parts = out.split_whitespace();
        let secs: i64 = parts.next().unwrap().parse().unwrap();
        let micros: i64 = parts.next().unwrap().parse().unwrap();
        secs * 1000 + micros / 1000
    };
    let before = server_ms(&redis);
    queue.offer("s", Duration::from_secs(3600)).await.unwrap();
    queue
        .offer_unique("u", Duration::from_secs(7200))
        .await
        .unwrap();
    let after = server_ms(&redis);
    let s = queue_score(&client, queue.keys().timeout(), "s").await;
    assert!(
        s >= before + 3_600_000 && s <= after + 3_600_000,
        "{before} {s} {after}"
    );
    let u = queue_score(&client, queue.keys().timeout(), "u").await;
    assert!(
        u >= before + 7_200_000 && u <= after + 7_200_000,
        "{before} {u} {after}"
    );
    assert!(queue.reschedule("u", Duration::ZERO).await.unwrap());
    // Transfer by the server's clock moves it; a reliable take stamps its deadline by it too.
    let consumer = queue.reliable_consumer_with(fast(60_000)).await.unwrap();
    let before = server_ms(&redis);
    let d = consumer.take().await.unwrap();
    let after = server_ms(&redis);
    assert_eq!(d.value().map(String::as_str), Some("u"));
    assert!(
        (before + 60_000..=after + 60_000).contains(&d.deadline_ms()),
        "{before} {} {after}",
        d.deadline_ms()
    );
    d.ack().await.unwrap();
    consumer.close().await;
    queue.destroy().await.unwrap();
}

async fn queue_score(client: &Client, timeout_key: &str, value: &str) -> i64 {
    let members: Vec<(Bytes, f64)> = client
        .zrange(timeout_key, 0, -1, None, false, None, true)
        .await
        .unwrap();
    members
        .into_iter()
        .find(|(entry, _)| entry.ends_with(value.as_bytes()))
        .map(|(_, score)| score as i64)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_configs_are_refused() {
    let (_redis, _client, queue) = setup("rel-config").await;
    for config in [
        ReliableConfig::default().with_visibility(Duration::ZERO),
        ReliableConfig::default().with_wait_slice(Duration::ZERO),
        ReliableConfig::default().with_reap_interval(Duration::ZERO),
    ] {
        assert!(matches!(
            queue.reliable_consumer_with(config).await,
            Err(delayq::Error::InvalidConfig(_))
        ));
    }
    let consumer = queue.reliable_consumer().await.unwrap();
    assert_eq!(consumer.config().visibility(), Duration::from_secs(30));
    consumer.close().await;
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn stale_attempt_counters_are_pruned() {
    let (_redis, client, queue) = setup("rel-prune").await;
    let consumer = queue
        .reliable_consumer_with(fast(5_000).with_attempts_retention(Duration::from_millis(200)))
        .await
        .unwrap();
    client
        .rpush::<i64, _, _>(queue.name(), "left")
        .await
        .unwrap();
    let d = consumer.take().await.unwrap();
    // Retried, then taken by someone without acknowledgements (a Java BLPOP): nobody deletes
    // the counter, so the reaper does once it is old enough.
    d.nack(Duration::ZERO).await.unwrap();
    let _: Option<String> = client.lpop(queue.name(), None).await.unwrap();
    assert_eq!(queue.inspect().reliable_stats().await.unwrap().counters, 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let outcome = consumer.reap().await.unwrap();
    assert_eq!(outcome.pruned, 1);
    assert_eq!(queue.inspect().reliable_stats().await.unwrap().counters, 0);
    let exists: i64 = client.exists(queue.keys().attempts_seen()).await.unwrap();
    assert_eq!(exists, 0);
    consumer.close().await;
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn claim_lists_of_dead_consumers_are_given_back() {
    let (_redis, client, queue) = setup("rel-claim").await;
    let keys = queue.keys().clone();
    // A consumer died right after its BLMOVE moved two values onto its claim list; its lease
    // ran out 10 ms ago. Another's lease is still running.
    let dead = keys.claim("died");
    let alive = keys.claim("alive");
    client
        .rpush::<i64, _, _>(dead.as_str(), vec!["c1", "c2"])
        .await
        .unwrap();
    client
        .rpush::<i64, _, _>(alive.as_str(), "c3")
        .await
        .unwrap();
    client.rpush::<i64, _, _>(queue.name(), "t1").await.unwrap();
    let _: i64 = client
        .zadd(
            keys.claims(),
            None,
            None,
            false,
            false,
            vec![
                ((now_ms() - 10) as f64, dead.as_str()),
                ((now_ms() + 60_000) as f64, alive.as_str()),
            ],
        )
        .await
        .unwrap();
    let outcome = queue.admin().reap_expired(10).await.unwrap();
    assert_eq!(outcome.unclaimed, 2);
    // Back at the head, in their order, ahead of what arrived since.
    assert_eq!(target(&client, &queue).await, ["c1", "c2", "t1"]);
    assert_eq!(queue.admin().reap_expired(10).await.unwrap().unclaimed, 0);
    let left: i64 = client.llen(alive.as_str()).await.unwrap();
    assert_eq!(left, 1, "a live lease is respected");

    // A consumer closing gives back what its own claim list holds.
    let consumer = queue.reliable_consumer_with(fast(5_000)).await.unwrap();
    for expected in ["c1", "c2", "t1"] {
        let d = consumer.take().await.unwrap();
        assert_eq!(d.value().map(String::as_str), Some(expected));
        d.ack().await.unwrap();
    }
    let (taken, ()) = tokio::join!(consumer.take_timeout(PATIENCE), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        client
            .rpush::<i64, _, _>(queue.name(), "late")
            .await
            .unwrap();
    });
    let late = taken.unwrap().unwrap();
    assert_eq!(late.value().map(String::as_str), Some("late"));
    late.ack().await.unwrap();
    let claims: i64 = client.zcard(keys.claims()).await.unwrap();
    assert_eq!(claims, 2, "the live one and this consumer's");
    consumer.close().await;
    let claims: i64 = client.zcard(keys.claims()).await.unwrap();
    assert_eq!(claims, 1, "closing drops this consumer's lease");
    queue.destroy().await.unwrap();
}

/// A member of `delayq_claims:{NAME}` that is no claim list of the queue (someone with write
/// access to that zset pointed it at another app's list) is removed with a warning, and the list
/// it names is never drained into the queue; a reaper running as an ACL user limited to the
/// queue's keys is not made to touch a key it may not.
#[tokio::test(flavor = "multi_thread")]
async fn the_reaper_never_drains_a_list_it_is_pointed_at() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("deputy");
    let queue = crate::common::queue::manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    let foreign = "other-app:payments";
    redis.cli(&["RPUSH", foreign, "card-1", "card-2"]);
    // A lapsed lease on the foreign list, and one on a real (empty) claim list of the queue.
    redis.cli(&["ZADD", keys.claims(), "1", foreign]);
    redis.cli(&["ZADD", keys.claims(), "1", &keys.claim("gone")]);
    redis.cli(&["RPUSH", &keys.claim("gone"), "claimed"]);

    let outcome = queue.admin().reap_expired(100).await.unwrap();
    assert_eq!(outcome.foreign_claims, 1);
    assert_eq!(outcome.unclaimed, 1);
    assert_eq!(redis.cli(&["LRANGE", foreign, "0", "-1"]), "card-1\ncard-2");
    assert_eq!(redis.cli(&["LRANGE", &name, "0", "-1"]), "claimed");
    assert_eq!(redis.cli(&["ZCARD", keys.claims()]), "0");

    // The same as a user who may use the queue's keys only.
    redis.cli(&["ZADD", keys.claims(), "1", foreign]);
    redis.cli(&[
        "ACL",
        "SETUSER",
        "worker",
        "on",
        ">pw",
        &format!("~{name}"),
        &format!("~*{{{name}}}*"),
        &format!("&*{{{name}}}*"),
        "+@all",
    ]);
    let url = format!("redis://worker:pw@127.0.0.1:{}", redis.port);
    let limited = delayq::connect(&url).await.unwrap();
    let queue = crate::common::queue::manual_queue(&limited, &name).await;
    let outcome = queue.admin().reap_expired(100).await.unwrap();
    assert_eq!(outcome.foreign_claims, 1);
    assert_eq!(redis.cli(&["LRANGE", foreign, "0", "-1"]), "card-1\ncard-2");

    // unclaim.lua itself refuses a key that is no claim list of the queue.
    let source = delayq::__internal::script_source("unclaim.lua").unwrap();
    let script_keys = delayq::__internal::script_keys("unclaim.lua", &keys, &[foreign]).unwrap();
    let refused: Result<i64, _> = fred::interfaces::LuaInterface::eval(
        &client,
        source.as_str(),
        script_keys,
        vec![delayq::time::now_ms().to_string(), "0".into(), "1".into()],
    )
    .await;
    assert!(refused
        .unwrap_err()
        .details()
        .contains("is not a claim list"));
    assert_eq!(redis.cli(&["LLEN", foreign]), "2");
}

/// Dead letters past the limit are trimmed oldest first, and said so in a warning.
#[tokio::test(flavor = "current_thread")]
async fn trimmed_dead_letters_are_logged() {
    let (captured, _guard) = crate::logs::Captured::start();

    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = crate::common::queue::manual_queue(&client, &unique_name("trim")).await;
    let values: Vec<(String, Duration)> =
        (0..3).map(|i| (format!("v{i}"), Duration::ZERO)).collect();
    queue.offer_all(&values).await.unwrap();
    queue.admin().transfer_due(10).await.unwrap();
    let consumer = queue
        .reliable_consumer_with(ReliableConfig::default().with_dead_letter_limit(2))
        .await
        .unwrap();
    let mut order = Vec::new();
    for _ in 0..3 {
        let delivery = consumer.try_take(1).await.unwrap().pop().unwrap();
        order.push(delivery.value().unwrap().clone());
        assert!(delivery.dead_letter("boom").await.unwrap());
    }
    let dead = queue.inspect().dead_letters(0).await.unwrap();
    let kept: Vec<&String> = dead.iter().map(|d| d.value.as_ref().unwrap()).collect();
    assert_eq!(kept, [&order[1], &order[2]], "the oldest one goes");
    let warnings = captured.lines_with("dead-letter list is full");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("trimmed=1") && warnings[0].contains("limit=2"),
        "{warnings:?}"
    );
    consumer.close().await;
}

/// A dead-letter record as delayq writes it (`DQD1`, attempts, time, error length, error, value).
fn record(value: &str) -> Vec<u8> {
    let mut out = b"DQD1".to_vec();
    out.extend_from_slice(&3u32.to_be_bytes());
    out.extend_from_slice(&1_767_225_600_000i64.to_be_bytes());
    out.extend_from_slice(&4u32.to_be_bytes());
    out.extend_from_slice(b"boom");
    out.extend_from_slice(value.as_bytes());
    out
}

/// A replay of thousands of dead letters goes in calls of 500, each reading only the head of the
/// list; records that do not parse stay, in place, and every other one is replayed once, in
/// order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_replay_goes_in_bounded_calls() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = crate::common::queue::manual_queue(&client, &unique_name("replay")).await;
    let dead = queue.keys().dead().to_owned();
    for i in 0..1_234 {
        let item: Vec<u8> = if i % 100 == 7 {
            format!("garbage-{i}").into_bytes()
        } else {
            record(&format!("r{i:04}"))
        };
        client
            .rpush::<i64, _, _>(dead.as_str(), item)
            .await
            .unwrap();
    }
    redis.cli(&["CONFIG", "RESETSTAT"]);
    let replayed = queue
        .admin()
        .replay_dead_letters(0, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(replayed, 1_234 - 13);
    let expected: Vec<String> = (0..1_234)
        .filter(|i| i % 100 != 7)
        .map(|i| format!("r{i:04}"))
        .collect();
    assert_eq!(target(&client, &queue).await, expected);
    let left: Vec<String> = client.lrange(dead.as_str(), 0, -1).await.unwrap();
    let garbage: Vec<String> = (0..1_234)
        .filter(|i| i % 100 == 7)
        .map(|i| format!("garbage-{i}"))
        .collect();
    assert_eq!(left, garbage);
    // Three calls of the replay script (495, 495 and 231 records).
    let stats = redis.cli(&["INFO", "commandstats"]);
    let line = stats
        .lines()
        .find(|l| l.starts_with("cmdstat_evalsha:"))
        .unwrap_or_default();
    // The line may be the output's last, which keeps the `\r` of its `\r\n`.
    let field = |name: &str| -> u64 {
        line.split([':', ','])
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    // The first call is refused once (NOSCRIPT: a fresh server), then sent again.
    assert_eq!(field("calls") - field("failed_calls"), 3, "{line}");
}

/// An ack whose connection drops before its reply comes is sent again once the client has
/// reconnected (settling twice is safe: the second call finds the first one's record), so the
/// caller learns the ack's real outcome instead of an error that leaves it unknown, and the
/// value is not handed out again. Here the ack waits behind a `CLIENT PAUSE` when its
/// connection is killed, so the first send never ran.
#[tokio::test(flavor = "multi_thread")]
async fn an_ack_cut_off_by_a_dropped_connection_is_sent_again() {
    let (redis, client, queue) = setup("rel-resend").await;
    queue.offer("v", Duration::ZERO).await.unwrap();
    let consumer = queue.reliable_consumer_with(fast(5_000)).await.unwrap();
    let delivery = consumer
        .take_timeout(Duration::from_secs(3))
        .await
        .unwrap()
        .unwrap();
    let id = delivery.id().to_owned();
    redis.cli(&["CLIENT", "PAUSE", "800", "WRITE"]);
    let ack = tokio::spawn(delivery.ack());
    tokio::time::sleep(Duration::from_millis(200)).await;
    redis.cli(&["CLIENT", "KILL", "TYPE", "normal"]);
    let acked = tokio::time::timeout(Duration::from_secs(10), ack)
        .await
        .expect("the ack returns")
        .unwrap();
    assert!(matches!(acked, Ok(true)), "ack: {acked:?}");
    let keys = queue.keys();
    let in_flight: Option<f64> = client.zscore(keys.inflight(), id.as_str()).await.unwrap();
    assert_eq!(in_flight, None, "acked, so no longer in flight");
    assert!(target(&client, &queue).await.is_empty());
    assert!(
        consumer
            .take_timeout(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none(),
        "the acked value came back"
    );
}
