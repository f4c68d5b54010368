//! Monitoring that cannot go blind, on real processes scraped over loopback: `transfer --all`
//! keeps the gauges of a queue it no longer transfers while the queue holds values (ready, in
//! flight, dead, quarantined) and finds queues that hold nothing else; an unreadable queue has a
//! gauge saying so and its failed transfers the kind `wrong_type`; the counters Grafana and the
//! alerts read are there at 0 from the start, and a schedule's counters outlive its firing.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::metrics::{listening, sample, scrape, scrape_until};
use crate::observe::delayq;
use delayq::QueueKeys;
use std::time::Duration;

/// `name{queue="QUEUE"}`.
fn of(name: &str, queue: &str) -> String {
    format!("{name}{{queue=\"{queue}\"}}")
}

/// A queue drained of pending entries leaves the group (nothing to transfer), but its ready
/// values and dead letters stay in the scrape and are still read; queues that never had a
/// pending entry (dead letters only, deliveries in flight only) are found by the scan.
#[test]
fn transfer_all_keeps_the_gauges_of_queues_that_hold_values() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("blind");
    let (drained, dead_only, busy_only) = (
        format!("{prefix}-drained"),
        format!("{prefix}-dead"),
        format!("{prefix}-busy"),
    );
    delayq(&url, &["offer", &drained, "a", "--delay", "10ms"]);
    let drained_keys = QueueKeys::new(drained.as_str());
    redis.cli(&["RPUSH", drained_keys.dead(), "letter-1"]);
    let dead_keys = QueueKeys::new(dead_only.as_str());
    redis.cli(&["RPUSH", dead_keys.dead(), "letter-1", "letter-2"]);
    let busy_keys = QueueKeys::new(busy_only.as_str());
    redis.cli(&["ZADD", busy_keys.inflight(), "9999999999999", "d-1"]);

    let pattern = format!("{prefix}-*");
    let args = [
        "transfer", "--all", "--match", &pattern, "--rescan", "200ms",
    ];
    let (_daemon, port) = listening(&url, &args);
    scrape_until(port, &of("delayq_moved_total", &drained), |v| v == 1.0);
    // Its value moved, nothing is pending: a scan drops the queue from the group, and its
    // scheduler's series go with it.
    let moved = of("delayq_moved_total", &drained);
    wait_until("the drained queue dropped", PATIENCE, || {
        let text = scrape(port);
        match sample(&text, &moved) {
            None => Ok(()),
            Some(v) => Err(format!("{moved} {v}")),
        }
    });
    // Its gauges are still read: a value pushed now shows.
    redis.cli(&["RPUSH", &drained, "b"]);
    let text = scrape_until(port, &of("delayq_ready", &drained), |v| v == 2.0);
    assert_eq!(sample(&text, &of("delayq_dead", &drained)), Some(1.0));
    // Queues with nothing to transfer at all, found by their own keys.
    scrape_until(port, &of("delayq_dead", &dead_only), |v| v == 2.0);
    scrape_until(port, &of("delayq_in_flight", &busy_only), |v| v == 1.0);
    // Emptied (a replay, a purge): the queue leaves the scrape.
    redis.cli(&["DEL", &drained, drained_keys.dead()]);
    wait_until("the emptied queue gone", PATIENCE, || {
        let text = scrape(port);
        match text.contains(&format!("queue=\"{drained}\"")) {
            true => Err(text),
            false => Ok(()),
        }
    });
}

/// A queue whose target list was overwritten by a string: `transfer --listen` and `ui` say it
/// is unreadable (1, a readable queue 0), and its failed transfers count as `wrong_type`.
#[test]
fn an_unreadable_queue_has_a_gauge_and_its_errors_a_kind() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("unreadable");
    let (broken, fine) = (format!("{prefix}-broken"), format!("{prefix}-fine"));
    delayq(&url, &["offer", &broken, "a", "--delay", "10ms"]);
    delayq(&url, &["offer", &fine, "b", "--delay", "1h"]);
    redis.cli(&["SET", &broken, "not a list"]);

    let pattern = format!("{prefix}-*");
    let (_transfer, port) = listening(&url, &["transfer", "--all", "--match", &pattern]);
    scrape_until(port, &of("delayq_unreadable", &broken), |v| v == 1.0);
    scrape_until(port, &of("delayq_unreadable", &fine), |v| v == 0.0);
    let errors = format!("delayq_errors_total{{queue=\"{broken}\",kind=\"wrong_type\"}}");
    scrape_until(port, &errors, |v| v >= 1.0);

    let (_ui, ui_port) = listening(&url, &["ui", "--match", &pattern]);
    scrape_until(ui_port, &of("delayq_unreadable", &broken), |v| v == 1.0);
    scrape_until(ui_port, &of("delayq_pending", &fine), |v| v == 1.0);
}

