//! One master, one replica and three sentinels watching them as `mymaster`.

use std::ffi::OsString;
use std::time::Duration;

use tempfile::TempDir;

use super::process::{redis_cli, wait_until, Node};
use super::resp::{self, Reply};
use super::{server_args, temp_dir};

/// The service name the sentinels monitor.
pub const SERVICE: &str = "mymaster";
const SENTINEL_TIMEOUT: Duration = Duration::from_secs(30);
/// A failover includes Sentinel's ~8 s grace before it turns the old master into a replica.
const FAILOVER_TIMEOUT: Duration = Duration::from_secs(60);

/// A master, a replica and three sentinels (quorum 2, `down-after-milliseconds 1000`,
/// `failover-timeout 3000`).
#[derive(Debug)]
pub struct TestSentinel {
    /// Field order matters: sentinels stop before the data nodes, so none of them starts a
    /// failover while the test tears down.
    sentinels: Vec<Node>,
    data: [Node; 2],
    /// Index into `data` of the current master.
    master: usize,
    _dir: TempDir,
}

impl TestSentinel {
    /// Starts the master, the replica (`--replicaof`) and waits for its link, then the three
    /// sentinels, and waits until every sentinel sees the master, the replica and the two
    /// other sentinels.
    pub fn start() -> TestSentinel {
        let dir = temp_dir("delayq-sentinel-");

        let master_dir = dir.path().join("master");
        let master = Node::start("redis-server", &master_dir, false, |port| {
            server_args(port, &master_dir, &[])
        });
        let master_port = master.port().to_string();
        let replica_dir = dir.path().join("replica");
        let replica = Node::start("redis-server", &replica_dir, false, |port| {
            server_args(
                port,
                &replica_dir,
                &["--replicaof", "127.0.0.1", &master_port],
            )
        });
        wait_until("the replica's link to the master", SENTINEL_TIMEOUT, || {
            replication_of(replica.port(), master.port())
        });

        let sentinels = (0..3)
            .map(|i| {
                let sentinel_dir = dir.path().join(format!("sentinel{i}"));
                Node::start("redis-sentinel", &sentinel_dir, false, |port| {
                    let conf = sentinel_dir.join("sentinel.conf");
                    let text = format!(
                        "port {port}\n\
                         bind 127.0.0.1\n\
                         daemonize no\n\
                         dir {dir}\n\
                         sentinel monitor {SERVICE} 127.0.0.1 {master_port} 2\n\
                         sentinel down-after-milliseconds {SERVICE} 1000\n\
                         sentinel failover-timeout {SERVICE} 3000\n\
                         sentinel parallel-syncs {SERVICE} 1\n",
                        dir = sentinel_dir.display(),
                    );
                    std::fs::write(&conf, text)
                        .unwrap_or_else(|e| panic!("cannot write {}: {e}", conf.display()));
                    vec![OsString::from(conf)]
                })
            })
            .collect();

        let setup = TestSentinel {
            sentinels,
            data: [master, replica],
            master: 0,
            _dir: dir,
        };
        setup.wait_settled();
        setup
    }

    /// fred's URL: `redis-sentinel://127.0.0.1:S1?node=127.0.0.1:S2&node=127.0.0.1:S3&sentinelServiceName=mymaster`.
    pub fn url(&self) -> String {
        let ports = self.sentinel_ports();
        let mut url = format!("redis-sentinel://127.0.0.1:{}?", ports[0]);
        for port in &ports[1..] {
            url.push_str(&format!("node=127.0.0.1:{port}&"));
        }
        url.push_str(&format!("sentinelServiceName={SERVICE}"));
        url
    }

    /// The port of the current master (it changes with [`failover`](Self::failover)).
    pub fn master_port(&self) -> u16 {
        self.data[self.master].port()
    }

    /// The port of the current replica.
    pub fn replica_port(&self) -> u16 {
        self.data[1 - self.master].port()
    }

    /// The three sentinels' ports.
    pub fn sentinel_ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(Node::port).collect()
    }

    /// The process ids of all servers and sentinels that still run.
    pub fn pids(&self) -> Vec<u32> {
        self.data
            .iter()
            .chain(&self.sentinels)
            .filter_map(Node::pid)
            .collect()
    }

    /// Runs `redis-cli -p PORT args...` against any port of this setup.
    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        redis_cli(&["-p".into(), port.to_string()], args)
    }

    /// Forces a failover (`SENTINEL FAILOVER mymaster`) and waits until it is complete: the
    /// replica is master, every sentinel names it, and the old master has been turned into
    /// its replica with a working link (Sentinel waits ~8 s before doing that, and kills the
    /// old master's client connections when it does, so clients reconnect to the new master).
    /// Afterwards [`master_port`](Self::master_port) and [`replica_port`](Self::replica_port)
    /// are swapped. Can be called again to fail back.
    pub fn failover(&mut self) {
        let sentinel = self.sentinels[0].port();
        wait_until("SENTINEL FAILOVER to be accepted", FAILOVER_TIMEOUT, || {
            match resp::call(sentinel, &["SENTINEL", "FAILOVER", SERVICE]) {
                Ok(Reply::Status(s)) if s == "OK" => Ok(()),
                // NOGOODSLAVE / INPROG: the sentinel is not ready yet; try again.
                other => Err(format!("{other:?}")),
            }
        });
        self.master = 1 - self.master;
        self.wait_settled();
    }

    /// Waits until the data nodes and all sentinels agree on the current master and replica.
    fn wait_settled(&self) {
        let master = self.master_port();
        let replica = self.replica_port();
        let expected = format!("status=ok,address=127.0.0.1:{master},slaves=1,sentinels=3");
        wait_until(
            &format!("master on {master}, replica on {replica}, 3 sentinels agreeing"),
            FAILOVER_TIMEOUT,
            || {
                let info = resp::call_text(master, &["INFO", "replication"])?;
                if resp::info_field(&info, "role").as_deref() != Some("master") {
                    return Err(format!("{master} is not master yet"));
                }
                replication_of(replica, master)?;
                for port in self.sentinel_ports() {
                    let info = resp::call_text(port, &["INFO", "sentinel"])?;
                    let line = resp::info_field(&info, "master0").unwrap_or_default();
                    if !line.ends_with(&expected) {
                        return Err(format!("sentinel {port}: {line}"));
                    }
                }
                Ok(())
            },
        );
    }
}

/// `Ok` when the server on `port` is a replica of `master_port` with its link up.
fn replication_of(port: u16, master_port: u16) -> Result<(), String> {
    let info = resp::call_text(port, &["INFO", "replication"])?;
    let field = |f: &str| resp::info_field(&info, f).unwrap_or_default();
    if field("role") == "slave"
        && field("master_port") == master_port.to_string()
        && field("master_link_status") == "up"
    {
        Ok(())
    } else {
        Err(format!("{port}: {}", info.replace("\r\n", " ")))
    }
}
