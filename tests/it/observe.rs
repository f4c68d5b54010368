//! What workers and schedulers keep in Redis about themselves, on a real redis-server: the
//! per-minute activity counts every process adds to, written in a few commands per flush and
//! expiring, and the registry of live processes, left at a clean stop and expiring after a
//! crash.

use crate::common::queue::{connect, eventually};
use crate::common::{unique_name, TestCluster, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::inspect::{DayActivity, MinuteActivity, DAYS_KEPT};
use delayq::{
    DelayedQueue, Discovery, GroupConfig, Job, JobError, ObserveConfig, ReliableConfig,
    SchedulerGroup, WorkerHandle,
};
use std::time::Duration;

fn fast() -> ReliableConfig {
    ReliableConfig::default()
        .with_wait_slice(Duration::from_millis(100))
        .with_reap_interval(Duration::from_millis(100))
}

/// One "process": its own client, a queue handle with its scheduler, and a worker that acks
/// every value but those starting with `dead`, which fail for good.
async fn process(
    url: &str,
    name: &str,
    observe: ObserveConfig,
) -> (DelayedQueue<StringCodec>, WorkerHandle) {
    let client = delayq::connect(url).await.unwrap();
    let queue = DelayedQueue::builder(client, name, StringCodec)
        .group_config(GroupConfig::default().with_observe(observe))
        .build()
        .await
        .unwrap();
    let worker = queue
        .worker(4, |job: Job<String>| async move {
            match job.value().starts_with("dead") {
                true => Err(JobError::permanent("no good")),
                false => Ok(()),
            }
        })
        .reliable_config(fast())
        .observe(observe)
        .spawn()
        .unwrap();
    (queue, worker)
}

/// Offers `ok` values that succeed and `dead` that fail for good, and waits for the worker to
/// settle them all.
async fn run_values(queue: &DelayedQueue<StringCodec>, worker: &WorkerHandle, ok: u64, dead: u64) {
    let tag = unique_name("v");
    let mut values: Vec<(String, Duration)> = (0..ok)
        .map(|i| (format!("ok-{tag}-{i}"), Duration::ZERO))
        .collect();
    values.extend((0..dead).map(|i| (format!("dead-{tag}-{i}"), Duration::ZERO)));
    let before = worker.stats();
    queue.offer_all(&values).await.unwrap();
    let settled = eventually(PATIENCE, || {
        let stats = worker.stats();
        async move { stats.acked == before.acked + ok && stats.dead == before.dead + dead }
    })
    .await;
    assert!(settled, "the worker settled {:?}", worker.stats());
}

fn sum(minutes: &[MinuteActivity]) -> MinuteActivity {
    let mut total = MinuteActivity::default();
    for minute in minutes {
        total.moved += minute.moved;
        total.taken += minute.taken;
        total.acked += minute.acked;
        total.retried += minute.retried;
        total.dead += minute.dead;
    }
    total
}

/// Counts are written only at the stop here (the flush interval is an hour): what the bucket
/// says was flushed by the shutdown, in one `HINCRBY` per counted field and bucket and one
/// `PEXPIRE` per bucket, whatever the number of values; two processes' counts add up.
#[tokio::test(flavor = "multi_thread")]
async fn activity_of_two_processes_adds_up_in_few_commands_per_flush() {
    let redis = TestRedis::start();
    let name = unique_name("activity");
    let observe = ObserveConfig::default()
        .with_registry(false)
        .with_flush_interval(Duration::from_secs(3600));

    let (queue_a, worker_a) = process(&redis.url(), &name, observe).await;
    run_values(&queue_a, &worker_a, 30, 2).await;
    let (hincrby, pexpire) = (
        redis.command_calls("hincrby"),
        redis.command_calls("pexpire"),
    );
    worker_a.shutdown().await.unwrap();
    // Taken, acked and dead, in at most two minutes (the run may cross a minute's end) and
    // again in at most two days, and the buckets' time to live: a minute bucket and a day
    // bucket, at most two of each (the run may cross a bucket's end).
    let flushed = redis.command_calls("hincrby") - hincrby;
    assert!(
        (2..=12).contains(&flushed),
        "{flushed} HINCRBY for 64 counts"
    );
    let expired = redis.command_calls("pexpire") - pexpire;
    assert!((2..=4).contains(&expired), "{expired} PEXPIRE");
    queue_a.destroy().await.unwrap();

    let (queue_b, worker_b) = process(&redis.url(), &name, observe).await;
    run_values(&queue_b, &worker_b, 5, 1).await;
    worker_b.shutdown().await.unwrap();
    queue_b.destroy().await.unwrap();

    let minutes = queue_b.inspect().activity(5).await.unwrap();
    assert_eq!(minutes.len(), 5);
    assert!(minutes
        .windows(2)
        .all(|w| w[1].minute_ms - w[0].minute_ms == 60_000));
    let total = sum(&minutes);
    assert_eq!(
        (total.moved, total.taken, total.acked, total.failed()),
        (38, 38, 35, 3),
        "{total:?}"
    );

    let buckets = redis.cli(&["KEYS", &format!("delayq_activity:{{{name}}}:*")]);
    let buckets: Vec<&str> = buckets
        .lines()
        .filter(|l| !l.is_empty() && !l.contains(":day:"))
        .collect();
    assert!(!buckets.is_empty() && buckets.len() <= 2, "{buckets:?}");
    for key in buckets {
        let ttl: i64 = redis.cli(&["PTTL", key]).trim().parse().unwrap();
        assert!(
            ttl > 0 && ttl <= (2 * 3600 + 600) * 1000,
            "{key}: PTTL {ttl}"
        );
    }
}

/// Turned off, nothing is written.
#[tokio::test(flavor = "multi_thread")]
async fn nothing_is_kept_when_turned_off() {
    let redis = TestRedis::start();
    let name = unique_name("activity-off");
    let (queue, worker) = process(&redis.url(), &name, ObserveConfig::off()).await;
    run_values(&queue, &worker, 3, 0).await;
    worker.shutdown().await.unwrap();
    queue.destroy().await.unwrap();
    assert_eq!(
        sum(&queue.inspect().activity(5).await.unwrap()),
        MinuteActivity::default()
    );
    for pattern in [
        "delayq_activity:*",
        "delayq_procs:*",
        "delayq_discovering:*",
        "delayq_live:*",
    ] {
        assert_eq!(redis.cli(&["KEYS", pattern]).trim(), "", "{pattern}");
    }
}

async fn kinds(queue: &DelayedQueue<StringCodec>) -> Vec<String> {
    let mut kinds: Vec<String> = queue
        .inspect()
        .processes()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.kind)
        .collect();
    kinds.sort();
    kinds
}

