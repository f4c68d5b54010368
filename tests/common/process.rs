//! Port picking and the life cycle of one `redis-server` / `redis-sentinel` process.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use super::resp::{self, Reply};
use super::PATIENCE;

/// How long a process may take to answer PING after it was spawned (AOF loading included).
const READY_TIMEOUT: Duration = PATIENCE;
/// How long a graceful stop (SIGTERM) may take before we fall back to SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Port-race retries when a freshly picked port turns out to be taken.
const START_ATTEMPTS: usize = 8;
/// Redis Cluster's bus listens on `port + 10000`, so cluster ports must stay below this.
pub const MAX_CLUSTER_PORT: u16 = 55535;

/// Ports this test binary has handed out, so two threads never get the same one.
fn handed_out() -> &'static Mutex<HashSet<u16>> {
    static PORTS: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    PORTS.get_or_init(|| Mutex::new(HashSet::new()))
}

fn bindable(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

/// Picks a loopback port that is free right now (by binding port 0). With `cluster_bus`, the
/// port is below [`MAX_CLUSTER_PORT`] and `port + 10000` is free too. Another process can still
/// grab the port before Redis binds it; callers retry on that race.
pub fn pick_port(cluster_bus: bool) -> u16 {
    for _ in 0..10_000 {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap_or_else(|e| panic!("cannot bind 127.0.0.1:0 to pick a port: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("local_addr of a bound listener: {e}"))
            .port();
        if cluster_bus && (port >= MAX_CLUSTER_PORT || !bindable(port + 10_000)) {
            continue;
        }
        let mut taken = handed_out().lock().unwrap_or_else(|e| e.into_inner());
        if taken.contains(&port) || (cluster_bus && taken.contains(&(port + 10_000))) {
            continue;
        }
        taken.insert(port);
        if cluster_bus {
            taken.insert(port + 10_000);
        }
        return port;
    }
    panic!("could not find a free loopback port (cluster bus: {cluster_bus})");
}

/// Spawns children from one long-lived thread.
///
/// On Linux each child gets `PR_SET_PDEATHSIG = SIGKILL`, so servers die with the test binary
/// even when it is killed or aborts and no `Drop` runs. The kernel sends that signal when the
/// *thread* that forked the child exits, hence a dedicated thread that lives as long as the
/// process instead of whatever test thread happens to call `start()`.
fn spawn(mut command: Command) -> io::Result<Child> {
    type Job = (Command, mpsc::Sender<io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();

    #[cfg(target_os = "linux")]
    {
        use std::ffi::{c_int, c_ulong};
        use std::os::unix::process::CommandExt;
        extern "C" {
            fn prctl(option: c_int, ...) -> c_int;
            fn getppid() -> c_int;
        }
        const PR_SET_PDEATHSIG: c_int = 1;
        const SIGKILL: c_ulong = 9;
        const ESRCH: i32 = 3;
        let parent = c_int::try_from(std::process::id()).unwrap_or(0);
        // SAFETY: prctl and getppid are plain syscall wrappers, and the closure neither
        // allocates nor takes locks (no boxed io::Error), as required between fork and exec.
        unsafe {
            command.pre_exec(move || {
                if prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died between fork and prctl.
                if getppid() != parent {
                    return Err(io::Error::from_raw_os_error(ESRCH));
                }
                Ok(())
            });
        }
    }

    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("test-redis-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .unwrap_or_else(|e| panic!("cannot start the spawner thread: {e}"));
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = mpsc::channel();
    sender
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((command, reply_tx))
        .map_err(|_| io::Error::other("spawner thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("spawner thread dropped the request"))?
}

/// Sends SIGTERM (graceful shutdown: Redis flushes and fsyncs its AOF).
fn terminate(child: &Child) {
    #[cfg(unix)]
    {
        use std::ffi::c_int;
        extern "C" {
            fn kill(pid: c_int, sig: c_int) -> c_int;
        }
        const SIGTERM: c_int = 15;
        if let Ok(pid) = c_int::try_from(child.id()) {
            // SAFETY: plain syscall on the pid of a child we have not reaped yet.
            unsafe {
                kill(pid, SIGTERM);
            }
        }
    }
}

/// Why a start attempt failed.
enum StartError {
    /// The port (or the cluster bus port) was taken: pick another one and retry.
    PortTaken(String),
    /// Anything else: give up with this message.
    Fatal(String),
}

/// One `redis-server` or `redis-sentinel` process in its own directory.
///
/// Dropping it kills the process (SIGKILL) and reaps it.
#[derive(Debug)]
pub struct Node {
    program: String,
    /// Arguments after the program; rebuilt per port by the caller's closure.
    args: Vec<OsString>,
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Node {
    /// Starts `program` in `dir` with `make_args(port)` on a freshly picked port and waits until
    /// it answers PING; on a port race it picks another port and tries again. `dir` is emptied
    /// before each attempt, and `make_args` may write config files into it.
    pub fn start(
        program: &str,
        dir: &Path,
        cluster_bus: bool,
        make_args: impl Fn(u16) -> Vec<OsString>,
    ) -> Node {
        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            // Every attempt starts from an empty directory (no nodes.conf from a failed try).
            let _ = fs::remove_dir_all(dir);
            fs::create_dir_all(dir)
                .unwrap_or_else(|e| panic!("cannot create test dir {}: {e}", dir.display()));
            let port = pick_port(cluster_bus);
            let mut node = Node {
                program: program.to_string(),
                args: make_args(port),
                dir: dir.to_path_buf(),
                port,
                child: None,
            };
            match node.launch(true) {
                Ok(()) => return node,
                Err(StartError::PortTaken(msg)) => last = msg,
                Err(StartError::Fatal(msg)) => panic!("{msg}"),
            }
        }
        panic!("{program}: gave up after {START_ATTEMPTS} port races; last: {last}");
    }

    /// The TCP port the process listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process's own directory (data, config and `server.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The OS process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// The last lines of the process's output, for panic messages.
    pub fn log_tail(&self) -> String {
        let text = fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.len().saturating_sub(30);
        lines[start..].join("\n")
    }

    /// Spawns the process and waits until it answers PING as itself (its `process_id`).
    fn launch(&mut self, fresh_log: bool) -> Result<(), StartError> {
        let log_path = self.log_path();
        let log = if fresh_log {
            File::create(&log_path)
        } else {
            OpenOptions::new().create(true).append(true).open(&log_path)
        };
        let mut log =
            log.map_err(|e| StartError::Fatal(format!("cannot open {}: {e}", log_path.display())))?;
        let _ = writeln!(
            log,
            "### harness: starting {} on port {}",
            self.program, self.port
        );
        let log_err = log
            .try_clone()
            .map_err(|e| StartError::Fatal(format!("cannot clone log handle: {e}")))?;

        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let child = spawn(command).map_err(|e| {
            StartError::Fatal(format!(
                "cannot spawn `{}` (is it installed and on PATH?): {e}",
                self.program
            ))
        })?;
        self.child = Some(child);

        match self.wait_ready() {
            Ok(()) => Ok(()),
            Err(err) => {
                self.kill();
                Err(err)
            }
        }
    }

    fn wait_ready(&mut self) -> Result<(), StartError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let port = self.port;
        loop {
            let pid = self.pid().unwrap_or(0);
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    let tail = self.log_tail();
                    let msg = format!(
                        "{} on port {port} exited early ({status}); log:\n{tail}",
                        self.program
                    );
                    return Err(if tail.contains("in use") {
                        StartError::PortTaken(msg)
                    } else {
                        StartError::Fatal(msg)
                    });
                }
            }
            let last_reply = match resp::call(port, &["PING"]) {
                Ok(Reply::Status(s)) if s == "PONG" => {
                    // Someone else's server may own this port while ours is failing to bind.
                    let info = resp::call_text(port, &["INFO", "server"]).unwrap_or_default();
                    let owner = resp::info_field(&info, "process_id");
                    if owner.as_deref() == Some(pid.to_string().as_str()) {
                        return Ok(());
                    }
                    format!("port answered as process {owner:?}, ours is {pid}")
                }
                Ok(other) => format!("{other:?}"),
                Err(e) => e.to_string(),
            };
            if Instant::now() > deadline {
                let msg = format!(
                    "{} on port {port} did not answer PING within {READY_TIMEOUT:?} \
                     (last: {last_reply}); log:\n{}",
                    self.program,
                    self.log_tail()
                );
                return Err(if last_reply.contains("answered as process") {
                    StartError::PortTaken(msg)
                } else {
                    StartError::Fatal(msg)
                });
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the process gracefully (SIGTERM, then SIGKILL after a timeout) and reaps it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            terminate(&child);
            let deadline = Instant::now() + STOP_TIMEOUT;
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the process (SIGKILL, like a crash) and reaps it. Does nothing if it is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the process again on the same port with the same arguments and directory
    /// (stopping it gracefully first if it still runs). Retries while the port is briefly
    /// unavailable.
    pub fn restart(&mut self) {
        self.stop();
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.launch(false) {
                Ok(()) => return,
                Err(StartError::PortTaken(_)) if Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(100));
                }
                Err(StartError::PortTaken(msg)) | Err(StartError::Fatal(msg)) => {
                    panic!("restart failed: {msg}")
                }
            }
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `redis-cli`'s connection options for the harness-owned server on `port` (plaintext), with
/// `-a PASSWORD` when the harness knows that port's password.
pub fn cli_conn(port: u16) -> Vec<String> {
    let mut conn = vec!["-p".to_string(), port.to_string()];
    if let Some(password) = resp::password(port) {
        conn.extend(["-a".to_string(), password, "--no-auth-warning".to_string()]);
    }
    conn
}

/// Runs `redis-cli` with `conn` (connection options such as `-p PORT`) followed by `args`, and
/// returns its stdout without the trailing newline. Redis error replies come back as text
/// (`ERR ...`) because `redis-cli` exits 0 for them; a failing `redis-cli` itself panics.
pub fn redis_cli(conn: &[String], args: &[&str]) -> String {
    let output = Command::new("redis-cli")
        .args(conn)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run redis-cli (is it installed?): {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        panic!(
            "redis-cli {} {} failed ({}): {}{}",
            conn.join(" "),
            args.join(" "),
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    stdout.trim_end_matches('\n').to_string()
}

/// Polls `check` every 50 ms until it returns `Ok`, or panics after `timeout` with `what` and
/// the last `Err` message.
pub fn wait_until<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(value) => return value,
            Err(last) if Instant::now() > deadline => {
                panic!("timed out after {timeout:?} waiting for {what}; last state: {last}")
            }
            Err(_) => thread::sleep(Duration::from_millis(50)),
        }
    }
}
