//! Part 4: recurring schedules fired by three `delayq transfer` processes at once, one killed
//! with SIGKILL every few seconds, one firing as a process whose clock is 2 s ahead does. The
//! checker reads every occurrence off the target list and matches them to the occurrences the
//! schedules define: none duplicated, none missed, none early.

use super::{percentile, AnyResult, Env, Proc};
use crate::common::queue::bytes_queue;
use crate::common::{TestRedis, PATIENCE};
use delayq::codec::ByteArrayCodec;
use delayq::time::now_ms;
use delayq::DelayedQueue;
use delayq::{QueueOptions, Recurrence, Schedule};
use fred::clients::Client;
use fred::interfaces::ListInterface;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const QUEUE: &str = "recurring";
/// 250 due a second: more than one process fires of a queue per tick (100), so that no process
/// keeps up alone and the three read, and race for, the same due schedules. The interval is the
/// margin of the checker's fallback (see `judge`): an arrival must come before its schedule's
/// next occurrence when the list's order cannot tell the occurrences apart.
const SCHEDULES: usize = 2_500;
const EVERY_MS: i64 = 10_000;
const KILL_EVERY: Duration = Duration::from_secs(5);
/// How much earlier the "clock ahead" process fires: its lead is the default (2 s) plus this.
const SKEW: &str = "2s";
const SKEWED_LEAD: &str = "4s";

/// Every value read off the target list, in the list's order, with the time it was read (the
/// checker's clock, epoch ms).
type Arrived = Arc<Mutex<Vec<(String, i64)>>>;

