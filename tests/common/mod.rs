//! Test harness: real `redis-server` processes for integration tests.
//!
//! The one helper tree of the tests (`tests/it` includes it as `mod common`, the soak driver in
//! `tests/faults` too):
//!
//! * [`TestRedis`]: one standalone server on a free loopback port, in its own temp dir.
//! * [`TestCluster`]: N masters joined with `redis-cli --cluster create`, plus slot migration.
//! * [`TestSentinel`]: a master, a replica and three sentinels, plus a forced failover.
//! * [`unique_name`]: a queue/key name no other test (or earlier run) uses.
//!
//! Every process stops when its handle is dropped, including while a test panics. On Linux the
//! servers also get `PR_SET_PDEATHSIG`, so they die with the test binary even if it is killed.
//! Do not keep handles in `static`s: statics are never dropped.
//!
//! All waiting is synchronous (`std::thread::sleep` loops with deadlines that panic with the
//! last observed state), so the harness works from sync and async tests alike. In an async test,
//! prefer `#[tokio::test(flavor = "multi_thread")]` when calling the slow helpers
//! ([`TestSentinel::failover`], [`TestCluster::migrate_slot`]) so fred's background tasks keep
//! running, or wrap the call in `tokio::task::block_in_place`.
//!
//! # `REDIS_URL`
//!
//! If the environment variable `REDIS_URL` is set (e.g. `redis://127.0.0.1:6379`),
//! [`TestRedis::start`] uses that server instead of spawning one; [`TestRedis::start_with`]
//! always spawns its own, because its arguments must apply. An external server is shared, so
//! tests must use [`unique_name`] for every key and must not `FLUSHALL`; `restart()`, `kill()`
//! and `dir()` panic on it. The cluster and sentinel harnesses always spawn their own servers.
//!
//! # Debugging
//!
//! Each process writes its output to `server.log` in its own directory; start-up and wait
//! timeouts put the last lines into the panic message. Set `DELAYQ_KEEP_TEST_DIRS=1` to keep
//! the temp dirs after the test.

#![allow(dead_code, unused_imports)]

mod acl;
mod certs;
mod cluster;
mod process;
pub mod queue;
mod resp;
mod sentinel;
mod setup;

use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tempfile::TempDir;

pub use acl::documented_acl;
pub use certs::TestCerts;
pub use cluster::TestCluster;
pub use process::{cli_conn, redis_cli, wait_until};
pub use resp::{call as resp_call, Reply};
pub use sentinel::TestSentinel;
pub use setup::{is_valkey, server_program, Setup};

use process::Node;

/// How long a test waits for something that must happen (a value delivered, a process ready, a
/// log line written) before it fails. Long on purpose: on a busy machine a test only gets
/// slower, it does not fail; a passing test stops waiting as soon as the thing happens.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A name unique to this call, this process and this moment, e.g. `t:offer:4242:17...:3`.
///
/// Use it for queue names and keys so that tests running in parallel, or against a shared
/// `REDIS_URL` server, never see each other's data. It contains no `{}` braces, so Redisson's
/// hash-tag wrapping applies to it as it would to a plain queue name.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("t:{prefix}:{}:{nanos}:{n}", std::process::id())
}

/// A fresh temp dir for one harness; kept after the test (and its path printed) when the
/// environment variable `DELAYQ_KEEP_TEST_DIRS` is set, to read the servers' `server.log`s.
fn temp_dir(prefix: &str) -> TempDir {
    let keep = std::env::var_os("DELAYQ_KEEP_TEST_DIRS").is_some();
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .disable_cleanup(keep)
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
    if keep {
        eprintln!("harness: keeping {}", dir.path().display());
    }
    dir
}

/// The arguments every harness-owned `redis-server` gets before the caller's extras.
///
/// A (initially empty) config file comes first so that `CONFIG REWRITE`, which Sentinel sends
/// during a failover, has somewhere to write.
fn server_args(port: u16, dir: &Path, extra: &[&str]) -> Vec<OsString> {
    let conf = dir.join("redis.conf");
    if !conf.exists() {
        std::fs::write(&conf, "# written by tests/common\n")
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", conf.display()));
    }
    let mut args: Vec<OsString> = vec![conf.into_os_string()];
    let port = port.to_string();
    let defaults = [
        "--port",
        port.as_str(),
        "--bind",
        "127.0.0.1",
        "--daemonize",
        "no",
        "--save",
        "",
        "--appendonly",
        "no",
        "--enable-debug-command",
        "local",
        // Redis 7 waits 5 s before a diskless full sync by default; replicas need not wait.
        "--repl-diskless-sync-delay",
        "0",
    ];
    args.extend(defaults.iter().map(OsString::from));
    args.push("--dir".into());
    args.push(dir.as_os_str().to_owned());
    args.extend(extra.iter().map(OsString::from));
    args
}

/// One standalone Redis server (or the external `REDIS_URL` server, see the module docs).
#[derive(Debug)]
pub struct TestRedis {
    /// The (plaintext) port the server listens on.
    pub port: u16,
    /// The TLS port, with a TLS [`Setup`].
    pub tls_port: Option<u16>,
    url: String,
    /// `None` when using the external `REDIS_URL` server.
    node: Option<Node>,
    // Dropped after `node`, so the process is gone before its directory is removed.
    _dir: Option<TempDir>,
}

