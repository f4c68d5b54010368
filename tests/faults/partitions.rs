//! Part 5, partitions: a Sentinel deployment (1 master, 2 replicas, 3 sentinels) and the
//! workload (2 offer processes, 2 reliable consumers, 2 `delayq transfer` schedulers) in network
//! namespaces; links cut and healed under load; every process's history checked at the end.
//! Run twice: with plain offers (the baseline) and with durable ones.

use super::history::{self, FaultSpan, Verdict};
use super::netns::{leftovers, Link};
use super::topology::{wait_for, Deployment, SETTLE};
use super::{AnyResult, Env, Proc};
use delayq::time::now_ms;
use delayq::QueueKeys;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

const QUEUE: &str = "partitioned";
/// Reliable consumers' visibility: a cut consumer's values go back to the others after it.
const VISIBILITY_MS: u64 = 2_000;

/// How the offer processes offer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plain,
    /// `WAIT 1`: one of the two replicas.
    Durable,
    /// `Durability::every_replica()`: `WAIT 2` while both replicas were seen.
    EveryReplica,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Durable => "durable",
            Mode::EveryReplica => "every-replica",
        }
    }

    /// The replicas each offer waits for (`--durable N`), if any.
    fn replicas(self) -> Option<&'static str> {
        match self {
            Mode::Plain => None,
            Mode::Durable => Some("1"),
            Mode::EveryReplica => Some("all"),
        }
    }
}

/// The processes of the workload, by host.
struct Workload {
    offerers: Vec<Proc>,
    consumers: Vec<Proc>,
    schedulers: Vec<Proc>,
    histories: Vec<PathBuf>,
}

fn start_workload(env: &Env, d: &Deployment, mode: Mode, dir: &Path) -> AnyResult<Workload> {
    let url = d.url();
    let mut w = Workload {
        offerers: Vec::new(),
        consumers: Vec::new(),
        schedulers: Vec::new(),
        histories: Vec::new(),
    };
    for host in ["o1", "o2"] {
        let history = dir.join(format!("history-{host}.txt"));
        let mut command = d.command(host, &env.self_exe);
        command
            .args(["p-offer", "--url", &url, "--queue", QUEUE, "--host", host])
            .args(["--prefix", &format!("{}{host}", mode.name())])
            .args([
                "--batch",
                "4",
                "--interval-ms",
                "40",
                "--max-delay-ms",
                "2000",
            ])
            .args(["--timeout-ms", "5000"])
            .arg("--history")
            .arg(&history)
            .stdin(Stdio::piped());
        if let Some(replicas) = mode.replicas() {
            command.args(["--durable", replicas]);
        }
        w.offerers.push(Proc::spawn(
            host,
            command,
            &dir.join(format!("{host}.log")),
        )?);
        w.histories.push(history);
    }
    for host in ["c1", "c2"] {
        let history = dir.join(format!("history-{host}.txt"));
        let mut command = d.command(host, &env.self_exe);
        command
            .args(["p-work", "--url", &url, "--queue", QUEUE, "--host", host])
            .args(["--concurrency", "4", "--job-ms", "5"])
            .args(["--visibility-ms", &VISIBILITY_MS.to_string()])
            .arg("--history")
            .arg(&history)
            .stdin(Stdio::piped());
        w.consumers.push(Proc::spawn(
            host,
            command,
            &dir.join(format!("{host}.log")),
        )?);
        w.histories.push(history);
    }
    for host in ["t1", "t2"] {
        let mut command = d.command(host, &env.delayq_bin);
        command
            .args(["--url", &url, "transfer", QUEUE])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null());
        w.schedulers.push(Proc::spawn(
            host,
            command,
            &dir.join(format!("{host}.log")),
        )?);
    }
    Ok(w)
}

