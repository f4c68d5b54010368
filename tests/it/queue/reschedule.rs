//! reschedule and offer_unique on a real redis-server, including a race with the scheduler.

use crate::common::{unique_name, TestRedis, PATIENCE};
use bytes::Bytes;
use delayq::codec::StringCodec;
use delayq::time::now_ms;
use delayq::{DelayedQueue, GroupConfig};
use fred::interfaces::{ListInterface, SortedSetsInterface};
use std::collections::HashMap;
use std::time::Duration;

async fn setup(
    prefix: &str,
    transfer: bool,
) -> (TestRedis, fred::clients::Client, DelayedQueue<StringCodec>) {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::builder(client.clone(), unique_name(prefix), StringCodec)
        .transfer(transfer)
        .group_config(GroupConfig::default().with_sweep_interval(Duration::from_millis(200)))
        .build()
        .await
        .unwrap();
    (redis, client, queue)
}

/// value -> due ms, from the pending entries.
async fn due_times(queue: &DelayedQueue<StringCodec>) -> HashMap<String, i64> {
    queue
        .inspect()
        .pending(0)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.value.unwrap(), p.due_ms.unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn reschedule_moves_every_equal_entry_and_keeps_their_bytes() {
    let (_redis, client, queue) = setup("resched", false).await;
    let order = "order-7".to_string();
    queue
        .offer_all(&[
            (order.clone(), Duration::from_secs(900)),
            ("other".into(), Duration::from_secs(60)),
            (order.clone(), Duration::from_secs(901)),
        ])
        .await
        .unwrap();
    let before: Vec<Bytes> = client.lrange(queue.keys().order(), 0, -1).await.unwrap();

    // Payment is late: push the timeout back by an hour.
    let at = now_ms();
    assert!(queue
        .reschedule(&order, Duration::from_secs(3600))
        .await
        .unwrap());
    let done = now_ms();
    let after: Vec<Bytes> = client.lrange(queue.keys().order(), 0, -1).await.unwrap();
    assert_eq!(before, after, "entries keep their bytes and offer order");
    let members: Vec<(Bytes, f64)> = client
        .zrange(queue.keys().timeout(), 0, -1, None, false, None, true)
        .await
        .unwrap();
    let moved: Vec<i64> = members
        .iter()
        .filter(|(e, _)| e.ends_with(b"order-7"))
        .map(|(_, s)| *s as i64)
        .collect();
    assert_eq!(moved.len(), 2);
    for due in moved {
        assert!(
            (at + 3_600_000..=done + 3_600_000).contains(&due),
            "{at} {due} {done}"
        );
    }
    assert!(!queue
        .reschedule("never-offered", Duration::ZERO)
        .await
        .unwrap());

    // Brought forward to now: it becomes the head, and a transfer moves both copies.
    assert!(queue.reschedule(&order, Duration::ZERO).await.unwrap());
    let outcome = queue.admin().transfer_due(100).await.unwrap();
    assert_eq!(outcome.moved, 2);
    let ready: Vec<String> = client.lrange(queue.name(), 0, -1).await.unwrap();
    assert_eq!(ready, [order.clone(), order.clone()]);
    // Too late now: it is no longer pending.
    assert!(!queue
        .reschedule(&order, Duration::from_secs(10))
        .await
        .unwrap());
    assert_eq!(due_times(&queue).await.len(), 1);
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn offer_unique_replaces_instead_of_adding() {
    let (_redis, _client, queue) = setup("unique", false).await;
    let order = "order-9".to_string();
    assert!(!queue
        .offer_unique(&order, Duration::from_secs(900))
        .await
        .unwrap());
    let before = now_ms();
    assert!(queue
        .offer_unique(&order, Duration::from_secs(60))
        .await
        .unwrap());
    let after = now_ms();
    assert_eq!(queue.size().await.unwrap(), 1);
    let due = due_times(&queue).await[&order];
    assert!(
        (before + 60_000..=after + 60_000).contains(&due),
        "{before} {due} {after}"
    );

    // Duplicates offered the plain way collapse into one.
    queue
        .offer_all(&[
            (order.clone(), Duration::from_secs(5)),
            ("x".into(), Duration::from_secs(5)),
            (order.clone(), Duration::from_secs(6)),
        ])
        .await
        .unwrap();
    assert!(queue
        .offer_unique(&order, Duration::from_secs(120))
        .await
        .unwrap());
    assert_eq!(queue.size().await.unwrap(), 2);
    let stats = queue.inspect().stats().await.unwrap();
    assert_eq!((stats.pending, stats.scheduled), (2, 2));
    // remove (Java's remove(o)) still finds it; the queue stays consistent.
    assert!(queue.remove(&order).await.unwrap());
    assert_eq!(queue.read_all().await.unwrap(), ["x"]);
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn reschedule_racing_the_scheduler_loses_and_duplicates_nothing() {
    let (_redis, client, queue) = setup("race", true).await;
    // Besides the race, one value the scheduler surely won (moved before it is rescheduled)
    // and one reschedule surely wins (due in an hour): both answers come up on any machine,
    // however the race itself goes on a busy one.
    queue.offer("moved", Duration::ZERO).await.unwrap();
    queue
        .offer("parked", Duration::from_secs(3_600))
        .await
        .unwrap();
    assert!(
        crate::common::queue::eventually(crate::common::PATIENCE, || async {
            client.llen::<u64, _>(queue.name()).await.unwrap() == 1
        })
        .await,
        "the scheduler never moved the due value"
    );
    let mut answers = HashMap::new();
    for value in ["moved", "parked"] {
        let won = queue
            .reschedule(value, Duration::from_secs(3600))
            .await
            .unwrap();
        answers.insert(value.to_owned(), won);
    }
    assert_eq!((answers["moved"], answers["parked"]), (false, true));
    let n = 300;
    // Due 3 ms apart over the next ~1 s while the scheduler runs; each is pushed back by an
    // hour a few ms before or after it falls due, so both sides win some. Every value must end
    // up in exactly one place: pending (reschedule won) or on the target list (the scheduler
    // won), matching what reschedule answered. (1 ms apart, one reschedule a ms, the loop fell
    // behind on a loaded machine and the scheduler won every race.)
    let items: Vec<(String, u64)> = (0..n)
        .map(|i| (format!("o{i}"), 100 + 3 * i as u64))
        .collect();
    let offers: Vec<(String, Duration)> = items
        .iter()
        .map(|(v, ms)| (v.clone(), Duration::from_millis(*ms)))
        .collect();
    let started = std::time::Instant::now();
    queue.offer_all(&offers).await.unwrap();
    for (i, (value, due_ms)) in items.iter().enumerate() {
        let aim = Duration::from_millis((*due_ms + (i as u64 % 21)).saturating_sub(10));
        if let Some(wait) = aim.checked_sub(started.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        let won = queue
            .reschedule(value, Duration::from_secs(3600))
            .await
            .unwrap();
        answers.insert(value.clone(), won);
    }
    // Until the scheduler has moved every entry that is due (a fixed pause was a guess at how
    // long that takes on a loaded machine).
    let deadline = std::time::Instant::now() + PATIENCE;
    while due_times(&queue).await.values().any(|&due| due <= now_ms()) {
        assert!(
            std::time::Instant::now() < deadline,
            "due entries never moved"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ready: Vec<String> = client.lrange(queue.name(), 0, -1).await.unwrap();
    let pending = due_times(&queue).await;
    let mut on_target: HashMap<&str, usize> = HashMap::new();
    for v in &ready {
        *on_target.entry(v.as_str()).or_default() += 1;
    }
    let (mut won, mut lost) = (0, 0);
    for (value, rescheduled) in &answers {
        let count = on_target.get(value.as_str()).copied().unwrap_or(0);
        if *rescheduled {
            won += 1;
            assert_eq!(count, 0, "{value} was rescheduled but also transferred");
            let due = pending.get(value).copied().unwrap_or(0);
            assert!(due > now_ms() + 3_500_000, "{value} pending with due {due}");
        } else {
            lost += 1;
            assert_eq!(
                count, 1,
                "{value}: reschedule said too late, so it must be ready once"
            );
            assert!(!pending.contains_key(value), "{value} both pending and not");
        }
    }
    eprintln!(
        "of the {n} raced: reschedule won {}, scheduler won {}",
        won - 1,
        lost - 1
    );
    assert_eq!(won + lost, n + 2);
    assert_eq!(
        ready.len() + pending.len(),
        n + 2,
        "nothing lost, nothing doubled"
    );
    queue.destroy().await.unwrap();
}
