//! Firing hosted by a scheduler group: on by default for the queues the group transfers,
//! the values arrive on the target list like any offer's, and the group's shutdown stops it.

use crate::common::queue::bytes_queue;
use crate::common::queue::connect;
use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::fred::interfaces::ListInterface;
use delayq::time::now_ms;
use delayq::{
    Clock, FiringConfig, GroupConfig, QueueOptions, Recurrence, Schedule, SchedulerGroup,
    TransferConfig,
};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn a_group_fires_its_queues_schedules_until_it_shuts_down() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = unique_name("hosted");
    let firing = FiringConfig::default().with_tick(Duration::from_millis(50));
    let config = GroupConfig::default().with_schedules(firing);
    let group = SchedulerGroup::spawn(client.clone(), config).await.unwrap();
    group.add(queue.as_str()).await.unwrap();
    let schedules = bytes_queue(&client, queue.as_str(), QueueOptions::default()).await;
    let every = Recurrence::every(Duration::from_millis(200)).unwrap();
    let value = delayq::codec::Codec::encode(&StringCodec, "tick").unwrap();
    let start = now_ms();
    schedules
        .schedules()
        .set(Schedule::new("tick", every, value))
        .await
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let mut taken = Vec::new();
    while taken.len() < 3 && Instant::now() < deadline {
        let value: Option<String> = client.lpop(queue.as_str(), None).await.unwrap();
        match value {
            Some(value) => taken.push((value, now_ms())),
            None => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    assert_eq!(taken.len(), 3, "three occurrences delivered");
    for (k, (value, at)) in taken.iter().enumerate() {
        assert_eq!(value, "tick");
        // The k-th occurrence is due one interval after the set, then every interval.
        let due = start + 200 * (k as i64 + 1);
        assert!(*at >= due, "occurrence {k} delivered at {at}, due at {due}");
    }
    group.shutdown().await;
    let stopped = schedules
        .schedules()
        .get("tick")
        .await
        .unwrap()
        .unwrap()
        .next_ms;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        schedules
            .schedules()
            .get("tick")
            .await
            .unwrap()
            .unwrap()
            .next_ms,
        stopped,
        "nothing fires after the group's shutdown"
    );
}

/// A queue that goes by the server's clock is fired by it too (`TIME`, once a tick).
#[tokio::test(flavor = "multi_thread")]
async fn a_queue_on_the_servers_clock_is_fired_by_it() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = unique_name("server-clock");
    let firing = FiringConfig::default().with_tick(Duration::from_millis(50));
    let config = GroupConfig::default().with_schedules(firing);
    let group = SchedulerGroup::spawn(client.clone(), config).await.unwrap();
    let options = QueueOptions::default().clock(Clock::Server);
    group
        .add_with(queue.as_str(), options, TransferConfig::default())
        .await
        .unwrap();
    let schedules = bytes_queue(&client, queue.as_str(), options).await;
    let every = Recurrence::every(Duration::from_millis(100)).unwrap();
    schedules
        .schedules()
        .set(Schedule::new("s", every, b"v".to_vec()))
        .await
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let mut taken: Option<String> = None;
    while taken.is_none() && Instant::now() < deadline {
        taken = client.lpop(queue.as_str(), None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(taken.as_deref(), Some("v"));
    group.shutdown().await;
}
