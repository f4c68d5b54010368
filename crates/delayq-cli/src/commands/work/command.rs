//! One value's command: in a process group of its own, the value on its stdin (and in
//! `DELAYQ_VALUE` when it fits an environment variable), within `--timeout`, and the whole
//! group ended (SIGTERM, then SIGKILL) when it runs out of time or its job is abandoned. The
//! handler returns only once no process of the group is left, so that the value is given back
//! (or retried) only then: another worker never runs it while this one's command still does.
//! Should the worker itself die, its [`Watchdog`] ends the groups of the commands it ran.
//! A failed attempt's error ends with the last `--keep-stderr` bytes of the command's stderr
//! ([`StderrTail`]).

use super::stderr::StderrTail;
use super::watchdog::{self, Watchdog};
use crate::codec_choice::Codecs;
use delayq::Job;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use tokio_util::task::TaskTracker;

/// Longest value also passed in `DELAYQ_VALUE`. Linux refuses one environment string over
/// 128 KiB (and the environment and arguments share a limit); longer values, and values with a
/// NUL byte, come on stdin only, with `DELAYQ_VALUE_ON_STDIN_ONLY=1`.
pub(crate) const MAX_ENV_VALUE: usize = 64 * 1024;

/// How long a process group gets to end after SIGTERM before SIGKILL.
pub(crate) const KILL_AFTER: Duration = Duration::from_secs(2);

/// How long the worker waits for the processes of a group to be gone after SIGKILL (a process
/// in an uninterruptible wait dies only when it leaves it).
const GONE_AFTER_KILL: Duration = Duration::from_secs(1);

/// The worker's abort grace: an abandoned job's handler ends the command's group within it.
pub(crate) const ABORT_GRACE: Duration = KILL_AFTER
    .saturating_add(GONE_AFTER_KILL)
    .saturating_add(Duration::from_secs(2));

/// How the worker runs its command.
pub(crate) struct CommandRunner {
    program: String,
    args: Vec<String>,
    /// `--timeout`: longest run of one command.
    timeout: Option<Duration>,
    /// `--keep-stderr`: bytes of the end of a command's stderr its failure keeps (0: its
    /// stderr is the worker's, not read).
    keep_stderr: usize,
    /// Each queue's codec: whether its values go to the command as raw bytes or as text.
    codecs: Codecs,
    /// Ends the process groups of commands whose jobs were abandoned.
    ends: TaskTracker,
    /// Ends the process groups of running commands should the worker die.
    watchdog: Arc<Watchdog>,
}

impl CommandRunner {
    pub(crate) fn new(
        command: Vec<String>,
        timeout: Option<Duration>,
        keep_stderr: usize,
        codecs: Codecs,
    ) -> anyhow::Result<Self> {
        let mut command = command.into_iter();
        let program = command
            .next()
            .ok_or_else(|| anyhow::anyhow!("work needs a command after --"))?;
        Ok(CommandRunner {
            program,
            args: command.collect(),
            timeout,
            keep_stderr,
            codecs,
            ends: TaskTracker::new(),
            watchdog: Arc::new(Watchdog::start()),
        })
    }

    /// Runs the command for one value: exit 0 acknowledges it. Past `--timeout`, or when the
    /// job is abandoned, the command's group is ended and the handler fails once it is gone.
    /// A failure's error ends with what the command printed last on stderr.
    pub(crate) async fn run(&self, job: Job<String>) -> anyhow::Result<()> {
        let mut child = self.watchdog.spawn(self.command(&job)).await?;
        let group = Group::lead_by(&child, &self.ends, &self.watchdog);
        let mut stderr = StderrTail::new(child.stderr.take(), self.keep_stderr);
        let input = self
            .codecs
            .of(job.queue())
            .file_bytes(job.value(), job.raw());
        let stdin = child.stdin.take();
        // A command that does not read its stdin, or exits early, closes the pipe: the write
        // then fails (EPIPE; SIGPIPE is ignored) and that is no error of the job.
        let feed = async move {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(input).await;
            }
        };
        let ended = {
            let time_up = async {
                match self.timeout {
                    Some(limit) => tokio::time::sleep(limit).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                status = exit_of(&mut child, feed, &mut stderr) => Ended::Exited(status),
                _ = job.abort_token().cancelled() => Ended::Abandoned,
                () = time_up => Ended::TimedOut,
            }
        };
        let status = match ended {
            Ended::Exited(status) => status,
            Ended::Abandoned => {
                group.end(&mut child).await;
                stderr.drain().await;
                anyhow::bail!("{} abandoned; its process group was ended", self.program);
            }
            Ended::TimedOut => {
                group.end(&mut child).await;
                stderr.drain().await;
                anyhow::bail!(stderr.after(format!(
                    "{} ran longer than --timeout {}; its process group was ended",
                    self.program,
                    humantime::format_duration(self.timeout.unwrap_or_default())
                )));
            }
        };
        group.disarm();
        // What the command printed last may still be in the pipe.
        stderr.drain().await;
        let status = status?;
        if status.success() {
            Ok(())
        } else {
            let failure = format!("{} exited with {status}", self.program);
            anyhow::bail!(stderr.after(failure))
        }
    }

