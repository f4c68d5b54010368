//! A Redis Cluster of N masters (no replicas) on loopback.

use std::process::{Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

use super::process::{cli_conn, pick_port, redis_cli, wait_until, Node};
use super::resp::{self, Reply};
use super::setup::{server_program, Setup};
use super::{server_args, temp_dir};

const CLUSTER_TIMEOUT: Duration = Duration::from_secs(30);

/// A Redis Cluster of `masters` nodes, each owning a share of the 16384 slots.
///
/// Nodes are addressed by index (`0..masters`), in the order of [`TestCluster::ports`].
#[derive(Debug)]
pub struct TestCluster {
    nodes: Vec<Node>,
    /// The nodes' TLS ports (by node index), with a TLS set-up.
    tls_ports: Vec<u16>,
    setup: Setup,
    ids: Vec<String>,
    _dir: TempDir,
}

impl TestCluster {
    /// Starts `masters` (at least 3, as `redis-cli --cluster create` requires) cluster-enabled
    /// servers, joins them with `redis-cli --cluster create ... --cluster-replicas 0`, and waits
    /// until every node reports `cluster_state:ok` and knows all the others.
    pub fn start(masters: usize) -> TestCluster {
        TestCluster::start_setup(masters, &Setup::default())
    }

    /// Like [`start`](Self::start), with `setup`. With TLS the nodes also talk TLS among
    /// themselves (`tls-cluster yes`), and clients that connect over TLS get the TLS ports in
    /// `CLUSTER SLOTS`; the harness keeps to the plaintext ports.
    pub fn start_setup(masters: usize, setup: &Setup) -> TestCluster {
        assert!(
            masters >= 3,
            "TestCluster::start({masters}): redis-cli --cluster create needs at least 3 masters"
        );
        let dir = temp_dir("delayq-cluster-");
        let cluster_args = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "5000",
        ];
        let mut tls_ports = Vec::new();
        let nodes: Vec<Node> = (0..masters)
            .map(|i| {
                let node_dir = dir.path().join(format!("node{i}"));
                let tls_port = std::cell::Cell::new(0);
                let node = Node::start(&server_program(), &node_dir, true, |port| {
                    resp::set_password(port, setup.password.as_deref());
                    let mut args: Vec<String> =
                        cluster_args.iter().map(|a| a.to_string()).collect();
                    args.extend(setup.auth_args());
                    if setup.tls.is_some() {
                        tls_port.set(pick_port(false));
                        args.extend(setup.tls_args(tls_port.get()));
                        args.extend(["--tls-cluster".into(), "yes".into()]);
                        args.extend(["--tls-replication".into(), "yes".into()]);
                    }
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    server_args(port, &node_dir, &args)
                });
                tls_ports.push(tls_port.get());
                node
            })
            .collect();

        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let output = Command::new("redis-cli")
            .args(setup.password.as_ref().map_or(Vec::new(), |p| {
                vec!["-a".to_string(), p.clone(), "--no-auth-warning".to_string()]
            }))
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run redis-cli --cluster create: {e}"));
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() || !stdout.contains("All 16384 slots covered") {
            panic!(
                "redis-cli --cluster create {} failed ({}):\n{stdout}{}",
                addrs.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }

        let ids = nodes
            .iter()
            .map(|n| {
                resp::call_text(n.port(), &["CLUSTER", "MYID"]).unwrap_or_else(|e| panic!("{e}"))
            })
            .collect();
        let cluster = TestCluster {
            nodes,
            tls_ports,
            setup: setup.clone(),
            ids,
            _dir: dir,
        };
        cluster.wait_healthy();
        cluster
    }

    /// Waits until every node says `cluster_state:ok`, sees all 16384 slots assigned and knows
    /// every node.
    pub fn wait_healthy(&self) {
        let n = self.nodes.len().to_string();
        wait_until("cluster_state:ok on every node", CLUSTER_TIMEOUT, || {
            for node in &self.nodes {
                let info = resp::call_text(node.port(), &["CLUSTER", "INFO"])?;
                let field = |f: &str| resp::info_field(&info, f).unwrap_or_default();
                if field("cluster_state") != "ok"
                    || field("cluster_slots_assigned") != "16384"
                    || field("cluster_known_nodes") != n
                {
                    return Err(format!(
                        "node {}: {}",
                        node.port(),
                        info.replace("\r\n", " ")
                    ));
                }
            }
            Ok(())
        });
    }

    /// fred's cluster URL: `redis-cluster://127.0.0.1:P1?node=127.0.0.1:P2&node=...`
    /// (`rediss-cluster://` and the TLS ports with TLS, the password when there is one).
    pub fn url(&self) -> String {
        let ports = self.client_ports();
        let mut url = format!(
            "{}://{}127.0.0.1:{}",
            self.setup.scheme("-cluster"),
            self.setup.userinfo(),
            ports[0]
        );
        for (i, port) in ports.iter().enumerate().skip(1) {
            url.push(if i == 1 { '?' } else { '&' });
            url.push_str(&format!("node=127.0.0.1:{port}"));
        }
        url
    }

    /// The ports clients connect to: the TLS ports with TLS, else the plaintext ones.
    pub fn client_ports(&self) -> Vec<u16> {
        if self.setup.tls.is_some() {
            self.tls_ports.clone()
        } else {
            self.ports()
        }
    }

    /// The nodes' client ports, by node index.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(Node::port).collect()
    }

    /// Node `node`'s client port.
    pub fn port(&self, node: usize) -> u16 {
        self.nodes[node].port()
    }

    /// Node `node`'s cluster node id (`CLUSTER MYID`).
    pub fn node_id(&self, node: usize) -> &str {
        &self.ids[node]
    }

    /// The process ids of all nodes that still run.
    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().filter_map(Node::pid).collect()
    }

    /// Runs `redis-cli -p PORT args...` against node `node` (no `-c`: no redirect following).
    pub fn cli(&self, node: usize, args: &[&str]) -> String {
        redis_cli(&cli_conn(self.port(node)), args)
    }

    /// The hash slot of `key` (`CLUSTER KEYSLOT`).
    pub fn key_slot(&self, key: &str) -> u16 {
        let reply = resp::call_ok(self.port(0), &["CLUSTER", "KEYSLOT", key])
            .unwrap_or_else(|e| panic!("{e}"));
        match reply {
            Reply::Int(slot) => u16::try_from(slot)
                .unwrap_or_else(|_| panic!("CLUSTER KEYSLOT {key}: bad slot {slot}")),
            other => panic!("CLUSTER KEYSLOT {key}: unexpected reply {other:?}"),
        }
    }

    /// The index of the node that itself claims `slot` (its own `myself` line in
    /// `CLUSTER NODES`).
    pub fn slot_owner(&self, slot: u16) -> usize {
        (0..self.nodes.len())
            .find(|&i| {
                let nodes = resp::call_text(self.port(i), &["CLUSTER", "NODES"])
                    .unwrap_or_else(|e| panic!("{e}"));
                nodes.lines().any(|line| {
                    let myself = line.split(' ').nth(2).is_some_and(|f| f.contains("myself"));
                    myself && line_owns(line, slot)
                })
            })
            .unwrap_or_else(|| panic!("no node claims slot {slot}"))
    }

    /// Moves `slot` and all its keys to master `to`, the way `redis-cli --cluster reshard`
    /// does: [`begin_slot_migration`](Self::begin_slot_migration),
    /// [`move_slot_keys`](Self::move_slot_keys), then
    /// [`finish_slot_migration`](Self::finish_slot_migration). Returns the previous owner's
    /// index. Does nothing (but return `to`) if `to` already owns the slot.
    pub fn migrate_slot(&self, slot: u16, to: usize) -> usize {
        let from = self.slot_owner(slot);
        if from == to {
            return to;
        }
        self.begin_slot_migration(slot, to);
        self.move_slot_keys(slot, to);
        self.finish_slot_migration(slot, to);
        from
    }

    /// Step 1: `CLUSTER SETSLOT slot IMPORTING src` on `to`, then `MIGRATING dst` on the
    /// current owner. Until step 3, clients get `ASK` redirects for keys already moved.
    /// Returns the current owner's index.
    pub fn begin_slot_migration(&self, slot: u16, to: usize) -> usize {
        let from = self.slot_owner(slot);
        assert_ne!(from, to, "node {to} already owns slot {slot}");
        let slot_s = slot.to_string();
        self.admin(
            to,
            &[
                "CLUSTER",
                "SETSLOT",
                &slot_s,
                "IMPORTING",
                self.node_id(from),
            ],
        );
        self.admin(
            from,
            &["CLUSTER", "SETSLOT", &slot_s, "MIGRATING", self.node_id(to)],
        );
        from
    }

    /// Step 2: `MIGRATE`s every key of `slot` from its owner to node `to` (binary-safe), in
    /// batches, until `CLUSTER GETKEYSINSLOT` on the owner is empty.
    pub fn move_slot_keys(&self, slot: u16, to: usize) {
        let from = self.slot_owner(slot);
        let slot_s = slot.to_string();
        let to_port = self.port(to).to_string();
        loop {
            let keys = resp::call_ok(
                self.port(from),
                &["CLUSTER", "GETKEYSINSLOT", &slot_s, "1000"],
            )
            .unwrap_or_else(|e| panic!("{e}"));
            let keys: Vec<Vec<u8>> = keys
                .items()
                .iter()
                .filter_map(|k| match k {
                    Reply::Bulk(Some(k)) => Some(k.clone()),
                    _ => None,
                })
                .collect();
            if keys.is_empty() {
                return;
            }
            let mut args: Vec<Vec<u8>> =
                ["MIGRATE", "127.0.0.1", &to_port, "", "0", "5000", "KEYS"]
                    .iter()
                    .map(|s| s.as_bytes().to_vec())
                    .collect();
            args.extend(keys);
            resp::call_ok(self.port(from), &args).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// Step 3: `CLUSTER SETSLOT slot NODE to` on `to`, on the old owner, then on every other
    /// node, and waits until every node agrees and the cluster is healthy.
    pub fn finish_slot_migration(&self, slot: u16, to: usize) {
        let from = self.slot_owner(slot);
        let slot_s = slot.to_string();
        let to_id = self.node_id(to).to_string();
        let mut order = vec![to, from];
        order.extend((0..self.nodes.len()).filter(|&i| i != to && i != from));
        order.dedup();
        for node in order {
            self.admin(node, &["CLUSTER", "SETSLOT", &slot_s, "NODE", &to_id]);
        }
        wait_until(
            &format!("every node to route slot {slot} to node {to}"),
            CLUSTER_TIMEOUT,
            || {
                for (i, node) in self.nodes.iter().enumerate() {
                    let owner = self.routed_owner(i, slot);
                    if owner.as_deref() != Some(to_id.as_str()) {
                        return Err(format!("node {} routes it to {owner:?}", node.port()));
                    }
                }
                Ok(())
            },
        );
        self.wait_healthy();
    }

    /// The node id that node `node` would send `slot` to, from its `CLUSTER NODES`.
    fn routed_owner(&self, node: usize, slot: u16) -> Option<String> {
        let nodes = resp::call_text(self.port(node), &["CLUSTER", "NODES"]).ok()?;
        nodes
            .lines()
            .find(|line| line_owns(line, slot))
            .and_then(|line| line.split(' ').next())
            .map(str::to_string)
    }

    fn admin(&self, node: usize, args: &[&str]) {
        resp::call_ok(self.port(node), args).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Whether a `CLUSTER NODES` line lists `slot` among its slots (`0-5460`, `7000`; the
/// `[slot->-id]` / `[slot-<-id]` migration markers do not count).
fn line_owns(line: &str, slot: u16) -> bool {
    line.split(' ')
        .skip(8)
        .filter(|s| !s.starts_with('['))
        .any(|s| {
            let (a, b) = s.split_once('-').unwrap_or((s, s));
            matches!((a.parse::<u16>(), b.parse::<u16>()), (Ok(a), Ok(b)) if a <= slot && slot <= b)
        })
}
