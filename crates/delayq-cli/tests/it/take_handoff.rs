//! `delayq take` hands every value over or keeps it on Redis: a reader that goes away, a closed
//! stdout, a full disk or a value the codec cannot read leave the value at the head of its list,
//! in order, and the command fails.

use crate::common::queue::{arg, cmd, connect, list as list_bytes};
use crate::common::wait_until;
use crate::common::{unique_name, TestRedis, PATIENCE};
use std::io::BufRead;
use std::process::{Child, Command, ExitStatus, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

fn take_cmd(url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["--url", url, "take"])
        .args(args)
        .env_remove("REDIS_URL")
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    command
}

fn values(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("v{i}")).collect()
}

fn rpush(redis: &TestRedis, list: &str, values: &[String]) {
    let mut args = vec!["RPUSH", list];
    args.extend(values.iter().map(String::as_str));
    redis.cli(&args);
}

fn lrange(redis: &TestRedis, list: &str) -> Vec<String> {
    let out = redis.cli(&["LRANGE", list, "0", "-1"]);
    out.lines().map(str::to_owned).collect()
}

/// Waits (up to PATIENCE) for `child` to end; its status and stderr.
fn finish(mut child: Child) -> (ExitStatus, String) {
    let status = wait_until("take to exit", PATIENCE, || {
        child
            .try_wait()
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "still running".to_owned())
    });
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

#[test]
fn a_reader_that_goes_away_leaves_the_rest_in_order() {
    let redis = TestRedis::start();
    let list = unique_name("take-pipe");
    let all = values(10);
    rpush(&redis, &list, &all[..1]);
    let mut child = take_cmd(&redis.url(), &[&list, "--count", "10"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1`: read one line, then close the pipe; only then do the other values arrive,
    // so none of them can sit unread in the pipe's buffer.
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    assert_eq!(first, "v1\n");
    drop(reader);
    rpush(&redis, &list, &all[1..]);
    let (status, stderr) = finish(child);
    assert!(!status.success(), "exit 0 after a broken pipe: {stderr}");
    assert_eq!(lrange(&redis, &list), all[1..], "{stderr}");
    assert!(
        stderr.contains(&format!("back at the head of {list}")),
        "{stderr}"
    );
}

#[test]
fn a_closed_stdout_takes_nothing() {
    let redis = TestRedis::start();
    let list = unique_name("take-closed");
    let all = values(10);
    rpush(&redis, &list, &all);
    // `>&-` needs a shell: Rust's Command cannot start a child with fd 1 closed.
    let child = Command::new("sh")
        .args(["-c", r#"exec "$0" --url "$1" take "$2" --count 10 >&-"#])
        .args([BIN, &redis.url(), &list])
        .env_remove("REDIS_URL")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (status, stderr) = finish(child);
    assert!(!status.success(), "exit 0 with stdout closed: {stderr}");
    assert_eq!(lrange(&redis, &list), all, "{stderr}");
    assert!(stderr.contains("stdout is closed"), "{stderr}");
}

/// /dev/full fails every write with ENOSPC, as a full disk does.
fn into_dev_full(url: &str, args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    take_cmd(url, args).stdout(full).output().unwrap()
}

#[test]
fn a_full_disk_keeps_every_value_in_order() {
    let redis = TestRedis::start();
    let list = unique_name("take-full");
    let all = values(10);
    rpush(&redis, &list, &all);
    for json in [false, true] {
        let mut args = vec![list.as_str(), "--count", "10"];
        if json {
            args.push("--json");
        }
        let out = into_dev_full(&redis.url(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "exit 0 on a full disk: {stderr}");
        assert_eq!(lrange(&redis, &list), all, "{stderr}");
        assert!(stderr.contains("cannot write a value"), "{stderr}");
    }
}

#[test]
fn a_full_disk_gives_a_sharded_value_back_to_its_shard() {
    let redis = TestRedis::start();
    let name = unique_name("take-full-sharded");
    let shards: Vec<String> = (0..2).map(|i| format!("{name}:{{{i}}}")).collect();
    // Each value in the shard its bytes hash to, as a sharded offer puts it.
    let mut lists: Vec<Vec<String>> = vec![Vec::new(), Vec::new()];
    for value in values(8) {
        lists[delayq::shard_of(value.as_bytes(), 2)].push(value);
    }
    assert!(lists.iter().all(|l| !l.is_empty()), "{lists:?}");
    for (shard, list) in shards.iter().zip(&lists) {
        rpush(&redis, shard, list);
    }
    let out = into_dev_full(&redis.url(), &[&name, "--shards", "2", "--count", "8"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let kept: Vec<Vec<String>> = shards.iter().map(|s| lrange(&redis, s)).collect();
    assert_eq!(kept, lists, "{stderr}");
}

/// A value the codec cannot read stays on Redis for a consumer that can (say, the Java
/// application whose codec the operator did not name).
#[tokio::test(flavor = "multi_thread")]
async fn a_value_take_cannot_decode_goes_back_to_the_head() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let list = unique_name("take-undecodable");
    let not_utf8 = [b'o', b'k', 0xff, 0xfe];
    cmd(
        &client,
        "RPUSH",
        vec![arg(&list), arg(not_utf8), arg("after")],
    )
    .await;
    let out = take_cmd(&redis.url(), &[&list, "--count", "2"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(out.stdout.is_empty(), "{stderr}");
    let kept = list_bytes(&client, &list).await;
    assert_eq!(kept, [&not_utf8[..], b"after"], "{stderr}");
    assert!(
        stderr.contains("does not decode with the string codec"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("back at the head of {list}")),
        "{stderr}"
    );
}
