//! The Java Redisson side: a long-lived JVM (benches/java, `Bench serve`) answering one command
//! per stdin line with `RESULT <json>` or `ERROR <text>`.

use crate::redis::BoxResult;
use serde_json::Value as Json;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

#[derive(Debug)]
pub(crate) struct JavaPeer {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Redisson's version, as the JVM reports it.
    pub(crate) redisson_version: String,
}
/// A started JVM: the process, its stdin, its stdout's lines, and the rest of its `READY` line.
pub(crate) type Ready = (Child, ChildStdin, Lines<BufReader<ChildStdout>>, String);

/// Starts `command` with piped stdin and stdout and waits (at most `secs`) for its `READY` line.
pub(crate) async fn spawn_until_ready(mut command: Command, secs: u64) -> BoxResult<Ready> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start java: {e}"))?;
    let stdin = child.stdin.take().ok_or("java: no stdin")?;
    let stdout = child.stdout.take().ok_or("java: no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(secs), async {
        while let Some(line) = lines.next_line().await? {
            if let Some(rest) = line.strip_prefix("READY") {
                return Ok::<_, std::io::Error>(Some(rest.trim().to_owned()));
            }
        }
        Ok(None)
    })
    .await
    .map_err(|_| format!("java: no READY within {secs} s"))??
    .ok_or("java exited before READY")?;
    Ok((child, stdin, lines, ready))
}

/// `java -cp <classpath> delayq.bench.Bench <args>`.
pub(crate) fn command(classpath: &str, args: &[String]) -> Command {
    command_for(classpath, "delayq.bench.Bench", args)
}

/// `java -cp <classpath> <class> <args>`.
pub(crate) fn command_for(classpath: &str, class: &str, args: &[String]) -> Command {
    let mut cmd = Command::new("java");
    cmd.arg("-cp")
        .arg(classpath)
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        // Redisson logs that RDelayedQueue is deprecated (for RReliableQueue) on every use.
        .arg("-Dorg.slf4j.simpleLogger.log.org.redisson.Redisson=off")
        .arg(class)
        .args(args)
        .kill_on_drop(true);
    cmd
}

impl JavaPeer {
    pub(crate) async fn start(classpath: &str, url: &str) -> BoxResult<JavaPeer> {
        let command = command(classpath, &["serve".into(), url.into()]);
        let (child, stdin, lines, ready) = spawn_until_ready(command, 60).await?;
        Ok(JavaPeer {
            child,
            stdin,
            lines,
            redisson_version: ready,
        })
    }

    /// Sends one command and waits (at most `timeout`) for its answer.
    pub(crate) async fn call(&mut self, command: &str, timeout: Duration) -> BoxResult<Json> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await?;
        self.stdin.flush().await?;
        let lines = &mut self.lines;
        let answer = tokio::time::timeout(timeout, async {
            while let Some(line) = lines.next_line().await? {
                if line.starts_with("RESULT ") || line.starts_with("ERROR ") {
                    return Ok::<_, std::io::Error>(Some(line));
                }
            }
            Ok(None)
        })
        .await
        .map_err(|_| format!("java: `{command}` took over {timeout:?}"))??
        .ok_or_else(|| format!("java exited during `{command}`"))?;
        match answer.strip_prefix("RESULT ") {
            Some(json) => Ok(serde_json::from_str(json)?),
            None => Err(format!("java: `{command}`: {answer}").into()),
        }
    }

    /// Closes stdin (the JVM destroys its queues and exits) and waits for it.
    pub(crate) async fn stop(mut self) -> BoxResult<()> {
        drop(self.stdin);
        match tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    return Err(format!("java exited with {status}").into());
                }
            }
            Err(_) => {
                self.child.kill().await?;
                return Err("java did not exit within 30 s".into());
            }
        }
        Ok(())
    }
}

/// Runs a one-shot JVM (`Bench rss ...`) and parses its `RESULT` line.
pub(crate) async fn run_once(classpath: &str, args: &[String]) -> BoxResult<Json> {
    let output = command(classpath, args)
        .stderr(Stdio::inherit())
        .output()
        .await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!("java {args:?} exited with {}: {stdout}", output.status).into());
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .ok_or_else(|| format!("java {args:?}: no RESULT line in {stdout:?}"))?;
    Ok(serde_json::from_str(line)?)
}
