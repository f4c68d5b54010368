//! Fault-injection and soak driver for delayq (the `delayq-faults` crate of the workspace).
//! `tests/faults/run.sh` builds and runs it;
//! see `tests/faults/README.md` for what each part does and how the figures are computed.
//!
//! ```text
//! delayq-soak run [--long] [--parts soak,failover,consumers,schedules,partitions] [--schedule-secs S] [--net-prefix P]
//!          --delayq-bin PATH [--java-cp FILE] [--java-src FILE] --workdir DIR --results FILE
//! delayq-soak offer --url U --queue Q --prefix P --count N --duration-ms D --max-delay-ms M --out FILE
//! delayq-soak work --url U --queue Q --log FILE --concurrency C --job-ms J --visibility-ms V
//! delayq-soak p-offer|p-work ... --history FILE --host H   (the partitions part's, history.rs)
//! ```
//!
//! `run` is the orchestrator: it starts real `redis-server` / `redis-sentinel` processes (the
//! test harness of `tests/common`), spawns `offer` and `work` child processes of this very
//! binary, `delayq transfer` scheduler processes and the Java Redisson scheduler, injects the
//! faults, checks every value and writes a Markdown report. It exits non-zero on any loss or
//! duplicate that Redis's own guarantees do not explain.

#[path = "../common/mod.rs"]
mod common;
mod history;
mod netns;
mod partitions;
mod schedules;
mod topology;

use common::{TestCluster, TestRedis, TestSentinel};
use delayq::codec::StringCodec;
use delayq::time::now_ms;
use delayq::{DelayedQueue, ReliableConfig};
use fred::clients::Client;
use fred::interfaces::ClientLike as _;
use fred::interfaces::{ListInterface, LuaInterface, SortedSetsInterface};
use fred::types::lists::LMoveDirection;
use rand::Rng;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type AnyResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// `--key value` options and `--flag`s.
struct Opts {
    values: HashMap<String, String>,
    flags: HashSet<String>,
}

impl Opts {
    fn parse(args: &[String]) -> Opts {
        let mut values = HashMap::new();
        let mut flags = HashSet::new();
        let mut i = 0;
        while i < args.len() {
            let key = args[i].trim_start_matches("--").to_string();
            match args.get(i + 1) {
                Some(next) if !next.starts_with("--") => {
                    values.insert(key, next.clone());
                    i += 2;
                }
                _ => {
                    flags.insert(key);
                    i += 1;
                }
            }
        }
        Opts { values, flags }
    }

    fn str(&self, key: &str) -> AnyResult<String> {
        self.values
            .get(key)
            .cloned()
            .ok_or_else(|| format!("missing --{key}").into())
    }

    fn num(&self, key: &str) -> AnyResult<u64> {
        Ok(self.str(key)?.parse()?)
    }

    fn flag(&self, key: &str) -> bool {
        self.flags.contains(key)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("soak: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let opts = Opts::parse(args.get(1..).unwrap_or(&[]));
    let result = match args.first().map(String::as_str) {
        Some("offer") => runtime.block_on(offer_main(opts)),
        Some("work") => runtime.block_on(work_main(opts)),
        Some("p-offer") => runtime.block_on(history::offer_main(opts)),
        Some("p-work") => runtime.block_on(history::work_main(opts)),
        Some("check-history") => history::check_main(opts),
        Some("run") => runtime.block_on(run_main(opts)),
        _ => Err("usage: soak run|offer|work [options] (see tests/faults/soak.rs)".into()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Child process: offer values.

/// Offers `count` unique values `PREFIX-I-DUE` (DUE: intended due time, epoch ms) with random
/// delays, paced over `duration-ms`, in `offer_all` batches. Every value gets a line
/// `ok|unk VALUE REPLY_MS` in `out`: `ok` when the call returned success, `unk` when it failed or
/// timed out (the reply may have been lost after Redis ran the script).
async fn offer_main(opts: Opts) -> AnyResult<bool> {
    let url = opts.str("url")?;
    let prefix = opts.str("prefix")?;
    let count = opts.num("count")?;
    let duration = Duration::from_millis(opts.num("duration-ms")?);
    let max_delay = opts.num("max-delay-ms")?;
    let batch = opts.num("batch").unwrap_or(20).max(1);
    let client = delayq::connect(&url).await?;
    let queue = DelayedQueue::builder(client.clone(), opts.str("queue")?, StringCodec)
        .transfer(false)
        .build()
        .await?;
    let mut out = BufWriter::new(File::create(opts.str("out")?)?);
    let started = Instant::now();
    let mut rng = rand::rng();
    let mut errors = 0u64;
    let mut i = 0u64;
    while i < count {
        let n = batch.min(count - i);
        let now = now_ms();
        let items: Vec<(String, Duration)> = (0..n)
            .map(|k| {
                let delay = rng.random_range(0..=max_delay);
                (
                    format!("{prefix}-{}-{}", i + k, now + delay as i64),
                    Duration::from_millis(delay),
                )
            })
            .collect();
        let reply = tokio::time::timeout(Duration::from_secs(20), queue.offer_all(&items)).await;
        let tag = match reply {
            Ok(Ok(())) => "ok",
            Ok(Err(e)) => {
                errors += 1;
                if errors <= 20 {
                    eprintln!("offer {prefix}: error (values unknown): {e}");
                }
                "unk"
            }
            Err(_) => {
                errors += 1;
                eprintln!("offer {prefix}: no reply within 20 s (values unknown)");
                "unk"
            }
        };
        let at = now_ms();
        for (value, _) in &items {
            writeln!(out, "{tag} {value} {at}")?;
        }
        out.flush()?;
        i += n;
        let due = started + duration.mul_f64(i as f64 / count as f64);
        tokio::time::sleep_until(due.into()).await;
    }
    out.flush()?;
    eprintln!("offer {prefix}: done, {count} values, {errors} failed calls");
    Ok(true)
}

// ---------------------------------------------------------------------------------------------
// Child process: reliable consumer.

/// Takes values with delayq's reliable consumer, `concurrency` at a time, "works" `job-ms` on
/// each and acks it. Log lines (appended and flushed one by one, so a SIGKILL loses at most the
/// line being written): `T VALUE ATTEMPT` after a take, `A VALUE` after a successful ack, `L VALUE`
/// when the ack found the value no longer ours, `E VALUE ERROR` when the ack failed.
async fn work_main(opts: Opts) -> AnyResult<bool> {
    let client = delayq::connect(&opts.str("url")?).await?;
    let queue = DelayedQueue::builder(client.clone(), opts.str("queue")?, StringCodec)
        .build()
        .await?;
    let config = ReliableConfig::default()
        .with_visibility(Duration::from_millis(opts.num("visibility-ms")?))
        .with_wait_slice(Duration::from_millis(200))
        .with_reap_interval(Duration::from_millis(200));
    let consumer = Arc::new(queue.reliable_consumer_with(config).await?);
    let log = Arc::new(Mutex::new(
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(opts.str("log")?)?,
    ));
    let job = Duration::from_millis(opts.num("job-ms")?);
    let write = |log: &Mutex<File>, line: String| {
        let mut file = log.lock().unwrap_or_else(|e| e.into_inner());
        let _ = file.write_all(line.as_bytes());
    };
    let mut tasks = Vec::new();
    for _ in 0..opts.num("concurrency")? {
        let consumer = consumer.clone();
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let delivery = match consumer.take().await {
                    Ok(d) => d,
                    Err(e) => {
                        eprintln!("work: take failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let value = delivery
                    .value()
                    .cloned()
                    .unwrap_or_else(|| format!("<undecodable:{}>", delivery.raw().len()));
                write(
                    &log,
                    format!("T {value} {} {}\n", delivery.attempt(), delivery.id()),
                );
                tokio::time::sleep(job).await;
                match delivery.ack().await {
                    Ok(true) => write(&log, format!("A {value}\n")),
                    Ok(false) => write(&log, format!("L {value}\n")),
                    Err(e) => write(&log, format!("E {value} {e}\n")),
                }
            }
        }));
    }
    // Runs until killed (SIGKILL mid-job is the point) or until stdin closes.
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    })
    .await?;
    Ok(true)
}

// ---------------------------------------------------------------------------------------------
// Child processes, owned by the orchestrator.

/// A child process in its own process group, killed (the whole group) when dropped.
struct Proc {
    name: String,
    child: Child,
}

impl Proc {
    /// Spawns `command`. Call only from the orchestrator's main thread: children get
    /// `PR_SET_PDEATHSIG`, which fires when the spawning *thread* exits.
    fn spawn(name: &str, mut command: Command, log: &Path) -> AnyResult<Proc> {
        let out = OpenOptions::new().create(true).append(true).open(log)?;
        command
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0);
        #[cfg(target_os = "linux")]
        {
            extern "C" {
                fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
            }
            // SAFETY: prctl is a plain syscall wrapper; nothing allocates between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    if prctl(1, 9 as std::ffi::c_ulong) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        Ok(Proc {
            name: name.to_string(),
            child,
        })
    }

