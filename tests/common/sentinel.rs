//! One master, one replica and three sentinels watching them as `mymaster`.

use std::ffi::OsString;
use std::time::Duration;

use tempfile::TempDir;

use super::process::{cli_conn, pick_port, redis_cli, wait_until, Node};
use super::resp::{self, Reply};
use super::setup::{sentinel_program, server_program, Setup};
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
    /// The ports clients (and sentinels, and replication) use, by the index of `data` /
    /// `sentinels`: the TLS ports with TLS, else the plaintext ones.
    data_ports: [u16; 2],
    sentinel_client_ports: Vec<u16>,
    setup: Setup,
    /// Index into `data` of the current master.
    master: usize,
    _dir: TempDir,
}

impl TestSentinel {
    /// Starts the master, the replica (`--replicaof`) and waits for its link, then the three
    /// sentinels, and waits until every sentinel sees the master, the replica and the two
    /// other sentinels.
    pub fn start() -> TestSentinel {
        TestSentinel::start_setup(&Setup::default())
    }

    /// Like [`start`](Self::start), with `setup`: `password` on the data nodes (`requirepass`,
    /// `masterauth`; the sentinels get it as `auth-pass`), `sentinel_password` on the sentinels
    /// (`requirepass`, and `sentinel-pass` among themselves), TLS on all of them
    /// (`tls-replication yes`, so replication and Sentinel's links use TLS too).
    pub fn start_setup(setup: &Setup) -> TestSentinel {
        let dir = temp_dir("delayq-sentinel-");
        let (master, master_data_port) = data_node(setup, &dir.path().join("master"), None);
        let (replica, replica_data_port) =
            data_node(setup, &dir.path().join("replica"), Some(master_data_port));
        wait_until("the replica's link to the master", SENTINEL_TIMEOUT, || {
            replication_of(replica.port(), master_data_port)
        });

        let mut sentinel_client_ports = Vec::new();
        let sentinels = (0..3)
            .map(|i| {
                let (node, client_port) = sentinel_node(
                    setup,
                    &dir.path().join(format!("sentinel{i}")),
                    master_data_port,
                );
                sentinel_client_ports.push(client_port);
                node
            })
            .collect();

        let setup_done = TestSentinel {
            sentinels,
            data: [master, replica],
            data_ports: [master_data_port, replica_data_port],
            sentinel_client_ports,
            setup: setup.clone(),
            master: 0,
            _dir: dir,
        };
        setup_done.wait_settled();
        setup_done
    }

    /// fred's URL: `redis-sentinel://127.0.0.1:S1?node=127.0.0.1:S2&node=127.0.0.1:S3&sentinelServiceName=mymaster`
    /// (`rediss-sentinel://` and TLS ports with TLS, the data nodes' password before `@` and the
    /// sentinels' as `sentinelPassword` when there are).
    pub fn url(&self) -> String {
        let ports = &self.sentinel_client_ports;
        let mut url = format!(
            "{}://{}127.0.0.1:{}?",
            self.setup.scheme("-sentinel"),
            self.setup.userinfo(),
            ports[0]
        );
        for port in &ports[1..] {
            url.push_str(&format!("node=127.0.0.1:{port}&"));
        }
        url.push_str(&format!("sentinelServiceName={SERVICE}"));
        if let Some(password) = &self.setup.sentinel_password {
            url.push_str(&format!("&sentinelPassword={password}"));
        }
        url
    }

    /// The port clients reach the current master on (its TLS port with TLS; else
    /// [`master_port`](Self::master_port)); what the sentinels announce.
    pub fn master_data_port(&self) -> u16 {
        self.data_ports[self.master]
    }

    /// The current replica's client port (see [`master_data_port`](Self::master_data_port)).
    pub fn replica_data_port(&self) -> u16 {
        self.data_ports[1 - self.master]
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

    /// `redis-cli`'s connection options for `port` of this setup (with its password).
    pub fn cli_conn_to(&self, port: u16) -> Vec<String> {
        cli_conn(port)
    }

    /// Runs `redis-cli -p PORT args...` against any port of this setup.
    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        redis_cli(&cli_conn(port), args)
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
        let master_data = self.master_data_port();
        let expected = format!("status=ok,address=127.0.0.1:{master_data},slaves=1,sentinels=3");
        wait_until(
            &format!("master on {master}, replica on {replica}, 3 sentinels agreeing"),
            FAILOVER_TIMEOUT,
            || {
                let info = resp::call_text(master, &["INFO", "replication"])?;
                if resp::info_field(&info, "role").as_deref() != Some("master") {
                    return Err(format!("{master} is not master yet"));
                }
                replication_of(replica, master_data)?;
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

/// Starts a data node in `dir` (a replica of `replica_of`, a client port, when given). Returns
/// it and its client port (TLS with TLS).
fn data_node(setup: &Setup, dir: &std::path::Path, replica_of: Option<u16>) -> (Node, u16) {
    let tls_port = std::cell::Cell::new(None);
    let node = Node::start(&server_program(), dir, false, |port| {
        resp::set_password(port, setup.password.as_deref());
        let mut args = setup.auth_args();
        if setup.tls.is_some() {
            let port = pick_port(false);
            tls_port.set(Some(port));
            args.extend(setup.tls_args(port));
            args.extend(["--tls-replication".into(), "yes".into()]);
        }
        if let Some(master) = replica_of {
            args.extend(["--replicaof".into(), "127.0.0.1".into(), master.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        server_args(port, dir, &args)
    });
    let client_port = tls_port.get().unwrap_or(node.port());
    (node, client_port)
}

/// Starts a sentinel in `dir` watching the master on `master_port` (its client port). Returns
/// it and its client port (TLS with TLS).
fn sentinel_node(setup: &Setup, dir: &std::path::Path, master_port: u16) -> (Node, u16) {
    let (program, after_conf) = sentinel_program();
    let tls_port = std::cell::Cell::new(None);
    let node = Node::start(&program, dir, false, |port| {
        resp::set_password(port, setup.sentinel_password.as_deref());
        let conf = dir.join("sentinel.conf");
        let mut text = format!(
            "port {port}\n\
             bind 127.0.0.1\n\
             daemonize no\n\
             dir {dir}\n\
             sentinel monitor {SERVICE} 127.0.0.1 {master_port} 2\n\
             sentinel down-after-milliseconds {SERVICE} 1000\n\
             sentinel failover-timeout {SERVICE} 3000\n\
             sentinel parallel-syncs {SERVICE} 1\n",
            dir = dir.display(),
        );
        if let Some(password) = &setup.password {
            text.push_str(&format!("sentinel auth-pass {SERVICE} {password}\n"));
        }
        if let Some(password) = &setup.sentinel_password {
            text.push_str(&format!(
                "requirepass {password}\nsentinel sentinel-pass {password}\n"
            ));
        }
        if setup.tls.is_some() {
            let port = pick_port(false);
            tls_port.set(Some(port));
            // The server's `--name value` arguments as config lines.
            for pair in setup.tls_args(port).chunks(2) {
                text.push_str(&format!(
                    "{} {}\n",
                    pair[0].trim_start_matches('-'),
                    pair[1]
                ));
            }
            text.push_str("tls-replication yes\n");
        }
        std::fs::write(&conf, text)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", conf.display()));
        let mut args = vec![OsString::from(conf)];
        args.extend(after_conf.iter().cloned());
        args
    });
    let client_port = tls_port.get().unwrap_or(node.port());
    (node, client_port)
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
