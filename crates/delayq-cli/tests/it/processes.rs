//! Several scheduler processes (`delayq transfer`) and in-process schedulers on one queue: every
//! entry moves exactly once, none early; the CLI end to end.

use crate::common::queue::*;
use crate::common::{unique_name, TestRedis};
use delayq::{Scheduler, TransferConfig};
use std::collections::HashMap;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn delayq_cmd(url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_delayq"));
    cmd.env("REDIS_URL", url).env_remove("RUST_LOG");
    cmd
}

fn run(url: &str, args: &[&str]) -> Output {
    delayq_cmd(url).args(args).output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_owned()
}

fn stop(child: Child) -> Output {
    // SIGTERM: the CLI must stop its schedulers cleanly and exit 0.
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedulers_in_several_processes_move_every_entry_exactly_once() {
    let redis = TestRedis::start();
    let url = redis.url();
    let client = connect(&url).await;
    let name = unique_name("procs");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();

    let children: Vec<Child> = (0..3)
        .map(|_| {
            delayq_cmd(&url)
                .args(["transfer", name.as_str()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Two more schedulers in this process, on separate clients.
    let other = connect(&url).await;
    let in_process = [
        Scheduler::spawn(client.clone(), name.as_str(), TransferConfig::default())
            .await
            .unwrap(),
        Scheduler::spawn(other, name.as_str(), TransferConfig::default())
            .await
            .unwrap(),
    ];

    // 3,000 distinct values, delays 0..1500 ms, offered in batches while schedulers run.
    let mut due_of = HashMap::new();
    for batch in 0..30 {
        let items: Vec<(String, Duration)> = (0..100)
            .map(|i| {
                let n = batch * 100 + i;
                (
                    format!("p{n:05}"),
                    Duration::from_millis((n * 7919 % 1500) as u64),
                )
            })
            .collect();
        let before = now_ms();
        queue.offer_all(&items).await.unwrap();
        for (value, delay) in &items {
            due_of.insert(value.clone(), before + delay.as_millis() as i64);
        }
    }
    let consumer = queue.consumer().await.unwrap();
    let mut seen: HashMap<String, u32> = HashMap::new();
    while seen.values().sum::<u32>() < 3_000 {
        let Some(value) = consumer.poll(crate::common::PATIENCE).await.unwrap() else {
            break;
        };
        let now = now_ms();
        // The due time is at least the offer time plus the delay: never early.
        assert!(
            now >= due_of[&value],
            "{value} taken {} ms early",
            due_of[&value] - now
        );
        *seen.entry(value).or_default() += 1;
    }
    // Nothing more arrives: no value was moved twice.
    assert_eq!(
        consumer.poll(Duration::from_millis(800)).await.unwrap(),
        None
    );
    assert_eq!(seen.len(), 3_000, "every value arrived");
    assert!(seen.values().all(|n| *n == 1), "each exactly once");
    assert_eq!(int(&client, "ZCARD", keys.timeout()).await, 0);
    assert_eq!(int(&client, "LLEN", keys.order()).await, 0);

    for handle in in_process {
        handle.shutdown().await;
    }
    let mut moved_by_processes = 0;
    for child in children {
        let output = stop(child);
        assert!(
            output.status.success(),
            "transfer exit: {:?}",
            output.status
        );
        let err = String::from_utf8_lossy(&output.stderr);
        let moved: u64 = err
            .split("moved ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no summary in {err}"));
        moved_by_processes += moved;
    }
    assert!(moved_by_processes <= 3_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_commands_end_to_end() {
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("cli");
    let q = name.as_str();

    assert!(run(&url, &["offer", q, "soon", "--delay", "200ms"])
        .status
        .success());
    assert!(run(&url, &["offer", q, "later", "--delay", "1h"])
        .status
        .success());
    let peek = stdout(&run(&url, &["peek", q, "--limit", "5"]));
    let lines: Vec<&str> = peek.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].ends_with("\tsoon") && lines[1].ends_with("\tlater"),
        "{peek}"
    );

    let stats: serde_json::Value =
        serde_json::from_str(&stdout(&run(&url, &["stats", q, "--json"]))).unwrap();
    let stats_done_ms = delayq::time::now_ms();
    assert_eq!(stats["queue"], q);
    assert_eq!(stats["pending"], 2);
    assert_eq!(stats["ready"], 0);
    let next_due_ms = stats["next_due_ms"].as_i64().unwrap();
    // Overdue only once "soon" is due (on a loaded machine it may be by the time stats runs).
    let overdue_ms = stats["overdue_ms"].as_i64().unwrap();
    assert!(
        overdue_ms == 0 || (overdue_ms > 0 && stats_done_ms >= next_due_ms),
        "{stats}"
    );

    assert_eq!(stdout(&run(&url, &["remove", q, "later"])), "true");
    assert_eq!(stdout(&run(&url, &["remove", q, "later"])), "false");

    let transfer = delayq_cmd(&url)
        .args(["transfer", q])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // As soon as the transfer moved it; the timeout only bounds a failure.
    let took = run(&url, &["take", q, "--timeout", "60s"]);
    assert_eq!(stdout(&took), "soon");
    assert!(stop(transfer).status.success());

    // Nothing left: take with a timeout prints nothing, says why on stderr and exits 1.
    let none = run(&url, &["take", q, "--timeout", "300ms"]);
    assert_eq!(none.status.code(), Some(1), "{none:?}");
    assert_eq!(stdout(&none), "");
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("delayq transfer"),
        "{none:?}"
    );

    // Codecs on the command line.
    assert!(run(&url, &["--codec", "long", "offer", q, "42"])
        .status
        .success());
    assert!(run(&url, &["--codec", "bytes", "offer", q, "00ff10"])
        .status
        .success());
    assert_eq!(stdout(&run(&url, &["clear", q])), "true");
    assert!(stdout(&run(&url, &["stats", q, "--json"])).contains("\"pending\":0"));

    // Errors: clear message, non-zero exit.
    let bad = run(&url, &["--codec", "long", "offer", q, "x1"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a Java long"));
    let neg = run(&url, &["offer", q, "v", "--delay", "-5s"]);
    assert!(!neg.status.success());
    assert!(String::from_utf8_lossy(&neg.stderr).contains("negative"));
    let down = run("redis://127.0.0.1:1", &["stats", q]);
    assert!(!down.status.success());
    assert!(String::from_utf8_lossy(&down.stderr).contains("cannot connect"));
}
