//! Discovery: which queues a group finds by itself ([`Discovery`]), the scan of the timeout
//! zsets that finds them, and what the group's task does with a scan's result.
//!
//! A scan of a big keyspace takes a while, and SCAN promises only the keys that exist for all
//! of it: a queue created (or emptied and refilled) while it runs may be missing from its
//! result. So a scan drops only the discovered queues not heard from since it began: not found
//! by it, no channel message, no transfer that found entries.

use super::config::TransferConfig;
use super::task::{Done, GroupTask};
use crate::keys::{every_queue_key, glob_match, KeyKind, KeyRole, QueueKeys};
use crate::options::QueueOptions;
use crate::redis::ops::tidy;
use crate::redis::script::QueueSpec;
use crate::time::now_us;
use crate::Result;
use fred::clients::Client;
use fred::interfaces::{ClientLike, KeysInterface};
use fred::types::{Key, Value};
use futures::stream::BoxStream;
use futures::StreamExt;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// Which queues discovery finds: every Redisson delayed queue whose name matches the glob
/// `pattern` (all without one), looked for by a pattern subscription on the channels and a scan
/// of the timeout zsets every `rescan` (on every master of a Cluster); and the options and
/// transfer settings the queues found get.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Discovery {
    pub(super) pattern: Option<String>,
    pub(super) rescan: Duration,
    pub(super) scan_count: u32,
    pub(super) options: QueueOptions,
    pub(super) transfer: TransferConfig,
}

impl Default for Discovery {
    fn default() -> Self {
        Discovery {
            pattern: None,
            rescan: Duration::from_secs(30),
            scan_count: 1_000,
            options: QueueOptions::default(),
            transfer: TransferConfig::default(),
        }
    }
}

impl Discovery {
    /// Every queue.
    pub fn all() -> Discovery {
        Discovery::default()
    }

    /// Only queues whose name matches the glob `pattern` (`*`, `?`).
    /// Default: every queue.
    #[must_use]
    pub fn matching(mut self, pattern: impl Into<String>) -> Self {
        self.pattern = Some(pattern.into());
        self
    }