/// The process counters (connection errors, reconnects, resubscribes) and a scheduled queue's
/// schedule counters are there at 0 before anything happens, so that `increase()` sees their
/// first rise; once a schedule fired, its counters stay in every later scrape.
#[test]
fn counters_are_there_at_zero_and_stay() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let (quiet, firing) = (unique_name("quiet"), unique_name("firing"));
    let later = (delayq::time::now_ms() + 3_600_000).to_string();
    let set = |queue: &str, start: &str| {
        delayq(
            &url,
            &[
                "schedule", "set", queue, "hourly", "--every", "1h", "--value", "v", "--start",
                start, "--missed", "latest",
            ],
        );
    };
    set(&quiet, &later);
    // Occurrences two hours and one hour ago (missed), the next one in a minute.
    set(
        &firing,
        &(delayq::time::now_ms() - 2 * 3_600_000 + 60_000).to_string(),
    );
    let args = ["transfer", &quiet, &firing, "--schedule-tick", "50ms"];
    let (_daemon, port) = listening(&url, &args);

    let missed = |queue: &str, policy: &str| {
        format!("delayq_schedule_missed_total{{queue=\"{queue}\",policy=\"{policy}\"}}")
    };
    let text = scrape_until(port, &missed(&quiet, "skip"), |v| v == 0.0);
    for series in [
        "delayq_connection_errors_total",
        "delayq_reconnects_total",
        "delayq_resubscribes_total",
    ] {
        assert_eq!(sample(&text, series), Some(0.0), "{series}: {text}");
    }
    for policy in ["skip", "latest", "all"] {
        assert_eq!(sample(&text, &missed(&quiet, policy)), Some(0.0), "{text}");
    }
    assert_eq!(
        sample(&text, &of("delayq_schedule_fired_total", &quiet)),
        Some(0.0),
        "{text}"
    );

    // A schedule that fired keeps its counts scrape after scrape (a series nobody holds would
    // go at the second render after its last change, and come back from 0).
    scrape_until(port, &of("delayq_schedule_fired_total", &firing), |v| {
        v == 1.0
    });
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(20));
        let text = scrape(port);
        let fired = sample(&text, &of("delayq_schedule_fired_total", &firing));
        assert_eq!(fired, Some(1.0), "{text}");
        assert_eq!(
            sample(&text, &missed(&firing, "latest")),
            Some(1.0),
            "{text}"
        );
    }
}

/// A queue's concurrency cap is a gauge beside the slots its limits hold (no series for a queue
/// without a cap), and follows a change of the limits.
#[test]
fn the_concurrency_cap_is_a_gauge_beside_the_slots_held() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("capped");
    let (capped, keyed) = (format!("{prefix}-capped"), format!("{prefix}-keyed"));
    delayq(&url, &["limit", "set", &capped, "--concurrency", "3"]);
    delayq(&url, &["limit", "set", &keyed, "--rate", "10/s"]);
    for queue in [&capped, &keyed] {
        delayq(&url, &["offer", queue, "v", "--delay", "1h"]);
    }
    let pattern = format!("{prefix}-*");
    let (_daemon, port) = listening(&url, &["transfer", "--all", "--match", &pattern]);
    let cap = of("delayq_limit_concurrency", &capped);
    let text = scrape_until(port, &cap, |v| v == 3.0);
    assert_eq!(
        sample(&text, &of("delayq_limit_slots_held", &capped)),
        Some(0.0)
    );
    scrape_until(port, &of("delayq_limit_slots_held", &keyed), |v| v == 0.0);
    let text = scrape(port);
    assert_eq!(
        sample(&text, &of("delayq_limit_concurrency", &keyed)),
        None,
        "{text}"
    );
    delayq(&url, &["limit", "set", &capped, "--concurrency", "5"]);
    scrape_until(port, &cap, |v| v == 5.0);
}
