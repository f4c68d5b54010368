//! Discovery: which queues a group finds by itself ([`Discovery`]), the scan of the timeout
//! zsets that finds them, and what a scan's result means for the group's queues (returned for
//! the group's task to apply).
//!
//! A scan of a big keyspace takes a while, and SCAN promises only the keys that exist for all
//! of it: a queue created (or emptied and refilled) while it runs may be missing from its
//! result. So a scan drops only the discovered queues not heard from since it began: not found
//! by it, no channel message, no transfer that found entries.

use super::config::TransferConfig;
use super::queue_state::QueueState;
use crate::keys::{every_queue_key, glob_match, KeyKind, KeyRole, QueueKeys};
use crate::options::QueueOptions;
use crate::redis::ops::tidy;
use crate::redis::script::QueueSpec;
use crate::time::now_us;
use crate::Result;
use fred::clients::Client;
use fred::interfaces::{ClientLike, KeysInterface};
use fred::types::scan::ScanType;
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
        let scanned = scan(client, self, &HashSet::new()).await?;
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
            if lists(role) && self.takes(queue.target()) {
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
        let scanned = scan(client, self, &HashSet::new()).await?;
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
    pub(super) fn spec(&self, keys: QueueKeys) -> QueueSpec {
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

/// Whether a key of the role `role` makes its queue one that [`Discovery::list`] lists: any
/// key of a queue's own but delayq's indexes, which alone are what a queue another client
/// ended left behind, not a queue.
fn lists(role: KeyRole) -> bool {
    !matches!(role, KeyRole::Index | KeyRole::Values)
}

/// What one scan found.
pub(super) struct Scanned {
    /// The queues discovery takes.
    pub(super) found: Vec<QueueKeys>,
    /// Every queue discovery takes that [`Discovery::list`] would list, sorted: those with
    /// nothing to transfer (dead letters, deliveries in flight, a quarantine, a pause flag)
    /// included, for the gauges of a process that watches them.
    pub(super) listed: Vec<String>,
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

/// From how many keys of unknown type on a scan their types are read by a second `SCAN ...
/// TYPE zset` over the keyspace (a call per `scan_count` keys of it) rather than a `TYPE` each.
const TYPED_SCAN_FROM: usize = 100;

/// Every Redisson delayed queue the discovery takes, and the indexes a queue it takes left
/// behind: one `SCAN` of the queues' timeout zsets, order lists and delayq indexes, on every
/// master. The timeout zsets are then told from keys merely named like one by their type,
/// except those of the `known` queues (the group's, whose transfers read them): a rescan's
/// cost beyond the `SCAN` follows what changed since the last one. Many keys to tell (a first
/// scan) are told by a `SCAN ... TYPE zset` (Redis 6+, Valkey), few by a `TYPE` each, as are
/// many on a server without the filter.
pub(super) async fn scan(
    client: &Client,
    discovery: &Discovery,
    known: &HashSet<String>,
) -> Result<Scanned> {
    let mut keys = queue_keys(client, discovery.scan_count);
    // Keys named like a timeout zset: the queue, or the name hex-escaped when it is not UTF-8.
    let mut timeouts: Vec<(Key, std::result::Result<QueueKeys, String>)> = Vec::new();
    // Queues with a timeout or order key, and queues with an index.
    let mut alive = HashSet::new();
    let mut indexed = HashMap::new();
    let mut listed = std::collections::BTreeSet::new();
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
        listed.extend(lists(role).then(|| queue.target().to_owned()));
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
        listed: listed.into_iter().collect(),
        unreadable: Vec::new(),
        orphaned: indexed
            .into_iter()
            .filter(|(name, _)| !alive.contains(name))
            .map(|(_, queue)| queue)
            .collect(),
    };
    let unknown: Vec<Key> = timeouts
        .iter()
        .filter(|(_, queue)| !queue.as_ref().is_ok_and(|q| known.contains(q.target())))
        .map(|(key, _)| key.clone())
        .collect();
    let zsets = zsets(client, unknown, discovery.scan_count).await?;
    let mut seen = HashSet::new();
    // Queues the group does not hold yet: which of two names sharing their keys takes them.
    let mut fresh = Vec::new();
    for (_, queue) in timeouts.into_iter().filter(|(key, queue)| {
        queue.as_ref().is_ok_and(|q| known.contains(q.target())) || zsets.contains(key.as_bytes())
    }) {
        match queue {
            Ok(queue) if !seen.insert(queue.target().to_owned()) => {}
            Ok(queue) if held(|name| known.contains(name), &queue) => scanned.found.push(queue),
            Ok(queue) => fresh.push(queue),
            Err(escaped) => scanned.unreadable.push(escaped),
        }
    }
    scanned.found.extend(readings(client, fresh).await?);
    Ok(scanned)
}

/// Whether the queue `keys` is held (`holds` says it of a name), by its name or the name whose
/// keys are the same ([`QueueKeys::twin`]): a queue is transferred to one target list only.
pub(super) fn held(holds: impl Fn(&str) -> bool, keys: &QueueKeys) -> bool {
    holds(keys.target()) || keys.twin().is_some_and(|twin| holds(&twin))
}

/// Of the two names whose delayed-queue keys are one (Redisson's `prefixName` wraps only a name
/// without `{`, so `x}` and `{x}}`, or `orders` and `{orders}`, write the same keys), the one
/// each of `found` (read the plain way) is taken by: the plain one, unless only the braced
/// one's target list exists. Both lists existing is warned about: the values of both are moved
/// to the plain one's. Two `EXISTS` a queue, in pipelines of [`TYPE_BATCH`].
pub(super) async fn readings(client: &Client, found: Vec<QueueKeys>) -> Result<Vec<QueueKeys>> {
    let mut chosen = Vec::with_capacity(found.len());
    for batch in found.chunks(TYPE_BATCH / 2) {
        let pipeline = client.pipeline();
        for keys in batch {
            let twin = keys.twin().unwrap_or_else(|| keys.target().to_owned());
            let _: () = pipeline.exists(keys.target()).await?;
            let _: () = pipeline.exists(twin).await?;
        }
        let mut replies = pipeline.try_all::<u64>().await.into_iter();
        for keys in batch {
            let plain = replies.next().transpose()?.unwrap_or(0) > 0;
            let braced = replies.next().transpose()?.unwrap_or(0) > 0;
            let Some(twin) = keys.twin().filter(|_| braced) else {
                chosen.push(keys.clone());
                continue;
            };
            let taken = if plain {
                keys.clone()
            } else {
                QueueKeys::new(twin)
            };
            tracing::warn!(
                queue = taken.target(),
                shares_keys_with = keys.twin().as_deref().unwrap_or_default(),
                both_lists_exist = plain,
                "two queue names write these delayed-queue keys (Redisson's naming rule); \
                 discovery moves their values to the list of the one named here, the one whose \
                 target list exists (the plain name when both do)"
            );
            chosen.push(taken);
        }
    }
    Ok(chosen)
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

/// Which of `keys` are sorted sets: from [`TYPED_SCAN_FROM`] keys on, by one `SCAN ... TYPE
/// zset` (falling back to `TYPE`s on a server that refuses the filter), below it by a `TYPE`
/// each in pipelines of [`TYPE_BATCH`].
async fn zsets(client: &Client, keys: Vec<Key>, scan_count: u32) -> Result<HashSet<Vec<u8>>> {
    if keys.is_empty() {
        return Ok(HashSet::new());
    }
    if keys.len() >= TYPED_SCAN_FROM {
        match typed_zsets(client, scan_count).await {
            Ok(zsets) => {
                return Ok(keys
                    .iter()
                    .filter(|key| zsets.contains(key.as_bytes()))
                    .map(|key| key.as_bytes().to_vec())
                    .collect())
            }
            Err(err) => tracing::debug!(
                error = %err,
                "SCAN ... TYPE zset refused (a server before Redis 6?): reading each key's TYPE"
            ),
        }
    }
    let mut zsets = HashSet::new();
    for batch in keys.chunks(TYPE_BATCH) {
        let pipeline = client.pipeline();
        for key in batch {
            let _: () = pipeline.r#type(key.clone()).await?;
        }
        for (key, reply) in batch.iter().zip(pipeline.try_all::<Value>().await) {
            if reply?.as_str().as_deref() == Some(KeyKind::Zset.redis_type()) {
                zsets.insert(key.as_bytes().to_vec());
            }
        }
    }
    Ok(zsets)
}

/// Every sorted set named like one of a queue's keys: one `SCAN ... TYPE zset`, on every
/// master of a Cluster.
async fn typed_zsets(client: &Client, count: u32) -> Result<HashSet<Vec<u8>>> {
    let pattern = every_queue_key();
    let mut keys = match client.is_clustered() {
        true => client
            .scan_cluster_buffered(pattern, Some(count), Some(ScanType::ZSet))
            .boxed(),
        false => client
            .scan_buffered(pattern, Some(count), Some(ScanType::ZSet))
            .boxed(),
    };
    let mut zsets = HashSet::new();
    while let Some(key) = keys.next().await {
        zsets.insert(key?.as_bytes().to_vec());
    }
    Ok(zsets)
}

pub(super) fn warn_unreadable(key: &str) {
    tracing::warn!(
        key = %key,
        "a delayed queue whose name is not UTF-8 (shown hex-escaped): discovery leaves it alone; \
         transfer it from a Redisson client, or rename its keys"
    );
}

/// A message came on the channel of the unknown queue `keys`: the name it is taken by (see
/// [`readings`]), and whether it has pending entries (its timeout zset exists): it is added
/// only then, since anyone may publish on any channel.
pub(super) async fn heard(client: &Client, keys: QueueKeys) -> (QueueKeys, bool) {
    let pending: std::result::Result<u64, _> = client.exists(keys.timeout()).await;
    let keys = match readings(client, vec![keys.clone()]).await {
        Ok(mut chosen) => chosen.pop().unwrap_or(keys),
        Err(_) => keys,
    };
    (keys, pending.is_ok_and(|n| n > 0))
}

/// What a scan means for a group's queues.
pub(super) struct Sorted {
    /// Queues found that the group does not have.
    pub(super) new: Vec<QueueKeys>,
    /// Discovered queues not found and not heard from since the scan began: to drop.
    pub(super) vanished: Vec<String>,
    /// Queues that left only indexes behind: to tidy.
    pub(super) orphaned: Vec<QueueSpec>,
    /// Queue names that are not UTF-8, hex-escaped: to warn about.
    pub(super) unreadable: Vec<String>,
    /// Every queue with a key of its own, sorted (see [`Scanned::listed`]).
    pub(super) listed: Vec<String>,
}

impl Discovery {
    /// The queue of `channel`, if the discovery's pattern takes it.
    pub(super) fn queue_of_channel(&self, channel: &str) -> Option<QueueKeys> {
        let keys = QueueKeys::queue_of(channel)?;
        self.takes(keys.target()).then_some(keys)
    }

    /// Sorts what a scan that began at `began_us` found against the group's `queues`: the
    /// queues found are heard from now; what is new, vanished or orphaned is returned for the
    /// group's task to apply.
    pub(super) fn sort(
        &self,
        scanned: Scanned,
        queues: &mut HashMap<String, QueueState>,
        began_us: i64,
    ) -> Sorted {
        let now = now_us();
        let mut new = Vec::new();
        for keys in scanned.found {
            // A queue held under the other name of its keys stays under that name.
            let held = [Some(keys.target().to_owned()), keys.twin()]
                .into_iter()
                .flatten()
                .find(|name| queues.contains_key(name));
            match held.and_then(|name| queues.get_mut(&name)) {
                Some(state) => state.heard_us = now,
                None => new.push(keys),
            }
        }
        let vanished = queues
            .iter()
            .filter(|(_, state)| state.discovered && !state.running && state.heard_us < began_us)
            .map(|(name, _)| name.clone())
            .collect();
        Sorted {
            new,
            vanished,
            orphaned: scanned
                .orphaned
                .into_iter()
                .map(|keys| self.spec(keys))
                .collect(),
            unreadable: scanned.unreadable,
            listed: scanned.listed,
        }
    }
}