    /// The names of the queues a scan finds now (on every master of a Cluster), sorted: one
    /// `SCAN`, the same as the group's rescans. A queue whose name is not UTF-8 is left out, with
    /// a warning naming it hex-escaped.
    ///
    /// # Errors
    ///
    /// The scan failed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(client: fred::clients::Client) -> Result<(), delayq::Error> {
    /// let names = delayq::Discovery::all().matching("orders:*").scan(&client).await?;
    /// println!("{names:?}");
    /// # Ok(()) }
    /// ```
    pub async fn scan(&self, client: &Client) -> Result<Vec<String>> {
        let scanned = scan(client, self).await?;
        for name in &scanned.unreadable {
            warn_unreadable(name);
        }
        let mut names: Vec<String> = scanned
            .found
            .iter()
            .map(|k| k.target().to_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    /// The names of every queue the discovery takes that has any key a scan can tell for its
    /// own, sorted: its timeout zset or order list, or delayq's in-flight set, dead letters,
    /// quarantine or pause flag (not its indexes alone: see [`orphaned`](Self::orphaned)), so that a queue with dead letters and nothing pending
    /// is among them (unlike [`scan`](Self::scan)'s, which finds what there is to transfer). One
    /// `SCAN` (on every master of a Cluster), the same as [`scan`](Self::scan)'s; no key is
    /// read, so a queue whose keys hold the wrong type is listed too. The target list alone,
    /// named like any key, is not found. A key whose queue name is not UTF-8 is left out.
    ///
    /// # Errors
    ///
    /// The scan failed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(client: fred::clients::Client) -> Result<(), delayq::Error> {
    /// for name in delayq::Discovery::all().list(&client).await? {
    ///     println!("{name}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, client: &Client) -> Result<Vec<String>> {
        let mut keys = queue_keys(client, self.scan_count);
        let mut names = std::collections::BTreeSet::new();
        while let Some(key) = keys.next().await {
            let key = key?;
            let Some((role, queue)) = key.as_str().and_then(QueueKeys::scanned) else {
                continue;
            };
            // Indexes alone are what a queue another client ended left behind, not a queue.
            let indexes_only = matches!(role, KeyRole::Index | KeyRole::Values);
            if !indexes_only && self.takes(queue.target()) {
                names.insert(queue.target().to_owned());
            }
        }
        Ok(names.into_iter().collect())
    }

    /// The names of the queues the discovery takes whose delayq indexes (`delayq_index:{NAME}`,
    /// `delayq_values:{NAME}`) outlived them, sorted: a scan (the same as [`scan`](Self::scan))
    /// found the indexes but neither the queue's timeout zset nor its order list. Another client
    /// deleted, cleared or expired the queue while no delayq process watched it. A group with
    /// discovery tidies them at each scan; [`tidy`](Self::tidy) does it on demand.
    ///
    /// # Errors
    ///
    /// The scan failed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(client: fred::clients::Client) -> Result<(), delayq::Error> {
    /// let discovery = delayq::Discovery::all();
    /// for name in discovery.orphaned(&client).await? {
    ///     let deleted = discovery.tidy(&client, &name).await?;
    ///     println!("{name}: {deleted} index keys deleted");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn orphaned(&self, client: &Client) -> Result<Vec<String>> {
        let scanned = scan(client, self).await?;
        let mut names: Vec<String> = scanned
            .orphaned
            .iter()
            .map(|k| k.target().to_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Deletes delayq's indexes of the queue `name` if its order list is gone, else gives them
    /// the list's time to live; how many of the two were deleted. One script looks at the list
    /// and deletes: a queue that came back since [`orphaned`](Self::orphaned) named it keeps
    /// its indexes.
    ///
    /// # Errors
    ///
    /// The script failed.
    pub async fn tidy(&self, client: &Client, name: &str) -> Result<u64> {
        tidy::run(client, &self.spec(QueueKeys::new(name))).await
    }

    /// The queue `keys` with the discovery's options.
    fn spec(&self, keys: QueueKeys) -> QueueSpec {
        QueueSpec {
            keys,
            options: self.options,
        }
    }

    /// How often to scan for queues (new ones are found sooner by their channel's first
    /// message; vanished ones are dropped at a scan). The next scan starts this long after the
    /// last one began, or when it ends if it took longer. Default: 30 s.
    #[must_use]
    pub fn rescan_every(mut self, interval: Duration) -> Self {
        self.rescan = interval;
        self
    }

    /// How many keys each `SCAN` call asks the server to look at (its `COUNT`). Smaller calls
    /// hold Redis for less time each; a scan of a big keyspace then makes more of them and
    /// takes longer. Default: 1,000.
    #[must_use]
    pub fn scan_count(mut self, count: u32) -> Self {
        self.scan_count = count.max(1);
        self
    }

    /// The entry format and clock of the queues found (see [`QueueOptions`]). Default: current
    /// entries, this process's clock.
    #[must_use]
    pub fn options(mut self, options: QueueOptions) -> Self {
        self.options = options;
        self
    }

    /// The transfer settings of the queues found. Default: [`TransferConfig::default`].
    #[must_use]
    pub fn transfer_config(mut self, config: TransferConfig) -> Self {
        self.transfer = config;
        self
    }

    /// Whether discovery takes the queue `name`.
    pub(super) fn takes(&self, name: &str) -> bool {
        self.pattern.as_deref().is_none_or(|p| glob_match(p, name))
    }
}

/// What one scan found.
pub(super) struct Scanned {
    /// The queues discovery takes.
    pub(super) found: Vec<QueueKeys>,
    /// The timeout zsets whose queue name is not UTF-8 (hex-escaped), which discovery leaves
    /// alone: delayq handles queue names as text.
    pub(super) unreadable: Vec<String>,
    /// The queues discovery takes whose delayq indexes the scan found, but neither their timeout
    /// zset nor their order list: ended by another client, maybe while no delayq process
    /// watched them. The tidy script looks at the order list again before it deletes anything.
    pub(super) orphaned: Vec<QueueKeys>,
}

/// How many `TYPE` calls a pipeline of the scan sends at once.
const TYPE_BATCH: usize = 1_000;

/// Every Redisson delayed queue the discovery takes, and the indexes a queue it takes left
/// behind: one `SCAN` of the queues' timeout zsets, order lists and delayq indexes, on every
/// master; the timeout zsets are then told from keys merely named like one by their `TYPE`.
pub(super) async fn scan(client: &Client, discovery: &Discovery) -> Result<Scanned> {
    let mut keys = queue_keys(client, discovery.scan_count);
    // Keys named like a timeout zset: the queue, or the name hex-escaped when it is not UTF-8.
    let mut timeouts: Vec<(Key, std::result::Result<QueueKeys, String>)> = Vec::new();
    // Queues with a timeout or order key, and queues with an index.
    let mut alive = HashSet::new();
    let mut indexed = HashMap::new();
    while let Some(key) = keys.next().await {
        let key = key?;
        let Some(text) = key.as_str() else {
            // delayq names its own keys from text names: only Redisson's can be unreadable.
            let escaped = key.as_bytes().escape_ascii().to_string();
            if let Some((KeyRole::Timeout, queue)) = QueueKeys::scanned(&escaped) {
                if discovery.takes(queue.target()) {
                    timeouts.push((key, Err(escaped)));
                }
            }
            continue;
        };
        let Some((role, queue)) = QueueKeys::scanned(text) else {
            continue;
        };
        if !discovery.takes(queue.target()) {
            continue;
        }
        match role {
            // A queue with recurring schedules is one to transfer (its schedules fire in the
            // group that transfers it), pending entries or not.
            KeyRole::Timeout | KeyRole::Order | KeyRole::Schedules => {
                alive.insert(queue.target().to_owned());
                if role != KeyRole::Order {
                    timeouts.push((key, Ok(queue)));
                }
            }
            KeyRole::Index | KeyRole::Values => {
                indexed.insert(queue.target().to_owned(), queue);
            }
            // Keys of a queue's reliable consumption or pause: a listing's, not a transfer's.
            _ => {}
        }
    }
    let mut scanned = Scanned {
        found: Vec::new(),
        unreadable: Vec::new(),
        orphaned: indexed
            .into_iter()
            .filter(|(name, _)| !alive.contains(name))
            .map(|(_, queue)| queue)
            .collect(),
    };
    let zsets = zsets(client, timeouts.iter().map(|(key, _)| key.clone())).await?;
    let mut seen = HashSet::new();
    for ((_, queue), zset) in timeouts.into_iter().zip(zsets) {
        match queue {
            _ if !zset => {}
            Ok(queue) if seen.insert(queue.target().to_owned()) => scanned.found.push(queue),
            Ok(_) => {}
            Err(escaped) => scanned.unreadable.push(escaped),
        }
    }
    Ok(scanned)
}

/// Every key named like one of a queue's (see [`QueueKeys::scanned`]): one `SCAN` with one
/// pattern, on every master of a Cluster, `count` keys a call.
fn queue_keys(
    client: &Client,
    count: u32,
) -> BoxStream<'static, std::result::Result<Key, fred::error::Error>> {
    let pattern = every_queue_key();
    match client.is_clustered() {
        true => client
            .scan_cluster_buffered(pattern, Some(count), None)
            .boxed(),
        false => client.scan_buffered(pattern, Some(count), None).boxed(),
    }
}

/// Whether each of `keys` is a sorted set, in pipelines of [`TYPE_BATCH`].
async fn zsets(client: &Client, keys: impl Iterator<Item = Key>) -> Result<Vec<bool>> {
    let keys: Vec<Key> = keys.collect();
    let mut zsets = Vec::with_capacity(keys.len());
    for batch in keys.chunks(TYPE_BATCH) {
        let pipeline = client.pipeline();
        for key in batch {
            let _: () = pipeline.r#type(key.clone()).await?;
        }
        for reply in pipeline.try_all::<Value>().await {
            let kind = reply?;
            zsets.push(kind.as_str().as_deref() == Some(KeyKind::Zset.redis_type()));
        }
    }
    Ok(zsets)
}

fn warn_unreadable(key: &str) {
    tracing::warn!(
        key = %key,
        "a delayed queue whose name is not UTF-8 (shown hex-escaped): discovery leaves it alone; \
         transfer it from a Redisson client, or rename its keys"
    );
}

impl GroupTask {
    /// Starts a scan, unless one runs (the next starts when it ends).
    pub(super) fn start_scan(&mut self) {
        let Some(discovery) = &self.discovery else {
            return;
        };
        if self.scan_began_us.is_some() {
            self.next_scan = None;
            return;
        }
        self.scan_began_us = Some(now_us());
        self.next_scan = Some(tokio::time::Instant::now() + discovery.rescan);
        let client = self.client.clone();
        let discovery = discovery.clone();
        self.jobs
            .spawn(async move { Done::Scanned(scan(&client, &discovery).await) });
    }