/// What a fault measured besides its span.
struct Measured {
    span: FaultSpan,
    /// When the sentinels' majority named a new master, if they did.
    promoted_at: Option<i64>,
    /// The hosts whose offers count as the majority side's.
    majority_offerers: Vec<&'static str>,
    /// When the links were healed. The span ends later, when the set is healthy again: until
    /// the sentinels demote it, an old master reached again takes writes (acks too) that it
    /// drops on resyncing.
    healed_at: i64,
}

fn sleep_until(at: i64) {
    let wait = at - now_ms();
    if wait > 0 {
        std::thread::sleep(Duration::from_millis(wait as u64));
    }
}

/// The master cut off together with a minority (an offerer, a consumer, a scheduler) until the
/// others promoted a replica and 3 s more, then healed: the old master must rejoin as a replica.
fn isolation(d: &Deployment) -> AnyResult<Measured> {
    let old = d.majority_master()?;
    let hosts = vec![old.to_string(), "o1".into(), "c1".into(), "t1".into()];
    let start = now_ms();
    for h in &hosts {
        d.net.set(h, Link::Island)?;
    }
    let (new, promoted_at) = d.wait_promotion(old)?;
    sleep_until(promoted_at + 3_000);
    for h in &hosts {
        d.net.set(h, Link::Main)?;
    }
    let healed_at = now_ms();
    eprintln!(
        "isolation: {old} -> {new}, promoted after {} ms",
        promoted_at - start
    );
    d.wait_healthy(new)?;
    Ok(Measured {
        span: FaultSpan {
            kind: "isolation".into(),
            start,
            end: now_ms(),
            hosts,
        },
        promoted_at: Some(promoted_at),
        majority_offerers: vec!["o2"],
        healed_at,
    })
}

/// A consumer's link silently dropped (its blocked take's connection goes half-open) while the
/// master is cut off alone and the sentinels promote a replica; both healed 2 s after the
/// promotion.
fn consumer_cut(d: &Deployment) -> AnyResult<Measured> {
    let old = d.majority_master()?;
    let start = now_ms();
    d.net.set("c2", Link::Blackhole)?;
    sleep_until(start + 1_000);
    d.net.set(old, Link::Island)?;
    let (new, promoted_at) = d.wait_promotion(old)?;
    sleep_until(promoted_at + 2_000);
    d.net.set(old, Link::Main)?;
    d.net.set("c2", Link::Main)?;
    let healed_at = now_ms();
    eprintln!("consumer cut: {old} -> {new}");
    d.wait_healthy(new)?;
    Ok(Measured {
        span: FaultSpan {
            kind: "consumer-cut".into(),
            start,
            end: now_ms(),
            hosts: vec!["c2".into(), old.to_string()],
        },
        promoted_at: Some(promoted_at),
        majority_offerers: vec!["o1", "o2"],
        healed_at,
    })
}

/// No partition: `SENTINEL FAILOVER` (a planned switch). The old master keeps taking writes,
/// and its other replica keeps confirming them, until the sentinels reconfigure that replica.
fn forced_failover(d: &Deployment) -> AnyResult<Measured> {
    let old = d.majority_master()?;
    let start = now_ms();
    let (new, promoted_at) = d.forced_failover(old)?;
    let healed_at = now_ms();
    eprintln!("forced failover: {old} -> {new}");
    d.wait_healthy(new)?;
    Ok(Measured {
        span: FaultSpan {
            kind: "forced-failover".into(),
            start,
            end: now_ms(),
            hosts: Vec::new(),
        },
        promoted_at: Some(promoted_at),
        majority_offerers: vec!["o1", "o2"],
        healed_at,
    })
}

