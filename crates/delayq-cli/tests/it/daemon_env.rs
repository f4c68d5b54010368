//! Running the daemons under a service manager: every option of `transfer`, `work` and `ui`
//! read from `DELAYQ_<FLAG>` as well (one option of each set only there changes what the
//! process does), secrets kept out of `--help`, and JSON log lines (`--log-format json`) in
//! which each line is one object and no password appears.

use crate::cli::{text, Running, BIN};
use crate::common::queue::eventually;
use crate::common::{unique_name, Setup, TestRedis, PATIENCE};
use crate::observe::{free_port, get};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary, with none of the test's own variables that it reads.
fn bare() -> Command {
    let mut command = Command::new(BIN);
    command.env_remove("REDIS_URL");
    for (name, _) in std::env::vars() {
        if name.starts_with("DELAYQ_") {
            command.env_remove(name);
        }
    }
    command
}

/// The binary with `--url URL` and the variables `env`.
fn delayq_with(url: &str, env: &[(&str, &str)]) -> Command {
    let mut command = bare();
    command.args(["--url", url]).envs(env.iter().copied());
    command
}

/// Runs `command` to its end, which must come within PATIENCE (else it is killed and the test
/// fails).
fn finish(mut command: Command) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("still running after {PATIENCE:?}: {}", text(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Runs `delayq --url URL ARGS...`, which must succeed; its stdout.
fn run_ok(url: &str, args: &[&str]) -> String {
    let out = finish({
        let mut command = delayq_with(url, &[]);
        command.args(args);
        command
    });
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// The variable a long option is read from: `DELAYQ_` and the flag in upper snake case; the
/// URL keeps the conventional `REDIS_URL`. `None` for the options that shape what a command
/// prints for a script to read (an inherited variable would change it under the script).
fn expected_variable(flag: &str) -> Option<String> {
    match flag {
        "help" | "version" | "json" | "null-data" => None,
        "url" => Some("REDIS_URL".to_owned()),
        _ => Some(format!("DELAYQ_{}", flag.to_uppercase().replace('-', "_"))),
    }
}

/// (flag, variable named in its help) for every long option of `delayq COMMAND --help`.
fn options_in_help(help: &str) -> Vec<(String, Option<String>)> {
    let mut options: Vec<(String, Option<String>)> = Vec::new();
    for line in help.lines() {
        let trimmed = line.trim_start();
        let flag_part = trimmed
            .strip_prefix("--")
            .or_else(|| trimmed.get(4..).and_then(|rest| rest.strip_prefix("--")));
        // Options start within the first columns; their descriptions are indented further.
        let is_flag_line = line.len() - trimmed.len() <= 6
            && (trimmed.starts_with("--")
                || (trimmed.starts_with('-') && trimmed.get(2..4) == Some(", ")));
        if let (true, Some(rest)) = (is_flag_line, flag_part) {
            let name = rest.split([' ', '=', '<']).next().unwrap_or_default();
            options.push((name.to_owned(), None));
        } else if let (Some(at), Some(last)) = (trimmed.find("[env: "), options.last_mut()) {
            let variable = trimmed[at + 6..]
                .split(['=', ']'])
                .next()
                .unwrap_or_default();
            last.1 = Some(variable.to_owned());
        }
    }
    options
}

#[test]
fn every_option_of_the_daemons_is_read_from_its_environment_variable() {
    let secret_url = "redis://:help-secret-7f3a@127.0.0.1:1";
    for command in ["transfer", "work", "ui"] {
        let out = Command::new(BIN)
            .args([command, "--help"])
            .env("REDIS_URL", secret_url)
            .env("DELAYQ_SENTINEL_PASSWORD", "sentinel-secret-9c2e")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let help = text(&out.stdout);
        assert!(!help.contains("help-secret-7f3a"), "{help}");
        assert!(!help.contains("sentinel-secret-9c2e"), "{help}");
        let options = options_in_help(&help);
        assert!(options.len() > 20, "{command}: {options:?}");
        for (flag, variable) in options {
            assert_eq!(
                variable,
                expected_variable(&flag),
                "delayq {command} --{flag}"
            );
        }
    }
}

/// `DELAYQ_ONCE=true`: `transfer` moves what is due and exits instead of running on.
#[test]
fn transfer_once_from_the_environment() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("env-once");
    run_ok(&url, &["offer", &name, "v"]);
    let mut command = delayq_with(&url, &[("DELAYQ_ONCE", "true")]);
    command.args(["transfer", &name]);
    let out = finish(command);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(run_ok(&url, &["take", &name, "--timeout", "1s"]), "v\n");
}

/// `DELAYQ_MAX_ATTEMPTS=1`: the first failure is a dead letter (the flag's 5 would retry it,
/// an hour later with this retry delay).
#[tokio::test(flavor = "multi_thread")]
async fn work_max_attempts_from_the_environment() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("env-attempts");
    let mut command = delayq_with(&url, &[("DELAYQ_MAX_ATTEMPTS", "1")]);
    command.args(["work", &name, "--retry-delay", "1h", "--", "false"]);
    let worker = Running::spawn(command);
    worker.wait_for("working on").await;
    run_ok(&url, &["offer", &name, "v"]);
    let dead = eventually(PATIENCE, || async {
        let dead = run_ok(&url, &["--json", "dead", "list", &name]);
        dead.lines().count() == 1
    })
    .await;
    let said = worker.stop();
    assert!(dead, "no dead letter: {said}");
}

/// `DELAYQ_MATCH`: the dashboard lists only the queues it matches.
#[tokio::test(flavor = "multi_thread")]
async fn ui_match_from_the_environment() {
    let redis = TestRedis::start();
    let url = redis.url();
    let prefix = unique_name("env-match");
    let (shown, hidden) = (format!("{prefix}-a"), format!("{prefix}-b"));
    for name in [&shown, &hidden] {
        run_ok(&url, &["offer", name, "v", "--delay", "1h"]);
    }
    let port = free_port();
    let pattern = format!("{prefix}-a*");
    let mut command = delayq_with(&url, &[("DELAYQ_MATCH", &pattern)]);
    command.args(["ui", "--listen", &format!("127.0.0.1:{port}")]);
    let ui = Running::spawn(command);
    ui.wait_for("dashboard of").await;
    let (status, body) = get(port, "/api/queues").unwrap();
    let said = ui.stop();
    assert_eq!(status, 200, "{body} {said}");
    assert!(body.contains(&shown), "{body}");
    assert!(!body.contains(&hidden), "{body}");
}

/// Every stderr line is one JSON object with a level and a message; the password is in none.
fn assert_json_lines(said: &str, password: &str) -> Vec<serde_json::Value> {
    assert!(!said.contains(password), "{said}");
    said.lines()
        .map(|line| {
            let event: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("not JSON ({err}): {line:?}\n{said}"));
            assert!(event["level"].is_string(), "{line}");
            assert!(event["timestamp"].is_string(), "{line}");
            assert!(event["fields"]["message"].is_string(), "{line}");
            event
        })
        .collect()
}

