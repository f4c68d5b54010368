//! Tests of the test harness itself: real servers start, answer through fred, and stop.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{unique_name, TestCluster, TestRedis, TestSentinel};
use fred::prelude::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Whether process `pid` still runs (Linux: `/proc/PID/stat` exists and is not a zombie,
/// since an orphan's reaper may be slow or absent in a container).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name: `PID (comm) S ...`.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

/// Waits for `pid` to go away (at most [`PATIENCE`](crate::common::PATIENCE)).
fn gone_soon(pid: u32) -> bool {
    let deadline = Instant::now() + crate::common::PATIENCE;
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn accepts_connections(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

async fn connect(url: &str) -> Result<Client, Error> {
    let client = Builder::from_config(Config::from_url(url)?)
        .with_connection_config(|c| c.connection_timeout = Duration::from_secs(5))
        .set_policy(ReconnectPolicy::new_constant(0, 100))
        .build()?;
    client.init().await?;
    Ok(client)
}

#[tokio::test]
async fn standalone_answers_fred_and_stops_on_drop() -> TestResult {
    let redis = TestRedis::start_with(&[]);
    assert_eq!(redis.url(), format!("redis://127.0.0.1:{}", redis.port));
    let pid = redis.pid().unwrap();
    assert!(alive(pid));

    let client = connect(&redis.url()).await?;
    let key = unique_name("harness");
    client
        .set::<(), _, _>(&key, "v1", None, None, false)
        .await?;
    let value: String = client.get(&key).await?;
    assert_eq!(value, "v1");
    // redis-cli sees the same server.
    assert_eq!(redis.cli(&["GET", &key]), "v1");
    assert_eq!(redis.cli(&["PING"]), "PONG");
    assert_eq!(
        redis.cli(&["CONFIG", "GET", "appendonly"]),
        "appendonly\nno"
    );
    client.quit().await?;

    let port = redis.port;
    drop(redis);
    assert!(!alive(pid), "redis-server {pid} survived Drop");
    assert!(!accepts_connections(port));
    Ok(())
}

#[test]
fn start_uses_a_harness_server_unless_redis_url_is_set() {
    let redis = TestRedis::start();
    assert_eq!(redis.cli(&["PING"]), "PONG");
    assert_eq!(
        redis.is_external(),
        std::env::var("REDIS_URL").is_ok_and(|u| !u.is_empty())
    );
}

#[test]
fn redis_url_port_parsing() {
    use common::external_port;
    assert_eq!(external_port("redis://127.0.0.1:6380"), Some(6380));
    assert_eq!(
        external_port("redis://user:pa:ss@host:7000/2?x=1"),
        Some(7000)
    );
    assert_eq!(external_port("redis://localhost"), Some(6379));
    assert_eq!(external_port("redis://[::1]"), Some(6379));
    assert_eq!(external_port("redis://[::1]:6390/0"), Some(6390));
    assert_eq!(external_port("redis://host:notaport"), None);
}

#[test]
fn restart_keeps_aof_data_and_port() {
    let mut redis = TestRedis::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let port = redis.port;
    let key = unique_name("aof");
    assert_eq!(redis.cli(&["SET", &key, "kept"]), "OK");

    // A crash: with appendfsync always the write is already on disk.
    redis.kill();
    assert!(!accepts_connections(port));
    redis.restart();
    assert_eq!(redis.port, port);
    assert_eq!(redis.cli(&["GET", &key]), "kept");
    assert!(redis.dir().join("appendonlydir").is_dir());

    // A graceful restart while running keeps it too.
    redis.restart();
    assert_eq!(redis.cli(&["GET", &key]), "kept");
}

#[test]
fn restart_without_persistence_loses_data() {
    let mut redis = TestRedis::start_with(&[]);
    let key = unique_name("volatile");
    assert_eq!(redis.cli(&["SET", &key, "gone"]), "OK");
    redis.restart();
    assert_eq!(redis.cli(&["EXISTS", &key]), "0");
}

#[test]
fn servers_die_when_a_test_panics() {
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::panic::catch_unwind(move || {
        let redis = TestRedis::start_with(&[]);
        tx.send((redis.pid().unwrap(), redis.port)).unwrap();
        panic!("test failure while the server runs");
    });
    assert!(result.is_err());
    let (pid, port) = rx.recv().unwrap();
    assert!(!alive(pid), "redis-server {pid} survived a panic");
    assert!(!accepts_connections(port));
}

/// Runs in two roles. Normally it re-runs this test binary as a child with
/// `HARNESS_HOLD_SERVER` set; the child starts a server, reports its pid and blocks. The
/// parent SIGKILLs the child (no `Drop`, no unwinding) and checks the server dies with it.
#[test]
fn servers_die_when_the_test_binary_is_killed() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    if std::env::var_os("HARNESS_HOLD_SERVER").is_some() {
        let redis = TestRedis::start_with(&[]);
        println!("HOLDING {} {}", redis.pid().unwrap(), redis.dir().display());
        std::thread::sleep(Duration::from_secs(60));
        panic!("the parent test should have killed this process");
    }

    // The test's path inside the test binary, without the crate's name.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let test = format!("{module}::servers_die_when_the_test_binary_is_killed");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test.as_str(), "--nocapture"])
        .env("HARNESS_HOLD_SERVER", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("HOLDING ").map(str::to_string))
        .unwrap();
    let (pid, dir) = line.split_once(' ').unwrap();
    let pid: u32 = pid.parse().unwrap();
    assert!(alive(pid));
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = gone_soon(pid);
    // The killed child could not remove its temp dir (`<tmp>/delayq-redis-*/server`).
    let tmp = Path::new(dir).parent().unwrap();
    assert!(tmp
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("delayq-redis-"));
    std::fs::remove_dir_all(tmp).unwrap();
    assert!(gone, "redis-server {pid} outlived its killed test binary");
}

#[test]
fn unique_names_differ() {
    let a = unique_name("q");
    let b = unique_name("q");
    assert_ne!(a, b);
    assert!(a.starts_with("t:q:"));
    assert!(!a.contains('{') && !a.contains('}'));
}

/// The server behind `port` is the program `DELAYQ_TEST_SERVER` asks for: Valkey's when it
/// names `valkey-server` (its `INFO` says `server_name:valkey`), Redis's otherwise.
fn assert_server_kind(port: u16) {
    let conn = common::cli_conn(port);
    let info = common::redis_cli(&conn, &["INFO", "server"]);
    let valkey = info.contains("server_name:valkey");
    assert_eq!(
        valkey,
        common::is_valkey(),
        "port {port} runs the wrong server for DELAYQ_TEST_SERVER={:?}:\n{info}",
        common::server_program()
    );
}

#[test]
fn servers_are_the_program_asked_for() {
    let redis = TestRedis::start_with(&[]);
    assert_server_kind(redis.port);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_of_three_answers_fred_across_slots_and_migrates() -> TestResult {
    let cluster = TestCluster::start(3);
    for port in cluster.ports() {
        assert_server_kind(port);
    }
    let ports = cluster.ports();
    assert_eq!(ports.len(), 3);
    assert!(ports.iter().all(|&p| p < 55535));
    assert_eq!(
        cluster.url(),
        format!(
            "redis-cluster://127.0.0.1:{}?node=127.0.0.1:{}&node=127.0.0.1:{}",
            ports[0], ports[1], ports[2]
        )
    );
    for node in 0..3 {
        assert!(cluster
            .cli(node, &["CLUSTER", "INFO"])
            .contains("cluster_state:ok"));
    }
    let pids = cluster.pids();
    assert_eq!(pids.len(), 3);

    // One key per master, so fred must route to every node.
    let base = unique_name("slot");
    let mut keys: Vec<Option<String>> = vec![None; 3];
    for i in 0.. {
        let key = format!("{base}:{i}");
        let owner = cluster.slot_owner(cluster.key_slot(&key));
        keys[owner].get_or_insert(key);
        if keys.iter().all(Option::is_some) {
            break;
        }
    }
    let keys: Vec<String> = keys.into_iter().flatten().collect();

    let client = connect(&cluster.url()).await?;
    for key in &keys {
        client
            .set::<(), _, _>(key, key.as_str(), None, None, false)
            .await?;
    }
    for (owner, key) in keys.iter().enumerate() {
        let value: String = client.get(key).await?;
        assert_eq!(&value, key);
        // The key really lives on that master.
        assert_eq!(&cluster.cli(owner, &["GET", key]), key);
    }

    // Move the first key's slot from node 0 to node 1; fred follows the MOVED redirect.
    let slot = cluster.key_slot(&keys[0]);
    let from = tokio::task::block_in_place(|| cluster.migrate_slot(slot, 1));
    assert_eq!(from, 0);
    assert_eq!(cluster.slot_owner(slot), 1);
    assert_eq!(cluster.cli(1, &["GET", &keys[0]]), keys[0]);
    assert!(cluster.cli(0, &["GET", &keys[0]]).starts_with("MOVED"));
    let value: String = client.get(&keys[0]).await?;
    assert_eq!(value, keys[0]);
    client
        .set::<(), _, _>(&keys[0], "after", None, None, false)
        .await?;
    assert_eq!(cluster.cli(1, &["GET", &keys[0]]), "after");
    client.quit().await?;

    drop(cluster);
    for pid in pids {
        assert!(!alive(pid), "cluster node {pid} survived Drop");
    }
    for port in ports {
        assert!(!accepts_connections(port));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_failover_moves_fred_to_the_new_master() -> TestResult {
    let mut sentinel = TestSentinel::start();
    for port in [sentinel.master_port(), sentinel.replica_port()]
        .into_iter()
        .chain(sentinel.sentinel_ports())
    {
        assert_server_kind(port);
    }
    let ports = sentinel.sentinel_ports();
    assert_eq!(
        sentinel.url(),
        format!(
            "redis-sentinel://127.0.0.1:{}?node=127.0.0.1:{}&node=127.0.0.1:{}\
             &sentinelServiceName=mymaster",
            ports[0], ports[1], ports[2]
        )
    );
    let (old_master, old_replica) = (sentinel.master_port(), sentinel.replica_port());
    let pids = sentinel.pids();
    assert_eq!(pids.len(), 5);

    let client = connect(&sentinel.url()).await?;
    let before = unique_name("before");
    client
        .set::<(), _, _>(&before, "1", None, None, false)
        .await?;
    assert_eq!(sentinel.cli(old_master, &["GET", &before]), "1");
    // Let the write reach the replica before it is promoted.
    let deadline = Instant::now() + crate::common::PATIENCE;
    while sentinel.cli(old_replica, &["GET", &before]) != "1" {
        assert!(Instant::now() < deadline, "write never reached the replica");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    tokio::task::block_in_place(|| sentinel.failover());
    assert_eq!(sentinel.master_port(), old_replica);
    assert_eq!(sentinel.replica_port(), old_master);
    assert!(sentinel
        .cli(old_replica, &["INFO", "replication"])
        .contains("role:master"));

    // fred lost its connection when Sentinel reconfigured the old master; retry until it
    // has reconnected through the sentinels.
    let after = unique_name("after");
    let deadline = Instant::now() + crate::common::PATIENCE;
    loop {
        match client.set::<(), _, _>(&after, "2", None, None, false).await {
            Ok(()) => break,
            Err(e) if Instant::now() < deadline => {
                eprintln!("write after failover not yet accepted: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    assert_eq!(sentinel.cli(old_replica, &["GET", &after]), "2");
    let value: String = client.get(&before).await?;
    assert_eq!(value, "1");
    client.quit().await?;

    drop(sentinel);
    for pid in pids {
        assert!(!alive(pid), "sentinel-setup process {pid} survived Drop");
    }
    Ok(())
}
