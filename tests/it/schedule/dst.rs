//! Daylight saving in Europe/Berlin (2026: spring forward on 29 March at 02:00 CET, fall back
//! on 25 October at 03:00 CEST), by firing with a given clock stepped hour by hour, never by
//! waiting. The rule (docs/schedules.md): a fixed wall-clock time in the gap fires once at the
//! first valid time after it; in the overlap, once at its first pass; a wildcard hour fires
//! every real hour, both passes of the repeated one.

use super::{at, offered};
use crate::common::queue::bytes_queue;
use crate::common::queue::connect;
use crate::common::{unique_name, TestRedis};
use delayq::{FiringConfig, QueueOptions, Recurrence, Schedule};
use std::time::Duration;

/// Sets `expr` in Europe/Berlin from `from` to `to` and fires it at every hour between them;
/// returns the occurrences offered.
async fn fired_hourly(redis: &TestRedis, expr: &str, from: &str, to: &str) -> Vec<i64> {
    let client = connect(&redis.url()).await;
    let queue = unique_name("dst");
    let schedules = bytes_queue(&client, queue.as_str(), QueueOptions::default()).await;
    let recurrence = Recurrence::cron(expr, "Europe/Berlin").unwrap();
    let (from, to) = (at(from), at(to));
    let schedule = Schedule::new("s", recurrence, b"v".to_vec())
        .start_ms(from)
        .end_ms(to);
    schedules.schedules().set(schedule).await.unwrap();
    let config = FiringConfig::default()
        .with_lead(Duration::ZERO)
        .with_missed_after(Duration::from_secs(3 * 3600));
    let mut now = from;
    while now <= to + 3_600_000 {
        schedules.schedules().fire_due(now, &config).await.unwrap();
        now += 15 * 60_000;
    }
    offered(&client, &queue).await
}

fn all(instants: &[&str]) -> Vec<i64> {
    instants.iter().map(|t| at(t)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_daily_0230_fires_after_the_spring_gap_and_once_in_the_autumn_overlap() {
    let redis = TestRedis::start();
    let spring = fired_hourly(
        &redis,
        "30 2 * * *",
        "2026-03-27T00:00:00Z",
        "2026-03-31T12:00:00Z",
    )
    .await;
    assert_eq!(
        spring,
        all(&[
            "2026-03-27T01:30:00Z", // 02:30 CET
            "2026-03-28T01:30:00Z",
            "2026-03-29T01:00:00Z", // 02:30 does not exist: 03:00 CEST, the first valid time
            "2026-03-30T00:30:00Z", // 02:30 CEST
            "2026-03-31T00:30:00Z",
        ])
    );
    let autumn = fired_hourly(
        &redis,
        "30 2 * * *",
        "2026-10-23T12:00:00Z",
        "2026-10-26T12:00:00Z",
    )
    .await;
    assert_eq!(
        autumn,
        all(&[
            "2026-10-24T00:30:00Z", // 02:30 CEST
            "2026-10-25T00:30:00Z", // 02:30 twice: the first pass (CEST) only
            "2026-10-26T01:30:00Z", // 02:30 CET
        ])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_hourly_fires_every_real_hour_across_both_transitions() {
    let redis = TestRedis::start();
    let spring = fired_hourly(
        &redis,
        "0 * * * *",
        "2026-03-28T22:30:00Z",
        "2026-03-29T02:30:00Z",
    )
    .await;
    // 00:00 CET, 01:00 CET, then 03:00 CEST (02:00 does not exist), 04:00 CEST.
    assert_eq!(
        spring,
        all(&[
            "2026-03-28T23:00:00Z",
            "2026-03-29T00:00:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-29T02:00:00Z",
        ])
    );
    let autumn = fired_hourly(
        &redis,
        "0 * * * *",
        "2026-10-24T22:30:00Z",
        "2026-10-25T02:30:00Z",
    )
    .await;
    // 01:00 CEST, 02:00 CEST, 02:00 CET (the repeated hour), 03:00 CET.
    assert_eq!(
        autumn,
        all(&[
            "2026-10-24T23:00:00Z",
            "2026-10-25T00:00:00Z",
            "2026-10-25T01:00:00Z",
            "2026-10-25T02:00:00Z",
        ])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_expressions_and_zones_are_refused_with_what_is_wrong() {
    let expr = Recurrence::cron("0 25 * * *", "UTC")
        .unwrap_err()
        .to_string();
    assert!(expr.contains("cron expression \"0 25 * * *\""), "{expr}");
    let zone = Recurrence::cron("0 * * * *", "Europe/Atlantis")
        .unwrap_err()
        .to_string();
    assert!(
        zone.contains("unknown time zone \"Europe/Atlantis\""),
        "{zone}"
    );
    assert!(Recurrence::every(Duration::ZERO).is_err());
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let schedules = bytes_queue(&client, unique_name("bad"), QueueOptions::default()).await;
    let every = Recurrence::every(Duration::from_secs(1)).unwrap();
    let backwards = Schedule::new("s", every, b"v".to_vec())
        .start_ms(2_000)
        .end_ms(1_000);
    assert!(matches!(
        schedules.schedules().set(backwards).await,
        Err(delayq::Error::InvalidSchedule(_))
    ));
    assert!(schedules.schedules().list().await.unwrap().is_empty());
}