/// Reads every value off the target list with the time it was read, until `stop`.
async fn receive(client: Client, arrived: Arrived, stop: delayq::CancellationToken) {
    while !stop.is_cancelled() {
        let first: Result<Option<(String, String)>, _> = tokio::select! {
            r = client.blpop(QUEUE, 0.2) => r,
            _ = stop.cancelled() => Ok(None),
        };
        let mut got = match first {
            Ok(Some((_, value))) => vec![value],
            Ok(None) => continue,
            // fred reports BLPOP's nil reply (nothing arrived) as a timeout.
            Err(e) if matches!(e.kind(), fred::error::ErrorKind::Timeout) => continue,
            Err(e) => {
                eprintln!("schedules checker: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let rest: Result<Option<Vec<String>>, _> = client.lpop(QUEUE, Some(1_000)).await;
        got.extend(rest.ok().flatten().unwrap_or_default());
        let now = now_ms();
        let mut list = arrived.lock().unwrap_or_else(|e| e.into_inner());
        list.extend(got.into_iter().map(|value| (value, now)));
    }
}

/// What the checker found, over every schedule.
#[derive(Default)]
struct Verdict {
    expected: usize,
    received: usize,
    duplicates: usize,
    missed: usize,
    early: usize,
    /// Arrivals a whole interval or more after their occurrence: a duplicate and a miss of one
    /// schedule could hide each other in the counts there.
    ambiguous: usize,
    /// The values arrived in exactly the order of the occurrences' times (all schedules'), so
    /// each arrival is its occurrence by its place in the list, no timing involved: then the
    /// counts cannot hide a duplicate behind a miss, however late anything was.
    in_order: bool,
    foreign: usize,
    lateness: Vec<i64>,
}

/// Matches each schedule's arrivals, in order, to its occurrences, in order. An arrival before
/// the occurrence it is matched to means something was delivered early (more values had arrived
/// by then than were due). The transfer moves due entries in due order and every occurrence is
/// offered ahead of its time, so the list should also hold all schedules' values in the order of
/// their occurrences' times (distinct: the starts are staggered).
fn judge(expected: &BTreeMap<String, Vec<i64>>, list: &[(String, i64)]) -> Verdict {
    let mut arrived: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (value, at) in list {
        arrived.entry(value.clone()).or_default().push(*at);
    }
    let mut defined: Vec<(i64, &str)> = expected
        .iter()
        .flat_map(|(value, times)| times.iter().map(move |t| (*t, value.as_str())))
        .collect();
    defined.sort_unstable();
    let in_order = defined.len() == list.len()
        && defined
            .iter()
            .zip(list)
            .all(|((_, want), (got, _))| *want == got.as_str());
    let mut v = Verdict {
        in_order,
        foreign: arrived
            .iter()
            .filter(|(value, _)| !expected.contains_key(*value))
            .map(|(_, times)| times.len())
            .sum(),
        ..Verdict::default()
    };
    for (value, occurrences) in expected {
        let mut times = arrived.get(value).cloned().unwrap_or_default();
        times.sort_unstable();
        v.expected += occurrences.len();
        v.received += times.len();
        v.duplicates += times.len().saturating_sub(occurrences.len());
        v.missed += occurrences.len().saturating_sub(times.len());
        for (i, (at, occurrence)) in times.iter().zip(occurrences).enumerate() {
            if at < occurrence {
                v.early += 1;
            }
            if occurrences.get(i + 1).is_some_and(|next| at >= next) {
                v.ambiguous += 1;
            }
            v.lateness.push(at - occurrence);
        }
    }
    v.lateness.sort_unstable();
    v
}

/// Sets the schedules: each every interval from a start a few seconds ahead, ending after `run`;
/// returns each one's value and its occurrences.
async fn set_schedules(
    schedules: &DelayedQueue<ByteArrayCodec>,
    run: Duration,
) -> AnyResult<BTreeMap<String, Vec<i64>>> {
    let start = now_ms() / 1_000 * 1_000 + 4_000;
    let end = start + run.as_millis() as i64;
    let mut expected = BTreeMap::new();
    for i in 0..SCHEDULES {
        let value = format!("occurrence-of-s{i}");
        // Staggered over the interval, so the schedules' firings spread over it.
        let first = start + i as i64 * EVERY_MS / SCHEDULES as i64;
        let schedule = Schedule::new(
            format!("s{i}"),
            Recurrence::every(Duration::from_millis(EVERY_MS as u64))?,
            value.clone().into_bytes(),
        )
        .start_ms(first)
        .end_ms(end);
        let mut occurrences = Vec::new();
        let mut at = schedule.occurrence_at_or_after(first)?;
        while let Some(t) = at.filter(|t| *t <= end) {
            occurrences.push(t);
            at = schedule.occurrence_at_or_after(t + 1)?;
        }
        schedules.schedules().set(schedule).await?;
        expected.insert(value, occurrences);
    }
    Ok(expected)
}

/// Waits until every schedule has ended and everything it offered was read off the list.
async fn wait_ended(
    url: &str,
    schedules: &DelayedQueue<ByteArrayCodec>,
    timeout: Duration,
) -> AnyResult<bool> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let ended = schedules
            .schedules()
            .list()
            .await
            .map(|infos| infos.iter().all(|info| info.next_ms.is_none()))
            .unwrap_or(false);
        if ended && super::wait_drained(url, QUEUE, deadline - Instant::now()).await? {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(false)
}

pub(crate) async fn part_schedules(
    env: &Env,
    run: Duration,
    report: &mut String,
) -> AnyResult<bool> {
    eprintln!("== part 4: recurring schedules, {} s", run.as_secs());
    let redis = tokio::task::block_in_place(|| TestRedis::start_with(&[]));
    let url = redis.url();
    let client = delayq::connect(&url).await?;
    let schedules = bytes_queue(&client, QUEUE, QueueOptions::default()).await;

    let mut steady = env.scheduler_with(&url, QUEUE, "fire-steady", &[])?;
    let mut ahead =
        env.scheduler_with(&url, QUEUE, "fire-ahead", &["--schedule-lead", SKEWED_LEAD])?;
    let mut killed: Proc = env.scheduler_with(&url, QUEUE, "fire-killed-0", &[])?;

    let arrived: Arrived = Arc::default();
    let stop = delayq::CancellationToken::new();
    let checker = tokio::spawn(receive(
        delayq::connect(&url).await?,
        arrived.clone(),
        stop.clone(),
    ));
    let expected = set_schedules(&schedules, run).await?;
    let last = expected
        .values()
        .flatten()
        .copied()
        .max()
        .unwrap_or_default();

    let started = Instant::now();
    let mut kills = 0usize;
    let mut next = started + KILL_EVERY;
    while now_ms() < last {
        tokio::time::sleep_until(next.into()).await;
        killed.kill9();
        kills += 1;
        killed = env.scheduler_with(&url, QUEUE, &format!("fire-killed-{kills}"), &[])?;
        next += KILL_EVERY;
    }
    let ended = wait_ended(&url, &schedules, PATIENCE).await?;
    stop.cancel();
    let _ = checker.await;
    for p in [&mut steady, &mut ahead, &mut killed] {
        p.kill9();
    }
    let arrived = std::mem::take(&mut *arrived.lock().unwrap_or_else(|e| e.into_inner()));
    let v = judge(&expected, &arrived);
    let pass = write_report(report, &v, run, kills, ended);
    drop(redis);
    Ok(pass)
}

/// Writes the part's section of the report; true when it passed.
fn write_report(
    report: &mut String,
    v: &Verdict,
    run: Duration,
    kills: usize,
    ended: bool,
) -> bool {
    let _ = writeln!(
        report,
        "## 4. Recurring schedules: three firing processes, one killed, one ahead\n\n\
         {SCHEDULES} interval schedules (every {} s, starts staggered over the interval) fired for {} s \
         by 3 `delayq transfer` processes: one steady, one firing as a process whose clock is \
         {SKEW} ahead does (`--schedule-lead {SKEWED_LEAD}`: the default lead plus {SKEW}), one \
         killed with SIGKILL every {} s and started again at once ({kills} kills). The checker \
         reads every value off the target list, matches each schedule's arrivals, in order, \
         to its occurrences, and compares the list's order with the occurrences' order.\n",
        EVERY_MS / 1_000,
        run.as_secs(),
        KILL_EVERY.as_secs(),
    );
    let _ = writeln!(report, "| | count |\n|---|---|");
    for (name, n) in [
        ("occurrences defined", v.expected),
        ("occurrences received (checked)", v.received),
        ("**duplicates**", v.duplicates),
        ("**missed**", v.missed),
        ("**early** (received before the occurrence's time)", v.early),
        (
            "received in exactly the occurrences' order (1: yes)",
            usize::from(v.in_order),
        ),
        ("received a whole interval late or more", v.ambiguous),
        ("received but never defined", v.foreign),
        ("SIGKILLs", kills),
    ] {
        let _ = writeln!(report, "| {name} | {n} |");
    }
    let _ = writeln!(
        report,
        "\nLateness (read off the list minus the occurrence's time): p50 {} ms, p99 {} ms, \
         max {} ms.\n",
        percentile(&v.lateness, 0.5),
        percentile(&v.lateness, 0.99),
        v.lateness.last().copied().unwrap_or_default()
    );
    let pass = ended
        && v.expected > 0
        && v.received == v.expected
        && v.duplicates == 0
        && v.missed == 0
        && v.early == 0
        && (v.in_order || v.ambiguous == 0)
        && v.foreign == 0;
    let _ = writeln!(
        report,
        "Result: **{}**{}\n",
        if pass { "PASS" } else { "FAIL" },
        if ended {
            ""
        } else {
            " (the schedules had not ended and drained within the harness's patience, 60 s)"
        }
    );
    pass
}
