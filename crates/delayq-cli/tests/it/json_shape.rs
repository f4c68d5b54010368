//! The `--json` convention of docs/cli.md ("JSON output"), command by command: every line on
//! stdout is one JSON object with the queue's name in `queue` and snake_case field names, and a
//! failed command prints one `{"error": {...}}` line on stderr whose `exit_status` is its own.

use crate::cli::{delayq, text};
use crate::common::{unique_name, TestRedis};
use delayq::QueueKeys;

/// Whether `name` is snake_case: lower-case ASCII letters, digits and `_`, a letter first.
fn snake_case(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// What is wrong with `line` as a record about `queue`, if anything.
fn fault(line: &str, queue: &str) -> Option<String> {
    let record: serde_json::Value = match serde_json::from_str(line) {
        Ok(record) => record,
        Err(err) => return Some(format!("not JSON ({err})")),
    };
    let Some(fields) = record.as_object() else {
        return Some("not an object".into());
    };
    if record["queue"] != queue {
        return Some("no `queue` naming the queue".into());
    }
    let bad: Vec<&String> = fields.keys().filter(|k| !snake_case(k)).collect();
    if !bad.is_empty() {
        return Some(format!("field names not snake_case: {bad:?}"));
    }
    None
}

#[test]
fn every_command_prints_json_objects_about_its_queue() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("shape");
    let keys = QueueKeys::new(queue.as_str());
    redis.cli(&["RPUSH", keys.dead(), "not a dead-letter record"]);
    redis.cli(&["RPUSH", keys.quarantine(), "junk"]);
    redis.cli(&["RPUSH", &queue, "ready-1", "ready-2"]);
    let handle = {
        let out = delayq(&url, &["offer", &queue, "h", "--delay", "1h", "--handle"]);
        text(&out.stdout).trim().to_owned()
    };
    let commands: Vec<Vec<&str>> = vec![
        vec!["offer", &queue, "v", "--delay", "1h", "--handle"],
        vec!["offer", &queue, "v", "--delay", "1h", "--unique"],
        vec!["reschedule", &queue, "v", "--delay", "2h"],
        vec!["peek", &queue],
        vec!["stats", &queue],
        vec!["check", &queue],
        vec!["queues", "--match", &queue],
        vec!["pause", &queue],
        vec!["resume", &queue],
        vec!["take", &queue, "--timeout", "1s"],
        vec!["--codec", "bytes", "take", &queue, "--timeout", "1s"],
        vec!["transfer", "--once", &queue],
        vec!["dead", "list", &queue],
        vec!["dead", "replay", &queue],
        vec!["dead", "purge", &queue],
        vec!["quarantine", "list", &queue],
        vec!["quarantine", "purge", &queue],
        vec!["cancel", &queue, &handle],
        vec!["remove", &queue, "v"],
        vec!["clear", &queue],
    ];
    let mut faults = Vec::new();
    for args in &commands {
        let out = delayq(&url, &[&["--json"], args.as_slice()].concat());
        let stdout = text(&out.stdout);
        if stdout.trim().is_empty() {
            faults.push(format!("{args:?} printed nothing: {}", text(&out.stderr)));
        }
        for line in stdout.lines() {
            if let Some(fault) = fault(line, &queue) {
                faults.push(format!("{args:?}: {fault}: {line}"));
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn a_failed_command_says_why_as_one_json_object_on_stderr() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("shape-error");
    redis.cli(&["SET", QueueKeys::new(queue.as_str()).order(), "a string"]);
    let out = delayq(&url, &["--json", "offer", &queue, "v"]);
    assert_eq!(out.status.code(), Some(5));
    assert!(out.stdout.is_empty());
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let record: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    let error = &record["error"];
    assert_eq!(error["exit_status"], 5, "{record}");
    assert!(
        error["message"].is_string() && error["causes"].is_array(),
        "{record}"
    );
}