/// A worker and a scheduler list themselves in the queue's registry, which expires, and leave
/// it at a clean stop; a discovering scheduler is listed for the queues its glob takes.
#[tokio::test(flavor = "multi_thread")]
async fn the_registry_lists_a_worker_and_a_scheduler_until_they_stop() {
    let redis = TestRedis::start();
    let name = unique_name("registry");
    let (queue, worker) = process(&redis.url(), &name, ObserveConfig::default()).await;
    let listed = eventually(PATIENCE, || {
        let queue = queue.clone();
        async move { kinds(&queue).await == ["scheduler", "worker"] }
    })
    .await;
    assert!(listed, "{:?}", queue.inspect().processes().await);
    for process in queue.inspect().processes().await.unwrap() {
        assert_eq!(process.pid, std::process::id());
        assert_eq!(process.version, env!("CARGO_PKG_VERSION"));
        assert!(process.beat_ms >= process.started_ms && process.started_ms > 0);
        assert!(!process.host.is_empty() && process.patterns.is_empty());
    }
    let registry = queue.keys().processes();
    let ttl: i64 = redis.cli(&["PTTL", &registry]).trim().parse().unwrap();
    assert!(ttl > 0 && ttl <= 30_000, "PTTL {ttl}");
    // The registry of every process lists the same worker, with the queue it serves.
    let client = connect(&redis.url()).await;
    let own = queue.inspect().processes().await.unwrap();
    let worker_id = &own.iter().find(|p| p.kind == "worker").unwrap().id;
    let live = delayq::inspect::live_processes(&client).await.unwrap();
    let listed = live.iter().find(|p| p.kind == "worker").unwrap();
    assert_eq!(
        (&listed.id, &listed.queues),
        (worker_id, &vec![name.clone()])
    );
    assert_eq!(listed.pid, std::process::id());

    let group = SchedulerGroup::spawn(client.clone(), GroupConfig::default())
        .await
        .unwrap();
    group
        .discover(Discovery::all().matching(format!("{name}*")))
        .await
        .unwrap();
    let other = DelayedQueue::builder(client.clone(), unique_name("other"), StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let found = eventually(PATIENCE, || {
        let queue = queue.clone();
        async move { kinds(&queue).await == ["scheduler", "scheduler", "worker"] }
    })
    .await;
    assert!(found, "{:?}", queue.inspect().processes().await);
    let discovering = queue.inspect().processes().await.unwrap();
    assert!(discovering
        .iter()
        .any(|p| p.patterns == [format!("{name}*")]));
    assert!(other.inspect().processes().await.unwrap().is_empty());
    group.shutdown().await;

    worker.shutdown().await.unwrap();
    assert_eq!(kinds(&queue).await, ["scheduler"]);
    queue.destroy().await.unwrap();
    assert!(queue.inspect().processes().await.unwrap().is_empty());
    assert_eq!(redis.cli(&["EXISTS", &registry]).trim(), "0");
    let live = delayq::inspect::live_processes(&client).await.unwrap();
    assert!(live.iter().all(|p| p.kind != "worker"), "{live:?}");
}

/// A process that dies without stopping (its runtime dropped: no task runs again) leaves the
/// registry once its record's time to live has passed, and so does the registry's key.
#[tokio::test(flavor = "multi_thread")]
async fn a_crashed_process_leaves_the_registry_when_its_record_expires() {
    let redis = TestRedis::start();
    let name = unique_name("registry-crash");
    let url = redis.url();
    let observe = ObserveConfig::default().with_registry_ttl(Duration::from_secs(2));
    let crashed = {
        let name = name.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let handles = runtime.block_on(async {
                let (queue, worker) = process(&url, &name, observe).await;
                let listed = eventually(PATIENCE, || {
                    let queue = queue.clone();
                    async move { kinds(&queue).await == ["scheduler", "worker"] }
                })
                .await;
                assert!(listed);
                (queue, worker)
            });
            runtime.shutdown_background();
            // The handles outlive the runtime: nothing of theirs runs again.
            std::mem::forget(handles);
        })
    };
    crashed.join().unwrap();

    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::builder(client, &name, StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let gone = eventually(PATIENCE, || {
        let queue = queue.clone();
        async move { queue.inspect().processes().await.unwrap().is_empty() }
    })
    .await;
    assert!(gone);
    let registry = queue.keys().processes();
    let expired = eventually(PATIENCE, || {
        let exists = redis.cli(&["EXISTS", &registry]);
        async move { exists.trim() == "0" }
    })
    .await;
    assert!(expired, "the registry key expires");
}

