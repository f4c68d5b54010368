//! The `delayq` binary as an operator meets it: secrets never printed, a value it cannot decode
//! never dropped, a lasting error said once, warnings about an evicting server, `delayq check`.

use crate::common::queue::{arg, cmd, connect, list_str, manual_queue};
use crate::common::{unique_name, TestRedis};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

fn delayq(url: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["--url", url])
        .args(args)
        .env_remove("REDIS_URL")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Runs `delayq ARGS` for `secs` seconds (then SIGTERM) and returns its stderr.
async fn run_for(url: &str, args: &[&str], secs: f64) -> String {
    let child = Command::new(BIN)
        .args(["--url", url])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    text(&child.wait_with_output().unwrap().stderr)
}

/// EVALSHA calls the server has run so far.
fn evalsha_calls(redis: &TestRedis) -> u64 {
    redis
        .cli(&["INFO", "commandstats"])
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
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
async fn a_value_take_cannot_decode_is_printed_not_dropped() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("undecodable");
    cmd(
        &client,
        "RPUSH",
        vec![arg(&name), arg([b'o', b'k', 0xff, 0xfe])],
    )
    .await;
    let out = delayq(&redis.url(), &["take", &name, "--timeout", "1s"]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("its 4 bytes in hex: 6f6bfffe"), "{stderr}");
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
    let stderr = run_for(&redis.url(), &["transfer", &name], 3.5).await;
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
    assert!(calls <= 2, "{calls} transfer calls in 3.5 s");
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
    let stderr = run_for(&redis.url(), &["transfer", &name], 1.0).await;
    assert!(stderr.contains("maxmemory-policy allkeys-lru"), "{stderr}");

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
    queue.transfer_due(10).await.unwrap();
    assert_eq!(list_str(&client, &name).await, ["now"]);

    let out = delayq(&redis.url(), &["check", &name, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["pending"], 1);
    assert_eq!(report["ready"], 1);
    assert_eq!(report["aof"], true);
    assert_eq!(report["maxmemory_policy"], "noeviction");
    assert_eq!(report["denied"], serde_json::json!([]));
    assert!(
        report["server"].as_str().unwrap().starts_with("redis 7"),
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
