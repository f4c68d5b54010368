//! The missed-occurrence policies: a schedule of one minute whose occurrences nobody fired for
//! ten minutes, found with a given clock: `skip` fires none of the missed, `latest` the latest
//! once, `all:CAP` the latest CAP; late (not missed) occurrences always fire; firing again at
//! the same instant offers nothing more.

use super::offered;
use crate::common::queue::bytes_queue;
use crate::common::queue::connect;
use crate::common::{unique_name, TestRedis};
use delayq::{FiringConfig, Missed, QueueOptions, Recurrence, Schedule};
use std::time::Duration;

const MINUTE: i64 = 60_000;
/// The schedule's start: its first occurrence.
const START: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/// The occurrences offered for `missed` when found 10 min 1 s after the start, then again at
/// the same instant and one minute later.
async fn fired_with(redis: &TestRedis, missed: Missed) -> (Vec<i64>, Vec<i64>) {
    let client = connect(&redis.url()).await;
    let queue = unique_name("missed");
    let schedules = bytes_queue(&client, queue.as_str(), QueueOptions::default()).await;
    let every = Recurrence::every(Duration::from_secs(60)).unwrap();
    let schedule = Schedule::new("m", every, b"v".to_vec())
        .start_ms(START)
        .missed(missed);
    schedules.schedules().set(schedule).await.unwrap();
    let config = FiringConfig::default()
        .with_lead(Duration::ZERO)
        .with_missed_after(Duration::from_secs(60));
    let now = START + 10 * MINUTE + 1_000;
    let first = schedules.schedules().fire_due(now, &config).await.unwrap();
    let again = schedules.schedules().fire_due(now, &config).await.unwrap();
    assert_eq!(again.offered, 0, "{missed}: fired twice at one instant");
    let found = offered(&client, &queue).await;
    assert_eq!(first.offered as usize, found.len());
    schedules
        .schedules()
        .fire_due(now + MINUTE, &config)
        .await
        .unwrap();
    let later = offered(&client, &queue).await;
    let info = schedules.schedules().get("m").await.unwrap().unwrap();
    assert_eq!(info.last_ms, Some(START + 11 * MINUTE));
    assert_eq!(info.next_ms, Some(START + 12 * MINUTE));
    (found, later)
}

fn minutes(range: impl IntoIterator<Item = i64>) -> Vec<i64> {
    range.into_iter().map(|m| START + m * MINUTE).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_policy_fires_what_it_says_and_the_late_ones_always() {
    let (captured, _guard) = crate::logs::Captured::start();
    let redis = TestRedis::start();
    // Missed: minutes 0..=9 (older than a minute at 10:01); late: minute 10.
    let (skip, later) = fired_with(&redis, Missed::Skip).await;
    assert_eq!(skip, minutes([10]));
    assert_eq!(later, minutes([10, 11]));
    let (latest, _) = fired_with(&redis, Missed::Latest).await;
    assert_eq!(latest, minutes([9, 10]));
    let (capped, _) = fired_with(&redis, Missed::All { cap: 3 }).await;
    assert_eq!(capped, minutes([7, 8, 9, 10]));
    let (every, _) = fired_with(&redis, Missed::All { cap: 100 }).await;
    assert_eq!(every, minutes(0..=10));
    // One line per decision, by the firing that counted (not by the repeated one).
    let decisions = captured.lines_with("missed occurrences of a schedule");
    assert_eq!(decisions.len(), 4, "{decisions:#?}");
    for (line, policy) in decisions.iter().zip(["skip", "latest", "all:3", "all:100"]) {
        assert!(line.contains(&format!("policy={policy} ")), "{line}");
    }
    assert!(decisions[2].contains("capped=true"), "{}", decisions[2]);
}

/// A paused schedule fires nothing; resumed, it goes on from the first occurrence after the
/// resume (the pause's occurrences are not missed ones), and a trigger offers one more entry
/// due now without moving it.
#[tokio::test(flavor = "multi_thread")]
async fn pause_resume_and_trigger() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = unique_name("pause");
    let schedules = bytes_queue(&client, queue.as_str(), QueueOptions::default()).await;
    let every = Recurrence::every(Duration::from_secs(60)).unwrap();
    let start = delayq::time::now_ms() - 5 * MINUTE;
    let schedule = Schedule::new("p", every, b"v".to_vec())
        .start_ms(start)
        .missed(Missed::All { cap: 100 });
    schedules.schedules().set(schedule).await.unwrap();
    let paused = schedules.schedules().pause("p").await.unwrap();
    assert!(paused.schedule.paused);
    let config = FiringConfig::default().with_lead(Duration::ZERO);
    let now = delayq::time::now_ms();
    assert_eq!(
        schedules
            .schedules()
            .fire_due(now, &config)
            .await
            .unwrap()
            .due,
        0
    );
    let resumed = schedules.schedules().resume("p").await.unwrap();
    let next = resumed.next_ms.unwrap();
    assert!(
        next >= now && next < now + MINUTE + 1_000,
        "{next} vs {now}"
    );
    assert_eq!(
        schedules
            .schedules()
            .fire_due(now, &config)
            .await
            .unwrap()
            .offered,
        0
    );
    schedules.schedules().trigger("p").await.unwrap();
    let found = offered(&client, &queue).await;
    assert_eq!(found.len(), 1);
    assert!(found[0] >= now && found[0] < next);
    assert_eq!(
        schedules
            .schedules()
            .get("p")
            .await
            .unwrap()
            .unwrap()
            .next_ms,
        Some(next)
    );
    assert!(matches!(
        schedules.schedules().pause("nope").await,
        Err(delayq::Error::NoSuchSchedule { .. })
    ));
    assert!(schedules.schedules().remove("p").await.unwrap());
    assert!(!schedules.schedules().remove("p").await.unwrap());
    assert!(schedules.schedules().get("p").await.unwrap().is_none());
}

