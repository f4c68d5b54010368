//! `delayq work` at its edges: a command's whole process group ended at the end of the grace
//! period, past `--timeout`, and at a second signal, and its value handed on only once the
//! group is gone; a bounded shutdown when Redis is gone.
//! [`Worker`] runs the command and reads its log; `work.rs` uses it too.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::fred::interfaces::ListInterface;
use delayq::DelayedQueue;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// A `delayq work` process whose stderr goes to a file, read while it runs.
pub(crate) struct Worker {
    child: Child,
    log: PathBuf,
}

impl Worker {
    /// `delayq --url URL work ARGS`, logging at the default level into `dir/work.log`.
    pub(crate) fn start(url: &str, dir: &Path, args: &[&str]) -> Worker {
        Worker::start_with_env(url, dir, args, &[])
    }

    /// [`start`](Worker::start) with these environment variables set.
    pub(crate) fn start_with_env(
        url: &str,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Worker {
        let log = dir.join(format!("{}.log", unique_name("work").replace(':', "-")));
        let child = Command::new(BIN)
            .args(["--url", url, "work"])
            .args(args)
            .envs(env.iter().copied())
            .env_remove("RUST_LOG")
            .env_remove("REDIS_URL")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Worker { child, log }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log has `needle`.
    pub(crate) fn wait_for_log(&self, needle: &str) {
        wait_until(&format!("{needle:?} in the worker's log"), PATIENCE, || {
            let log = self.log();
            if log.contains(needle) {
                Ok(())
            } else {
                Err(log)
            }
        });
    }

    pub(crate) fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap()
            .success());
    }

