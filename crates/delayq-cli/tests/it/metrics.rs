//! `/metrics` at scale against a real redis-server: every metric has its HELP and TYPE, the
//! build is named, the paused, in-flight-overdue and consumer-lag gauges read what Redis holds,
//! shards carry their sharded queue's name, the gauges' reads keep to their budget of Redis
//! commands, the aggregate mode sums the queues away, and a queue's series go when it does.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::observe::{delayq, free_port, get, Daemon, BIN};
use delayq::QueueKeys;
use std::process::{Command, Stdio};
use std::time::Instant;

/// `delayq --url URL ARGS... --listen` in the background; its port.
pub(crate) fn listening(url: &str, args: &[&str]) -> (Daemon, u16) {
    let port = free_port();
    let child = Command::new(BIN)
        .args(["--url", url])
        .args(args)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (Daemon(child), port)
}

/// `/metrics`, once it answers.
pub(crate) fn scrape(port: u16) -> String {
    wait_until("/metrics", PATIENCE, || match get(port, "/metrics") {
        Ok((200, body)) => Ok(body),
        other => Err(format!("{other:?}")),
    })
}

/// The value of the sample `series` (name and labels as rendered).
pub(crate) fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let (key, value) = line.rsplit_once(' ')?;
        (key == series).then(|| value.parse().ok())?
    })
}

/// Waits until `series` satisfies `ok`; the scrape it did.
pub(crate) fn scrape_until(port: u16, series: &str, ok: impl Fn(f64) -> bool) -> String {
    wait_until(series, PATIENCE, || {
        let text = scrape(port);
        match sample(&text, series) {
            Some(v) if ok(v) => Ok(text),
            other => Err(format!("{other:?}")),
        }
    })
}

/// `count` queues `{prefix}-{i}`, each holding a copy of one entry due in an hour, made in
/// one script call from the entry `delayq offer` wrote.
fn many_queues(redis: &TestRedis, prefix: &str, count: usize) -> Vec<String> {
    let first = format!("{prefix}-0");
    delayq(&redis.url(), &["offer", &first, "v", "--delay", "1h"]);
    let keys = QueueKeys::new(first.as_str());
    let copy = "local e = redis.call('lindex', KEYS[2], 0) \
        local s = redis.call('zscore', KEYS[1], e) \
        for i = 1, tonumber(ARGV[2]) - 1 do \
          local n = ARGV[1] .. '-' .. i \
          redis.call('zadd', 'redisson_delay_queue_timeout:{' .. n .. '}', s, e) \
          redis.call('rpush', 'redisson_delay_queue:{' .. n .. '}', e) \
        end";
    let count_arg = count.to_string();
    redis.cli(&[
        "EVAL",
        copy,
        "2",
        keys.timeout(),
        keys.order(),
        prefix,
        &count_arg,
    ]);
    (0..count).map(|i| format!("{prefix}-{i}")).collect()
}