    fn command(&self, job: &Job<String>) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env("DELAYQ_ATTEMPT", job.attempt().to_string())
            .env("DELAYQ_QUEUE", job.queue())
            .env_remove("DELAYQ_VALUE")
            .env_remove("DELAYQ_VALUE_ON_STDIN_ONLY")
            .env_remove("DELAYQ_ADMITTED_MS")
            .stdin(Stdio::piped())
            // Its stderr is read when some of it is kept (passed on to the worker's as it
            // comes); else it is the worker's own.
            .stderr(match self.keep_stderr {
                0 => Stdio::inherit(),
                _ => Stdio::piped(),
            })
            // Its own group, so that ending it ends what it started too; a terminal's Ctrl-C
            // reaches only the worker, which lets the command finish within --grace.
            .process_group(0);
        // The grant time of the job's slot and token (the Redis server's clock), to audit a rate.
        if let Some(fd) = self.watchdog.descriptor() {
            // SAFETY: the closure runs in the child between fork and exec, and makes two system
            // calls (getpid, send) on a descriptor the child has until exec; nothing allocates.
            unsafe {
                command.pre_exec(move || {
                    watchdog::register_own_group(fd);
                    Ok(())
                });
            }
        }
        // Should the watchdog die with the worker, the command dies all the same (after it
        // registered its group, so that a watchdog alive ends what it started too).
        #[cfg(target_os = "linux")]
        if self.watchdog.spawns_from_own_thread() {
            let worker = std::process::id();
            // SAFETY: the closure runs in the child between fork and exec and makes only
            // system calls (prctl, getppid, raise); nothing allocates.
            unsafe {
                command.pre_exec(move || {
                    watchdog::die_with_parent(worker);
                    Ok(())
                });
            }
        }
        if let Some(admitted_ms) = job.admitted_ms() {
            command.env("DELAYQ_ADMITTED_MS", admitted_ms.to_string());
        }
        let value = job.value();
        if value.len() <= MAX_ENV_VALUE && !value.contains('\0') {
            command.env("DELAYQ_VALUE", value);
        } else {
            command.env("DELAYQ_VALUE_ON_STDIN_ONLY", "1");
        }
        command
    }

    /// Waits until the process groups of abandoned commands have ended (each gets
    /// [`KILL_AFTER`] after SIGTERM, then SIGKILL).
    pub(crate) async fn wait_for_ends(&self) {
        self.ends.close();
        if !self.ends.is_empty() {
            tracing::info!(
                groups = self.ends.len(),
                kill_after_s = KILL_AFTER.as_secs_f64(),
                "waiting for the process groups of abandoned commands to end"
            );
        }
        self.ends.wait().await;
    }
}

/// How a command's run ended.
enum Ended {
    Exited(std::io::Result<std::process::ExitStatus>),
    /// Its job was abandoned (the worker's grace period is over).
    Abandoned,
    /// It ran past `--timeout`.
    TimedOut,
}

/// The child's exit status, feeding its stdin and reading its stderr meanwhile; stops feeding
/// when it exits.
async fn exit_of(
    child: &mut Child,
    feed: impl std::future::Future<Output = ()>,
    stderr: &mut StderrTail,
) -> std::io::Result<std::process::ExitStatus> {
    tokio::pin!(feed);
    let mut fed = false;
    loop {
        tokio::select! {
            () = &mut feed, if !fed => fed = true,
            () = stderr.read_some(), if stderr.is_open() => {}
            status = child.wait() => return status,
        }
    }
}

