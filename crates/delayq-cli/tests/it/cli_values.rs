//! Values in and out of the `delayq` command line: `--value-file PATH` and `-` for stdin,
//! `--json` (one object per value, binary as base64), `--null-data` (NUL-separated records,
//! and NUL-separated values in), `--codec kryo`, and 16 MB values both ways.

use crate::common::{unique_name, TestRedis};
use base64::Engine as _;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn delayq(url: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_delayq"))
        .env("REDIS_URL", url)
        .env_remove("RUST_LOG")
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let input = input.to_vec();
        // Written from another thread: the child may fill its stdout pipe meanwhile.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "delayq {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Moves every due entry and takes `count` values.
fn transfer_and_take(url: &str, queue: &str, extra: &[&str], count: usize) -> Vec<u8> {
    delayq(url, &["transfer", "--once", queue], None);
    let count = count.to_string();
    let mut args = vec!["take", queue, "--count", &count, "--timeout", "5s"];
    args.extend_from_slice(extra);
    delayq(url, &args, None).stdout
}

/// 16 MiB of text with newlines, tabs and NUL-free UTF-8: more than Linux takes as one
/// command-line argument (128 KiB), so it can only travel through a file or stdin.
fn big_text() -> String {
    let line = "order-17\twith a tab, é and 😀 — and a newline\n";
    let mut s = String::with_capacity(16 << 20);
    while s.len() < 16 << 20 {
        s.push_str(line);
    }
    s
}

#[test]
fn sixteen_megabytes_of_text_through_a_file_and_back_nul_terminated() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("cli-big-text");
    let value = big_text();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("value.txt");
    std::fs::write(&path, &value).unwrap();
    let path = path.to_str().unwrap();
    delayq(&url, &["offer", &queue, "--value-file", path], None);
    let out = transfer_and_take(&url, &queue, &["--null-data"], 1);
    assert_eq!(out.len(), value.len() + 1);
    assert!(
        out[..value.len()] == *value.as_bytes(),
        "the value changed on the way"
    );
    assert_eq!(out.last(), Some(&0));
}

#[test]
fn sixteen_megabytes_of_bytes_through_stdin_and_back_as_base64_json() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("cli-big-bytes");
    let value: Vec<u8> = (0..16u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    delayq(
        &url,
        &["--codec", "bytes", "offer", &queue, "-"],
        Some(&value),
    );
    let out = transfer_and_take(&url, &queue, &["--codec", "bytes", "--json"], 1);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1);
    let doc: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(doc["queue"], queue.as_str());
    let back = base64::engine::general_purpose::STANDARD
        .decode(doc["value_base64"].as_str().unwrap())
        .unwrap();
    assert!(back == value, "the bytes changed on the way");
}

#[test]
fn nul_separated_values_in_and_json_documents_out() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("cli-nul");
    let values = ["first\nline", "", "tab\there"];
    let input = values.join("\0") + "\0";
    delayq(
        &url,
        &["--null-data", "offer", &queue, "--value-file", "-"],
        Some(input.as_bytes()),
    );
    let out = transfer_and_take(&url, &queue, &["--json"], 3);
    // Equal due times: the transfer order among them is the entries' byte order.
    let mut got: Vec<String> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            let doc: serde_json::Value = serde_json::from_str(l).unwrap();
            doc["value"].as_str().unwrap().to_owned()
        })
        .collect();
    got.sort();
    let mut want: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
    want.sort();
    assert_eq!(got, want);
    // Results print as JSON too.
    let out = delayq(&url, &["--json", "remove", &queue, "gone"], None);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc, serde_json::json!({"queue": queue, "removed": false}));
}

#[test]
fn kryo_values_in_their_json_form_with_java_bytes_on_redis() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("cli-kryo");
    let value = r#"{"bigDecimal":"12.50"}"#;
    delayq(
        &url,
        &["--codec", "kryo", "offer", &queue, value, "--delay", "1h"],
        None,
    );
    let pending = redis.cli(&["LLEN", &format!("redisson_delay_queue:{{{queue}}}")]);
    assert_eq!(pending.trim(), "1");
    let out = delayq(&url, &["--codec", "kryo", "--json", "peek", &queue], None);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["value"], serde_json::json!({"bigDecimal": "12.50"}));
    let out = delayq(
        &url,
        &["--codec", "kryo", "remove", &queue, "-"],
        Some(value.as_bytes()),
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "true\n");
    let err = Command::new(env!("CARGO_BIN_EXE_delayq"))
        .env("REDIS_URL", &url)
        .args(["--codec", "kryo", "offer", &queue, "[1,2]"])
        .output()
        .unwrap();
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("list"));
}
