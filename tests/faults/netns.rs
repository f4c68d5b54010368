//! A private network of Linux network namespaces for the partitions part: one namespace per
//! host, each with a veth pair whose other end sits in a bridge namespace; addresses in
//! 10.213.0.0/24 exist only inside these namespaces, so nothing reaches the machine's own
//! interfaces. Cuts and heals act on the bridge side of a host's link:
//!
//! * `isolate`: the port moves to a second bridge, so the isolated hosts still reach each other
//!   (a master with a minority of clients) but nothing of the majority;
//! * `blackhole`: the port leaves every bridge and stays up: the host's packets vanish without a
//!   reset and its TCP connections go half-open, as behind a dead router;
//! * `down`: the port goes down, the host's link loses its carrier (a flapping cable).
//!
//! [`Net`] deletes every namespace (killing what still runs inside) when dropped, so a panic or
//! an error leaves nothing behind; `run.sh` traps signals and deletes the prefix's namespaces
//! as well.

use super::AnyResult;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};

/// The bridge every host starts on (the majority side).
const MAIN_BRIDGE: &str = "br0";
/// The bridge isolated hosts move to (the minority side).
const ISLAND_BRIDGE: &str = "br1";
/// The private subnet, /24.
const SUBNET: &str = "10.213.0";

/// Where a host's port is attached.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Link {
    Main,
    Island,
    Blackhole,
    Down,
}

/// The namespaces of one run, named `PREFIX-HOST`, and their links.
pub struct Net {
    prefix: String,
    /// Host name -> its address's last octet.
    hosts: BTreeMap<String, u8>,
    created: Vec<String>,
}

/// Runs `ip ARGS`, failing with its stderr.
fn ip(args: &[&str]) -> AnyResult<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into())
    }
}

impl Net {
    /// Creates the bridge namespace with its two bridges.
    pub fn new(prefix: &str) -> AnyResult<Net> {
        let mut net = Net {
            prefix: prefix.to_string(),
            hosts: BTreeMap::new(),
            created: Vec::new(),
        };
        let ns = net.ns("br");
        ip(&["netns", "add", &ns])?;
        net.created.push(ns.clone());
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        for bridge in [MAIN_BRIDGE, ISLAND_BRIDGE] {
            ip(&["-n", &ns, "link", "add", bridge, "type", "bridge"])?;
            ip(&["-n", &ns, "link", "set", bridge, "up"])?;
        }
        Ok(net)
    }

    fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    /// The bridge-side end of `host`'s link (interface names are at most 15 bytes).
    fn port(host: &str) -> String {
        format!("p-{host}")
    }

    /// Adds the namespace of `host` with the address `10.213.0.OCTET`, linked to the main bridge.
    pub fn add_host(&mut self, host: &str, octet: u8) -> AnyResult<String> {
        let ns = self.ns(host);
        let bridge_ns = self.ns("br");
        let port = Net::port(host);
        ip(&["netns", "add", &ns])?;
        self.created.push(ns.clone());
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        ip(&[
            "-n", &bridge_ns, "link", "add", &port, "type", "veth", "peer", "name", "eth0",
            "netns", &ns,
        ])?;
        ip(&[
            "-n",
            &bridge_ns,
            "link",
            "set",
            &port,
            "master",
            MAIN_BRIDGE,
        ])?;
        ip(&["-n", &bridge_ns, "link", "set", &port, "up"])?;
        let addr = format!("{SUBNET}.{octet}");
        ip(&[
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            "eth0",
        ])?;
        ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
        self.hosts.insert(host.to_string(), octet);
        Ok(addr)
    }

    pub fn addr(&self, host: &str) -> String {
        format!("{SUBNET}.{}", self.hosts[host])
    }

    /// A command that runs `program` inside `host`'s namespace.
    pub fn command(&self, host: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.ns(host)]).arg(program);
        command
    }

    /// Attaches `host`'s port as `link` says.
    pub fn set(&self, host: &str, link: Link) -> AnyResult<()> {
        let bridge_ns = self.ns("br");
        let port = Net::port(host);
        let (master, up) = match link {
            Link::Main => (Some(MAIN_BRIDGE), true),
            Link::Island => (Some(ISLAND_BRIDGE), true),
            Link::Blackhole => (None, true),
            Link::Down => (Some(MAIN_BRIDGE), false),
        };
        match master {
            Some(bridge) => ip(&["-n", &bridge_ns, "link", "set", &port, "master", bridge])?,
            None => ip(&["-n", &bridge_ns, "link", "set", &port, "nomaster"])?,
        }
        let state = if up { "up" } else { "down" };
        ip(&["-n", &bridge_ns, "link", "set", &port, state])
    }

    /// Every host back on the main bridge, links up.
    pub fn heal_all(&self) -> AnyResult<()> {
        for host in self.hosts.keys() {
            self.set(host, Link::Main)?;
        }
        Ok(())
    }
}

/// Kills what runs in the namespace, then deletes it (its veth end goes with it).
fn delete_namespace(ns: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let _ = Command::new("kill").args(["-9", pid]).status();
        }
    }
    let _ = ip(&["netns", "del", ns]);
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in self.created.iter().rev() {
            delete_namespace(ns);
        }
    }
}

/// Namespaces whose names start with `PREFIX-` that still exist (for the end-of-run check).
pub fn leftovers(prefix: &str) -> Vec<String> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default();
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("{prefix}-")))
        .map(str::to_string)
        .collect()
}

/// Deletes every namespace named `PREFIX-…` (killing what runs inside).
pub fn remove_all(prefix: &str) {
    for ns in leftovers(prefix) {
        delete_namespace(&ns);
    }
}

/// On SIGINT or SIGTERM, deletes the run's namespaces before exiting (the orchestrator's
/// children die with it: they are started with `PR_SET_PDEATHSIG`).
pub fn remove_on_signal(prefix: String) {
    use tokio::signal::unix::{signal, SignalKind};
    tokio::spawn(async move {
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        eprintln!("interrupted: removing the network namespaces {prefix}-*");
        remove_all(&prefix);
        std::process::exit(130);
    });
}