    /// Waits for the process to exit (PATIENCE at most).
    pub(crate) fn wait_exit(&mut self) -> ExitStatus {
        let child = &mut self.child;
        let log = &self.log;
        wait_until("the worker to exit", PATIENCE, || {
            child
                .try_wait()
                .unwrap()
                .ok_or_else(|| std::fs::read_to_string(log).unwrap_or_default())
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when process `pid` has exited (gone, or a zombie waiting for its reaper).
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

/// Processes a handler started in the background. Any still running when this is dropped (in
/// a failing test) are killed, so that a failing run leaves nothing behind.
struct Background(Vec<u32>);

impl Background {
    /// The pids a handler wrote to `file`, one a line, once it wrote `count`.
    fn written_to(file: &Path, count: usize) -> Background {
        wait_until("the handler's background pid", PATIENCE, || {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            let pids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.len() >= count {
                Ok(Background(pids))
            } else {
                Err(text)
            }
        })
    }

    fn running(&self) -> Vec<u32> {
        self.0.iter().copied().filter(|&p| !is_gone(p)).collect()
    }

    /// Waits until every one has exited.
    fn wait_gone(&self) {
        wait_until(
            "the handler's background processes to end",
            PATIENCE,
            || {
                let left = self.running();
                if left.is_empty() {
                    Ok(())
                } else {
                    Err(format!("still running: {left:?}"))
                }
            },
        );
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        for pid in self.running() {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
}

/// A shell handler that starts a background process, writes its pid to `file`, and waits.
fn backgrounding_handler(file: &Path) -> String {
    format!("sleep 1000 & echo $! >> {}; wait", file.display())
}

async fn queue_on(redis: &TestRedis, prefix: &str) -> DelayedQueue<StringCodec> {
    let client = delayq::connect(&redis.url()).await.unwrap();
    DelayedQueue::builder(client, unique_name(prefix).as_str(), StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap()
}

/// The values on the queue's target list (read on a client of its own).
async fn ready(redis: &TestRedis, queue: &DelayedQueue<StringCodec>) -> Vec<String> {
    let client = delayq::connect(&redis.url()).await.unwrap();
    client.lrange(queue.name(), 0, -1).await.unwrap()
}

/// After --grace, the handler's own children end too, and the value goes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grace_period_ends_the_commands_whole_process_group() {
    let redis = TestRedis::start();
    let queue = queue_on(&redis, "grace-group").await;
    let pids = redis.dir().join("grace-pids");
    let handler = backgrounding_handler(&pids);
    let mut worker = Worker::start(
        &redis.url(),
        redis.dir(),
        &[queue.name(), "--grace", "1s", "--", "sh", "-c", &handler],
    );
    queue.offer("v", Duration::ZERO).await.unwrap();
    let grandchild = Background::written_to(&pids, 1);
    worker.signal("-TERM");
    assert!(worker.wait_exit().success(), "{}", worker.log());
    grandchild.wait_gone();
    assert_eq!(
        ready(&redis, &queue).await,
        ["v"],
        "the value was given back"
    );
}

/// Past --timeout the command's process group ends and the attempt fails: with two attempts
/// the value becomes a dead letter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_past_its_timeout_fails_and_its_group_ends() {
    let redis = TestRedis::start();
    let queue = queue_on(&redis, "timeout").await;
    let pids = redis.dir().join("timeout-pids");
    let handler = backgrounding_handler(&pids);
    let args = [
        queue.name(),
        "--timeout",
        "300ms",
        "--max-attempts",
        "2",
        "--retry-delay",
        "10ms",
        "--",
        "sh",
        "-c",
        &handler,
    ];
    let worker = Worker::start(&redis.url(), redis.dir(), &args);
    queue.offer("slow", Duration::ZERO).await.unwrap();
    let deadline = std::time::Instant::now() + PATIENCE;
    let dead = loop {
        let dead = queue.inspect().dead_letters(10).await.unwrap();
        if !dead.is_empty() {
            break dead;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not dead-lettered: {}",
            worker.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(dead.len(), 1, "{}", worker.log());
    assert!(dead[0].error.contains("--timeout"), "{:?}", dead[0].error);
    Background::written_to(&pids, 2).wait_gone();
}

/// A shell handler that, on its first run, ignores SIGTERM and keeps a background loop running
/// (its pid in `dir/loop-pid`); on a later run it writes to `dir/later-saw` whether that loop
/// still ran when it started (`running`, or `gone`: exited, maybe a zombie).
fn lingering_handler(dir: &Path) -> String {
    let dir = dir.display();
    format!(
        r#"if [ -e {dir}/loop-pid ]; then
  state=$(sed -e 's/.*) //' /proc/$(cat {dir}/loop-pid)/stat 2>/dev/null | cut -c1)
  case "$state" in ''|Z) echo gone ;; *) echo running ;; esac > {dir}/later-saw.tmp
  mv {dir}/later-saw.tmp {dir}/later-saw
  exit 0
fi
trap '' TERM
( while :; do sleep 0.02; done ) &
echo $! > {dir}/loop-pid
wait"#
    )
}

/// What the later run of [`lingering_handler`] saw, once it wrote it.
fn later_saw(dir: &Path) -> String {
    let file = dir.join("later-saw");
    wait_until("the later run of the command", PATIENCE, || {
        std::fs::read_to_string(&file).map_err(|err| err.to_string())
    })
}

/// A job abandoned at the end of --grace: its value goes back only once its command's whole
/// group is gone (the group ignores SIGTERM, so SIGKILL ends it 2 s later), so the second
/// worker on the queue never runs the value while the first one's command still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_value_goes_to_another_worker_only_once_the_group_is_gone() {
    let redis = TestRedis::start();
    let queue = queue_on(&redis, "abandon-overlap").await;
    let dir = redis.dir().join("abandon-overlap");
    std::fs::create_dir_all(&dir).unwrap();
    let handler = lingering_handler(&dir);
    let args = [queue.name(), "--grace", "100ms", "--", "sh", "-c", &handler];
    let mut first = Worker::start(&redis.url(), redis.dir(), &args);
    queue.offer("v", Duration::ZERO).await.unwrap();
    let first_loop = Background::written_to(&dir.join("loop-pid"), 1);
    let second = Worker::start(&redis.url(), redis.dir(), &args);
    second.wait_for_log("working on");
    first.signal("-TERM");
    assert_eq!(later_saw(&dir).trim(), "gone", "{}", first.log());
    assert!(first.wait_exit().success(), "{}", first.log());
    first_loop.wait_gone();
    drop(second);
    assert!(ready(&redis, &queue).await.is_empty());
}

/// Past --timeout the attempt fails only once the command's whole group is gone: the retry
/// (taken at once by the second slot) never runs while the first run's group still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_value_is_retried_only_once_the_group_is_gone() {
    let redis = TestRedis::start();
    let queue = queue_on(&redis, "timeout-overlap").await;
    let dir = redis.dir().join("timeout-overlap");
    std::fs::create_dir_all(&dir).unwrap();
    let handler = lingering_handler(&dir);
    let args = [
        queue.name(),
        "--concurrency",
        "2",
        "--timeout",
        "100ms",
        "--retry-delay",
        "1ms",
        "--",
        "sh",
        "-c",
        &handler,
    ];
    let worker = Worker::start(&redis.url(), redis.dir(), &args);
    queue.offer("v", Duration::ZERO).await.unwrap();
    let first_loop = Background::written_to(&dir.join("loop-pid"), 1);
    assert_eq!(later_saw(&dir).trim(), "gone", "{}", worker.log());
    first_loop.wait_gone();
}

/// A second SIGTERM ends a long grace period at once; the value goes back, nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_ends_the_grace_period_and_keeps_the_value() {
    let redis = TestRedis::start();
    let queue = queue_on(&redis, "second-signal").await;
    let pids = redis.dir().join("second-pids");
    let handler = backgrounding_handler(&pids);
    let mut worker = Worker::start(
        &redis.url(),
        redis.dir(),
        &[queue.name(), "--grace", "1h", "--", "sh", "-c", &handler],
    );
    queue.offer("kept", Duration::ZERO).await.unwrap();
    let grandchild = Background::written_to(&pids, 1);
    worker.signal("-TERM");
    // Two signals sent at once may arrive as one: the second goes after the first was seen.
    worker.wait_for_log("worker stopping");
    worker.signal("-TERM");
    assert!(worker.wait_exit().success(), "{}", worker.log());
    assert!(
        worker.log().contains("grace period ended early"),
        "{}",
        worker.log()
    );
    grandchild.wait_gone();
    assert_eq!(ready(&redis, &queue).await, ["kept"], "{}", worker.log());
}

/// Sends SIGCONT to a stopped server when dropped, so that a failing test leaves none stopped.
struct Stopped(u32);

impl Stopped {
    fn stop(pid: u32) -> Stopped {
        assert!(Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status()
            .unwrap()
            .success());
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

/// With Redis silent, a stopped worker waits a bounded time, says for what, and exits; the
/// value it held stays in the in-flight set for the reaper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_worker_waits_for_a_silent_redis_a_bounded_time_and_says_so() {
    let redis = TestRedis::start();
    let Some(server) = redis.pid() else {
        eprintln!("skipped: the server is not this test's to stop");
        return;
    };
    let queue = queue_on(&redis, "silent").await;
    let pids = redis.dir().join("silent-pids");
    let handler = backgrounding_handler(&pids);
    let args = [
        queue.name(),
        "--grace",
        "1s",
        "--shutdown-timeout",
        "2s",
        "--",
        "sh",
        "-c",
        &handler,
    ];
    let mut worker = Worker::start(&redis.url(), redis.dir(), &args);
    queue.offer("held", Duration::ZERO).await.unwrap();
    let grandchild = Background::written_to(&pids, 1);
    let stopped = Stopped::stop(server);
    worker.signal("-TERM");
    worker.wait_exit();
    let log = worker.log();
    assert!(log.contains("waiting for Redis to settle"), "{log}");
    assert!(log.contains("stay in the in-flight set"), "{log}");
    assert!(
        log.contains("waiting for Redis while the transfer schedulers stop"),
        "{log}"
    );
    grandchild.wait_gone();
    drop(stopped);
    let in_flight = queue.inspect().reliable_stats().await.unwrap().in_flight;
    assert_eq!(in_flight, 1, "the value stays in flight for the reaper");
}