#[test]
fn every_metric_is_described_and_the_new_gauges_read_redis() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let (lagging, paused) = (unique_name("lag"), unique_name("paused"));
    let shard = format!("{}:{{0}}", unique_name("sharded"));
    delayq(&url, &["offer", &lagging, "a", "--delay", "10ms"]);
    delayq(&url, &["offer", &shard, "b", "--delay", "10ms"]);
    delayq(&url, &["pause", &paused]);
    delayq(&url, &["offer", &paused, "c", "--delay", "10ms"]);
    // A delivery whose deadline passed long ago.
    redis.cli(&[
        "ZADD",
        QueueKeys::new(lagging.as_str()).inflight(),
        "1",
        "d-1",
    ]);
    let (_daemon, port) = listening(&url, &["transfer", &lagging, &paused, &shard]);

    let series = |name: &str, queue: &str| format!("{name}{{queue=\"{queue}\"}}");
    scrape_until(port, &series("delayq_paused", &paused), |v| v == 1.0);
    scrape_until(port, &series("delayq_paused", &lagging), |v| v == 0.0);
    scrape_until(port, &series("delayq_inflight_overdue", &lagging), |v| {
        v == 1.0
    });
    // Moved and never taken: the consumers' lag grows.
    scrape_until(port, &series("delayq_ready", &lagging), |v| v == 1.0);
    scrape_until(
        port,
        &series("delayq_oldest_ready_age_seconds", &lagging),
        |v| v > 0.0,
    );
    let logical = shard.trim_end_matches(":{0}");
    let of_shard = format!("queue=\"{shard}\",logical_queue=\"{logical}\"");
    scrape_until(port, &format!("delayq_moved_total{{{of_shard}}}"), |v| {
        v == 1.0
    });
    let text = scrape_until(port, &format!("delayq_ready{{{of_shard}}}"), |v| v == 1.0);
    let version = env!("CARGO_PKG_VERSION");
    let build = format!("delayq_build_info{{version=\"{version}\"}}");
    assert_eq!(sample(&text, &build), Some(1.0), "{text}");

    // Every sample's metric has one TYPE line, right after its one HELP line.
    let mut typed = std::collections::HashMap::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            let help = format!("# HELP {name} ");
            assert!(
                i > 0 && lines[i - 1].starts_with(&help) && lines[i - 1].len() > help.len(),
                "no HELP before {line}"
            );
            assert!(
                typed.insert(name, kind).is_none(),
                "two TYPE lines of {name}"
            );
        }
    }
    for line in lines
        .iter()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let name = line.split(['{', ' ']).next().unwrap();
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .filter(|base| typed.get(base) == Some(&"histogram"))
            .unwrap_or(name);
        assert!(typed.contains_key(base), "no TYPE of {line}");
    }
}

#[test]
fn a_queue_that_leaves_takes_its_series_along_and_a_made_up_channel_adds_none() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("leaves");
    let (staying, leaving) = (format!("{prefix}-staying"), format!("{prefix}-leaving"));
    delayq(&url, &["offer", &staying, "a", "--delay", "1h"]);
    delayq(&url, &["offer", &leaving, "b", "--delay", "10ms"]);
    delayq(&url, &["offer", &leaving, "c", "--delay", "1h"]);
    let pattern = format!("{prefix}-*");
    let args = [
        "transfer", "--all", "--match", &pattern, "--rescan", "200ms",
    ];
    let (_daemon, port) = listening(&url, &args);
    let moved = format!("delayq_moved_total{{queue=\"{leaving}\"}}");
    scrape_until(port, &moved, |v| v == 1.0);

    // Anyone may publish on any channel; a name with no queue behind it gets no series.
    let ghost = format!("{prefix}-ghost");
    let channel = QueueKeys::new(ghost.as_str()).channel().to_owned();
    for _ in 0..5 {
        redis.cli(&["PUBLISH", &channel, "1"]);
    }
    // The leaving queue is deleted (Java's delete()): discovery drops it.
    let keys = QueueKeys::new(leaving.as_str());
    redis.cli(&["DEL", &leaving, keys.timeout(), keys.order()]);
    let label = |name: &str| format!("queue=\"{name}\"");
    let text = wait_until("the queue's series gone", PATIENCE, || {
        let text = scrape(port);
        match text.contains(&label(&leaving)) {
            true => Err(text),
            false => Ok(text),
        }
    });
    assert!(text.contains(&label(&staying)), "{text}");
    assert!(!text.contains(&label(&ghost)), "{text}");
}

#[test]
fn gauge_reads_keep_to_their_budget_and_reach_every_queue() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("budget");
    let names = many_queues(&redis, &prefix, 60);
    // 80 commands a second: 160 every 2 s, so 7 queues every 2 s at 22 commands a queue (eight
    // counts and a MEMORY USAGE of each of its 14 keys).
    let per_queue = 8 + QueueKeys::new("x").stored().len();
    let per_slice = (160 / per_queue) as f64;
    let pattern = format!("{prefix}-*");
    let args = [
        "transfer",
        "--all",
        "--match",
        &pattern,
        // The process's budget: the sweep's 1 and 10 for its other reads leave the gauges 80.
        "--sweep-budget",
        "1",
        "--metrics-read-budget",
        "91",
    ];
    let zcounts = || redis.command_calls("zcount");
    let (before, began) = (zcounts(), Instant::now());
    let (_daemon, port) = listening(&url, &args);
    wait_until("every queue's gauges", PATIENCE, || {
        let text = scrape(port);
        let unread = names
            .iter()
            .filter(|name| {
                sample(&text, &format!("delayq_pending{{queue=\"{name}\"}}")) != Some(1.0)
            })
            .count();
        match unread {
            0 => Ok(()),
            n => Err(format!("{n} queues unread")),
        }
    });
    // One ZCOUNT a queue read: at most a slice every 2 s, and one slice more at the start.
    let (reads, seconds) = (zcounts() - before, began.elapsed().as_secs_f64());
    let allowed = per_slice * (seconds / 2.0).ceil() + per_slice;
    assert!(
        reads as f64 <= allowed,
        "{reads} queue reads in {seconds:.1} s, over {allowed}"
    );
    assert!(reads >= 60, "{reads} queue reads");
}

