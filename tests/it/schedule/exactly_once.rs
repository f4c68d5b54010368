//! Each occurrence exactly once while three firers contend on the same schedules: one aborted
//! and started again over and over (mid-call included), one whose clock is 2 s ahead (it joins
//! half-way: from then on it fires every occurrence first, so before it the other two race for
//! each occurrence as it comes due). Every occurrence is read back from the queue: none twice,
//! none missing, each due at its time.

use super::offered;
use crate::common::queue::bytes_queue;
use crate::common::queue::connect;
use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::fred::clients::Client;
use delayq::time::now_ms;
use delayq::{FiringConfig, QueueOptions, Recurrence, Schedule};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

const SCHEDULES: usize = 8;
const EVERY_MS: i64 = 100;
const OCCURRENCES: i64 = 30;

/// A firer that fires `queue`'s due schedules in a loop, by a clock `skew_ms` off.
fn firer(client: Client, queue: String, skew_ms: i64) -> JoinHandle<()> {
    tokio::spawn(async move {
        let schedules = bytes_queue(&client, queue, QueueOptions::default()).await;
        let config = FiringConfig::default().with_lead(Duration::ZERO);
        loop {
            // Errors are a killed call's; the loop goes on as a restarted process would.
            let _ = schedules
                .schedules()
                .fire_due(now_ms() + skew_ms, &config)
                .await;
            tokio::task::yield_now().await;
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_firers_one_killed_one_ahead_offer_each_occurrence_once() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = unique_name("once");
    let schedules = bytes_queue(&client, queue.as_str(), QueueOptions::default()).await;
    let start = now_ms() + 300;
    let end = start + (OCCURRENCES - 1) * EVERY_MS;
    for i in 0..SCHEDULES {
        let every = Recurrence::every(Duration::from_millis(EVERY_MS as u64)).unwrap();
        let schedule = Schedule::new(format!("s{i}"), every, format!("v{i}").into_bytes())
            .start_ms(start)
            .end_ms(end);
        schedules.schedules().set(schedule).await.unwrap();
    }
    let steady = firer(client.clone(), queue.clone(), 0);
    let mut ahead = None;
    let mut killed = firer(client.clone(), queue.clone(), 0);
    let deadline = Instant::now() + PATIENCE;
    let mut kills = 0;
    loop {
        let infos = schedules.schedules().list().await.unwrap();
        if infos.iter().all(|info| info.next_ms.is_none()) || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5 + kills % 20)).await;
        if ahead.is_none() && now_ms() > start + OCCURRENCES * EVERY_MS / 2 {
            ahead = Some(firer(client.clone(), queue.clone(), 2_000));
        }
        killed.abort();
        let _ = killed.await;
        killed = firer(client.clone(), queue.clone(), 0);
        kills += 1;
    }
    for task in [Some(steady), ahead, Some(killed)].into_iter().flatten() {
        task.abort();
    }
    let found = offered(&client, &queue).await;
    let mut expected: Vec<i64> = (0..OCCURRENCES)
        .flat_map(|k| std::iter::repeat_n(start + k * EVERY_MS, SCHEDULES))
        .collect();
    expected.sort_unstable();
    assert_eq!(
        found.len(),
        expected.len(),
        "duplicates or missed ({kills} kills)"
    );
    assert_eq!(found, expected, "each occurrence once, due at its time");
    assert!(kills >= 5, "the firer was killed {kills} times");
}
