//! `delayq offer --wait-replicas all` in one-shot processes: each is a fresh process, so what it
//! waits for must come from the master (`delayq_replicas`), not from what it saw itself.

use crate::cli::{delayq, text};
use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};

/// Waits until `master` has `n` replicas connected and online.
fn wait_for_replicas(master: &TestRedis, n: usize) {
    wait_until("the master's replicas", PATIENCE, || {
        let info = master.cli(&["INFO", "replication"]);
        let online = info.matches("state=online").count();
        match info.contains(&format!("connected_slaves:{n}")) && online == n {
            true => Ok(()),
            false => Err(info),
        }
    });
}

/// The repro of issue 38 (finding 2 of the second pass): a one-shot offer with both replicas up
/// exits 0; one replica gone, a later one-shot offer, which never saw it, exits 9 (IS on the
/// master, not confirmed) instead of 0; after `DEL delayq_replicas` (the replica removed for
/// good) the next one exits 0.
#[test]
fn a_fresh_offer_waits_for_a_replica_an_earlier_one_saw() {
    let master = TestRedis::start_with(&[]);
    let port = master.port.to_string();
    let replica = ["--replicaof", "127.0.0.1", port.as_str()];
    let _first = TestRedis::start_with(&replica);
    let second = TestRedis::start_with(&replica);
    wait_for_replicas(&master, 2);
    let url = master.url();
    let queue = unique_name("cli-all");
    let offer = |value: &str, wait: &str| {
        let args = [
            "offer",
            &queue,
            value,
            "--delay",
            "1h",
            "--wait-replicas",
            "all",
            "--wait-timeout",
            wait,
        ];
        delayq(&url, &args)
    };
    let out = offer("both", "30s");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    drop(second);
    wait_for_replicas(&master, 1);
    let out = offer("one", "300ms");
    assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("1 of 2"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(master.cli(&["DEL", "delayq_replicas"]), "1");
    let out = offer("after", "30s");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