impl TestRedis {
    /// Starts a fresh `redis-server --save "" --appendonly no` on a free loopback port and waits
    /// until it answers PING, or uses the `REDIS_URL` server if that variable is set.
    pub fn start() -> TestRedis {
        match std::env::var("REDIS_URL") {
            Ok(url) if !url.trim().is_empty() => TestRedis::external(url.trim().to_string()),
            _ => TestRedis::start_with(&[]),
        }
    }

    /// Starts a fresh server with `extra` arguments after the defaults, which they override,
    /// e.g. `&["--appendonly", "yes", "--appendfsync", "always"]`. Ignores `REDIS_URL`.
    pub fn start_with(extra: &[&str]) -> TestRedis {
        TestRedis::start_setup(&Setup::default(), extra)
    }

    /// Starts a fresh server with `setup` (a password, TLS) and `extra` arguments. Its
    /// [`url`](Self::url) names the TLS port (`rediss://`) and the password when there are.
    pub fn start_setup(setup: &Setup, extra: &[&str]) -> TestRedis {
        let dir = temp_dir("delayq-redis-");
        let node_dir = dir.path().join("server");
        let tls_port = std::cell::Cell::new(None);
        let node = Node::start(&server_program(), &node_dir, false, |port| {
            resp::set_password(port, setup.password.as_deref());
            let mut args = setup.auth_args();
            if setup.tls.is_some() {
                let port = process::pick_port(false);
                tls_port.set(Some(port));
                args.extend(setup.tls_args(port));
            }
            args.extend(extra.iter().map(|a| a.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            server_args(port, &node_dir, &args)
        });
        let tls_port = tls_port.get();
        let url = format!(
            "{}://{}127.0.0.1:{}",
            setup.scheme(""),
            setup.userinfo(),
            tls_port.unwrap_or(node.port())
        );
        TestRedis {
            port: node.port(),
            tls_port,
            url,
            node: Some(node),
            _dir: Some(dir),
        }
    }

    fn external(url: String) -> TestRedis {
        let port = external_port(&url)
            .unwrap_or_else(|| panic!("cannot read a port from REDIS_URL={url:?}"));
        TestRedis {
            port,
            tls_port: None,
            url,
            node: None,
            _dir: None,
        }
    }

    /// `redis://127.0.0.1:PORT` (or the `REDIS_URL` value), for `fred::prelude::Config::from_url`;
    /// `rediss://[:PASSWORD@]127.0.0.1:TLS_PORT` with a TLS set-up.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Whether this handle uses the external `REDIS_URL` server.
    pub fn is_external(&self) -> bool {
        self.node.is_none()
    }

    /// Runs `redis-cli -p PORT args...` and returns its output (see [`redis_cli`]).
    pub fn cli(&self, args: &[&str]) -> String {
        match self.node {
            Some(_) => redis_cli(&cli_conn(self.port), args),
            None => redis_cli(&["-u".into(), self.url.clone()], args),
        }
    }

    /// How many times the server has run `command` (lower case, e.g. `"scan"`), from
    /// `INFO commandstats`.
    pub fn command_calls(&self, command: &str) -> u64 {
        let prefix = format!("cmdstat_{command}:calls=");
        self.cli(&["INFO", "commandstats"])
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse().unwrap())
    }

    /// The CPU time the server's main thread has used so far, in microseconds (`INFO cpu`):
    /// what calls cost the server whether or not another process kept it waiting meanwhile.
    pub fn main_thread_cpu_us(&self) -> u64 {
        let info = self.cli(&["INFO", "cpu"]);
        let seconds = |field: &str| -> f64 {
            info.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {field} in {info}"))
        };
        let total = seconds("used_cpu_user_main_thread") + seconds("used_cpu_sys_main_thread");
        (total * 1e6) as u64
    }

    /// The server time `command` (lower case) has taken so far, in microseconds, from
    /// `INFO commandstats`.
    pub fn command_usec(&self, command: &str) -> u64 {
        let prefix = format!("cmdstat_{command}:");
        self.cli(&["INFO", "commandstats"])
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|rest| rest.split("usec=").nth(1))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse().unwrap())
    }

    fn owned(&self, what: &str) -> &Node {
        self.node.as_ref().unwrap_or_else(|| {
            panic!("TestRedis::{what} needs a harness-owned server, not REDIS_URL; use start_with")
        })
    }

    fn owned_mut(&mut self, what: &str) -> &mut Node {
        self.node.as_mut().unwrap_or_else(|| {
            panic!("TestRedis::{what} needs a harness-owned server, not REDIS_URL; use start_with")
        })
    }

    /// The server's data directory (holds `appendonlydir/` when AOF is on, and `server.log`).
    pub fn dir(&self) -> &Path {
        self.owned("dir").dir()
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.owned("pid").pid()
    }

    /// Stops the server gracefully if it runs (SIGTERM: the AOF is flushed), then starts it
    /// again on the same port, in the same directory, with the same arguments, and waits for
    /// PING. Data survives only if the server persists it (e.g. `--appendonly yes`).
    pub fn restart(&mut self) {
        self.owned_mut("restart").restart();
    }

    /// Kills the server with SIGKILL, like a crash, and reaps it. `restart()` brings it back.
    pub fn kill(&mut self) {
        self.owned_mut("kill").kill();
    }
}

/// Reads the port from `redis://[user:pass@]host[:port][/db][?query]`; 6379 when absent.
pub fn external_port(url: &str) -> Option<u16> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    match host_port.rsplit_once(':') {
        Some((_, port)) if !host_port.ends_with(']') => port.parse().ok(),
        _ => Some(6379),
    }
}
