//! On a big queue, delayq's calls stay short: the value-index operations (`remove`, `contains`,
//! `reschedule`, `offer_unique`, `remove_all`, `cancel`) never make Redis answer BUSY, the ones
//! that index the queue included (a chunk a call). The one call that still reads the
//! whole order list, `retain_all`, reads everything before its first write, so Redis can still
//! stop it with `SCRIPT KILL` (a script that has written can only be stopped by `SHUTDOWN
//! NOSAVE`; until it ends every other client, Java peers included, gets BUSY).

use crate::common::queue::{build_index, connect, fill_pending, manual_queue};
use crate::common::{unique_name, TestRedis};
use delayq::QueueKeys;
use fred::clients::Client;
use fred::interfaces::SortedSetsInterface;
use std::time::{Duration, Instant};

/// Entries in the big queue: enough for a whole-list scan to outlast the busy threshold.
const ENTRIES: i64 = 200_000;

/// Fills the queue with `ENTRIES` entries, `value` first and last.
async fn fill(client: &Client, keys: &QueueKeys, value: &str) {
    fill_pending(client, keys, (1, ENTRIES), &[(1, value), (ENTRIES, value)]).await;
}

/// Waits until the server says BUSY, then kills the script; returns SCRIPT KILL's reply.
fn kill_when_busy(redis: &TestRedis) -> String {
    let deadline = Instant::now() + crate::common::PATIENCE;
    while !redis.cli(&["PING"]).contains("BUSY") {
        assert!(Instant::now() < deadline, "the script never got busy");
        std::thread::sleep(Duration::from_millis(20));
    }
    redis.cli(&["SCRIPT", "KILL"])
}

/// The median server time of the script calls in the slow log, in microseconds (0 for none).
///
/// A call's time budget bounds its own time; the slow log's figure adds the moments the server
/// process waited for a CPU, which on a busy machine stretch a few calls (one took 117 ms
/// beside two busy loops), never the typical one. A call that ignores its budget makes the
/// typical call long: indexing its 5,000 entries takes 80 to 116 ms.
fn typical_script_call_us(redis: &TestRedis) -> u64 {
    let mut durations = script_call_durations_us(redis);
    durations.sort_unstable();
    durations.get(durations.len() / 2).copied().unwrap_or(0)
}

/// The server time of each script call (EVALSHA/EVAL) in the slow log, in µs.
fn script_call_durations_us(redis: &TestRedis) -> Vec<u64> {
    let log = redis.cli(&["SLOWLOG", "GET", "100000"]);
    // redis-cli prints each entry's fields one a line: id, time, duration, the command...
    let lines: Vec<&str> = log.lines().collect();
    let mut durations = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.eq_ignore_ascii_case("evalsha") || line.eq_ignore_ascii_case("eval") {
            if let Some(us) = lines
                .get(i.wrapping_sub(1))
                .and_then(|l| l.parse::<u64>().ok())
            {
                durations.push(us);
            }
        }
    }
    durations
}

/// Starts a slow log that keeps every command.
fn log_every_call(redis: &TestRedis) {
    redis.cli(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    redis.cli(&["CONFIG", "SET", "slowlog-max-len", "100000"]);
    redis.cli(&["SLOWLOG", "RESET"]);
}

/// Building the value index of a long queue (here by lookups until it is complete) is cut into
/// calls by their time budget (3 ms of the server's time each), not only by the entries a call
/// may index (5,000): on Valkey, whose `TIME` stands still for a script's whole run, the budget
/// read from `TIME` never ended, and every call indexed its 5,000 entries (80 to 116 ms a call,
/// BUSY for a PING beside it).
#[tokio::test(flavor = "multi_thread")]
async fn the_time_budget_ends_index_building_calls() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("budget");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    fill(&client, &keys, "target").await;
    log_every_call(&redis);
    build_index(&client, &queue).await;
    let calls = script_call_durations_us(&redis).len();
    // By the entry cap alone: 200,000 / 5,000 = 40 calls. Indexing 5,000 entries takes far
    // longer than 3 ms on any server this runs on, so the budget makes many more.
    assert!(
        calls > 2 * ENTRIES as usize / 5_000,
        "{calls} calls indexed {ENTRIES} entries: the time budget did not end them"
    );
    let typical = typical_script_call_us(&redis);
    assert!(typical < 30_000, "a typical call held Redis {typical} us");
}

/// Each index-backed operation on the big queue runs as calls far shorter than the busy
/// threshold (100 ms; a pass over the whole order list takes longer), so Redis never answers
/// BUSY for their sake: the first ones index the queue in many short calls (their typical
/// time, see [`typical_script_call_us`]), each one after that costs the server a few ms of CPU.
/// Measured on the server's own figures rather than by PINGs beside the calls, which a busy
/// machine can delay past the threshold whatever the calls do.
#[tokio::test(flavor = "multi_thread")]
async fn index_backed_calls_never_make_redis_busy() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("big");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    fill(&client, &keys, "target").await;
    log_every_call(&redis);

    let minute = Duration::from_secs(60);
    assert!(queue.contains("target").await.unwrap());
    build_index(&client, &queue).await;
    let calls = script_call_durations_us(&redis).len();
    assert!(calls > 1, "the index was built in {calls} call");
    let typical = typical_script_call_us(&redis);
    assert!(typical < 30_000, "a typical call held Redis {typical} us");

    let mut last = redis.main_thread_cpu_us();
    let mut cheap = |what: &str| {
        let now = redis.main_thread_cpu_us();
        let cost = now - last;
        last = now;
        assert!(cost < 30_000, "{what} cost the server {cost} us of CPU");
    };
    assert!(queue.reschedule("target", minute).await.unwrap());
    cheap("reschedule");
    assert!(queue.offer_unique("target", minute).await.unwrap());
    cheap("offer_unique of a pending value");
    assert!(!queue.offer_unique("fresh", minute).await.unwrap());
    cheap("offer_unique of a new value");
    assert!(queue.remove("filler-100000").await.unwrap());
    cheap("remove");
    assert!(queue
        .remove_all(&["filler-7".to_owned(), "filler-199999".to_owned()])
        .await
        .unwrap());
    cheap("remove_all");
    let handle = queue.offer_with_handle("handled", minute).await.unwrap();
    cheap("offer_with_handle");
    assert!(queue.cancel(&handle).await.unwrap());
    cheap("cancel");
    // offer_unique kept the first "target" and removed the second; 3 fillers left, "fresh" came.
    assert_eq!(queue.size().await.unwrap(), ENTRIES as u64 - 1 - 3 + 1);
    let card: u64 = client.zcard(keys.timeout()).await.unwrap();
    assert_eq!(card, ENTRIES as u64 - 1 - 3 + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_retain_all_is_killable_and_changes_nothing() {
    let redis = TestRedis::start_with(&["--busy-reply-threshold", "100"]);
    let client = connect(&redis.url()).await;
    let name = unique_name("long");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    fill(&client, &keys, "target").await;
    let q = queue.clone();
    let call = tokio::spawn(async move { q.retain_all(&["target".to_owned()]).await });
    let killed = tokio::task::block_in_place(|| kill_when_busy(&redis));
    assert_eq!(killed, "OK", "the script had written before it was killed");
    assert!(call.await.unwrap().is_err(), "a killed call must fail");
    assert_eq!(queue.size().await.unwrap(), ENTRIES as u64);
    let card: u64 = client.zcard(keys.timeout()).await.unwrap();
    assert_eq!(card, ENTRIES as u64);
}
