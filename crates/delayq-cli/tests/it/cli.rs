//! The `delayq` binary as an operator meets it: secrets never printed, a value it cannot decode
//! never dropped, a lasting error said once, warnings about an evicting server, `delayq check`.

use crate::common::queue::{arg, cmd, connect, list_str, manual_queue};
use crate::common::{unique_name, TestRedis, PATIENCE};
use std::io::BufRead;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// `delayq --url URL ARGS...`, run to its end.
pub(crate) fn delayq(url: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["--url", url])
        .args(args)
        .env_remove("REDIS_URL")
        .output()
        .unwrap()
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A running `delayq ARGS` whose stderr is read as it comes, so a test waits for what the
/// process says rather than for a guessed time.
pub(crate) struct Running {
    child: Child,
    stderr: Arc<Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
}

impl Running {
    pub(crate) fn start(url: &str, args: &[&str]) -> Running {
        let mut command = Command::new(BIN);
        command.args(["--url", url]).args(args);
        Running::spawn(command)
    }

    /// Starts `command` (the binary with its arguments and environment), its stderr read.
    pub(crate) fn spawn(mut command: Command) -> Running {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pipe = std::io::BufReader::new(child.stderr.take().unwrap());
        let stderr = Arc::new(Mutex::new(String::new()));
        let reader = {
            let stderr = stderr.clone();
            std::thread::spawn(move || {
                for line in pipe.lines().map_while(Result::ok) {
                    let mut all = stderr.lock().unwrap();
                    all.push_str(&line);
                    all.push('\n');
                }
            })
        };
        Running {
            child,
            stderr,
            reader,
        }
    }