/// No partition: the planned failover of the operators' recipe (`docs/durability.md`): writes
/// paused on the master until both replicas have everything, `SENTINEL FAILOVER`, the old
/// master demoted as soon as the sentinels name the new one, then unpaused. Nothing
/// acknowledged may be lost, in either mode. `FAULTS_PLANNED_WITHOUT_PAUSE=1` leaves the pause
/// out (the run must then fail).
fn planned_failover(d: &Deployment) -> AnyResult<Measured> {
    let pause = std::env::var("FAULTS_PLANNED_WITHOUT_PAUSE").map_or(true, |v| v != "1");
    let old = d.majority_master()?;
    let start = now_ms();
    let (new, promoted_at) = d.planned_failover(old, pause)?;
    let healed_at = now_ms();
    eprintln!(
        "planned failover: {old} -> {new}, {} ms from start to the old master's demotion ({})",
        healed_at - start,
        if pause { "writes paused" } else { "no pause" }
    );
    d.wait_healthy(new)?;
    Ok(Measured {
        span: FaultSpan {
            kind: "planned-failover".into(),
            start,
            end: now_ms(),
            hosts: Vec::new(),
        },
        promoted_at: Some(promoted_at),
        majority_offerers: vec!["o1", "o2"],
        healed_at,
    })
}

/// A scheduler's link silently dropped for 5 s (its channel subscription and its connection go
/// half-open) while the other one runs.
fn scheduler_cut(d: &Deployment) -> AnyResult<Measured> {
    let start = now_ms();
    d.net.set("t1", Link::Blackhole)?;
    sleep_until(start + 5_000);
    d.net.set("t1", Link::Main)?;
    let healed_at = now_ms();
    Ok(Measured {
        span: FaultSpan {
            kind: "scheduler-cut".into(),
            start,
            end: healed_at,
            hosts: vec!["t1".into()],
        },
        promoted_at: None,
        majority_offerers: Vec::new(),
        healed_at,
    })
}

/// The master's link flapping: 6 times down 700 ms, up 700 ms (the sentinels, after 1.5 s
/// without replies, may or may not fail over).
fn flapping(d: &Deployment) -> AnyResult<Measured> {
    let old = d.majority_master()?;
    let start = now_ms();
    for i in 0..6 {
        d.net.set(old, Link::Down)?;
        sleep_until(start + i * 1_400 + 700);
        d.net.set(old, Link::Main)?;
        sleep_until(start + (i + 1) * 1_400);
    }
    let healed_at = now_ms();
    // Let the sentinels finish what they started before judging who is master.
    let master = d.wait_settled()?;
    let promoted_at = (master != old).then(now_ms);
    eprintln!("flapping: master {old} -> {master}");
    Ok(Measured {
        span: FaultSpan {
            kind: "flapping".into(),
            start,
            end: now_ms(),
            hosts: vec![old.to_string()],
        },
        promoted_at,
        majority_offerers: vec!["o1", "o2"],
        healed_at,
    })
}

/// Closes a child's stdin (its signal to stop) and waits up to `grace` for it.
fn finish(proc: &mut Proc, grace: Duration) {
    drop(proc.child.stdin.take());
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = proc.child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    proc.kill9();
}

/// Waits until nothing is pending, ready or in flight (5 quiet polls in a row).
fn wait_drained(d: &Deployment) -> AnyResult<()> {
    let keys = QueueKeys::new(QUEUE);
    let master = d.majority_master()?;
    let mut quiet = 0;
    wait_for("the queue drained", SETTLE, || {
        let pending = d.cli(master, &["ZCARD", keys.timeout()])?;
        let ready = d.cli(master, &["LLEN", keys.target()])?;
        let inflight = d.cli(master, &["ZCARD", keys.inflight()])?;
        if [&pending, &ready, &inflight]
            .iter()
            .all(|n| n.trim() == "0")
        {
            quiet += 1;
        } else {
            quiet = 0;
        }
        if quiet >= 5 {
            Ok(())
        } else {
            std::thread::sleep(Duration::from_millis(200));
            Err(format!(
                "pending {pending}, ready {ready}, in flight {inflight}"
            ))
        }
    })
}

