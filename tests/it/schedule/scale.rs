//! Firing at scale: a pass fires more due schedules than one page in a few reads of the due
//! set, concurrent passes still offer each occurrence once, and a queue without schedules costs
//! its scheduler group no read per tick. Commands are counted on the server
//! (`INFO commandstats`), so no figure depends on the machine's speed.

use super::offered;
use crate::common::queue::bytes_queue;
use crate::common::queue::connect;
use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::codec::ByteArrayCodec;
use delayq::fred::clients::Client;
use delayq::fred::interfaces::ListInterface;
use delayq::time::now_ms;
use delayq::DelayedQueue;
use delayq::{
    Clock, FiringConfig, GroupConfig, QueueOptions, Recurrence, Schedule, SchedulerGroup,
    TransferConfig,
};
use futures::stream::{self, StreamExt};
use std::time::{Duration, Instant};

/// Due schedules in one queue: more than two pages of the due set.
const DUE: usize = 1_200;

/// `DUE` schedules of `queue`, every minute from `start_ms`.
async fn set_many(client: &Client, queue: &str, start_ms: i64) -> DelayedQueue<ByteArrayCodec> {
    let schedules = bytes_queue(client, queue, QueueOptions::default()).await;
    let every = Recurrence::every(Duration::from_secs(60)).unwrap();
    stream::iter(0..DUE)
        .for_each_concurrent(32, |k| {
            let (schedules, every) = (schedules.clone(), every.clone());
            async move {
                let schedule = Schedule::new(format!("s{k}"), every, b"v".to_vec());
                schedules
                    .schedules()
                    .set(schedule.start_ms(start_ms))
                    .await
                    .unwrap();
            }
        })
        .await;
    schedules
}

#[tokio::test(flavor = "multi_thread")]
async fn one_pass_fires_every_due_schedule_in_a_few_reads() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = unique_name("many-due");
    let start = now_ms() + 60_000;
    let schedules = set_many(&client, &queue, start).await;
    let reads = redis.command_calls("zrangebyscore");
    let tally = schedules
        .schedules()
        .fire_due(start, &FiringConfig::default())
        .await
        .unwrap();
    assert_eq!(tally.offered, DUE as u64, "{tally:?}");
    assert_eq!(offered(&client, &queue).await, vec![start; DUE]);
    let pages = redis.command_calls("zrangebyscore") - reads;
    assert!(pages <= 3, "{DUE} due schedules read in {pages} reads");
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_passes_offer_each_occurrence_once() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = unique_name("many-racing");
    let start = now_ms() + 60_000;
    let schedules = set_many(&client, &queue, start).await;
    let config = FiringConfig::default().with_in_flight(16);
    let passes: Vec<_> = (0..3)
        .map(|_| {
            let schedules = schedules.clone();
            tokio::spawn(async move {
                schedules
                    .schedules()
                    .fire_due(start, &config)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut total = 0;
    for pass in passes {
        total += pass.await.unwrap().offered;
    }
    // Whatever a racing pass skipped is due still: one more pass fires the rest.
    total += schedules
        .schedules()
        .fire_due(start, &config)
        .await
        .unwrap()
        .offered;
    assert_eq!(total, DUE as u64);
    assert_eq!(offered(&client, &queue).await, vec![start; DUE]);
}

/// Queues a scheduler group transfers beside the one with a schedule.
const UNSCHEDULED: usize = 40;

#[tokio::test(flavor = "multi_thread")]
async fn a_queue_without_schedules_costs_no_read_per_tick() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let firing = FiringConfig::default()
        .with_tick(Duration::from_millis(50))
        .with_lead(Duration::ZERO);
    let config = GroupConfig::default()
        .with_schedules(firing)
        .with_sweep_interval(None);
    let group = SchedulerGroup::spawn(client.clone(), config).await.unwrap();
    for k in 0..UNSCHEDULED {
        group.add(unique_name(&format!("idle{k}"))).await.unwrap();
    }
    // The server's clock: the firing task reads `TIME` once a tick, which counts the ticks.
    let options = QueueOptions::default().clock(Clock::Server);
    let queue = unique_name("scheduled");
    group
        .add_with(queue.as_str(), options, TransferConfig::default())
        .await
        .unwrap();
    let schedules = bytes_queue(&client, queue.as_str(), options).await;
    let every = Recurrence::every(Duration::from_millis(300)).unwrap();
    schedules
        .schedules()
        .set(Schedule::new("s", every, b"v".to_vec()))
        .await
        .unwrap();
    let take = |n: usize| {
        let client = client.clone();
        let queue = queue.clone();
        async move {
            let deadline = Instant::now() + PATIENCE;
            let mut taken = 0;
            while taken < n && Instant::now() < deadline {
                let value: Option<String> = client.lpop(queue.as_str(), None).await.unwrap();
                match value {
                    Some(_) => taken += 1,
                    None => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
            assert_eq!(taken, n, "occurrences delivered");
        }
    };
    take(1).await;
    let (reads, ticks) = (
        redis.command_calls("zrangebyscore"),
        redis.command_calls("time"),
    );
    take(3).await;
    let reads = redis.command_calls("zrangebyscore") - reads;
    let ticks = redis.command_calls("time") - ticks;
    group.shutdown().await;
    // One read of the scheduled queue's due set a tick, and the transfers of its occurrences;
    // a read per idle queue would be `UNSCHEDULED` more a tick.
    assert!(
        reads <= 2 * ticks + 8,
        "{reads} reads by score in {ticks} ticks, {UNSCHEDULED} queues without schedules"
    );
}