#[test]
fn the_aggregate_mode_sums_the_queues_away() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("sums");
    many_queues(&redis, &prefix, 30);
    let pattern = format!("{prefix}-*");
    let args = [
        "transfer",
        "--all",
        "--match",
        &pattern,
        "--metrics",
        "aggregate",
    ];
    let (_daemon, port) = listening(&url, &args);
    scrape_until(port, "delayq_transfers_total", |v| v >= 1.0);
    let text = scrape_until(port, "delayq_pending", |v| v == 30.0);
    assert!(!text.contains("queue=\""), "{text}");
    assert_eq!(sample(&text, "delayq_paused"), Some(0.0), "{text}");
    scrape_until(port, "delayq_memory_bytes", |v| v >= 30.0 * 100.0);
}

/// A queue holding a 1 MiB value on its target list reports at least that much memory.
#[test]
fn the_memory_gauge_counts_every_key_of_a_queue() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let name = unique_name("memory");
    delayq(&url, &["offer", &name, "small", "--delay", "1h"]);
    let fill = "redis.call('RPUSH', KEYS[1], string.rep('m', 1024 * 1024))";
    redis.cli(&["EVAL", fill, "1", &name]);
    let (_daemon, port) = listening(&url, &["transfer", "--all", "--match", &name]);
    let series = format!("delayq_memory_bytes{{queue=\"{name}\"}}");
    scrape_until(port, &series, |v| v >= 1024.0 * 1024.0);
}

/// A schedule whose last occurrence was missed an hour ago fires it once by its `latest`
/// policy: the fired counter, the lateness histogram (an hour late) and the policy's decision
/// show on `/metrics` of `transfer --listen`.
#[test]
fn a_fired_schedule_counts_its_occurrence_its_lateness_and_its_missed_decision() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let q = unique_name("sched");
    // Occurrences two hours and one hour ago (missed), the next one in a minute.
    let start = (delayq::time::now_ms() - 2 * 3_600_000 + 60_000).to_string();
    let set = [
        "schedule", "set", &q, "hourly", "--every", "1h", "--value", "v", "--start", &start,
        "--missed", "latest",
    ];
    delayq(&url, &set);
    let (_daemon, port) = listening(&url, &["transfer", &q, "--schedule-tick", "50ms"]);

    let fired = format!("delayq_schedule_fired_total{{queue=\"{q}\"}}");
    let text = scrape_until(port, &fired, |v| v >= 1.0);
    assert_eq!(sample(&text, &fired), Some(1.0), "{text}");
    let missed = format!("delayq_schedule_missed_total{{queue=\"{q}\",policy=\"latest\"}}");
    assert_eq!(sample(&text, &missed), Some(1.0), "{text}");
    // One process-wide histogram: one occurrence, offered about an hour after its time.
    let count = sample(&text, "delayq_schedule_lateness_seconds_count");
    let sum = sample(&text, "delayq_schedule_lateness_seconds_sum").unwrap_or(0.0);
    assert_eq!(count, Some(1.0), "{text}");
    assert!(
        (3_540.0..3_700.0).contains(&sum),
        "lateness {sum} s: {text}"
    );
    for name in [
        "delayq_schedule_fired_total",
        "delayq_schedule_lateness_seconds",
        "delayq_schedule_missed_total",
    ] {
        assert!(
            text.contains(&format!("# HELP {name} ")),
            "no HELP of {name}"
        );
    }
}