/// On a Cluster each queue's buckets and registry live in its own slot: one worker and one
/// scheduler group over four queues (on different masters) write them all in their pipelined
/// flushes and beats, and each queue reads back its own.
#[tokio::test(flavor = "multi_thread")]
async fn on_a_cluster_each_queue_keeps_its_own_history_and_registry() {
    let cluster = TestCluster::start(3);
    let client = delayq::connect(&cluster.url()).await.unwrap();
    let observe = ObserveConfig::default().with_flush_interval(Duration::from_millis(100));
    let mut queues = Vec::new();
    for i in 0..4 {
        let queue =
            DelayedQueue::builder(client.clone(), unique_name(&format!("c{i}")), StringCodec)
                .group_config(GroupConfig::default().with_observe(observe))
                .build()
                .await
                .unwrap();
        queues.push(queue);
    }
    let mut builder = queues[0]
        .worker(4, |_job: Job<String>| async { Ok::<(), JobError>(()) })
        .reliable_config(fast())
        .observe(observe);
    for queue in &queues[1..] {
        builder = builder.with_queue(queue);
    }
    let worker = builder.spawn().unwrap();
    for (i, queue) in queues.iter().enumerate() {
        let values: Vec<(String, Duration)> =
            (0..=i).map(|n| (format!("v{n}"), Duration::ZERO)).collect();
        queue.offer_all(&values).await.unwrap();
    }
    for (i, queue) in queues.iter().enumerate() {
        let counted = eventually(PATIENCE, || {
            let queue = queue.clone();
            async move {
                let total = sum(&queue.inspect().activity(15).await.unwrap());
                let n = i as u64 + 1;
                (total.moved, total.taken, total.acked) == (n, n, n)
            }
        })
        .await;
        assert!(
            counted,
            "{}: {:?}",
            queue.name(),
            queue.inspect().activity(15).await
        );
        let listed = eventually(PATIENCE, || {
            let queue = queue.clone();
            async move { kinds(&queue).await == ["scheduler", "worker"] }
        })
        .await;
        assert!(
            listed,
            "{}: {:?}",
            queue.name(),
            queue.inspect().processes().await
        );
    }
    worker.shutdown().await.unwrap();
    // A queue the group leaves is taken out of its registry by the beat that follows at once.
    for queue in &queues {
        queue.destroy().await.unwrap();
        let left = eventually(PATIENCE, || {
            let queue = queue.clone();
            async move { queue.inspect().processes().await.unwrap().is_empty() }
        })
        .await;
        assert!(
            left,
            "{}: {:?}",
            queue.name(),
            queue.inspect().processes().await
        );
    }
}