/// A schedule hash another writer got wrong is logged and left alone; the queue's other
/// schedules fire all the same.
#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_schedule_does_not_stop_its_neighbours() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = unique_name("bad-hash");
    let keys = delayq::QueueKeys::new(queue.as_str());
    let schedules = bytes_queue(&client, queue.as_str(), QueueOptions::default()).await;
    let every = Recurrence::every(Duration::from_secs(60)).unwrap();
    schedules
        .schedules()
        .set(Schedule::new("good", every, b"v".to_vec()).start_ms(START))
        .await
        .unwrap();
    let bad = keys.schedule("bad");
    redis.cli(&[
        "HSET",
        &bad,
        "cron",
        "not a cron",
        "value",
        "v",
        "next_ms",
        "0",
        "rev",
        "1",
    ]);
    redis.cli(&["ZADD", keys.schedules(), "0", "bad"]);
    let config = FiringConfig::default().with_lead(Duration::ZERO);
    let tally = schedules
        .schedules()
        .fire_due(START + 1_000, &config)
        .await
        .unwrap();
    assert_eq!((tally.invalid, tally.offered), (1, 1));
    assert_eq!(offered(&client, &queue).await, minutes([0]));
}

/// A schedule "hash" of the wrong type (a string another writer put there) and a zset member
/// whose hash is gone stop neither the pass nor the queue's other schedules: the wrong-typed
/// one is counted, left in place and skipped at every pass; the ghost member is removed.
#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_typed_schedule_does_not_stop_its_neighbours() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = unique_name("wrong-type");
    let keys = delayq::QueueKeys::new(queue.as_str());
    let raw = bytes_queue(&client, queue.as_str(), QueueOptions::default()).await;
    let schedules = raw.schedules();
    let every = Recurrence::every(Duration::from_secs(60)).unwrap();
    schedules
        .set(Schedule::new("good", every, b"v".to_vec()).start_ms(START))
        .await
        .unwrap();
    redis.cli(&["SET", &keys.schedule("wt"), "junk"]);
    redis.cli(&["ZADD", keys.schedules(), "0", "wt"]);
    redis.cli(&["ZADD", keys.schedules(), "1", "ghost"]);
    let config = FiringConfig::default().with_lead(Duration::ZERO);
    let tally = schedules.fire_due(START + 1_000, &config).await.unwrap();
    assert_eq!((tally.invalid, tally.offered), (1, 1), "{tally:?}");
    assert_eq!(offered(&client, &queue).await, minutes([0]));
    let members = redis.cli(&["ZRANGE", keys.schedules(), "0", "-1"]);
    assert!(
        !members.contains("ghost"),
        "the ghost member is removed: {members}"
    );
    assert!(
        members.contains("wt"),
        "the wrong-typed one is left alone: {members}"
    );
    // The next occurrence fires too, past the wrong-typed one again.
    let tally = schedules
        .fire_due(START + MINUTE + 1_000, &config)
        .await
        .unwrap();
    assert_eq!((tally.invalid, tally.offered), (1, 1), "{tally:?}");
    assert_eq!(offered(&client, &queue).await, minutes([0, 1]));
}

/// A schedule set again (a new value, the same recurrence) goes on after the last occurrence it
/// fired: that occurrence is not offered twice.
#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_schedule_does_not_fire_its_last_occurrence_again() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = unique_name("replaced");
    let schedules = bytes_queue(&client, queue.as_str(), QueueOptions::default()).await;
    let every = Recurrence::every(Duration::from_secs(60)).unwrap();
    let config = FiringConfig::default().with_lead(Duration::ZERO);
    for value in ["v1", "v2"] {
        let schedule = Schedule::new("r", every.clone(), value.as_bytes().to_vec()).start_ms(START);
        schedules.schedules().set(schedule).await.unwrap();
        schedules
            .schedules()
            .fire_due(START + 1_000, &config)
            .await
            .unwrap();
    }
    assert_eq!(offered(&client, &queue).await, minutes([0]));
    let info = schedules.schedules().get("r").await.unwrap().unwrap();
    assert_eq!(
        (info.next_ms, info.schedule.value),
        (Some(START + MINUTE), b"v2".to_vec())
    );
}

/// Many unreadable schedules (hashes of the wrong type), fired tick after tick: one warning
/// for the queue, naming how many and one of them, not one per schedule and tick.
#[tokio::test]
async fn unreadable_schedules_are_summed_up_in_one_warning() {
    let (captured, _guard) = crate::logs::Captured::start();
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = unique_name("many-bad");
    let keys = delayq::QueueKeys::new(queue.as_str());
    let raw = bytes_queue(&client, queue.as_str(), QueueOptions::default()).await;
    let schedules = raw.schedules();
    for n in 0..40 {
        let id = format!("bad{n}");
        redis.cli(&["SET", &keys.schedule(&id), "junk"]);
        redis.cli(&["ZADD", keys.schedules(), "0", &id]);
    }
    let config = FiringConfig::default().with_lead(Duration::ZERO);
    for tick in 0..3 {
        let tally = schedules
            .fire_due(START + tick * 1_000, &config)
            .await
            .unwrap();
        assert_eq!(tally.invalid, 40, "{tally:?}");
    }
    let warned = captured.lines_with("WARN");
    assert_eq!(warned.len(), 1, "{warned:#?}");
    assert!(
        warned[0].contains("40") && warned[0].contains("bad"),
        "{warned:#?}"
    );
}