    /// Starts the next scan now if it came due while the last one ran.
    fn rescan_if_due(&mut self) {
        if self.next_scan.is_none() {
            self.start_scan();
        }
    }

    /// The queue of `channel`, if discovery is on and its pattern takes it.
    pub(super) fn discovered_queue(&self, channel: &str) -> Option<QueueKeys> {
        let discovery = self.discovery.as_ref()?;
        let keys = QueueKeys::queue_of(channel)?;
        discovery.takes(keys.target()).then_some(keys)
    }

    /// A message came on the channel of the unknown queue `keys`: anyone may publish on any
    /// channel, so the queue is added (with its metrics) only if it has pending entries.
    pub(super) fn check_heard(&mut self, keys: QueueKeys) {
        let client = self.client.clone();
        self.jobs.spawn(async move {
            let pending: std::result::Result<u64, _> = client.exists(keys.timeout()).await;
            let pending = pending.is_ok_and(|n| n > 0);
            Done::Heard(Box::new(keys), pending)
        });
    }

    /// What [`check_heard`](Self::check_heard) found.
    pub(super) async fn on_heard(&mut self, keys: QueueKeys, pending: bool) {
        if !pending || self.queues.contains_key(keys.target()) {
            return;
        }
        let name = keys.target().to_owned();
        if let Err(err) = self.add_discovered(keys).await {
            tracing::warn!(queue = %name, error = %err, "cannot add a discovered queue");
        }
    }