/// The process group of a running command. Dropped while armed (its job abandoned at the end
/// of the grace period), it ends the group: SIGTERM at once, SIGKILL after [`KILL_AFTER`].
/// Once the group is over, the watchdog forgets it.
struct Group<'a> {
    /// The group's id (its leader's pid), while the leader has not been waited for.
    id: Option<i32>,
    ends: &'a TaskTracker,
    watchdog: &'a Arc<Watchdog>,
}

impl<'a> Group<'a> {
    fn lead_by(child: &Child, ends: &'a TaskTracker, watchdog: &'a Arc<Watchdog>) -> Self {
        let id = child.id().and_then(|pid| i32::try_from(pid).ok());
        Group { id, ends, watchdog }
    }

    /// The command exited on its own: what it left running is its business.
    fn disarm(mut self) {
        if let Some(id) = self.id.take() {
            self.watchdog.forget(id);
        }
    }

    /// Ends the group now: SIGTERM, and SIGKILL to what is left of it after [`KILL_AFTER`];
    /// returns once its leader is reaped and no other process of it runs (or, should one
    /// outlive SIGKILL, after [`GONE_AFTER_KILL`], saying so).
    async fn end(mut self, child: &mut Child) {
        // The id stays until SIGKILL is sent, so that a drop on the way still ends the group.
        let Some(id) = self.id else { return };
        signal_group(id, libc::SIGTERM);
        let deadline = tokio::time::Instant::now() + KILL_AFTER;
        let _ = tokio::time::timeout_at(deadline, child.wait()).await;
        if !gone_by(id, deadline).await {
            signal_group(id, libc::SIGKILL);
        }
        self.id = None;
        let _ = child.wait().await;
        if !gone_by(id, tokio::time::Instant::now() + GONE_AFTER_KILL).await {
            tracing::warn!(
                group = id,
                "processes of the command's group outlived SIGKILL; going on without them"
            );
        }
        self.watchdog.forget(id);
    }
}

impl Drop for Group<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        signal_group(id, libc::SIGTERM);
        if tokio::runtime::Handle::try_current().is_ok() && !self.ends.is_closed() {
            let watchdog = self.watchdog.clone();
            self.ends.spawn(async move {
                kill_if_left(id).await;
                watchdog.forget(id);
            });
        } else {
            signal_group(id, libc::SIGKILL);
            self.watchdog.forget(id);
        }
    }
}

/// SIGKILL to the group if anything of it is left after [`KILL_AFTER`].
async fn kill_if_left(id: i32) {
    if !gone_by(id, tokio::time::Instant::now() + KILL_AFTER).await {
        signal_group(id, libc::SIGKILL);
    }
}

/// Waits until no process of the group `id` runs, or `deadline`; true when none runs.
async fn gone_by(id: i32, deadline: tokio::time::Instant) -> bool {
    loop {
        if !group_runs(id) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// True while a process of the group `id` runs. An exited process stays in its group as a
/// zombie until its parent (for an orphan, init) reaps it, and some inits never do; a zombie
/// runs nothing, so on Linux the group's members are looked up and zombies do not count.
fn group_runs(id: i32) -> bool {
    if !signal_group(id, 0) {
        return false;
    }
    #[cfg(target_os = "linux")]
    if let Ok(entries) = std::fs::read_dir("/proc") {
        return entries.flatten().any(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            runs_in_group(&stat, id)
        });
    }
    true
}

/// True when `stat` (a `/proc/PID/stat` line) is of a process of group `id` that is no zombie.
#[cfg(target_os = "linux")]
fn runs_in_group(stat: &str, id: i32) -> bool {
    // The name (field 2, in parentheses) may hold spaces and parentheses: fields are counted
    // from after its last `)`: state, parent, group.
    let Some((_, rest)) = stat.rsplit_once(") ") else {
        return false;
    };
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next();
    let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
    group == Some(id) && state != Some("Z")
}

/// Sends `signal` to every process of the group `id` (0: only checks that one is left, zombies
/// included); true when the group had a process to send it to.
fn signal_group(id: i32, signal: libc::c_int) -> bool {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe { libc::kill(-id, signal) == 0 }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_zombie_does_not_run_in_its_group() {
        assert!(runs_in_group("42 (sh) S 1 42 42 0 -1", 42));
        assert!(runs_in_group("43 (a) b) (c) R 42 42 42 0", 42));
        assert!(!runs_in_group("44 (sleep) Z 1 42 42 0 -1", 42));
        assert!(!runs_in_group("45 (sh) S 1 45 45 0 -1", 42));
        assert!(!runs_in_group("", 42));
    }
}
