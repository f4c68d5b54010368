//! One value's command: in a process group of its own, the value on its stdin (and in
//! `DELAYQ_VALUE` when it fits an environment variable), within `--timeout`, and the whole
//! group ended (SIGTERM, then SIGKILL) when it runs out of time or its job is abandoned.

use crate::text_codec::TextCodec;
use delayq::Job;
use std::process::Stdio;
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

/// How the worker runs its command.
pub(crate) struct CommandRunner {
    program: String,
    args: Vec<String>,
    /// `--timeout`: longest run of one command.
    timeout: Option<Duration>,
    codec: TextCodec,
    /// Ends the process groups of commands whose jobs were abandoned.
    ends: TaskTracker,
}

impl CommandRunner {
    pub(crate) fn new(
        command: Vec<String>,
        timeout: Option<Duration>,
        codec: TextCodec,
    ) -> anyhow::Result<Self> {
        let mut command = command.into_iter();
        let program = command
            .next()
            .ok_or_else(|| anyhow::anyhow!("work needs a command after --"))?;
        Ok(CommandRunner {
            program,
            args: command.collect(),
            timeout,
            codec,
            ends: TaskTracker::new(),
        })
    }

    /// Runs the command for one value: exit 0 acknowledges it.
    pub(crate) async fn run(&self, job: Job<String>) -> anyhow::Result<()> {
        let mut child = self.command(&job).spawn()?;
        let group = Group::lead_by(&child, &self.ends);
        let input = self.codec.file_bytes(job.value(), job.raw());
        let stdin = child.stdin.take();
        // A command that does not read its stdin, or exits early, closes the pipe: the write
        // then fails (EPIPE; SIGPIPE is ignored) and that is no error of the job.
        let feed = async move {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(input).await;
            }
        };
        let exited = exit_of(&mut child, feed);
        let status = match self.timeout {
            None => exited.await?,
            Some(limit) => match tokio::time::timeout(limit, exited).await {
                Ok(status) => status?,
                Err(_) => {
                    group.end(&mut child).await;
                    anyhow::bail!(
                        "{} ran longer than --timeout {}; its process group was ended",
                        self.program,
                        humantime::format_duration(limit)
                    );
                }
            },
        };
        group.disarm();
        if status.success() {
            Ok(())
        } else {
            anyhow::bail!("{} exited with {status}", self.program)
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
            .stdin(Stdio::piped())
            // Its own group, so that ending it ends what it started too; a terminal's Ctrl-C
            // reaches only the worker, which lets the command finish within --grace.
            .process_group(0);
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

/// The child's exit status, feeding its stdin meanwhile; stops feeding when it exits.
async fn exit_of(
    child: &mut Child,
    feed: impl std::future::Future<Output = ()>,
) -> std::io::Result<std::process::ExitStatus> {
    tokio::pin!(feed);
    let mut fed = false;
    loop {
        tokio::select! {
            () = &mut feed, if !fed => fed = true,
            status = child.wait() => return status,
        }
    }
}

/// The process group of a running command. Dropped while armed (its job abandoned at the end
/// of the grace period), it ends the group: SIGTERM at once, SIGKILL after [`KILL_AFTER`].
struct Group<'a> {
    /// The group's id (its leader's pid), while the leader has not been waited for.
    id: Option<i32>,
    ends: &'a TaskTracker,
}

impl<'a> Group<'a> {
    fn lead_by(child: &Child, ends: &'a TaskTracker) -> Self {
        let id = child.id().and_then(|pid| i32::try_from(pid).ok());
        Group { id, ends }
    }

    /// The command exited on its own: what it left running is its business.
    fn disarm(mut self) {
        self.id = None;
    }

    /// Ends the group now and waits for its leader.
    async fn end(mut self, child: &mut Child) {
        // The id stays until SIGKILL is sent, so that a drop on the way still ends the group.
        let Some(id) = self.id else { return };
        signal_group(id, libc::SIGTERM);
        let _ = tokio::time::timeout(KILL_AFTER, child.wait()).await;
        signal_group(id, libc::SIGKILL);
        self.id = None;
        let _ = child.wait().await;
    }
}

impl Drop for Group<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        signal_group(id, libc::SIGTERM);
        if tokio::runtime::Handle::try_current().is_ok() && !self.ends.is_closed() {
            self.ends.spawn(kill_if_left(id));
        } else {
            signal_group(id, libc::SIGKILL);
        }
    }
}

/// SIGKILL to the group if anything of it is left after [`KILL_AFTER`].
async fn kill_if_left(id: i32) {
    let deadline = tokio::time::Instant::now() + KILL_AFTER;
    while signal_group(id, 0) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal_group(id, libc::SIGKILL);
}

/// Sends `signal` to every process of the group `id` (0: only checks that one is left); true
/// when the group had a process to send it to.
fn signal_group(id: i32, signal: libc::c_int) -> bool {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe { libc::kill(-id, signal) == 0 }
}