/// Every value still anywhere in the queue's keys.
fn left_in_redis(d: &Deployment) -> AnyResult<Vec<String>> {
    let keys = QueueKeys::new(QUEUE);
    let master = d.majority_master()?;
    let mut raw = String::new();
    raw += &d.cli(master, &["ZRANGE", keys.timeout(), "0", "-1"])?;
    raw += &d.cli(master, &["LRANGE", keys.target(), "0", "-1"])?;
    raw += &d.cli(master, &["HVALS", keys.inflight_data()])?;
    Ok(history::values_in(&raw))
}

/// `FAULTS_PLANT=loss,duplicate` plants what the checker must catch, away from any fault: an
/// acknowledged offer removed from the pending zset (`ZPOPMIN`), an acked value pushed onto
/// the target list again. The run must then fail.
fn plant(d: &Deployment, w: &Workload) -> AnyResult<()> {
    let planted = std::env::var("FAULTS_PLANT").unwrap_or_default();
    if planted.is_empty() {
        return Ok(());
    }
    let keys = QueueKeys::new(QUEUE);
    let master = d.majority_master()?;
    if planted.contains("loss") {
        let popped = d.cli(master, &["ZPOPMIN", keys.timeout()])?;
        eprintln!("planted a loss: {:?}", history::values_in(&popped));
    }
    if planted.contains("duplicate") {
        let events = history::read_events(&w.histories)?;
        let acked = events
            .iter()
            .find(|e| e.kind == "ack" && e.outcome == "ok")
            .ok_or("nothing acked yet to plant a duplicate with")?;
        d.cli(master, &["RPUSH", keys.target(), &acked.value])?;
        eprintln!("planted a duplicate: {}", acked.value);
    }
    // Faults' windows begin 1 s before them: keep the planted values out of them.
    std::thread::sleep(Duration::from_secs(3));
    Ok(())
}

type Scenario = fn(&Deployment) -> AnyResult<Measured>;
const SCENARIOS: [Scenario; 6] = [
    isolation,
    consumer_cut,
    scheduler_cut,
    flapping,
    forced_failover,
    planned_failover,
];

/// One mode's run: `rounds` of the six faults, 3 s of plain load between them, then the drain
/// and the check. Returns the verdict and the faults measured.
fn run_mode(
    env: &Env,
    prefix: &str,
    mode: Mode,
    rounds: usize,
) -> AnyResult<(Verdict, Vec<Measured>, Vec<history::Event>)> {
    let dir = env.workdir.join(format!("partitions-{}", mode.name()));
    std::fs::create_dir_all(&dir)?;
    let d = Deployment::start(&format!("{prefix}-{}", mode.name()), &dir)?;
    let mut w = start_workload(env, &d, mode, &dir)?;
    let mut measured = Vec::new();
    let mut faults_log = String::new();
    std::thread::sleep(Duration::from_secs(4));
    plant(&d, &w)?;
    for round in 0..rounds {
        for scenario in SCENARIOS {
            let m = scenario(&d)?;
            faults_log += &m.span.line();
            measured.push(m);
            eprintln!(
                "partitions ({}): round {round}: {} done",
                mode.name(),
                measured.len()
            );
            std::thread::sleep(Duration::from_secs(3));
        }
    }
    std::fs::write(dir.join("faults.txt"), &faults_log)?;
    for p in &mut w.offerers {
        finish(p, Duration::from_secs(10));
    }
    d.net.heal_all()?;
    wait_drained(&d)?;
    for p in &mut w.consumers {
        finish(p, Duration::from_secs(5));
    }
    let left = left_in_redis(&d)?;
    drop(w.schedulers);
    let events = history::read_events(&w.histories)?;
    let spans: Vec<FaultSpan> = measured.iter().map(|m| m.span.clone()).collect();
    let verdict = history::check(&events, &spans, &left);
    Ok((verdict, measured, events))
}

