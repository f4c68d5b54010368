//! Schedule ids holding ':' or '%' (issue 38): the hash of queue `NAME`'s schedule `orders:s`
//! is not the hash of queue `{NAME}:orders`'s schedule `s`, so each keeps its own definition,
//! fires into its own queue and is removed alone; a schedule stored under its name before the
//! issue (`delayq_schedule:{NAME}:ID`, the id as it is) still fires once per occurrence after
//! the upgrade, and such a name another queue's schedule holds now is left to that queue.

use super::offered;
use crate::common::queue::{arg, bytes_queue, cmd, connect, int};
use crate::common::{unique_name, TestRedis};
use delayq::{FiringConfig, QueueKeys, QueueOptions, Recurrence, Schedule};
use std::time::Duration;

const MINUTE: i64 = 60_000;
/// The schedules' start: their first occurrence.
const START: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

fn every_minute(id: &str, value: &[u8]) -> Schedule {
    let every = Recurrence::every(Duration::from_secs(60)).unwrap();
    Schedule::new(id, every, value.to_vec()).start_ms(START)
}

fn firing() -> FiringConfig {
    FiringConfig::default()
        .with_lead(Duration::ZERO)
        .with_missed_after(Duration::from_secs(3600))
}

/// A hash's name as delayq wrote it before issue 38: the id as it is.
fn old_name(queue: &str, id: &str) -> String {
    let keys = QueueKeys::new(queue);
    let zset = keys.schedules();
    let tagged = zset.strip_prefix("delayq_schedules").unwrap();
    format!("delayq_schedule{tagged}:{id}")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_id_with_a_colon_keeps_apart_from_the_queue_named_after_it() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let plain = unique_name("ids");
    let tagged = format!("{{{plain}}}:orders");
    let a = bytes_queue(&client, plain.as_str(), QueueOptions::default()).await;
    let b = bytes_queue(&client, tagged.as_str(), QueueOptions::default()).await;
    a.schedules()
        .set(every_minute("orders:s", b"from a"))
        .await
        .unwrap();
    b.schedules()
        .set(every_minute("s", b"from b"))
        .await
        .unwrap();

    let a_info = a.schedules().get("orders:s").await.unwrap().unwrap();
    let b_info = b.schedules().get("s").await.unwrap().unwrap();
    assert_eq!(a_info.schedule.value, b"from a");
    assert_eq!(b_info.schedule.value, b"from b");
    assert_eq!(a_info.rev, 1, "a's schedule was written once");

    let now = START + 1_000;
    assert_eq!(
        a.schedules()
            .fire_due(now, &firing())
            .await
            .unwrap()
            .offered,
        1
    );
    assert_eq!(
        b.schedules()
            .fire_due(now, &firing())
            .await
            .unwrap()
            .offered,
        1
    );
    assert_eq!(offered(&client, &plain).await, [START]);
    assert_eq!(offered(&client, &tagged).await, [START]);

    // Removing a's schedule leaves b's, which goes on firing.
    assert!(a.schedules().remove("orders:s").await.unwrap());
    let b_info = b.schedules().get("s").await.unwrap().unwrap();
    assert_eq!(b_info.schedule.value, b"from b");
    assert_eq!(b_info.last_ms, Some(START));
    let later = START + MINUTE + 1_000;
    assert_eq!(
        b.schedules()
            .fire_due(later, &firing())
            .await
            .unwrap()
            .offered,
        1
    );
    assert_eq!(offered(&client, &tagged).await, [START, START + MINUTE]);
    assert_eq!(offered(&client, &plain).await, [START]);
    assert_ne!(
        QueueKeys::new(&plain).schedule("orders:s"),
        QueueKeys::new(&tagged).schedule("s")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_schedule_under_its_old_name_fires_once_per_occurrence_after_the_upgrade() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("ids");
    let queue = bytes_queue(&client, name.as_str(), QueueOptions::default()).await;
    let keys = QueueKeys::new(&name);
    for id in ["orders:s", "50%"] {
        queue.schedules().set(every_minute(id, b"v")).await.unwrap();
        // As delayq wrote it before issue 38.
        let new = keys.schedule(id);
        let old = old_name(&name, id);
        cmd(&client, "RENAME", vec![arg(&new), arg(&old)]).await;
    }

    // Two processes fire each occurrence (each firing again at the same instant).
    for k in 0..3 {
        let now = START + k * MINUTE + 1_000;
        let first = queue.schedules().fire_due(now, &firing()).await.unwrap();
        let again = queue.schedules().fire_due(now, &firing()).await.unwrap();
        assert_eq!((first.offered, again.offered), (2, 0), "occurrence {k}");
    }
    let occurrences: Vec<i64> = (0..3).flat_map(|k| [START + k * MINUTE; 2]).collect();
    assert_eq!(offered(&client, &name).await, occurrences);

    for id in ["orders:s", "50%"] {
        let info = queue.schedules().get(id).await.unwrap().unwrap();
        assert_eq!(info.last_ms, Some(START + 2 * MINUTE), "{id}");
        assert_eq!(info.next_ms, Some(START + 3 * MINUTE), "{id}");
        assert_eq!(int(&client, "EXISTS", &keys.schedule(id)).await, 1, "{id}");
        assert_eq!(
            int(&client, "EXISTS", &old_name(&name, id)).await,
            0,
            "{id}"
        );
    }
    // Removed, nothing is left under either name.
    assert!(queue.schedules().remove("orders:s").await.unwrap());
    assert_eq!(queue.schedules().list().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_old_name_another_queues_schedule_holds_now_is_left_to_it() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let plain = unique_name("ids");
    let tagged = format!("{{{plain}}}:orders");
    let a = bytes_queue(&client, plain.as_str(), QueueOptions::default()).await;
    let b = bytes_queue(&client, tagged.as_str(), QueueOptions::default()).await;
    // Before issue 38 a's schedule `orders:s` and b's `s` shared one hash, b's now.
    b.schedules()
        .set(every_minute("s", b"from b"))
        .await
        .unwrap();
    let a_keys = QueueKeys::new(&plain);
    assert_eq!(
        old_name(&plain, "orders:s"),
        QueueKeys::new(&tagged).schedule("s")
    );
    let member = vec![
        arg(a_keys.schedules()),
        arg(START.to_string()),
        arg("orders:s"),
    ];
    cmd(&client, "ZADD", member).await;

    let now = START + 1_000;
    assert!(a.schedules().get("orders:s").await.unwrap().is_none());
    assert_eq!(
        a.schedules()
            .fire_due(now, &firing())
            .await
            .unwrap()
            .offered,
        0
    );
    assert_eq!(offered(&client, &plain).await, Vec::<i64>::new());
    assert_eq!(
        b.schedules()
            .fire_due(now, &firing())
            .await
            .unwrap()
            .offered,
        1
    );
    assert_eq!(offered(&client, &tagged).await, [START]);
    let b_info = b.schedules().get("s").await.unwrap().unwrap();
    assert_eq!(b_info.schedule.value, b"from b");
    assert!(!a.schedules().remove("orders:s").await.unwrap());
    assert!(b.schedules().get("s").await.unwrap().is_some());
}
