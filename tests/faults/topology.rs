//! The partitions part's Sentinel deployment inside network namespaces: masters/replicas
//! `m1..m3`, sentinels `s1..s3`, a control host `ctl` (never cut: the orchestrator's
//! `redis-cli` queries go through it), and the client hosts the workload runs on.

use super::common::server_program;
use super::netns::Net;
use super::{AnyResult, Proc};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const SERVICE: &str = "mymaster";
/// Every data node and sentinel listens on its own address, so one port serves all of them.
const DATA_PORT: u16 = 7000;
const SENTINEL_PORT: u16 = 7100;
pub const DATA_HOSTS: [&str; 3] = ["m1", "m2", "m3"];
const SENTINEL_HOSTS: [&str; 3] = ["s1", "s2", "s3"];
/// Client hosts and their addresses' last octets.
pub const CLIENT_HOSTS: [(&str, u8); 6] = [
    ("o1", 31),
    ("o2", 32),
    ("c1", 41),
    ("c2", 42),
    ("t1", 51),
    ("t2", 52),
];
/// The bound on waits for the deployment to settle (a loaded 2-core machine included).
pub const SETTLE: Duration = Duration::from_secs(90);

/// Polls `check` every 50 ms until it returns `Ok`, or fails after `timeout` naming `what` and
/// the last state seen.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> AnyResult<T> {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(value) => return Ok(value),
            Err(last) if Instant::now() > deadline => {
                return Err(
                    format!("timed out after {timeout:?} waiting for {what}: {last}").into(),
                )
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

pub struct Deployment {
    /// Field order: processes stop before their namespaces go.
    servers: HashMap<String, Proc>,
    pub net: Net,
    dir: PathBuf,
}

impl Deployment {
    /// Creates the namespaces, starts `m1` as master with `m2`, `m3` replicating it and three
    /// sentinels (quorum 2, `down-after-milliseconds 1500`), and waits until all agree.
    pub fn start(prefix: &str, dir: &Path) -> AnyResult<Deployment> {
        let mut net = Net::new(prefix)?;
        for (i, host) in DATA_HOSTS.iter().enumerate() {
            net.add_host(host, 11 + i as u8)?;
        }
        for (i, host) in SENTINEL_HOSTS.iter().enumerate() {
            net.add_host(host, 21 + i as u8)?;
        }
        net.add_host("ctl", 2)?;
        for (host, octet) in CLIENT_HOSTS {
            net.add_host(host, octet)?;
        }
        let mut d = Deployment {
            servers: HashMap::new(),
            net,
            dir: dir.to_path_buf(),
        };
        for host in DATA_HOSTS {
            d.start_data(host, (host != "m1").then_some("m1"))?;
        }
        d.wait_healthy("m1")?;
        for host in SENTINEL_HOSTS {
            d.start_sentinel(host)?;
        }
        d.wait_healthy("m1")?;
        Ok(d)
    }

    fn start_data(&mut self, host: &str, master: Option<&str>) -> AnyResult<()> {
        let dir = self.dir.join(host);
        std::fs::create_dir_all(&dir)?;
        let mut command = self.net.command(host, server_program());
        command
            .args([
                "--bind",
                &self.net.addr(host),
                "--port",
                &DATA_PORT.to_string(),
            ])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            // A replica re-attached after a promotion syncs at once, not after the default 5 s
            // wait for more replicas to share a diskless transfer.
            .args(["--repl-diskless-sync-delay", "0"])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null());
        if let Some(master) = master {
            command.args([
                "--replicaof",
                &self.net.addr(master),
                &DATA_PORT.to_string(),
            ]);
        }
        let proc = Proc::spawn(host, command, &self.dir.join(format!("{host}.log")))?;
        self.servers.insert(host.to_string(), proc);
        Ok(())
    }

    fn start_sentinel(&mut self, host: &str) -> AnyResult<()> {
        let dir = self.dir.join(host);
        std::fs::create_dir_all(&dir)?;
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "bind {addr}\nport {SENTINEL_PORT}\nprotected-mode no\ndir {dir}\n\
                 sentinel monitor {SERVICE} {master} {DATA_PORT} 2\n\
                 sentinel down-after-milliseconds {SERVICE} 1500\n\
                 sentinel failover-timeout {SERVICE} 4000\n\
                 sentinel parallel-syncs {SERVICE} 2\n",
                addr = self.net.addr(host),
                dir = dir.display(),
                master = self.net.addr("m1"),
            ),
        )?;
        // `redis-server CONF --sentinel` (Valkey's server takes it too): one program for both.
        let mut command = self.net.command(host, server_program());
        command.arg(&conf).arg("--sentinel").stdin(Stdio::null());
        let proc = Proc::spawn(host, command, &self.dir.join(format!("{host}.log")))?;
        self.servers.insert(host.to_string(), proc);
        Ok(())
    }

    /// fred's URL of the service, through the three sentinels.
    pub fn url(&self) -> String {
        let s: Vec<String> = SENTINEL_HOSTS
            .iter()
            .map(|h| format!("{}:{SENTINEL_PORT}", self.net.addr(h)))
            .collect();
        format!(
            "redis-sentinel://{}?node={}&node={}&sentinelServiceName={SERVICE}",
            s[0], s[1], s[2]
        )
    }

    /// `redis-cli` from the control host to `host` (a data node or a sentinel), bounded to 3 s
    /// (an unreachable node makes it fail, not hang).
    pub fn cli(&self, host: &str, args: &[&str]) -> Result<String, String> {
        let port = if host.starts_with('s') {
            SENTINEL_PORT
        } else {
            DATA_PORT
        };
        let out = self
            .net
            .command("ctl", "timeout")
            .args(["3", "redis-cli", "-h", &self.net.addr(host)])
            .args(["-p", &port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if out.status.success() && !text.starts_with("ERR") {
            Ok(text)
        } else {
            Err(format!(
                "{host}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    fn host_of(&self, addr: &str) -> Option<&'static str> {
        DATA_HOSTS.into_iter().find(|h| self.net.addr(h) == addr)
    }

    /// The data host `sentinel` names as master.
    pub fn named_master(&self, sentinel: &str) -> Result<&'static str, String> {
        let reply = self.cli(sentinel, &["SENTINEL", "get-master-addr-by-name", SERVICE])?;
        let addr = reply.lines().next().unwrap_or_default().trim().to_string();
        self.host_of(&addr)
            .ok_or_else(|| format!("{sentinel} names {reply:?}"))
    }

    /// The master a majority of the sentinels names.
    pub fn majority_master(&self) -> Result<&'static str, String> {
        let named: Vec<&str> = SENTINEL_HOSTS
            .iter()
            .filter_map(|s| self.named_master(s).ok())
            .collect();
        DATA_HOSTS
            .into_iter()
            .find(|m| named.iter().filter(|n| *n == m).count() >= 2)
            .ok_or_else(|| format!("no majority: {named:?}"))
    }

    /// Waits until a majority of the sentinels names a master other than `old`; returns it and
    /// the time it was first seen (epoch ms).
    pub fn wait_promotion(&self, old: &str) -> AnyResult<(&'static str, i64)> {
        let new = wait_for("a replica's promotion", SETTLE, || {
            match self.majority_master()? {
                m if m == old => Err(format!("still {m}")),
                m => Ok(m),
            }
        })?;
        Ok((new, delayq::time::now_ms()))
    }

    /// Whether `master` is master with both others linked to it as replicas and every sentinel
    /// names it, seeing 2 replicas and 2 other sentinels.
    pub fn healthy(&self, master: &str) -> Result<(), String> {
        let addr = self.net.addr(master);
        let info = self.cli(master, &["INFO", "replication"])?;
        if !info.contains("role:master") {
            return Err(format!("{master}: not master"));
        }
        for replica in DATA_HOSTS.iter().filter(|h| **h != master) {
            let info = self.cli(replica, &["INFO", "replication"])?;
            if !info.contains(&format!("master_host:{addr}"))
                || !info.contains("master_link_status:up")
            {
                return Err(format!("{replica}: not linked to {master}"));
            }
        }
        for s in SENTINEL_HOSTS
            .iter()
            .filter(|s| self.servers.contains_key(**s))
        {
            let info = self.cli(s, &["INFO", "sentinel"])?;
            let want = format!("address={addr}:{DATA_PORT},slaves=2,sentinels=3");
            if !info.contains(&want) {
                return Err(format!("{s}: {}", info.lines().last().unwrap_or_default()));
            }
        }
        Ok(())
    }

    /// Waits until [`healthy`](Self::healthy) holds for `master`.
    pub fn wait_healthy(&self, master: &str) -> AnyResult<()> {
        wait_for(
            &format!("{master} as master of a healthy set"),
            SETTLE,
            || self.healthy(master),
        )
    }

    /// Waits until the sentinels' majority names a master and the set is healthy around it.
    pub fn wait_settled(&self) -> AnyResult<&'static str> {
        wait_for("the sentinels agreeing on a healthy master", SETTLE, || {
            let m = self.majority_master()?;
            self.healthy(m)?;
            Ok(m)
        })
    }

    /// Forces a failover away from `old` (`SENTINEL FAILOVER`) and waits for the promotion;
    /// asks again when a failover aborts (another sentinel with an older view may turn the
    /// chosen replica back before it is seen as master). Returns the new master and when it was
    /// first named.
    pub fn forced_failover(&self, old: &str) -> AnyResult<(&'static str, i64)> {
        let deadline = Instant::now() + SETTLE;
        loop {
            let asked = self.cli("s1", &["SENTINEL", "FAILOVER", SERVICE]);
            let attempt_end = Instant::now() + Duration::from_secs(15);
            while Instant::now() < attempt_end {
                match self.majority_master() {
                    Ok(m) if m != old => return Ok((m, delayq::time::now_ms())),
                    _ => std::thread::sleep(Duration::from_millis(50)),
                }
            }
            if Instant::now() > deadline {
                return Err(format!("no promotion after SENTINEL FAILOVER: {asked:?}").into());
            }
        }
    }

    /// Whether every replica `master` lists has acknowledged its whole replication stream
    /// (`INFO replication`: each `slaveN:...,offset=` equal to `master_repl_offset`).
    fn replicas_caught_up(&self, master: &str) -> Result<(), String> {
        let info = self.cli(master, &["INFO", "replication"])?;
        let field = |line: &str, key: &str| -> Option<String> {
            line.split(',')
                .find_map(|kv| kv.trim().strip_prefix(key).map(str::to_string))
        };
        let own = info
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("master_repl_offset:")
                    .map(str::to_string)
            })
            .ok_or_else(|| format!("{master}: no master_repl_offset"))?;
        let replicas: Vec<String> = info
            .lines()
            .filter(|l| l.starts_with("slave") && l.contains("offset="))
            .filter_map(|l| field(l, "offset="))
            .collect();
        if replicas.len() == DATA_HOSTS.len() - 1 && replicas.iter().all(|o| *o == own) {
            Ok(())
        } else {
            Err(format!("{master} at {own}, replicas at {replicas:?}"))
        }
    }

    /// A planned failover away from `old` that loses no acknowledged write: writes paused on
    /// the old master (`CLIENT PAUSE WRITE`; reads go on) until every replica has all it
    /// acknowledged, `SENTINEL FAILOVER`, the old master made a replica of the new one as soon
    /// as the sentinels name it, then unpaused: the writes it held run on a replica and fail
    /// (`READONLY`), so nothing it did not pass on is ever acknowledged. `pause: false` does
    /// the same without the pause (the run must then fail: the check of the check). Returns the
    /// new master and when it was first named.
    pub fn planned_failover(&self, old: &str, pause: bool) -> AnyResult<(&'static str, i64)> {
        if pause {
            // A bound in case this run dies; the unpause below ends it.
            self.cli(old, &["CLIENT", "PAUSE", "30000", "WRITE"])?;
            wait_for("the replicas caught up", SETTLE, || {
                self.replicas_caught_up(old)
            })?;
        }
        let switched = self.forced_failover(old).and_then(|(new, named_at)| {
            let port = DATA_PORT.to_string();
            self.cli(old, &["REPLICAOF", &self.net.addr(new), &port])?;
            Ok((new, named_at))
        });
        if pause {
            self.cli(old, &["CLIENT", "UNPAUSE"])?;
        }
        switched
    }

    /// A command running `program` on `host` (a client host).
    pub fn command(&self, host: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        self.net.command(host, program)
    }
}