/// Per promoting fault: ms from the promotion to the first acknowledged offer a majority-side
/// offerer invoked after it (None: no such offer before the next fault).
fn acceptance_times(measured: &[Measured], events: &[history::Event]) -> Vec<Option<i64>> {
    measured
        .iter()
        .filter_map(|m| {
            let promoted = m.promoted_at?;
            Some(
                events
                    .iter()
                    .filter(|e| e.kind == "offer" && e.outcome == "ok" && e.invoked >= promoted)
                    .filter(|e| m.majority_offerers.contains(&e.host.as_str()))
                    .map(|e| e.completed - promoted)
                    .min(),
            )
        })
        .collect()
}

/// Per consumer cut: ms from the heal to the cut consumer's next take.
fn consumer_bounds(measured: &[Measured], events: &[history::Event]) -> Vec<Option<i64>> {
    measured
        .iter()
        .filter(|m| m.span.kind == "consumer-cut")
        .map(|m| {
            events
                .iter()
                .filter(|e| e.kind == "take" && m.span.hosts.contains(&e.host))
                .filter(|e| e.completed >= m.healed_at)
                .map(|e| e.completed - m.healed_at)
                .min()
        })
        .collect()
}

fn count_of(list: &[(String, String)], kind: &str) -> usize {
    list.iter().filter(|(_, k)| k == kind).count()
}

fn ms_list(values: &[Option<i64>]) -> String {
    let parts: Vec<String> = values
        .iter()
        .map(|v| v.map_or_else(|| "none".into(), |ms| format!("{ms}")))
        .collect();
    parts.join(", ")
}

/// The mode's table and figures; returns whether it passed.
fn report_mode(
    report: &mut String,
    mode: Mode,
    v: &Verdict,
    measured: &[Measured],
    events: &[history::Event],
) -> bool {
    let _ = writeln!(
        report,
        "#### {} offers\n\n{} acknowledged and {} unknown offers, {} values delivered ({} \
         unknown ones among them), {} at-least-once redeliveries (the first delivery not acked, or \
         acked by a consumer that was cut off).\n\n\
         | fault | times | acknowledged offers lost | delivered twice after an ack | ... after an ack lost in a failover | early | stuck |\n|---|---|---|---|---|---|---|",
        mode.name(),
        v.offered_ok,
        v.offered_unk,
        v.delivered,
        v.unk_delivered,
        v.redelivered
    );
    let mut kinds: Vec<&str> = SCENARIO_KINDS.to_vec();
    kinds.push("none");
    for kind in kinds {
        let times = measured.iter().filter(|m| m.span.kind == kind).count();
        let _ = writeln!(
            report,
            "| {kind} | {times} | {} | {} | {} | {} | {} |",
            count_of(&v.lost, kind),
            count_of(&v.duplicated, kind),
            count_of(&v.redelivered_after_lost_ack, kind),
            count_of(&v.early, kind),
            count_of(&v.stuck, kind),
        );
    }
    let accepted = acceptance_times(measured, events);
    let bounds = consumer_bounds(measured, events);
    let _ = writeln!(
        report,
        "\nFrom each promotion to the first acknowledged offer on the majority side (ms): {}.\n\
         From each consumer cut's heal to that consumer's next take (ms): {}.\n",
        ms_list(&accepted),
        ms_list(&bounds)
    );
    // Losses in a promoting fault are what asynchronous replication explains, without durable
    // offers. With them nothing acknowledged may be lost in a partition; a forced failover's
    // are reported: `WAIT 1` counts the replica that is not promoted, which keeps following the
    // old master (and confirming its writes) until the sentinels reconfigure it. A planned
    // failover (writes paused until the replicas caught up) may lose nothing in either mode:
    // `fault_promotes` leaves it out.
    // Waiting for every replica, nothing acknowledged may be lost, a forced failover's writes
    // included (the promoted replica stops following the old master, which then has too few
    // replicas to confirm anything); the price is availability: a promotion is not followed by
    // an acknowledged offer until the old master rejoins as a replica, so slow ones are
    // reported, not failed.
    let explained = |kind: &str| match mode {
        Mode::Plain => history::fault_promotes(kind),
        Mode::Durable => kind == "forced-failover",
        Mode::EveryReplica => false,
    };
    let unexplained_loss = v.lost.iter().filter(|(_, k)| !explained(k)).count();
    let slow = accepted.iter().filter(|a| a.is_none_or(|ms| ms > 10_000));
    let (slow, slow_fails) = match mode {
        Mode::Durable => (slow.count(), true),
        Mode::EveryReplica => (slow.count(), false),
        Mode::Plain => (0, false),
    };
    let ok = unexplained_loss == 0
        && v.duplicated.is_empty()
        && v.early.is_empty()
        && v.stuck.is_empty()
        && (slow == 0 || !slow_fails)
        && bounds.iter().all(Option::is_some);
    let _ = writeln!(
        report,
        "Unexplained: {unexplained_loss} lost, {} duplicated, {} early, {} stuck; {slow} \
         promotions without an acknowledged offer within 10 s. Result: **{}**\n",
        v.duplicated.len(),
        v.early.len(),
        v.stuck.len(),
        if ok { "PASS" } else { "FAIL" }
    );
    ok
}