    pub(super) async fn add_discovered(&mut self, keys: QueueKeys) -> Result<()> {
        let Some(discovery) = &self.discovery else {
            return Ok(());
        };
        let spec = discovery.spec(keys);
        let config = discovery.transfer;
        self.add(spec, config, true).await.map(drop)
    }

    /// Adds the queues a scan found, drops the discovered queues not heard from since it began,
    /// and tidies the indexes of those dropped and of the queues that left only indexes behind.
    pub(super) async fn on_scanned(&mut self, scanned: Result<Scanned>) {
        let began_us = self.scan_began_us.take().unwrap_or(i64::MIN);
        let scanned = match scanned {
            Ok(scanned) => scanned,
            Err(err) => {
                match self.discover_reply.take() {
                    // The first scan: the caller hears why discovery cannot work.
                    Some(reply) => {
                        self.discovery = None;
                        self.observer.discover(None);
                        self.next_scan = None;
                        let _ = reply.send(Err(err));
                    }
                    None => {
                        tracing::warn!(error = %err, "discovery scan failed; trying again at the next");
                        self.rescan_if_due();
                    }
                }
                return;
            }
        };
        self.rescan_if_due();
        for name in scanned.unreadable {
            if self.unreadable_warned.insert(name.clone()) {
                warn_unreadable(&name);
            }
        }
        let (mut added, mut dropped) = (0, 0);
        let now = now_us();
        for keys in scanned.found {
            let name = keys.target().to_owned();
            match self.queues.get_mut(&name) {
                Some(state) => state.heard_us = now,
                None => match self.add_discovered(keys).await {
                    Ok(()) => added += 1,
                    Err(err) => {
                        tracing::warn!(queue = %name, error = %err, "cannot add a discovered queue")
                    }
                },
            }
        }
        let vanished: Vec<String> = self
            .queues
            .iter()
            .filter(|(_, state)| state.discovered && !state.running && state.heard_us < began_us)
            .map(|(name, _)| name.clone())
            .collect();
        // The queues that left only indexes behind, and those dropped now.
        let mut untidy = match &self.discovery {
            Some(discovery) => scanned
                .orphaned
                .into_iter()
                .map(|keys| discovery.spec(keys))
                .collect(),
            None => Vec::new(),
        };
        for name in vanished {
            if let Some(spec) = self.remove(&name).await {
                untidy.push(spec);
            }
            dropped += 1;
        }
        self.tidy(untidy);
        if added + dropped > 0 {
            tracing::info!(added, dropped, queues = self.queues.len(), "discovery");
        }
        if let Some(reply) = self.discover_reply.take() {
            let _ = reply.send(Ok(()));
        }
    }
}
