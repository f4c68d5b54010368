//! A codec per queue: `--codec-for PATTERN=CODEC` (and `DELAYQ_CODEC_FOR`) reads each queue with
//! its own codec wherever the command line opens it by name; `--codec auto` tells each value's
//! codec and Java class from its bytes, and writes nothing.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// `delayq --url URL ARGS` with `env` set, to its end.
fn run(url: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["--url", url])
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("DELAYQ_CODEC")
        .env_remove("DELAYQ_CODEC_FOR")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// As [`run`], which must succeed; its stdout.
fn ok(url: &str, env: &[(&str, &str)], args: &[&str]) -> String {
    let out = run(url, env, args);
    assert!(
        out.status.success(),
        "delayq {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The `--json` records a command printed, one a line.
fn records(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One Kryo queue and one string queue, each read with its own codec by `peek` and `dead list`:
/// the patterns of `--codec-for` on the command line, and of `DELAYQ_CODEC_FOR` (a list
/// separated by spaces) for the worker that makes the dead letters.
#[test]
fn each_queue_is_read_with_the_codec_its_pattern_names() {
    let redis = TestRedis::start();
    let url = redis.url();
    let prefix = unique_name("codec-for");
    let (kryo, text) = (format!("{prefix}:kryo"), format!("{prefix}:text"));
    ok(
        &url,
        &[],
        &[
            "--codec",
            "kryo",
            "offer",
            &kryo,
            r#""hello kryo""#,
            "--delay",
            "1h",
        ],
    );
    ok(&url, &[], &["offer", &text, "plain text", "--delay", "1h"]);
    let rules = format!("{prefix}:k*=kryo");
    let peek = |queue: &str| {
        let out = ok(&url, &[], &["--json", "--codec-for", &rules, "peek", queue]);
        records(&out)[0]["value"].clone()
    };
    assert_eq!(peek(&kryo), json!("hello kryo"));
    assert_eq!(peek(&text), json!("plain text"));

    // Dead letters, made by a worker whose command fails, read back by each queue's codec.
    let (dead_kryo, dead_text) = (format!("{prefix}:kdead"), format!("{prefix}:tdead"));
    ok(&url, &[], &["--codec", "kryo", "offer", &dead_kryo, "42"]);
    ok(&url, &[], &["offer", &dead_text, "dead text"]);
    let env_rules = format!("{prefix}:t*=string {prefix}:k*=kryo");
    let mut worker = Command::new(BIN)
        .args([
            "--url",
            &url,
            "work",
            &dead_kryo,
            &dead_text,
            "--max-attempts",
            "1",
        ])
        .args(["--", "false"])
        .env("DELAYQ_CODEC_FOR", &env_rules)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dead_key = |queue: &str| format!("delayq_dead:{{{queue}}}");
    wait_until("a dead letter in each queue", PATIENCE, || {
        let counts = [&dead_kryo, &dead_text].map(|q| redis.cli(&["LLEN", &dead_key(q)]));
        match counts == ["1", "1"] {
            true => Ok(()),
            false => Err(format!("dead letters: {counts:?}")),
        }
    });
    worker.kill().unwrap();
    worker.wait().unwrap();
    let env = [("DELAYQ_CODEC_FOR", env_rules.as_str())];
    for (queue, want) in [(&dead_kryo, json!(42)), (&dead_text, json!("dead text"))] {
        let out = ok(&url, &env, &["--json", "dead", "list", queue]);
        assert_eq!(records(&out)[0]["value"], want, "{queue}");
    }
}

/// `--codec auto` recognises Kryo (String, Long, HashMap), Jackson JSON with `@class`,
/// MessagePack-Jackson, a decimal Long and plain text, says `hex` for bytes none of them wrote,
/// and prints the codec and class beside each value.
#[test]
fn auto_tells_each_value_s_codec_and_class_from_its_bytes() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("codec-auto");
    let offers: [(&[&str], &str); 8] = [
        (&["--codec", "kryo"], r#""kryo text""#),
        (&["--codec", "kryo"], "42"),
        (&["--codec", "kryo"], r#"{"map": [["k", "v"]]}"#),
        (
            &["--codec", "json", "--java-class", "com.example.Order"],
            r#"{"id": 7}"#,
        ),
        (
            &["--codec", "msgpack", "--java-class", "com.example.Item"],
            r#"{"sku": "x"}"#,
        ),
        (&["--codec", "long"], "-17"),
        (&[], "plain text"),
        (&["--codec", "bytes"], "ff0001"),
    ];
    for (i, (codec, value)) in offers.iter().enumerate() {
        let delay = format!("{}m", i + 1);
        let mut args = codec.to_vec();
        args.extend(["offer", &queue, value, "--delay", &delay]);
        ok(&url, &[], &args);
    }
    let out = ok(
        &url,
        &[],
        &["--codec", "auto", "--json", "peek", &queue, "--limit", "10"],
    );
    let seen: BTreeSet<String> = records(&out)
        .iter()
        .map(|r| {
            let value = r.get("value").or(r.get("value_base64")).unwrap();
            format!("{} {} {value}", r["codec"], r["class"])
        })
        .collect();
    let want: BTreeSet<String> = [
        r#""kryo" "java.lang.String" "kryo text""#,
        r#""kryo" "java.lang.Long" 42"#,
        r#""kryo" "java.util.HashMap" {"map":[["k","v"]]}"#,
        r#""json" "com.example.Order" {"@class":"com.example.Order","id":7}"#,
        r#""msgpack" "com.example.Item" {"@class":"com.example.Item","sku":"x"}"#,
        r#""long" null -17"#,
        r#""string" null "plain text""#,
        r#""hex" null "/wAB""#,
    ]
    .map(str::to_owned)
    .into();
    assert_eq!(seen, want);

    let text = ok(
        &url,
        &[],
        &["--codec", "detect", "peek", &queue, "--limit", "1"],
    );
    assert!(
        text.ends_with("\t[kryo java.lang.String] \"kryo text\"\n"),
        "{text:?}"
    );
}

/// Writing with `--codec auto` is a usage error that writes nothing, unless a pattern names the
/// queue's codec; a `--codec-for` that is no PATTERN=CODEC is a usage error too.
#[test]
fn auto_writes_nothing_and_bad_patterns_are_usage_errors() {
    let redis = TestRedis::start();
    let url = redis.url();
    let queue = unique_name("codec-auto-write");
    let refused = run(&url, &[], &["--codec", "auto", "offer", &queue, "x"]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--codec auto only reads"), "{stderr}");
    let zset = format!("redisson_delay_queue_timeout:{{{queue}}}");
    assert_eq!(redis.cli(&["ZCARD", &zset]), "0");

    let rule = format!("{queue}=string");
    ok(
        &url,
        &[],
        &[
            "--codec",
            "auto",
            "--codec-for",
            &rule,
            "offer",
            &queue,
            "x",
            "--delay",
            "1h",
        ],
    );
    assert_eq!(redis.cli(&["ZCARD", &zset]), "1");

    for bad in ["orders", "orders=yaml"] {
        let out = run(&url, &[], &["--codec-for", bad, "peek", &queue]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("PATTERN=CODEC") || stderr.contains("no codec"),
            "{stderr}"
        );
    }
}