/// The modes run, side by side: all of them, or those `FAULTS_PARTITION_MODES` names
/// (comma-separated: `plain`, `durable`, `every-replica`).
fn modes() -> Vec<Mode> {
    let all = [Mode::Plain, Mode::Durable, Mode::EveryReplica];
    match std::env::var("FAULTS_PARTITION_MODES") {
        Ok(names) if !names.trim().is_empty() => all
            .into_iter()
            .filter(|m| names.split(',').any(|n| n.trim() == m.name()))
            .collect(),
        _ => all.to_vec(),
    }
}

const SCENARIO_KINDS: [&str; 6] = [
    "isolation",
    "consumer-cut",
    "scheduler-cut",
    "flapping",
    "forced-failover",
    "planned-failover",
];

/// The part: both modes, `rounds` rounds of the six faults each.
pub fn part_partitions(
    env: &Env,
    long: bool,
    prefix: &str,
    report: &mut String,
) -> AnyResult<bool> {
    let rounds = if long { 5 } else { 1 };
    let _ = writeln!(
        report,
        "### 5. Partitions (network namespaces)\n\n1 master, 2 replicas, 3 sentinels \
         (down-after 1.5 s), 2 offer processes (4 values every 40 ms, delays 0-2 s), 2 reliable \
         consumers, 2 `delayq transfer` processes, each on its own host of a private network; \
         {rounds} round(s) of: the master isolated with an offerer, a consumer and a scheduler \
         (the rest promotes a replica; healed 3 s later), a consumer's link dropped silently \
         while the master alone is cut off and a replica promoted, a scheduler's link dropped \
         silently for 5 s, the master's link flapping 6 times, and (no partition) a \
         `SENTINEL FAILOVER` and a planned one (writes paused on the master until the replicas \
         caught up, the old master demoted as soon as the sentinels name the new one, then \
         unpaused); 3 s of plain load between faults. Plain offers, then durable \
         ones (`Durability::replicas(1)`, 1 s timeout), then ones waiting for every replica \
         (`Durability::every_replica()`), each on a fresh deployment.\n"
    );
    let mut pass = true;
    for mode in modes() {
        let started = std::time::Instant::now();
        let (verdict, measured, events) = run_mode(env, prefix, mode, rounds)?;
        let left = leftovers(prefix);
        if !left.is_empty() {
            let _ = writeln!(report, "Namespaces left behind: {left:?}\n");
            pass = false;
        }
        pass &= report_mode(report, mode, &verdict, &measured, &events);
        eprintln!(
            "partitions ({}): {:.0} s",
            mode.name(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(pass)
}