    /// Waits until a line of its stderr contains `wanted`.
    pub(crate) async fn wait_for(&self, wanted: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !self.stderr.lock().unwrap().contains(wanted) {
            let said = self.stderr.lock().unwrap().clone();
            assert!(Instant::now() < deadline, "never said {wanted:?}: {said}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops it (SIGTERM) and returns everything it wrote to stderr.
    pub(crate) fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        self.child.wait().unwrap();
        self.reader.join().unwrap();
        let said = self.stderr.lock().unwrap().clone();
        said
    }
}

/// EVALSHA calls the server has run so far.
fn evalsha_calls(redis: &TestRedis) -> u64 {
    redis.command_calls("evalsha")
}

#[test]
fn passwords_are_never_printed() {
    let secret = "S3cretPW-never-printed";
    let url = format!("redis://app:{secret}@127.0.0.1:{}", closed_port());
    let out = delayq(&url, &["stats", "q"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cannot connect to redis://app:***@127.0.0.1"),
        "{stderr}"
    );
    assert!(!stderr.contains(secret), "{stderr}");

    // --help shows where the URL comes from, never its value.
    let help = Command::new(BIN)
        .args(["offer", "--help"])
        .env("REDIS_URL", &url)
        .output()
        .unwrap();
    let help = text(&help.stdout);
    assert!(help.contains("REDIS_URL"), "{help}");
    assert!(!help.contains(secret), "{help}");

    // A password given apart from the URL, from a file or the environment.
    let redis = TestRedis::start();
    redis.cli(&[
        "ACL",
        "SETUSER",
        "app",
        "on",
        &format!(">{secret}"),
        "~*",
        "&*",
        "+@all",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("password");
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    let plain = format!("redis://app@127.0.0.1:{}", redis.port);
    let out = delayq(
        &plain,
        &["--password-file", file.to_str().unwrap(), "offer", "q", "v"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = Command::new(BIN)
        .args(["--url", &plain, "--password-from-env", "remove", "q", "v"])
        .env("REDIS_PASSWORD", secret)
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout).trim(), "true", "{}", text(&out.stderr));
    let wrong = format!("redis://app:wrong-{secret}@127.0.0.1:{}", redis.port);
    let stderr = text(&delayq(&wrong, &["stats", "q"]).stderr);
    assert!(!stderr.contains(secret), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lasting_error_is_said_once_and_backed_off_without_colours() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("lasting");
    let queue = manual_queue(&client, &name).await;
    queue.offer("due", Duration::ZERO).await.unwrap();
    redis.cli(&["SET", &name, "not a list"]);
    let before = evalsha_calls(&redis);
    let daemon = Running::start(&redis.url(), &["transfer", &name]);
    daemon.wait_for("transfer failed").await;
    // Shorter than the backoff after the failure (5 s): a busy machine only makes the next
    // try later.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stderr = daemon.stop();
    let calls = evalsha_calls(&redis) - before;
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("transfer failed"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains(&format!("key '{name}' is a string")),
        "{stderr}"
    );
    // A key of the wrong type needs an operator: the next try waits the longest backoff (5 s).
    assert!(
        calls <= 2,
        "{calls} transfer calls within 3 s of the failure"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes in a pipe: {stderr:?}"
    );
    assert_eq!(queue.size().await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_evicting_server_is_warned_about() {
    let redis = TestRedis::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    let name = unique_name("evicting");
    let daemon = Running::start(&redis.url(), &["transfer", &name]);
    daemon.wait_for("maxmemory-policy allkeys-lru").await;
    daemon.stop();

    let out = delayq(&redis.url(), &["check", &name]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("warning:      maxmemory-policy is allkeys-lru"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn check_reports_counts_persistence_and_the_users_rights() {
    let redis = TestRedis::start_with(&["--appendonly", "yes"]);
    let client = connect(&redis.url()).await;
    let name = unique_name("check");
    let queue = manual_queue(&client, &name).await;
    queue.offer("later", Duration::from_secs(60)).await.unwrap();
    queue.offer("now", Duration::ZERO).await.unwrap();
    queue.admin().transfer_due(10).await.unwrap();
    assert_eq!(list_str(&client, &name).await, ["now"]);

    let out = delayq(&redis.url(), &["check", &name, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["pending"], 1);
    assert_eq!(report["ready"], 1);
    assert_eq!(report["aof"], true);
    assert_eq!(report["maxmemory_policy"], "noeviction");
    assert_eq!(report["denied"], serde_json::json!([]));
    let server = report["server"].as_str().unwrap();
    assert!(
        server.starts_with("redis 7") || server.starts_with("valkey 8"),
        "{report}"
    );

    // A user who may use the hash-tagged keys but not the target list NAME, nor the channel.
    redis.cli(&[
        "ACL",
        "SETUSER",
        "narrow",
        "on",
        ">pw",
        &format!("~*{{{name}}}*"),
        "+@all",
    ]);
    let narrow = format!("redis://narrow:pw@127.0.0.1:{}", redis.port);
    let out = delayq(&narrow, &["check", &name, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{report}");
    let denied = report["denied"].to_string();
    assert!(denied.contains(&format!("BLPOP {name} 1")), "{denied}");
    assert!(
        denied.contains("PUBLISH redisson_delay_queue_channel:"),
        "{denied}"
    );
    assert!(
        !denied.contains("ZADD redisson_delay_queue_timeout:"),
        "{denied}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn infinite_scores_are_shown_as_such() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("inf");
    let queue = manual_queue(&client, &name).await;
    let entry = delayq::entry::pack(&[7; 8], b"foreign");
    let keys = queue.keys().clone();
    cmd(
        &client,
        "ZADD",
        vec![arg(keys.timeout()), arg("-inf"), arg(&entry)],
    )
    .await;
    cmd(&client, "RPUSH", vec![arg(keys.order()), arg(&entry)]).await;

    let out = delayq(&redis.url(), &["peek", &name]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(stdout, "-inf\tdue since ever\tforeign\n");
    let out = delayq(&redis.url(), &["stats", &name]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("next due:    -inf (due since ever)"),
        "{stdout}"
    );
}

/// Exit statuses by error class, so scripts can branch; the error in words, each cause once.
#[tokio::test(flavor = "multi_thread")]
async fn exit_statuses_tell_the_error_classes_apart() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("exit");
    let code = |url: &str, args: &[&str]| delayq(url, args).status.code();

    let closed = format!("redis://127.0.0.1:{}", closed_port());
    let out = delayq(&closed, &["stats", &name]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(!stderr.contains("Os {"), "Debug text: {stderr}");
    assert_eq!(stderr.matches("connection refused").count(), 1, "{stderr}");

    redis.cli(&["ACL", "SETUSER", "nobody", "on", ">pw", "~other*", "+@all"]);
    let port = redis.port;
    assert_eq!(
        code(
            &format!("redis://nobody:wrong@127.0.0.1:{port}"),
            &["stats", &name]
        ),
        Some(4)
    );
    assert_eq!(
        code(
            &format!("redis://nobody:pw@127.0.0.1:{port}"),
            &["stats", &name]
        ),
        Some(4)
    );
    assert_eq!(
        code(&url, &["--delay", "soon", "offer", &name, "v"]),
        Some(2)
    );
    assert_eq!(
        code(&url, &["--codec", "long", "offer", &name, "twelve"]),
        Some(6)
    );
    redis.cli(&[
        "SET",
        &format!("redisson_delay_queue:{{{name}}}"),
        "a string",
    ]);
    assert_eq!(code(&url, &["offer", &name, "v"]), Some(5));

    let other = unique_name("exit-false");
    let out = delayq(&url, &["remove", &other, "nothing", "--exit-status"]);
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(1), "false\n".to_owned())
    );
    assert_eq!(code(&url, &["remove", &other, "nothing"]), Some(0));
    assert_eq!(
        code(
            &url,
            &[
                "reschedule",
                &other,
                "nothing",
                "--delay",
                "1s",
                "--exit-status"
            ]
        ),
        Some(1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn durations_are_read_as_people_type_them() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("durations");
    // Each value is the delay it was offered with; its due time lies that far after a moment
    // between the readings of the clock before and after the command.
    let mut offered = std::collections::HashMap::new();
    for (delay, ms) in [
        ("1h30m", 5_400_000),
        ("1.5s", 1_500),
        ("90sec", 90_000),
        ("10S", 10_000),
        ("2 hours 5 min", 7_500_000),
    ] {
        let before = delayq::time::now_ms();
        let out = delayq(&redis.url(), &["offer", &name, delay, "--delay", delay]);
        assert!(out.status.success(), "{delay}: {}", text(&out.stderr));
        offered.insert(delay.to_owned(), (before + ms, delayq::time::now_ms() + ms));
    }
    let queue = manual_queue(&client, &name).await;
    let pending = queue.inspect().pending(0).await.unwrap();
    assert_eq!(pending.len(), offered.len());
    for p in pending {
        let delay = p.value.unwrap();
        let (earliest, latest) = offered[&delay];
        let due = p.due_ms.unwrap();
        assert!(
            (earliest..=latest).contains(&due),
            "{delay}: due {due}, not in [{earliest}, {latest}]"
        );
    }
}

#[test]
fn help_is_grouped_and_only_offers_what_works() {
    let help = |args: &[&str]| text(&Command::new(BIN).args(args).output().unwrap().stdout);
    let offer = help(&["offer", "--help"]);
    let own = offer.find("--unique").unwrap();
    let global = offer.find("Global options:").unwrap();
    assert!(
        own < global && global < offer.find("--url").unwrap(),
        "{offer}"
    );
    assert!(!help(&["quarantine", "--help"]).contains("replay"));
    let work = help(&["work", "--help"]);
    let usage = work.lines().find(|l| l.starts_with("Usage:")).unwrap();
    assert_eq!(
        usage,
        "Usage: delayq work [OPTIONS] <QUEUE>... -- <COMMAND>..."
    );
    assert!(help(&["--help"]).contains("Exit codes: 0 success"));
    assert!(help(&["completions", "bash"]).contains("_delayq()"));
    assert!(help(&["man"]).starts_with(".ie \\n(.g"), "not a roff page");
}

/// 50,000 dead letters: `dead replay` reports progress as log lines into a pipe, as a line
/// rewritten in place on a terminal (a pseudo-terminal made by `script`).
#[tokio::test(flavor = "multi_thread")]
async fn long_work_shows_progress() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("progress");
    let keys = delayq::QueueKeys::new(name.as_str());
    for chunk in 0..50 {
        let mut args = vec![arg(keys.dead())];
        for i in 0..1_000 {
            let mut record = b"DQD1".to_vec();
            record.extend_from_slice(&1u32.to_be_bytes());
            record.extend_from_slice(&0i64.to_be_bytes());
            record.extend_from_slice(&0u32.to_be_bytes());
            record.extend_from_slice(format!("v{chunk}-{i}").as_bytes());
            args.push(arg(record));
        }
        cmd(&client, "RPUSH", args).await;
    }
    let out = delayq(&redis.url(), &["dead", "replay", &name, "--limit", "30000"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "30000\n");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("delayq: replayed"))
        .collect();
    assert!(lines.len() >= 10, "{stderr}");
    assert!(!stderr.contains('\r'));

    let command = format!(
        "{BIN} --url {} dead replay {name} --limit 5000",
        redis.url()
    );
    let tty = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("REDIS_URL")
        .output()
        .unwrap();
    let shown = text(&tty.stdout);
    assert!(
        shown.contains("\rreplayed 5000 of 5000 (100%)"),
        "{shown:?}"
    );
    assert_eq!(redis.cli(&["LLEN", keys.dead()]), "15000");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_transfer_daemon_sums_up_a_backlog() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("backlog");
    let queue = manual_queue(&client, &name).await;
    let values: Vec<(String, Duration)> = (0..5_000)
        .map(|i| (format!("v{i}"), Duration::ZERO))
        .collect();
    queue.offer_all(&values).await.unwrap();
    let daemon = Running::start(&redis.url(), &["transfer", &name]);
    daemon.wait_for("caught up a backlog").await;
    let stderr = daemon.stop();
    let line = stderr
        .lines()
        .find(|l| l.contains("caught up a backlog"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("moved=5000"), "{line}");
}

/// `delayq transfer --all`: the sidecar for every Java service's queues.
#[tokio::test(flavor = "multi_thread")]
async fn transfer_all_moves_every_matching_queue() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let prefix = unique_name("sidecar");
    let (early, late, other) = (
        format!("{prefix}-a"),
        format!("{prefix}-b"),
        unique_name("x"),
    );
    manual_queue(&client, &early)
        .await
        .offer("v", Duration::from_millis(500))
        .await
        .unwrap();
    manual_queue(&client, &other)
        .await
        .offer("v", Duration::ZERO)
        .await
        .unwrap();
    let pattern = format!("{prefix}-*");
    let daemon = Running::start(&redis.url(), &["transfer", "--all", "--match", &pattern]);
    // It says how many queues it found; the second one is created after that.
    daemon
        .wait_for(&format!(
            "transferring 1 delayed queue matching \"{pattern}\""
        ))
        .await;
    manual_queue(&client, &late)
        .await
        .offer("v", Duration::from_millis(200))
        .await
        .unwrap();
    let both_moved = crate::common::queue::eventually(PATIENCE, || async {
        list_str(&client, &early).await == ["v"] && list_str(&client, &late).await == ["v"]
    })
    .await;
    let stderr = daemon.stop();
    assert!(both_moved, "{stderr}");
    assert!(
        list_str(&client, &other).await.is_empty(),
        "the pattern leaves it"
    );
}

/// `delayq transfer --once` moves at most 100 entries a call by default, as Redisson's
/// scheduler does; `--max-batch N` lets calls grow up to N while they stay short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_moves_100_a_call_unless_max_batch_says_more() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let url = redis.url();
    let mut calls_for = Vec::new();
    for extra in [&[][..], &["--max-batch", "5000"][..]] {
        let name = unique_name("max-batch");
        let queue = manual_queue(&client, &name).await;
        let items: Vec<(String, Duration)> = (0..2_000)
            .map(|i| (format!("v{i:04}"), Duration::ZERO))
            .collect();
        queue.offer_all(&items).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let before = evalsha_calls(&redis);
        let mut args = vec!["transfer", "--once", name.as_str()];
        args.extend_from_slice(extra);
        let out = delayq(&url, &args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout).trim(),
            format!("QUEUE\tMOVED\tQUARANTINED\n{name}\t2000\t0")
        );
        calls_for.push(evalsha_calls(&redis) - before);
        assert_eq!(list_str(&client, &name).await.len(), 2_000);
    }
    let (default_calls, roomy_calls) = (calls_for[0], calls_for[1]);
    // 2,000 due: 20 calls of 100 and the empty one that ends --once.
    assert!(
        default_calls >= 21,
        "default: {default_calls} calls for 2,000"
    );
    assert!(
        roomy_calls < default_calls,
        "--max-batch 5000: {roomy_calls} calls, default {default_calls}"
    );
}