/// Each event is recorded once, in one tally that feeds the worker's counters, the scheduler's
/// counters and the activity in Redis: the three agree, value for value.
#[tokio::test(flavor = "multi_thread")]
async fn the_counters_and_the_activity_count_each_event_once() {
    let redis = TestRedis::start();
    let name = unique_name("one-tally");
    let observe = ObserveConfig::default()
        .with_registry(false)
        .with_flush_interval(Duration::from_secs(3600));
    let (queue, worker) = process(&redis.url(), &name, observe).await;
    run_values(&queue, &worker, 21, 4).await;
    let group = queue.inspect().scheduler_group().unwrap();
    let stats = worker.shutdown().await.unwrap();
    let moved = group.stats().moved;
    drop(group);
    queue.destroy().await.unwrap();
    let total = sum(&queue.inspect().activity(5).await.unwrap());
    assert_eq!(
        (stats.taken, stats.acked, stats.dead),
        (25, 21, 4),
        "{stats:?}"
    );
    assert_eq!(
        (total.taken, total.acked, total.dead),
        (stats.taken, stats.acked, stats.dead),
        "activity {total:?}, worker {stats:?}"
    );
    assert_eq!((moved, total.moved), (25, 25), "{total:?}");
}

const DAY_MS: i64 = 24 * 3600 * 1000;

/// Today, days since the epoch (UTC), and its ISO 8601 date.
fn today() -> (i64, String) {
    let now = jiff::Timestamp::now();
    let day = now.as_millisecond().div_euclid(DAY_MS);
    (
        day,
        now.to_zoned(jiff::tz::TimeZone::UTC).date().to_string(),
    )
}

