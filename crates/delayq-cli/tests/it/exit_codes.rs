//! The exit-status table of docs/cli.md, row by row: the table is read from the document, and
//! every row needs at least one scenario here that runs the real binary and ends with its
//! status (a row without one, or a scenario of a status the table lacks, fails the test).

use crate::common::{unique_name, TestRedis};
use std::collections::BTreeSet;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// The statuses of the table under "## Exit codes" in docs/cli.md.
fn documented_statuses() -> BTreeSet<i32> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Exit codes"))
        .expect("docs/cli.md has an Exit codes section");
    section
        .lines()
        .filter(|l| l.starts_with('|'))
        .filter_map(|l| l.trim_matches('|').split('|').next()?.trim().parse().ok())
        .collect()
}

/// Where a scenario's stdout goes.
#[derive(Clone, Copy)]
enum Out {
    Piped,
    /// /dev/full: every write fails (ENOSPC), as on a full disk.
    Full,
}

/// One way to end with `status`: `delayq ARGS` (with `--url URL` first unless ARGS has one).
struct Scenario {
    status: i32,
    what: &'static str,
    args: Vec<String>,
    out: Out,
}

fn scenario(status: i32, what: &'static str, args: &[&str]) -> Scenario {
    Scenario {
        status,
        what,
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        out: Out::Piped,
    }
}

fn run(url: &str, scenario: &Scenario) -> (Option<i32>, String) {
    let mut command = Command::new(BIN);
    if !scenario.args.iter().any(|a| a == "--url") {
        command.args(["--url", url]);
    }
    command
        .args(&scenario.args)
        .env_remove("REDIS_URL")
        .stdin(Stdio::null());
    if let Out::Full = scenario.out {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        command.stdout(full);
    }
    let out = command.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn every_row_of_the_exit_status_table_is_what_the_binary_does() {
    let redis = TestRedis::start_with(&["--proto-max-bulk-len", "1mb"]);
    let port = redis.port;
    let name = unique_name("exit");
    let (ok, wrong, undecodable, durable) = (
        format!("{name}-ok"),
        format!("{name}-wrong"),
        format!("{name}-undecodable"),
        format!("{name}-durable"),
    );
    redis.cli(&[
        "SET",
        &format!("redisson_delay_queue:{{{wrong}}}"),
        "a string",
    ]);
    redis.cli(&["RPUSH", &undecodable, "twelve"]);
    redis.cli(&["RPUSH", &ok, "a", "b"]);
    redis.cli(&["ACL", "SETUSER", "nobody", "on", ">pw", "~other*", "+@all"]);
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    std::fs::write(&big, vec![b'x'; 1024 * 1024 + 1]).unwrap();
    let big = big.to_str().unwrap();
    let missing = dir.path().join("missing").to_str().unwrap().to_owned();
    let closed = format!("redis://127.0.0.1:{}", closed_port());
    let wrong_password = format!("redis://nobody:wrong@127.0.0.1:{port}");
    let no_permission = format!("redis://nobody:pw@127.0.0.1:{port}");

    let mut scenarios = vec![
        scenario(0, "stats", &["stats", &ok]),
        scenario(
            1,
            "remove --exit-status of nothing",
            &["remove", &ok, "none", "--exit-status"],
        ),
        scenario(
            1,
            "cancel --exit-status of a handle not pending",
            &["cancel", &ok, "080102030405060708", "--exit-status"],
        ),
        scenario(
            1,
            "queues with one it cannot read",
            &["queues", "--match", &wrong],
        ),
        scenario(2, "a bad duration", &["--delay", "soon", "offer", &ok, "v"]),
        scenario(2, "a handle that does not parse", &["cancel", &ok, "zz"]),
        scenario(
            2,
            "a malformed URL",
            &["--url", "redis://127.0.0.1:notaport", "stats", &ok],
        ),
        scenario(
            2,
            "--java-class with --codec string",
            &["--java-class", "X", "stats", &ok],
        ),
        scenario(2, "peek --limit 0", &["peek", &ok, "--limit", "0"]),
        scenario(
            2,
            "a value past proto-max-bulk-len",
            &["offer", &ok, "--value-file", big],
        ),
        scenario(3, "a closed port", &["--url", &closed, "stats", &ok]),
        scenario(
            4,
            "a wrong password",
            &["--url", &wrong_password, "stats", &ok],
        ),
        scenario(
            4,
            "an ACL refusal",
            &["--url", &no_permission, "stats", &ok],
        ),
        scenario(5, "a key of the wrong type", &["offer", &wrong, "v"]),
        scenario(
            6,
            "a value long cannot encode",
            &["--codec", "long", "offer", &ok, "twelve"],
        ),
        scenario(
            6,
            "a taken value long cannot decode",
            &["--codec", "long", "take", &undecodable],
        ),
        scenario(
            8,
            "an unreadable password file",
            &["--password-file", &missing, "stats", &ok],
        ),
        Scenario {
            out: Out::Full,
            ..scenario(8, "take onto a full disk", &["take", &ok])
        },
        // This server has no replica: the offer is written, and never confirmed.
        scenario(
            9,
            "a durable offer no replica confirms",
            &[
                "offer",
                &durable,
                "v",
                "--wait-replicas",
                "1",
                "--wait-timeout",
                "50ms",
            ],
        ),
    ];
    // Last, as it leaves the server refusing writes: out of memory.
    let oom = scenario(7, "out of memory", &["offer", &ok, "v"]);

    let tested: BTreeSet<i32> = scenarios.iter().map(|s| s.status).chain([7]).collect();
    assert_eq!(
        tested,
        documented_statuses(),
        "every row of docs/cli.md's exit-status table needs a scenario here, and only those"
    );
    let mut failures = Vec::new();
    let mut check = |scenario: &Scenario| {
        let (status, stderr) = run(&redis.url(), scenario);
        if status != Some(scenario.status) {
            failures.push(format!(
                "{} exited {status:?}, the table says {}: {stderr}",
                scenario.what, scenario.status
            ));
        }
    };
    for scenario in &scenarios {
        check(scenario);
    }
    redis.cli(&["CONFIG", "SET", "maxmemory", "1"]);
    check(&oom);
    scenarios.push(oom);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // What the failures left: the value too large, the taken values not written, the value
    // that did not decode, all still there.
    redis.cli(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(redis.cli(&["LRANGE", &ok, "0", "-1"]), "a\nb");
    assert_eq!(redis.cli(&["LRANGE", &undecodable, "0", "-1"]), "twelve");
    assert_eq!(
        redis.cli(&["ZCARD", &format!("redisson_delay_queue_timeout:{{{ok}}}")]),
        "0"
    );
    // The durable offer that exited 9 was written all the same.
    assert_eq!(
        redis.cli(&[
            "ZCARD",
            &format!("redisson_delay_queue_timeout:{{{durable}}}")
        ]),
        "1"
    );
}