/// A daemon's whole stderr (start, listener, notices with their fields, exit summary), and a
/// command's fatal error, as JSON lines without the password of the URL.
#[tokio::test(flavor = "multi_thread")]
async fn json_log_lines_carry_level_message_and_fields_and_no_password() {
    let password = "json-log-secret-51d0";
    let redis = TestRedis::start_setup(&Setup::password(password), &[]);
    let url = redis.url();
    assert!(url.contains(password));
    let name = unique_name("json-log");
    run_ok(&url, &["pause", &name]);
    let port = free_port();
    // The URL from the environment, as a unit's EnvironmentFile gives it.
    let mut command = bare();
    command
        .args(["transfer", &name, "--listen", &format!("127.0.0.1:{port}")])
        .env("REDIS_URL", &url)
        .env("DELAYQ_LOG_FORMAT", "json");
    let daemon = Running::spawn(command);
    daemon.wait_for("the queue is paused").await;
    let said = daemon.stop();
    let events = assert_json_lines(&said, password);
    let messages: Vec<&str> = events
        .iter()
        .filter_map(|e| e["fields"]["message"].as_str())
        .collect();
    for wanted in ["transferring", "serving http://", "queues (1 at the end)"] {
        assert!(
            messages.iter().any(|m| m.contains(wanted)),
            "{wanted}: {said}"
        );
    }
    let with_fields = events.iter().any(|e| {
        e["fields"]
            .as_object()
            .is_some_and(|fields| fields.len() > 1)
    });
    assert!(
        with_fields,
        "no event with fields besides its message: {said}"
    );

    let wrong = url.replace(password, "wrong-json-secret-a8e1");
    let mut command = delayq_with(&wrong, &[]);
    command.args(["--log-format", "json", "stats", &name]);
    let out = finish(command);
    assert!(!out.status.success());
    let said = text(&out.stderr);
    let events = assert_json_lines(&said, "wrong-json-secret-a8e1");
    assert!(events.iter().any(|e| e["level"] == "ERROR"), "{said}");
}