fn sum_days(days: &[DayActivity]) -> (u64, u64, u64, u64, u64) {
    days.iter().fold((0, 0, 0, 0, 0), |t, d| {
        (
            t.0 + d.moved,
            t.1 + d.taken,
            t.2 + d.acked,
            t.3 + d.retried,
            t.4 + d.dead,
        )
    })
}

/// A worker's and a scheduler's counts are kept per UTC day beside the minutes, written by
/// the same flush: 90 days read back with their ISO dates, today last, a day nobody counted
/// anything in as zeros, and the day buckets expiring 90 days after their last day.
#[tokio::test(flavor = "multi_thread")]
async fn daily_counts_read_back_per_day_with_dates_and_expire() {
    let redis = TestRedis::start();
    let name = unique_name("days");
    let observe = ObserveConfig::default()
        .with_registry(false)
        .with_flush_interval(Duration::from_secs(3600));
    let (queue, worker) = process(&redis.url(), &name, observe).await;
    run_values(&queue, &worker, 7, 2).await;
    worker.shutdown().await.unwrap();
    queue.destroy().await.unwrap();

    let (_, before) = today();
    let days = queue.inspect().days(DAYS_KEPT).await.unwrap();
    let (_, after) = today();
    assert_eq!(days.len(), 90);
    let last = &days[89].date;
    assert!(*last == before || *last == after, "{last}, today {before}");
    for pair in days.windows(2) {
        assert_eq!(pair[1].day_ms - pair[0].day_ms, DAY_MS);
        assert!(
            pair[0].date < pair[1].date,
            "{} {}",
            pair[0].date,
            pair[1].date
        );
    }
    assert_eq!(sum_days(&days), (9, 9, 7, 0, 2), "{:?}", &days[88..]);
    let zero = &days[0];
    assert_eq!(
        (zero.moved, zero.taken, zero.acked, zero.failed()),
        (0, 0, 0, 0),
        "{zero:?}"
    );

    let keys = redis.cli(&["KEYS", &format!("delayq_activity:{{{name}}}:day:*")]);
    let keys: Vec<&str> = keys.lines().filter(|l| !l.is_empty()).collect();
    assert!(!keys.is_empty() && keys.len() <= 2, "{keys:?}");
    for key in keys {
        let ttl: i64 = redis.cli(&["PTTL", key]).trim().parse().unwrap();
        assert!(
            ttl > 90 * DAY_MS - 600_000 && ttl <= 100 * DAY_MS,
            "{key}: PTTL {ttl}"
        );
    }
}

/// Days older than the 90 kept are not returned, however many are asked for, even while their
/// bucket still lives; the oldest of the 90 is.
#[tokio::test(flavor = "multi_thread")]
async fn days_older_than_ninety_are_not_returned() {
    let redis = TestRedis::start();
    let name = unique_name("old-days");
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::builder(client, name.as_str(), StringCodec)
        .build()
        .await
        .unwrap();
    // The read and today's day may straddle midnight: try again on the next day.
    let mut read = None;
    for _ in 0..3 {
        let (day, _) = today();
        for (back, count) in [(89, "5"), (90, "7"), (95, "11"), (200, "13")] {
            let d = day - back;
            let key = queue.keys().activity_days(d - d.rem_euclid(10));
            let field = format!("{}:acked", d.rem_euclid(10));
            redis.cli(&["HSET", &key, &field, count]);
        }
        let days = queue.inspect().days(1000).await.unwrap();
        if today().0 == day {
            read = Some((day, days));
            break;
        }
    }
    let (day, days) = read.unwrap();
    assert_eq!(days.len(), DAYS_KEPT);
    assert_eq!(days[0].day_ms, (day - 89) * DAY_MS);
    assert_eq!(days[0].acked, 5);
    assert_eq!(sum_days(&days), (0, 0, 5, 0, 0));
    assert!(queue.inspect().days(0).await.unwrap().is_empty());
    assert_eq!(queue.inspect().days(3).await.unwrap().len(), 3);
}
