//! `delayq transfer` stops in a bounded time while its Redis is down: within
//! --shutdown-timeout, saying what it waits for, and at once on a second signal.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// A `delayq transfer` process whose stderr goes to a file.
struct Transfer {
    child: Child,
    log: PathBuf,
}

impl Transfer {
    /// Starts `delayq --url URL transfer ARGS` and waits until it listens for SIGTERM.
    fn start(url: &str, dir: &Path, args: &[&str]) -> Transfer {
        let log = dir.join(format!("{}.log", unique_name("transfer").replace(':', "-")));
        let child = Command::new(BIN)
            .args(["--url", url, "transfer"])
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("REDIS_URL")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let transfer = Transfer { child, log };
        let status = format!("/proc/{}/status", transfer.child.id());
        wait_until("transfer to catch SIGTERM", PATIENCE, || {
            let text = std::fs::read_to_string(&status).unwrap_or_default();
            match catches_sigterm(&text) {
                true => Ok(()),
                false => Err(transfer.log()),
            }
        });
        transfer
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn term(&self) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
    }

    fn wait_for_log(&self, needle: &str) {
        wait_until(&format!("{needle:?} in the log"), PATIENCE, || {
            let log = self.log();
            match log.contains(needle) {
                true => Ok(()),
                false => Err(log),
            }
        });
    }

    fn wait_exit(&mut self) -> ExitStatus {
        let child = &mut self.child;
        let log = &self.log;
        wait_until("transfer to exit", PATIENCE, || {
            child
                .try_wait()
                .unwrap()
                .ok_or_else(|| std::fs::read_to_string(log).unwrap_or_default())
        })
    }
}

impl Drop for Transfer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when a `/proc/PID/status` text says the process catches SIGTERM (signal 15).
fn catches_sigterm(status: &str) -> bool {
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << 14) != 0)
}

/// `transfer QUEUE` and `transfer --all`, their Redis killed, then SIGTERM: each says what it
/// waits for and exits once --shutdown-timeout is over (before: tens of seconds, a second
/// SIGTERM ignored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_stops_within_its_shutdown_timeout_while_redis_is_down() {
    let mut redis = TestRedis::start();
    if redis.pid().is_none() {
        eprintln!("skipped: the server is not this test's to kill");
        return;
    }
    let name = unique_name("tstop");
    for args in [[name.as_str()], ["--all"]] {
        let mut args = args.to_vec();
        args.extend(["--shutdown-timeout", "2s"]);
        let mut transfer = Transfer::start(&redis.url(), redis.dir(), &args);
        redis.kill();
        transfer.term();
        let status = transfer.wait_exit();
        redis.restart();
        let log = transfer.log();
        assert!(status.success(), "{args:?}: {status}: {log}");
        assert!(
            log.contains("waiting for Redis while the transfer schedulers stop"),
            "{args:?}: {log}"
        );
        assert!(log.contains("exiting without them"), "{args:?}: {log}");
    }
}

/// With a long --shutdown-timeout, a second SIGTERM ends the wait for a silent Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_ends_transfers_wait_for_redis() {
    let mut redis = TestRedis::start();
    if redis.pid().is_none() {
        eprintln!("skipped: the server is not this test's to kill");
        return;
    }
    let name = unique_name("tstop2");
    let args = [name.as_str(), "--shutdown-timeout", "1h"];
    let mut transfer = Transfer::start(&redis.url(), redis.dir(), &args);
    redis.kill();
    transfer.term();
    transfer.wait_for_log("waiting for Redis while the transfer schedulers stop");
    transfer.term();
    let status = transfer.wait_exit();
    let log = transfer.log();
    assert!(status.success(), "{status}: {log}");
    assert!(log.contains("a second stop signal"), "{log}");
}