    fn signal(&self, sig: &str) {
        let _ = Command::new("kill")
            .args([sig, "--", &format!("-{}", self.child.id())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// SIGKILL to the whole group, then reap.
    fn kill9(&mut self) {
        self.signal("-9");
        let _ = self.child.wait();
    }

    /// SIGTERM, up to `grace` to exit, then SIGKILL.
    fn stop(&mut self, grace: Duration) {
        self.signal("-TERM");
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill9();
    }

    /// Waits for the process to exit by itself; false when it failed.
    fn wait_ok(&mut self) -> bool {
        matches!(self.child.wait(), Ok(s) if s.success())
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill9();
        }
    }
}

struct Env {
    delayq_bin: PathBuf,
    java_cp: Option<String>,
    java_src: PathBuf,
    workdir: PathBuf,
    self_exe: PathBuf,
}

impl Env {
    fn scheduler(&self, url: &str, queue: &str, tag: &str) -> AnyResult<Proc> {
        self.scheduler_with(url, queue, tag, &[])
    }

    /// A `delayq transfer` process with `extra` options.
    fn scheduler_with(&self, url: &str, queue: &str, tag: &str, extra: &[&str]) -> AnyResult<Proc> {
        let mut command = Command::new(&self.delayq_bin);
        command
            .args(["--url", url, "transfer", queue])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null());
        Proc::spawn(
            &format!("delayq transfer ({tag})"),
            command,
            &self.workdir.join(format!("{tag}.log")),
        )
    }

    /// The Java Redisson scheduler; waits until it printed `ready`.
    fn java_scheduler(&self, url: &str, queue: &str, tag: &str) -> AnyResult<Option<Proc>> {
        let Some(cp) = &self.java_cp else {
            return Ok(None);
        };
        let log = self.workdir.join(format!("{tag}.log"));
        let mut command = Command::new("java");
        command
            .args(["-Xmx256m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"])
            .arg("-cp")
            .arg(cp)
            .arg(&self.java_src)
            .args([url, queue])
            .stdin(Stdio::piped());
        let proc = Proc::spawn("java scheduler", command, &log)?;
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.lines().any(|l| l.trim() == "ready") {
                return Ok(Some(proc));
            }
            if Instant::now() > deadline {
                return Err(format!("the Java scheduler did not start; {}", log.display()).into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn offerer(
        &self,
        url: &str,
        queue: &str,
        prefix: &str,
        count: u64,
        duration: Duration,
        max_delay_ms: u64,
    ) -> AnyResult<(Proc, PathBuf)> {
        let out = self.workdir.join(format!("offers-{prefix}.txt"));
        let mut command = Command::new(&self.self_exe);
        command
            .args(["offer", "--url", url, "--queue", queue, "--prefix", prefix])
            .args(["--count", &count.to_string()])
            .args(["--duration-ms", &duration.as_millis().to_string()])
            .args(["--max-delay-ms", &max_delay_ms.to_string()])
            .arg("--out")
            .arg(&out)
            .stdin(Stdio::null());
        let proc = Proc::spawn(
            &format!("offer {prefix}"),
            command,
            &self.workdir.join(format!("offer-{prefix}.log")),
        )?;
        Ok((proc, out))
    }

    fn worker(&self, url: &str, queue: &str, tag: &str, job_ms: u64) -> AnyResult<(Proc, PathBuf)> {
        let log = self.workdir.join(format!("work-{tag}.txt"));
        let mut command = Command::new(&self.self_exe);
        command
            .args(["work", "--url", url, "--queue", queue, "--log"])
            .arg(&log)
            .args(["--concurrency", "4", "--job-ms", &job_ms.to_string()])
            .args(["--visibility-ms", "2000"])
            .stdin(Stdio::piped());
        let proc = Proc::spawn(
            &format!("work {tag}"),
            command,
            &self.workdir.join(format!("work-{tag}.log")),
        )?;
        Ok((proc, log))
    }
}

// ---------------------------------------------------------------------------------------------
// The checker: moves every value off the target list into a record list, atomically.

/// Moves up to `ARGV[1]` values from the target list to the record list in one atomic step, so
/// a lost reply loses nothing: the values are in the record list either way.
const MOVE_SCRIPT: &str = "local v = redis.call('lpop', KEYS[1], tonumber(ARGV[1])) \
    if not v then return 0 end \
    redis.call('rpush', KEYS[2], unpack(v)) \
    return #v";

/// What the checker saw arrive, with the time it first saw each value.
#[derive(Default)]
struct Arrivals {
    first_seen: HashMap<String, i64>,
    errors: u64,
    last_error: String,
}

struct Checker {
    arrivals: Arc<Mutex<Arrivals>>,
    stop: delayq::CancellationToken,
    task: tokio::task::JoinHandle<()>,
    record_key: String,
}

impl Checker {
    async fn start(url: &str, queue: &str) -> AnyResult<Checker> {
        let client = delayq::connect(url).await?;
        // Same hash slot as the queue (the target list's name is the hash tag of its keys).
        let record_key = format!("{{{queue}}}:soak-record");
        let arrivals = Arc::new(Mutex::new(Arrivals::default()));
        let stop = delayq::CancellationToken::new();
        let task = tokio::spawn(checker_loop(
            client,
            queue.to_string(),
            record_key.clone(),
            arrivals.clone(),
            stop.clone(),
        ));
        Ok(Checker {
            arrivals,
            stop,
            task,
            record_key,
        })
    }

    async fn finish(self) -> Arrivals {
        self.stop.cancel();
        let _ = self.task.await;
        Arc::try_unwrap(self.arrivals)
            .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
            .unwrap_or_default()
    }
}

async fn checker_loop(
    client: Client,
    target: String,
    record: String,
    arrivals: Arc<Mutex<Arrivals>>,
    stop: delayq::CancellationToken,
) {
    let mut read = 0i64;
    let note = |e: &dyn std::fmt::Display| {
        let mut a = arrivals.lock().unwrap_or_else(|e| e.into_inner());
        a.errors += 1;
        a.last_error = e.to_string();
    };
    while !stop.is_cancelled() {
        let moved: Result<i64, _> = client
            .eval(
                MOVE_SCRIPT,
                vec![target.clone(), record.clone()],
                vec!["1000".to_string()],
            )
            .await;
        match moved {
            Ok(0) => {
                // Nothing there: wait on a blocking connection (the fault injector kills it).
                let waited: Result<Option<String>, _> = tokio::select! {
                    r = client.blmove(&target, &record, LMoveDirection::Left, LMoveDirection::Right, 0.2) => r,
                    _ = stop.cancelled() => Ok(None),
                };
                if let Err(e) = waited {
                    // fred reports BLMOVE's nil reply (nothing arrived) as a timeout.
                    if !matches!(e.kind(), fred::error::ErrorKind::Timeout) {
                        note(&e);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
            Ok(_) => {}
            Err(e) => {
                note(&e);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        // Read what is new in the record list; it only grows, unless a failover discarded
        // writes, in which case read it again from the start.
        loop {
            let len: Result<i64, _> = client.llen(&record).await;
            let Ok(len) = len else { break };
            if len < read {
                read = 0;
            }
            if len == read {
                break;
            }
            let chunk: Result<Vec<String>, _> = client.lrange(&record, read, read + 4999).await;
            match chunk {
                Ok(values) => {
                    let now = now_ms();
                    read += values.len() as i64;
                    let mut a = arrivals.lock().unwrap_or_else(|e| e.into_inner());
                    for v in values {
                        a.first_seen.entry(v).or_insert(now);
                    }
                }
                Err(e) => {
                    note(&e);
                    break;
                }
            }
        }
    }
}

/// The final state of a queue's keys, read after the run.
struct FinalState {
    record: Vec<String>,
    target_left: Vec<String>,
    pending: u64,
    order_left: u64,
    quarantined: u64,
}

async fn final_state(url: &str, queue: &str, record_key: &str) -> AnyResult<FinalState> {
    let client = delayq::connect(url).await?;
    let record: Vec<String> = client.lrange(record_key, 0, -1).await?;
    let target_left: Vec<String> = client.lrange(queue, 0, -1).await?;
    let pending: u64 = client
        .zcard(format!("redisson_delay_queue_timeout:{{{queue}}}"))
        .await?;
    let order_left: u64 = client
        .llen(format!("redisson_delay_queue:{{{queue}}}"))
        .await?;
    let quarantined: u64 = client
        .llen(format!("delayq_quarantine:{{{queue}}}"))
        .await?;
    let _ = fred::interfaces::ClientLike::quit(&client).await;
    Ok(FinalState {
        record,
        target_left,
        pending,
        order_left,
        quarantined,
    })
}

/// Waits until nothing is pending and the checker has moved everything off the target list.
async fn wait_drained(url: &str, queue: &str, timeout: Duration) -> AnyResult<bool> {
    let client = delayq::connect(url).await?;
    let deadline = Instant::now() + timeout;
    let zset = format!("redisson_delay_queue_timeout:{{{queue}}}");
    let mut quiet = 0;
    while Instant::now() < deadline {
        let pending: Result<u64, _> = client.zcard(&zset).await;
        let ready: Result<u64, _> = client.llen(queue).await;
        if let (Ok(0), Ok(0)) = (pending, ready) {
            quiet += 1;
            if quiet >= 5 {
                return Ok(true);
            }
        } else {
            quiet = 0;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(false)
}

// ---------------------------------------------------------------------------------------------
// Offers, faults and the analysis.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Unknown,
}

struct Offer {
    status: Status,
    due: i64,
    replied_at: i64,
}

fn read_offers(files: &[PathBuf]) -> AnyResult<HashMap<String, Offer>> {
    let mut offers = HashMap::new();
    for file in files {
        for line in BufReader::new(File::open(file)?).lines() {
            let line = line?;
            let mut parts = line.split(' ');
            let (Some(tag), Some(value), Some(at)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(format!("{}: bad line {line:?}", file.display()).into());
            };
            let due = due_of(value).ok_or_else(|| format!("bad value {value:?}"))?;
            let status = if tag == "ok" {
                Status::Ok
            } else {
                Status::Unknown
            };
            offers.insert(
                value.to_string(),
                Offer {
                    status,
                    due,
                    replied_at: at.parse()?,
                },
            );
        }
    }
    Ok(offers)
}

fn due_of(value: &str) -> Option<i64> {
    value.rsplit('-').next()?.parse().ok()
}

/// One injected fault: what, and when it started and ended (epoch ms).
#[derive(Clone)]
struct Fault {
    kind: &'static str,
    start: i64,
    end: i64,
    note: String,
}

/// Counts of a delivery check.
#[derive(Default)]
struct Tally {
    offered: u64,
    ok: u64,
    unknown: u64,
    delivered: u64,
    unknown_delivered: u64,
    lost: Vec<String>,
    duplicated: Vec<(String, usize)>,
    foreign: Vec<String>,
    early: Vec<(String, i64)>,
    /// Lateness (first seen minus due, ms) of every delivered value.
    lateness: Vec<(i64, i64)>,
}

fn tally(offers: &HashMap<String, Offer>, state: &FinalState, arrivals: &Arrivals) -> Tally {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for v in state.record.iter().chain(&state.target_left) {
        *count.entry(v.as_str()).or_default() += 1;
    }
    let mut t = Tally {
        offered: offers.len() as u64,
        ..Tally::default()
    };
    for (value, offer) in offers {
        let n = count.get(value.as_str()).copied().unwrap_or(0);
        match offer.status {
            Status::Ok => t.ok += 1,
            Status::Unknown => t.unknown += 1,
        }
        if n > 0 {
            t.delivered += 1;
            if offer.status == Status::Unknown {
                t.unknown_delivered += 1;
            }
        }
        if n == 0 && offer.status == Status::Ok {
            t.lost.push(value.clone());
        }
        if n > 1 {
            t.duplicated.push((value.clone(), n));
        }
        if let Some(&seen) = arrivals.first_seen.get(value) {
            if seen < offer.due {
                t.early.push((value.clone(), offer.due - seen));
            }
            t.lateness.push((offer.due, seen - offer.due));
        }
    }
    for v in count.keys() {
        if !offers.contains_key(*v) {
            t.foreign.push((*v).to_string());
        }
    }
    t.lost.sort_by_key(|v| (offers[v].replied_at, v.clone()));
    t.duplicated.sort();
    t
}

/// Writes every lost and duplicated value of a case to the work dir, for diagnosis.
fn dump(env: &Env, tag: &str, t: &Tally) {
    let mut text = String::new();
    for v in &t.lost {
        let _ = writeln!(text, "lost {v}");
    }
    for (v, n) in &t.duplicated {
        let _ = writeln!(text, "duplicated {v} {n}");
    }
    let _ = std::fs::write(env.workdir.join(format!("problems-{tag}.txt")), text);
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Worst lateness of values due while a fault was on or up to `after` ms after it ended.
/// The due-time window attributed to fault `i`: from 0.5 s before it to `after` ms after it
/// ended, but not past the next fault's start.
fn window(faults: &[Fault], i: usize, after: i64) -> (i64, i64) {
    let f = &faults[i];
    let end = faults
        .get(i + 1)
        .map_or(f.end + after, |next| (f.end + after).min(next.start - 500));
    (f.start - 500, end.max(f.end))
}

fn fault_lateness(t: &Tally, faults: &[Fault], after: i64) -> Vec<(Fault, i64, usize)> {
    (0..faults.len())
        .map(|i| {
            let (from, to) = window(faults, i, after);
            let hit: Vec<i64> = t
                .lateness
                .iter()
                .filter(|(due, _)| *due >= from && *due <= to)
                .map(|(_, late)| *late)
                .collect();
            (
                faults[i].clone(),
                hit.iter().copied().max().unwrap_or(0),
                hit.len(),
            )
        })
        .collect()
}

/// The longest gap between consecutive times, and when it started.
fn longest_gap(mut times: Vec<i64>) -> (i64, i64) {
    times.sort_unstable();
    times
        .windows(2)
        .map(|w| (w[1] - w[0], w[0]))
        .max()
        .unwrap_or((0, 0))
}

fn baseline(t: &Tally, faults: &[Fault], after: i64) -> Vec<i64> {
    let mut quiet: Vec<i64> = t
        .lateness
        .iter()
        .filter(|(due, _)| {
            !(0..faults.len()).any(|i| {
                let (from, to) = window(faults, i, after);
                *due >= from && *due <= to
            })
        })
        .map(|(_, late)| *late)
        .collect();
    quiet.sort_unstable();
    quiet
}

fn tally_table(out: &mut String, t: &Tally, state: &FinalState, arrivals: &Arrivals) {
    let _ = writeln!(out, "| | count |\n|---|---|");
    let rows = [
        ("values offered", t.offered),
        ("offer returned success", t.ok),
        ("offer outcome unknown (error or lost reply)", t.unknown),
        ("delivered to the target list (distinct)", t.delivered),
        ("of which unknown offers", t.unknown_delivered),
        ("**lost** (success, never delivered)", t.lost.len() as u64),
        (
            "**duplicated** (delivered more than once)",
            t.duplicated.len() as u64,
        ),
        ("delivered but never offered", t.foreign.len() as u64),
        ("delivered before due", t.early.len() as u64),
        ("left pending in the timeout zset", state.pending),
        ("left in the order list", state.order_left),
        ("quarantined", state.quarantined),
        ("checker errors (retried)", arrivals.errors),
    ];
    for (name, n) in rows {
        let _ = writeln!(out, "| {name} | {n} |");
    }
    let _ = writeln!(out);
    if !t.lost.is_empty() {
        let _ = writeln!(
            out,
            "Lost (first 20, by offer reply time): {:?}\n",
            &t.lost[..t.lost.len().min(20)]
        );
    }
    if !t.duplicated.is_empty() {
        let _ = writeln!(
            out,
            "Duplicated (first 20): {:?}\n",
            &t.duplicated[..t.duplicated.len().min(20)]
        );
    }
}

fn fault_table(out: &mut String, t: &Tally, faults: &[Fault], after: i64) {
    let rows = fault_lateness(t, faults, after);
    let mut by_kind: BTreeMap<&str, (usize, i64, usize)> = BTreeMap::new();
    for (f, worst, n) in &rows {
        let e = by_kind.entry(f.kind).or_default();
        e.0 += 1;
        e.1 = e.1.max(*worst);
        e.2 += n;
    }
    let _ = writeln!(
        out,
        "Worst lateness (first seen on the target list minus due time) of the values due \
         from 0.5 s before each fault to {} s after it ended (or to the next fault):\n",
        after / 1000
    );
    let _ = writeln!(
        out,
        "| fault kind | injected | values due in the windows | worst lateness ms |\n|---|---|---|---|"
    );
    for (kind, (n, worst, values)) in &by_kind {
        let _ = writeln!(out, "| {kind} | {n} | {values} | {worst} |");
    }
    let quiet = baseline(t, faults, after);
    let _ = writeln!(
        out,
        "| (no fault) | | {} | p50 {} / p99 {} / max {} |\n",
        quiet.len(),
        percentile(&quiet, 0.5),
        percentile(&quiet, 0.99),
        quiet.last().copied().unwrap_or(0)
    );
    let _ = writeln!(
        out,
        "<details><summary>Every fault</summary>\n\n| # | kind | at s | lasted ms | worst lateness ms | note |\n|---|---|---|---|---|---|"
    );
    let t0 = faults.first().map_or(0, |f| f.start);
    for (i, (f, worst, _)) in rows.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {} | {} | {} |",
            i + 1,
            f.kind,
            (f.start - t0) as f64 / 1000.0,
            f.end - f.start,
            worst,
            f.note
        );
    }
    let _ = writeln!(out, "\n</details>\n");
}

// ---------------------------------------------------------------------------------------------
// Fault injection on a standalone server (redis-cli through the harness).

fn client_ids(redis: &TestRedis, pred: impl Fn(&str) -> bool) -> Vec<String> {
    redis
        .cli(&["CLIENT", "LIST"])
        .lines()
        .filter(|l| pred(l))
        .filter_map(|l| {
            l.split(' ')
                .find_map(|f| f.strip_prefix("id="))
                .map(str::to_string)
        })
        .collect()
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|f| f.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
        .unwrap_or("")
}

/// Kills the connections blocked in a command right now (flag `b`), waiting up to 3 s for one.
fn kill_blocked(redis: &TestRedis) -> String {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let ids = client_ids(redis, |l| field(l, "flags").contains('b'));
        if !ids.is_empty() || Instant::now() > deadline {
            for id in &ids {
                redis.cli(&["CLIENT", "KILL", "ID", id]);
            }
            return format!("{} blocked connections", ids.len());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts an AOF rewrite, as an operator's schedule would. Redis's automatic rewrite measures
/// growth from the size loaded at start, so with a restart every few dozen seconds it never
/// fires, and replaying an ever longer AOF would soon take longer than the harness waits.
fn compact_aof(redis: &TestRedis) {
    let reply = redis.cli(&["BGREWRITEAOF"]);
    if !reply.contains("started") && !reply.contains("scheduled") {
        eprintln!("BGREWRITEAOF: {reply}");
    }
}

fn kill_type(redis: &TestRedis, kind: &str) -> String {
    let n = redis.cli(&["CLIENT", "KILL", "TYPE", kind]);
    format!("{n} {kind} connections")
}

// ---------------------------------------------------------------------------------------------
// Part 1: the soak.

struct SoakPlan {
    values: u64,
    offerers: u64,
    offer_time: Duration,
    max_delay_ms: u64,
    /// Seconds between two faults.
    fault_every: Duration,
}

async fn part_soak(env: &Env, long: bool, report: &mut String) -> AnyResult<bool> {
    let plan = if long {
        SoakPlan {
            values: 1_000_000,
            offerers: 4,
            offer_time: Duration::from_secs(900),
            max_delay_ms: 5_000,
            fault_every: Duration::from_secs(6),
        }
    } else {
        SoakPlan {
            values: 20_000,
            offerers: 4,
            offer_time: Duration::from_secs(45),
            max_delay_ms: 5_000,
            fault_every: Duration::from_secs(5),
        }
    };
    eprintln!("== part 1: soak, {} values", plan.values);
    let mut redis = tokio::task::block_in_place(|| {
        TestRedis::start_with(&["--appendonly", "yes", "--appendfsync", "always"])
    });
    let url = redis.url();
    let queue = "soak";
    let started = Instant::now();

    let mut schedulers = Vec::new();
    for i in 0..3 {
        schedulers.push(env.scheduler(&url, queue, &format!("soak-sched{i}"))?);
    }
    let java = tokio::task::block_in_place(|| env.java_scheduler(&url, queue, "soak-java"))?;
    let checker = Checker::start(&url, queue).await?;
    let mut offerers = Vec::new();
    let mut files = Vec::new();
    for i in 0..plan.offerers {
        let (p, f) = env.offerer(
            &url,
            queue,
            &format!("s{i}"),
            plan.values / plan.offerers,
            plan.offer_time,
            plan.max_delay_ms,
        )?;
        offerers.push(p);
        files.push(f);
    }
    // A side queue with a reliable consumer that waits on a blocking connection most of the
    // time, so that every "CLIENT KILL blocked" finds one; at least once, so checked apart.
    let side = "soak-side";
    let (mut side_worker, side_log) = env.worker(&url, side, "side", 20)?;
    let side_settles = SettledWatch::start(&url, side).await?;
    let (side_offerer, side_file) =
        env.offerer(&url, side, "side", plan.values / 50, plan.offer_time, 1_000)?;
    offerers.push(side_offerer);

    // Faults, in rotation, while the offers go on.
    let kinds = [
        "CLIENT KILL TYPE normal",
        "CLIENT KILL TYPE pubsub",
        "CLIENT KILL blocked",
        "CLIENT PAUSE 2 s",
        "Redis restart (SIGTERM)",
        "Redis crash (SIGKILL) + restart",
        "scheduler SIGKILL + restart",
    ];
    let mut faults = Vec::new();
    let offers_end = started + plan.offer_time;
    let mut next = Instant::now() + plan.fault_every;
    let mut k = 0usize;
    let mut killed_scheduler = 0usize;
    while next + Duration::from_secs(1) < offers_end {
        tokio::time::sleep_until(next.into()).await;
        let kind = kinds[k % kinds.len()];
        k += 1;
        let start = now_ms();
        let note = match kind {
            "CLIENT KILL TYPE normal" => {
                tokio::task::block_in_place(|| kill_type(&redis, "normal"))
            }
            "CLIENT KILL TYPE pubsub" => {
                tokio::task::block_in_place(|| kill_type(&redis, "pubsub"))
            }
            "CLIENT KILL blocked" => tokio::task::block_in_place(|| kill_blocked(&redis)),
            "CLIENT PAUSE 2 s" => {
                tokio::task::block_in_place(|| redis.cli(&["CLIENT", "PAUSE", "2000", "ALL"]));
                tokio::time::sleep(Duration::from_millis(2000)).await;
                "all commands paused".to_string()
            }
            "Redis restart (SIGTERM)" => {
                tokio::task::block_in_place(|| {
                    redis.restart();
                    compact_aof(&redis);
                });
                "graceful".to_string()
            }
            "Redis crash (SIGKILL) + restart" => {
                tokio::task::block_in_place(|| {
                    redis.kill();
                    redis.restart();
                    compact_aof(&redis);
                });
                "AOF appendfsync always".to_string()
            }
            _ => {
                let i = killed_scheduler % schedulers.len();
                killed_scheduler += 1;
                schedulers[i].kill9();
                tokio::time::sleep(Duration::from_secs(2)).await;
                schedulers[i] = env.scheduler(&url, queue, &format!("soak-sched{i}"))?;
                format!("scheduler {i} down for 2 s")
            }
        };
        let end = now_ms();
        eprintln!(
            "[{:>6.1}s] fault {kind}: {note} ({} ms)",
            started.elapsed().as_secs_f64(),
            end - start
        );
        faults.push(Fault {
            kind,
            start,
            end,
            note,
        });
        next += plan.fault_every;
    }
    let mut offers_ok = true;
    for p in &mut offerers {
        offers_ok &= p.wait_ok();
    }
    let drained = wait_drained(&url, queue, Duration::from_secs(120)).await?;
    let side_settled = wait_settled(&url, side, Duration::from_secs(60)).await?;
    side_worker.kill9();
    let side_report = side_check(
        &read_offers(&[side_file])?,
        &side_log,
        &side_settles.stop().await,
    );
    let record_key = checker.record_key.clone();
    let arrivals = checker.finish().await;
    for s in &mut schedulers {
        s.stop(Duration::from_secs(5));
    }
    if let Some(mut j) = java {
        j.stop(Duration::from_secs(5));
    }
    let state = final_state(&url, queue, &record_key).await?;
    let offers = read_offers(&files)?;
    let t = tally(&offers, &state, &arrivals);
    let elapsed = started.elapsed();

    let _ = writeln!(
        report,
        "## 1. Soak\n\n{} values (unique strings, delays 0-{} s) offered by {} processes over {} s \
         on one `redis-server --appendonly yes --appendfsync always`; three `delayq transfer` \
         processes and {} ran the transfer; {} faults injected, one every {} s; run took {:.0} s.\n",
        t.offered,
        plan.max_delay_ms / 1000,
        plan.offerers,
        plan.offer_time.as_secs(),
        if env.java_cp.is_some() {
            "one Java Redisson 4.7.0 scheduler"
        } else {
            "**no Java scheduler (no classpath given)**"
        },
        faults.len(),
        plan.fault_every.as_secs(),
        elapsed.as_secs_f64()
    );
    dump(env, "soak", &t);
    tally_table(report, &t, &state, &arrivals);
    fault_table(report, &t, &faults, 5_000);
    let _ = writeln!(
        report,
        "Side queue `{side}` (at least once, through delayq's reliable consumer, one process \
         blocked in `BLMOVE` between values): {} values offered, {} with success, {} of those \
         acknowledged ({} of them by an ack whose reply was lost, found in Redis's settled \
         record), **{} never acknowledged**, {} delivered more than once (redeliveries after \
         killed connections and restarts are allowed here).\n",
        side_report.offered,
        side_report.ok,
        side_report.ok_acked + side_report.acked_unlogged,
        side_report.acked_unlogged,
        side_report.never_acked,
        side_report.redelivered
    );
    let pass = side_settled
        && side_report.never_acked == 0
        && offers_ok
        && drained
        && env.java_cp.is_some()
        && t.lost.is_empty()
        && t.duplicated.is_empty()
        && t.foreign.is_empty()
        && t.early.is_empty()
        && state.pending == 0
        && state.order_left == 0
        && state.quarantined == 0;
    let _ = writeln!(
        report,
        "Result: **{}**{}{}\n",
        if pass { "PASS" } else { "FAIL" },
        if offers_ok {
            ""
        } else {
            " (an offer process failed)"
        },
        if drained {
            ""
        } else {
            " (not drained within 120 s)"
        }
    );
    drop(redis);
    Ok(pass)
}

/// What a reliable consumer's log says about a set of offers.
struct SideReport {
    offered: usize,
    ok: usize,
    ok_acked: usize,
    /// Not acked in the log, but a delivery of theirs is in Redis's settled record: the ack ran
    /// and its reply was lost (a crash, a dropped connection).
    acked_unlogged: usize,
    never_acked: usize,
    redelivered: usize,
}

fn side_check(
    offers: &HashMap<String, Offer>,
    log: &Path,
    settled: &HashSet<String>,
) -> SideReport {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut taken: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut acked: HashSet<&str> = HashSet::new();
    for line in text.lines() {
        let mut parts = line.split(' ');
        match (parts.next(), parts.next()) {
            (Some("T"), Some(v)) => taken.entry(v).or_default().extend(parts.nth(1)),
            (Some("A"), Some(v)) => {
                acked.insert(v);
            }
            _ => {}
        }
    }
    let ok: Vec<&String> = offers
        .iter()
        .filter(|(_, o)| o.status == Status::Ok)
        .map(|(v, _)| v)
        .collect();
    let ok_acked = ok.iter().filter(|v| acked.contains(v.as_str())).count();
    let acked_unlogged = ok
        .iter()
        .filter(|v| !acked.contains(v.as_str()))
        .filter(|v| {
            taken
                .get(v.as_str())
                .is_some_and(|ids| ids.iter().any(|id| settled.contains(*id)))
        })
        .count();
    SideReport {
        offered: offers.len(),
        ok: ok.len(),
        ok_acked,
        acked_unlogged,
        never_acked: ok.len() - ok_acked - acked_unlogged,
        redelivered: taken.values().filter(|ids| ids.len() > 1).count(),
    }
}

/// Collects every delivery id that passes through a queue's settled record
/// (`delayq_settled:{NAME}`, which keeps an id for a minute after its ack, nack or dead letter),
/// polled every 300 ms for the whole run: an id found there was settled in Redis even when the
/// consumer never logged it (killed, or the reply lost).
struct SettledWatch {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<HashSet<String>>,
}

impl SettledWatch {
    async fn start(url: &str, queue: &str) -> AnyResult<SettledWatch> {
        let client = delayq::connect(url).await?;
        let key = delayq::QueueKeys::new(queue).settled().to_owned();
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut seen = HashSet::new();
            loop {
                let ids: Result<Vec<String>, _> =
                    client.zrange(&key, 0, -1, None, false, None, false).await;
                // Errors (Redis restarting) only skip a poll.
                seen.extend(ids.unwrap_or_default());
                tokio::select! {
                    _ = &mut stopped => break,
                    _ = tokio::time::sleep(Duration::from_millis(300)) => {}
                }
            }
            let last: Result<Vec<String>, _> =
                client.zrange(&key, 0, -1, None, false, None, false).await;
            seen.extend(last.unwrap_or_default());
            let _ = client.quit().await;
            seen
        });
        Ok(SettledWatch { stop, task })
    }

    async fn stop(self) -> HashSet<String> {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

/// Values on reliable consumers' claim lists: moved there by a consumer's `BLMOVE` and not yet
/// registered in flight. A killed consumer's claim list keeps them until its lease runs out
/// and a live consumer's reaper gives them back, so a queue is not settled while any are there.
async fn claimed(client: &Client, queue: &str) -> AnyResult<u64> {
    let keys = delayq::QueueKeys::new(queue);
    let lists: Vec<String> = client
        .zrange(keys.claims(), 0, -1, None, false, None, false)
        .await?;
    let mut total = 0;
    for list in lists {
        let len: u64 = client.llen(list).await?;
        total += len;
    }
    Ok(total)
}

/// Waits until a reliably consumed queue has nothing pending, ready, claimed or in flight.
async fn wait_settled(url: &str, queue: &str, timeout: Duration) -> AnyResult<bool> {
    let client = delayq::connect(url).await?;
    let q = DelayedQueue::builder(client.clone(), queue, StringCodec)
        .transfer(false)
        .build()
        .await?;
    let deadline = Instant::now() + timeout;
    let mut quiet = 0;
    while Instant::now() < deadline {
        let stats = q.inspect().reliable_stats().await?;
        let pending: u64 = client
            .zcard(format!("redisson_delay_queue_timeout:{{{queue}}}"))
            .await?;
        let ready: u64 = client.llen(queue).await?;
        let claimed = claimed(&client, queue).await?;
        if stats.in_flight == 0 && pending == 0 && ready == 0 && claimed == 0 {
            quiet += 1;
            if quiet >= 5 {
                return Ok(true);
            }
        } else {
            quiet = 0;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(false)
}

// ---------------------------------------------------------------------------------------------
// Part 2: Sentinel failover and Cluster slot migration under load.

/// The end of a failover case: waits for the offer processes and for the target list to drain,
/// stops the checker and the schedulers, and tallies every value. Returns whether every offer
/// process ended well, whether the queue drained, the offers, the final state, the arrivals
/// and the tally.
async fn wind_down(
    url: &str,
    queue: &str,
    offerers: &mut [Proc],
    schedulers: &mut [Proc],
    checker: Checker,
    files: &[PathBuf],
) -> AnyResult<(
    bool,
    bool,
    HashMap<String, Offer>,
    FinalState,
    Arrivals,
    Tally,
)> {
    let mut offers_ok = true;
    for p in offerers.iter_mut() {
        offers_ok &= p.wait_ok();
    }
    let drained = wait_drained(url, queue, Duration::from_secs(60)).await?;
    let record_key = checker.record_key.clone();
    let arrivals = checker.finish().await;
    for s in schedulers.iter_mut() {
        s.stop(Duration::from_secs(5));
    }
    let state = final_state(url, queue, &record_key).await?;
    let offers = read_offers(files)?;
    let t = tally(&offers, &state, &arrivals);
    Ok((offers_ok, drained, offers, state, arrivals, t))
}

/// Sentinel under load: `rounds` forced failovers. With `min_replicas`, both data nodes get
/// `min-replicas-to-write 1` and `min-replicas-max-lag 1`, Redis's own bound on the writes a
/// master that lost its replica keeps accepting.
async fn sentinel_case(
    env: &Env,
    values: u64,
    offer_time: Duration,
    rounds: u32,
    min_replicas: bool,
    report: &mut String,
) -> AnyResult<bool> {
    let max_delay_ms = 2_000;
    let tag = if min_replicas { "2a'" } else { "2a" };
    eprintln!("== part {tag}: Sentinel failover (min-replicas-to-write: {min_replicas})");
    let mut sentinel = tokio::task::block_in_place(TestSentinel::start);
    if min_replicas {
        tokio::task::block_in_place(|| {
            for port in [sentinel.master_port(), sentinel.replica_port()] {
                sentinel.cli(port, &["CONFIG", "SET", "min-replicas-to-write", "1"]);
                sentinel.cli(port, &["CONFIG", "SET", "min-replicas-max-lag", "1"]);
            }
        });
    }
    let url = sentinel.url();
    let queue = "failover";
    let mut schedulers = vec![
        env.scheduler(&url, queue, &format!("sentinel{tag}-sched0"))?,
        env.scheduler(&url, queue, &format!("sentinel{tag}-sched1"))?,
    ];
    let checker = Checker::start(&url, queue).await?;
    let started = Instant::now();
    let mut offerers = Vec::new();
    let mut files = Vec::new();
    for i in 0..2 {
        let (p, f) = env.offerer(
            &url,
            queue,
            &format!("f{}{i}", if min_replicas { "m" } else { "" }),
            values / 2,
            offer_time,
            max_delay_ms,
        )?;
        offerers.push(p);
        files.push(f);
    }
    // The first failover a quarter into the offers, so offers go on well after it settled.
    let mut faults = Vec::new();
    for r in 0..rounds {
        let at = offer_time.mul_f64(0.2 + 0.4 * f64::from(r));
        tokio::time::sleep_until((started + at).into()).await;
        let from = sentinel.master_port();
        let start = now_ms();
        tokio::task::block_in_place(|| sentinel.failover());
        let end = now_ms();
        eprintln!(
            "failover {from} -> {} took {} ms",
            sentinel.master_port(),
            end - start
        );
        faults.push(Fault {
            kind: "Sentinel failover",
            start,
            end,
            note: format!("master {from} -> {}", sentinel.master_port()),
        });
    }
    let (pass, drained, offers, state, arrivals, t) =
        wind_down(&url, queue, &mut offerers, &mut schedulers, checker, &files).await?;
    let _ = writeln!(
        report,
        "### {tag}. Sentinel: one master, one replica, three sentinels{}\n\n{} values (delays 0-{} s) \
         offered by 2 processes over {} s through `redis-sentinel://`, two `delayq transfer` \
         processes and the checker on the same URL; `SENTINEL FAILOVER` forced {} time(s) under \
         load (the harness waits until the old master is a replica again).\n",
        if min_replicas {
            ", `min-replicas-to-write 1`, `min-replicas-max-lag 1`"
        } else {
            " (default settings)"
        },
        t.offered,
        max_delay_ms / 1000,
        offer_time.as_secs(),
        rounds
    );
    dump(env, &format!("sentinel{tag}"), &t);
    tally_table(report, &t, &state, &arrivals);
    fault_table(report, &t, &faults, 3_000);
    // Writes survive only if they reached the master that ends up master. Lost offers are
    // explained by Redis's asynchronous replication when they were acknowledged during a
    // failover: by the old master, which keeps accepting writes until Sentinel reconfigures it
    // into a replica, and which then drops them in its full resync.
    let unexplained: Vec<&String> = t
        .lost
        .iter()
        .filter(|v| {
            let at = offers[*v].replied_at;
            !faults.iter().any(|f| at >= f.start - 1_000 && at <= f.end)
        })
        .collect();
    let lost: HashSet<&String> = t.lost.iter().collect();
    let survived_offers: Vec<i64> = offers
        .iter()
        .filter(|(v, o)| o.status == Status::Ok && !lost.contains(v))
        .map(|(_, o)| o.replied_at)
        .collect();
    let (offer_gap, offer_gap_at) = longest_gap(survived_offers);
    let kept: HashSet<&String> = state.record.iter().collect();
    let deliveries: Vec<i64> = arrivals
        .first_seen
        .iter()
        .filter(|(v, _)| kept.contains(v))
        .map(|(_, at)| *at)
        .collect();
    let (delivery_gap, delivery_gap_at) = longest_gap(deliveries);
    let t0 = faults.first().map_or(0, |f| f.start);
    let _ = writeln!(
        report,
        "Pause: the longest time without a successful offer that survived was {offer_gap} ms \
         (from {:+.1} s relative to the first `SENTINEL FAILOVER`); the longest time without a \
         delivery that survived was {delivery_gap} ms (from {:+.1} s).\n\n\
         Lost offers acknowledged during a failover (from `SENTINEL FAILOVER` until the old \
         master was demoted), explained by asynchronous replication: {}; lost outside those \
         windows: {}.\n",
        (offer_gap_at - t0) as f64 / 1000.0,
        (delivery_gap_at - t0) as f64 / 1000.0,
        t.lost.len() - unexplained.len(),
        unexplained.len()
    );
    let ok = pass
        && drained
        && unexplained.is_empty()
        && t.duplicated.is_empty()
        && t.foreign.is_empty()
        && t.early.is_empty()
        && state.pending == 0
        && state.order_left == 0
        && state.quarantined == 0;
    let _ = writeln!(report, "Result: **{}**\n", if ok { "PASS" } else { "FAIL" });
    drop(schedulers);
    drop(sentinel);
    Ok(ok)
}

async fn part_failover(env: &Env, long: bool, report: &mut String) -> AnyResult<bool> {
    let (values, offer_time) = if long {
        (30_000, Duration::from_secs(60))
    } else {
        (4_000, Duration::from_secs(24))
    };
    let max_delay_ms = 2_000;
    let rounds = if long { 2 } else { 1 };
    let _ = writeln!(report, "## 2. Failover\n");
    let mut pass = sentinel_case(env, values, offer_time, rounds, false, report).await?;
    if long {
        pass &= sentinel_case(env, values, offer_time, rounds, true, report).await?;
    }

    // --- Cluster.
    eprintln!("== part 2b: Cluster slot migration");
    let cluster = tokio::task::block_in_place(|| TestCluster::start(3));
    let url = cluster.url();
    let queue = "migrate";
    let slot = tokio::task::block_in_place(|| cluster.key_slot(queue));
    let mut schedulers = vec![
        env.scheduler(&url, queue, "cluster-sched0")?,
        env.scheduler(&url, queue, "cluster-sched1")?,
    ];
    let checker = Checker::start(&url, queue).await?;
    let started = Instant::now();
    let mut offerers = Vec::new();
    let mut files = Vec::new();
    for i in 0..2 {
        let (p, f) = env.offerer(
            &url,
            queue,
            &format!("c{i}"),
            values / 2,
            offer_time,
            max_delay_ms,
        )?;
        offerers.push(p);
        files.push(f);
    }
    let mut faults = Vec::new();
    for r in 0..rounds {
        tokio::time::sleep_until(
            (started + offer_time.mul_f64((r + 1) as f64 / (rounds + 1) as f64)).into(),
        )
        .await;
        let from = tokio::task::block_in_place(|| cluster.slot_owner(slot));
        let to = (from + 1) % 3;
        let start = now_ms();
        tokio::task::block_in_place(|| cluster.migrate_slot(slot, to));
        let end = now_ms();
        eprintln!("slot {slot}: node {from} -> {to} took {} ms", end - start);
        faults.push(Fault {
            kind: "Cluster slot migration",
            start,
            end,
            note: format!("slot {slot}: node {from} -> {to}"),
        });
    }
    let (offers_ok, drained, _offers, state, arrivals, t) =
        wind_down(&url, queue, &mut offerers, &mut schedulers, checker, &files).await?;
    pass &= offers_ok;
    let _ = writeln!(
        report,
        "### 2b. Cluster: 3 masters, the queue's slot ({slot}) migrated to another master under load\n\n\
         {} values (delays 0-{} s) offered by 2 processes over {} s through `redis-cluster://`, two \
         `delayq transfer` processes; `CLUSTER SETSLOT IMPORTING/MIGRATING`, `MIGRATE` of every \
         key, `SETSLOT NODE`, {} time(s).\n",
        t.offered,
        max_delay_ms / 1000,
        offer_time.as_secs(),
        rounds
    );
    dump(env, "cluster", &t);
    tally_table(report, &t, &state, &arrivals);
    fault_table(report, &t, &faults, 3_000);
    let ok_b = drained
        && t.lost.is_empty()
        && t.duplicated.is_empty()
        && t.foreign.is_empty()
        && t.early.is_empty()
        && state.pending == 0
        && state.order_left == 0
        && state.quarantined == 0;
    pass &= ok_b;
    let _ = writeln!(
        report,
        "Result: **{}**\n",
        if ok_b { "PASS" } else { "FAIL" }
    );
    drop(schedulers);
    drop(cluster);
    Ok(pass)
}

// ---------------------------------------------------------------------------------------------
// Part 3: reliable consumers killed with SIGKILL mid-job.

/// One incarnation of a worker process and its log.
struct Incarnation {
    log: PathBuf,
    killed: bool,
}

async fn part_consumers(env: &Env, long: bool, report: &mut String) -> AnyResult<bool> {
    let (values, offer_time, kill_every) = if long {
        (20_000u64, Duration::from_secs(60), Duration::from_secs(5))
    } else {
        (3_000u64, Duration::from_secs(15), Duration::from_secs(4))
    };
    let job_ms = 20;
    eprintln!("== part 3: reliable consumers killed mid-job");
    let redis = tokio::task::block_in_place(|| TestRedis::start_with(&[]));
    let url = redis.url();
    let queue = "work";
    let workers_n = 3;
    let mut incarnations: Vec<Incarnation> = Vec::new();
    let mut workers: Vec<(Proc, usize)> = Vec::new();
    for w in 0..workers_n {
        let (p, log) = env.worker(&url, queue, &format!("w{w}-0"), job_ms)?;
        incarnations.push(Incarnation { log, killed: false });
        workers.push((p, incarnations.len() - 1));
    }
    let settles = SettledWatch::start(&url, queue).await?;
    let started = Instant::now();
    let (mut offerer, file) = env.offerer(&url, queue, "r0", values, offer_time, 3_000)?;
    let mut kills = 0usize;
    let mut next = started + kill_every;
    while next < started + offer_time + Duration::from_secs(2) {
        tokio::time::sleep_until(next.into()).await;
        let w = kills % workers_n;
        kills += 1;
        let (proc, inc) = &mut workers[w];
        proc.kill9();
        incarnations[*inc].killed = true;
        eprintln!(
            "[{:>5.1}s] SIGKILL {}",
            started.elapsed().as_secs_f64(),
            proc.name
        );
        let (p, log) = env.worker(&url, queue, &format!("w{w}-{kills}"), job_ms)?;
        incarnations.push(Incarnation { log, killed: false });
        workers[w] = (p, incarnations.len() - 1);
        next += kill_every;
    }
    let offers_ok = offerer.wait_ok();
    let offers = read_offers(&[file])?;

    // Done when every offered value that reached Redis has been acked: nothing pending, ready
    // or in flight.
    let client = delayq::connect(&url).await?;
    let q = DelayedQueue::builder(client.clone(), queue, StringCodec)
        .transfer(false)
        .build()
        .await?;
    let settled = wait_settled(&url, queue, Duration::from_secs(120)).await?;
    let settled_ids = settles.stop().await;
    let rel = q.inspect().reliable_stats().await?;
    for (p, _) in &mut workers {
        p.kill9();
    }

    // Read the logs.
    let mut taken: HashMap<String, usize> = HashMap::new();
    let mut delivery_ids: HashMap<String, Vec<String>> = HashMap::new();
    let mut acked: HashMap<String, usize> = HashMap::new();
    let mut in_flight_at_kill: HashSet<String> = HashSet::new();
    let mut lease_lost = 0u64;
    let mut ack_errors = 0u64;
    for inc in &incarnations {
        let text = std::fs::read_to_string(&inc.log).unwrap_or_default();
        let mut open: HashSet<String> = HashSet::new();
        for line in text.lines() {
            let mut parts = line.splitn(3, ' ');
            let (Some(tag), Some(value)) = (parts.next(), parts.next()) else {
                continue; // a line cut by the SIGKILL
            };
            match tag {
                "T" => {
                    *taken.entry(value.to_string()).or_default() += 1;
                    // "T VALUE ATTEMPT ID"
                    if let Some(id) = parts.next().and_then(|rest| rest.split(' ').nth(1)) {
                        delivery_ids
                            .entry(value.to_string())
                            .or_default()
                            .push(id.to_string());
                    }
                    open.insert(value.to_string());
                }
                "A" => {
                    *acked.entry(value.to_string()).or_default() += 1;
                    open.remove(value);
                }
                "L" => {
                    lease_lost += 1;
                    open.remove(value);
                }
                "E" => {
                    ack_errors += 1;
                    open.remove(value);
                }
                _ => {}
            }
        }
        if inc.killed {
            in_flight_at_kill.extend(open);
        }
    }
    let mut never_acked = Vec::new();
    let mut unknown_unacked = 0u64;
    // Killed after its ack ran and before it logged it: the settled record has the delivery.
    let mut acked_unlogged = 0u64;
    for (value, offer) in &offers {
        let settled_in_redis = delivery_ids
            .get(value)
            .is_some_and(|ids| ids.iter().any(|id| settled_ids.contains(id)));
        if !acked.contains_key(value) && settled_in_redis {
            acked_unlogged += 1;
        } else if !acked.contains_key(value) {
            match offer.status {
                Status::Ok => never_acked.push(value.clone()),
                Status::Unknown => unknown_unacked += 1,
            }
        }
    }
    never_acked.sort();
    let duplicates: Vec<(&String, &usize)> = taken.iter().filter(|(_, n)| **n > 1).collect();
    let unexplained: Vec<&String> = duplicates
        .iter()
        .filter(|(v, n)| !in_flight_at_kill.contains(*v) || **n > 2)
        .map(|(v, _)| *v)
        .collect();
    let acked_twice = acked.values().filter(|n| **n > 1).count();
    let foreign = taken.keys().filter(|v| !offers.contains_key(*v)).count();
    let ok = offers.values().filter(|o| o.status == Status::Ok).count();

    let _ = writeln!(
        report,
        "## 3. Reliable consumers killed with SIGKILL mid-job\n\n{} values (delays 0-3 s) offered \
         over {} s; 3 consumer processes (delayq's reliable consumer, 4 jobs at a time, {job_ms} ms \
         per job, visibility 2 s, each process also a scheduler); one of them killed with SIGKILL \
         every {} s and started again ({kills} kills).\n",
        offers.len(),
        offer_time.as_secs(),
        kill_every.as_secs()
    );
    let _ = writeln!(report, "| | count |\n|---|---|");
    for (name, n) in [
        ("values offered", offers.len() as u64),
        ("offer returned success", ok as u64),
        ("distinct values acknowledged", acked.len() as u64),
        (
            "acknowledged in Redis, not in the log (killed after the ack ran)",
            acked_unlogged,
        ),
        (
            "**success offers never acknowledged**",
            never_acked.len() as u64,
        ),
        ("unknown offers never acknowledged", unknown_unacked),
        (
            "values in flight in a killed process",
            in_flight_at_kill.len() as u64,
        ),
        ("values delivered more than once", duplicates.len() as u64),
        (
            "**of which not in flight at a kill**",
            unexplained.len() as u64,
        ),
        ("values acknowledged twice", acked_twice as u64),
        ("acks that found the lease gone", lease_lost),
        ("ack errors", ack_errors),
        ("delivered but never offered", foreign as u64),
        ("dead letters", rel.dead),
        ("left in flight", rel.in_flight),
    ] {
        let _ = writeln!(report, "| {name} | {n} |");
    }
    let pass = offers_ok
        && settled
        && never_acked.is_empty()
        && unexplained.is_empty()
        && acked_twice == 0
        && foreign == 0
        && rel.dead == 0;
    let _ = writeln!(
        report,
        "\nResult: **{}**{}\n",
        if pass { "PASS" } else { "FAIL" },
        if settled {
            ""
        } else {
            " (not settled within 120 s)"
        }
    );
    if !never_acked.is_empty() {
        let _ = writeln!(
            report,
            "Never acknowledged (first 20): {:?}\n",
            &never_acked[..never_acked.len().min(20)]
        );
    }
    if !unexplained.is_empty() {
        let _ = writeln!(
            report,
            "Unexplained duplicates (first 20): {:?}\n",
            &unexplained[..unexplained.len().min(20)]
        );
    }
    drop(redis);
    Ok(pass)
}

// ---------------------------------------------------------------------------------------------
// The orchestrator.

async fn run_main(opts: Opts) -> AnyResult<bool> {
    let long = opts.flag("long");
    let parts = opts
        .str("parts")
        .unwrap_or_else(|_| "soak,failover,consumers,schedules,partitions".into());
    // The schedules part's length: 10 minutes in the long run, 30 s in the short one.
    let schedule_secs = match opts.num("schedule-secs") {
        Ok(secs) => secs,
        Err(_) if long => 600,
        Err(_) => 30,
    };
    let workdir = PathBuf::from(opts.str("workdir")?);
    std::fs::create_dir_all(&workdir)?;
    let java_cp = match opts.str("java-cp") {
        Ok(file) => Some(std::fs::read_to_string(file)?.trim().to_string()),
        Err(_) => None,
    };
    let env = Env {
        delayq_bin: PathBuf::from(opts.str("delayq-bin")?),
        java_cp,
        java_src: PathBuf::from(
            opts.str("java-src")
                .unwrap_or_else(|_| "tests/faults/java/JavaScheduler.java".into()),
        ),
        workdir,
        self_exe: std::env::current_exe()?,
    };
    let started = Instant::now();
    let mut report = String::new();
    let mut pass = true;
    for part in parts.split(',') {
        let ok = match part {
            "soak" => part_soak(&env, long, &mut report).await?,
            "failover" => part_failover(&env, long, &mut report).await?,
            "consumers" => part_consumers(&env, long, &mut report).await?,
            "schedules" => {
                let run = Duration::from_secs(schedule_secs);
                schedules::part_schedules(&env, run, &mut report).await?
            }
            "partitions" => {
                let prefix = opts
                    .str("net-prefix")
                    .unwrap_or_else(|_| format!("dqp{}", std::process::id()));
                netns::remove_on_signal(prefix.clone());
                tokio::task::block_in_place(|| {
                    partitions::part_partitions(&env, long, &prefix, &mut report)
                })?
            }
            other => return Err(format!("unknown part {other:?}").into()),
        };
        eprintln!("== {part}: {}", if ok { "PASS" } else { "FAIL" });
        pass &= ok;
    }
    let header = format!(
        "# Fault-injection results ({} run)\n\nWritten by `tests/faults/run.sh{}` on {} \
         (Redis: `{}`), total {:.0} s. Overall: **{}**.\n\n",
        if long { "long" } else { "short" },
        if long { " --long" } else { "" },
        date(),
        redis_version(),
        started.elapsed().as_secs_f64(),
        if pass { "PASS" } else { "FAIL" }
    );
    std::fs::write(opts.str("results")?, header + &report)?;
    Ok(pass)
}

fn date() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn redis_version() -> String {
    Command::new("redis-server")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
