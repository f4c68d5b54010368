//! Cost budgets counted, not timed (a busy machine sends fewer commands, never more): what
//! `delayq transfer --all` costs Redis over idle queues, with and without `--listen`, in
//! commands per queue per minute read from `INFO commandstats`, and the connections it holds.
//! The budgets are those written in docs/performance.md ("Idle cost"); each test prints its
//! figure and fails over its budget with a margin.
//!
//! The runs are a tenth-scale model of 10,000 idle queues (the target): 1,000 queues,
//! a sweep budget of 20 queues a second instead of 200 (each queue looked at every 50 s, as at
//! 10,000), and with `--listen` a read budget of 100 commands a second instead of 1,000. A
//! process's fixed costs (schedules' registry, its record's beats, the pulse) weigh ten times
//! more per queue here than at 10,000: the model errs on the strict side. Rescans every 10 s
//! instead of 30 s, for the same reason.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::observe::{delayq, free_port, Daemon, BIN};
use delayq::QueueKeys;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Idle queues of the model.
const QUEUES: usize = 1_000;
/// The sweep's queues a second: 200 at 10,000 queues, scaled.
const SWEEP_BUDGET: &str = "20";
/// `--metrics-read-budget` with `--listen`: 1,000 at 10,000 queues, scaled.
const READ_BUDGET: &str = "100";
/// Commands per idle queue per minute without `--listen`: 250 a second at 10,000 queues.
const IDLE_BUDGET: f64 = 1.5;
/// With `--listen`: 1,000 a second at 10,000 queues.
const LISTEN_BUDGET: f64 = 6.0;
/// Connections the process may hold, whatever the number of queues: its command connection
/// and its group's pub/sub connection (2 measured, with or without `--listen`), and one more
/// a reconnect may hold for a moment.
const CONNECTIONS_BUDGET: u64 = 3;
/// What a loaded machine may add to a count (a late tick that catches up, a rescan more).
const MARGIN: f64 = 1.2;
/// Script calls in two seconds that an idle process may make (the gauges' read once a second
/// with `--listen`), with room for one late transfer.
const IDLE_SCRIPT_CALLS: u64 = 4;
/// How long commands are counted for once the queues are discovered and transferred once.
const WINDOW: Duration = Duration::from_secs(20);

#[test]
fn idle_queues_cost_transfer_all_at_most_its_budget() {
    let cost = idle_cost(&[]);
    cost.check("transfer --all", IDLE_BUDGET);
}

#[test]
fn idle_queues_cost_transfer_all_listen_at_most_its_budget() {
    let port = free_port().to_string();
    let listen = format!("127.0.0.1:{port}");
    let cost = idle_cost(&["--listen", &listen, "--metrics-read-budget", READ_BUDGET]);
    cost.check("transfer --all --listen", LISTEN_BUDGET);
}

/// What one run counted.
struct Cost {
    /// Commands per queue per minute.
    per_queue_minute: f64,
    /// Commands by name over the window, for the failure's message.
    by_command: BTreeMap<String, u64>,
    /// Connections the process opened.
    connections: u64,
}

impl Cost {
    fn check(&self, what: &str, budget: f64) {
        let mut top: Vec<_> = self.by_command.iter().collect();
        top.sort_by(|a, b| b.1.cmp(a.1));
        top.truncate(8);
        println!(
            "budget: {what} over {QUEUES} idle queues: {:.2} commands per queue per minute \
             (budget {budget}); {} connections (budget {CONNECTIONS_BUDGET}); most sent: {top:?}",
            self.per_queue_minute, self.connections
        );
        assert!(
            self.per_queue_minute <= budget * MARGIN,
            "{what}: {:.2} commands per idle queue per minute, over the budget of {budget} \
             (x{MARGIN}); most sent in {WINDOW:?}: {top:?}",
            self.per_queue_minute
        );
        assert!(
            self.connections <= CONNECTIONS_BUDGET,
            "{what}: {} connections for {QUEUES} queues, over {CONNECTIONS_BUDGET}",
            self.connections
        );
    }
}

/// Runs `transfer --all` with `extra` options over [`QUEUES`] idle queues and counts.
fn idle_cost(extra: &[&str]) -> Cost {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let prefix = unique_name("idle");
    idle_queues(&redis, &prefix, QUEUES);
    let clients_before = connected_clients(&redis);
    let scripts_before = redis.command_calls("evalsha");
    let pattern = format!("{prefix}-*");
    let _daemon = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "transfer", "--all", "--match", &pattern])
            .args(["--rescan", "10s", "--sweep-budget", SWEEP_BUDGET])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Discovered, and the start's transfers done (a script call a queue): idle from now on.
    // Not every queue: one whose head the sweep's probe read before its first transfer ran
    // needs none (its wake-up is set from the probe); those left count against the budget,
    // which only makes the check stricter. Then until two seconds pass with no more script
    // calls than an idle process makes (one a second with `--listen`, none without): on a
    // loaded machine the start's last transfers run late, and are no idle cost.
    wait_until("the start's transfers done", PATIENCE, || {
        let calls = redis.command_calls("evalsha") - scripts_before;
        match calls >= (QUEUES as u64) * 95 / 100 {
            true => Ok(()),
            false => Err(format!("{calls} script calls")),
        }
    });
    let mut last = redis.command_calls("evalsha");
    wait_until("two seconds of idle script calls", PATIENCE, || {
        std::thread::sleep(Duration::from_secs(2));
        let now = redis.command_calls("evalsha");
        let settled = now - last <= IDLE_SCRIPT_CALLS;
        last = now;
        match settled {
            true => Ok(()),
            false => Err(format!("{} script calls so far", now - scripts_before)),
        }
    });
    let (before, began) = (commands(&redis), Instant::now());
    std::thread::sleep(WINDOW);
    let after = commands(&redis);
    let minutes = began.elapsed().as_secs_f64() / 60.0;
    let connections = connected_clients(&redis).saturating_sub(clients_before);
    let by_command: BTreeMap<String, u64> = after
        .iter()
        .map(|(name, calls)| {
            let was = before.get(name).copied().unwrap_or(0);
            (name.clone(), calls - was)
        })
        .filter(|(_, calls)| *calls > 0)
        .collect();
    let total: u64 = by_command.values().sum();
    Cost {
        per_queue_minute: total as f64 / QUEUES as f64 / minutes,
        by_command,
        connections,
    }
}

/// `count` queues named `PREFIX-N`, each with one value due in an hour, written by one script
/// (copies of one offered entry).
fn idle_queues(redis: &TestRedis, prefix: &str, count: usize) {
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
    let count = count.to_string();
    redis.cli(&[
        "EVAL",
        copy,
        "2",
        keys.timeout(),
        keys.order(),
        prefix,
        &count,
    ]);
}

/// Every command's calls so far (`INFO commandstats`), but `INFO`'s own: the test's.
fn commands(redis: &TestRedis) -> BTreeMap<String, u64> {
    redis
        .cli(&["INFO", "commandstats"])
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(":calls=")?;
            let calls = rest.split(',').next()?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .filter(|(name, _)| name != "info")
        .collect()
}

/// `connected_clients` of `INFO clients` (the asking connection included, before and after).
fn connected_clients(redis: &TestRedis) -> u64 {
    redis
        .cli(&["INFO", "clients"])
        .lines()
        .find_map(|line| line.strip_prefix("connected_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}
