//! The group's task: one loop for every queue of a scheduler group. It starts a drain when a
//! queue's due time comes (by the precise timer), takes in channel messages, resubscribes and
//! catches up after a reconnect, looks at a slice of the queues' heads every tick (the safety
//! sweep, within its budget), and runs discovery's rescans.

use super::config::{GroupConfig, TransferConfig};
use super::discovery::{self, Discovery, Scanned};
use super::queue_state::QueueState;
use super::state::{Cmd, Done, GroupShared};
use super::sweep::{self, Probed, SWEEP_TICK_US};
use super::timer::{sleep_until, PreciseTimer};
use crate::keys::{every_channel, QueueKeys};
use crate::observe::{Observer, ProcessKind};
use crate::redis::script::QueueSpec;
use crate::redis::server::EvictionWatch;
use crate::time::now_us;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::{ClientLike, EventInterface, PubsubInterface};
use fred::types::config::Server;
use fred::types::Message;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use tokio::sync::broadcast::{error::RecvError, Receiver};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Channels subscribed per command.
const SUBSCRIBE_CHUNK: usize = 500;

/// The loop's state.
pub(super) struct GroupTask {
    client: Client,
    subscriber: Client,
    config: GroupConfig,
    /// Weak: the last handle dropped stops the group.
    shared: std::sync::Weak<GroupShared>,
    token: CancellationToken,
    queues: HashMap<String, QueueState>,
    by_channel: HashMap<String, String>,
    /// (wake-up time in epoch µs, queue) for every queue with a planned transfer.
    timer: BTreeSet<(i64, String)>,
    wake_keys: HashMap<String, i64>,
    /// Round-robin order of the sweep.
    rotation: VecDeque<String>,
    next_sweep_us: i64,
    jobs: JoinSet<Done>,
    fired: Arc<Notify>,
    precise: PreciseTimer,
    discovery: Option<Discovery>,
    next_scan: Option<tokio::time::Instant>,
    /// The caller of `discover`, until the first scan is done.
    discover_reply: Option<oneshot::Sender<Result<()>>>,
    /// When the running scan began (epoch µs); `None`: no scan runs.
    scan_began_us: Option<i64>,
    /// The non-UTF-8 queue names discovery has warned about (each once).
    unreadable_warned: HashSet<String>,
    /// The server's eviction policy as last read, and when to read it again.
    eviction: EvictionWatch,
    next_server_check: Option<tokio::time::Instant>,
    /// Counts values moved, keeps the group's registry record.
    observer: Observer,
}

impl GroupTask {
    pub(super) fn new(
        client: Client,
        subscriber: Client,
        config: GroupConfig,
        shared: Arc<GroupShared>,
    ) -> Result<GroupTask> {
        let fired = Arc::new(Notify::new());
        let precise = PreciseTimer::start(fired.clone()).map_err(Error::Signal)?;
        Ok(GroupTask {
            subscriber,
            config,
            token: shared.token.clone(),
            shared: Arc::downgrade(&shared),
            queues: HashMap::new(),
            by_channel: HashMap::new(),
            timer: BTreeSet::new(),
            wake_keys: HashMap::new(),
            rotation: VecDeque::new(),
            next_sweep_us: 0,
            jobs: JoinSet::new(),
            fired,
            precise,
            discovery: None,
            next_scan: None,
            discover_reply: None,
            scan_began_us: None,
            unreadable_warned: HashSet::new(),
            eviction: EvictionWatch::default(),
            next_server_check: None,
            observer: Observer::start(&client, ProcessKind::Scheduler, config.observe()),
            client,
        })
    }

    /// Starts with what the group's start read of the server's eviction policy, and plans the
    /// next read.
    pub(super) fn with_eviction_watch(mut self, eviction: EvictionWatch) -> GroupTask {
        self.eviction = eviction;
        self.next_server_check = self
            .config
            .server_check()
            .map(|every| tokio::time::Instant::now() + every);
        self
    }

    pub(super) async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<Cmd>,
        mut messages: Receiver<Message>,
        mut reconnects: Receiver<Server>,
    ) {
        loop {
            self.start_due();
            self.sweep();
            self.precise.set(self.next_wake_us());
            let (scan_at, check_at) = (self.next_scan, self.next_server_check);
            tokio::select! {
                // Shutdown wins over any other wake-up.
                biased;
                _ = self.token.cancelled() => break,
                Some(cmd) = commands.recv() => self.on_command(cmd).await,
                Some(done) = self.jobs.join_next(), if !self.jobs.is_empty() => match done {
                    Ok(done) => self.on_done(done).await,
                    Err(err) => tracing::warn!(error = %err, "a scheduler job failed"),
                },
                message = messages.recv() => self.on_message(message, &mut messages).await,
                reconnect = reconnects.recv() => self.on_reconnect(reconnect, &mut reconnects).await,
                _ = self.fired.notified() => {}
                _ = sleep_until(scan_at) => self.start_scan(),
                _ = sleep_until(check_at) => self.start_server_check(),
            }
        }
        self.stop().await;
    }

    /// Lets running drains finish (scripts are atomic; drains stop between calls), then
    /// unsubscribes and closes the pub/sub connection.
    async fn stop(&mut self) {
        while self.jobs.join_next().await.is_some() {}
        self.observer.shutdown().await;
        let _ = self.subscriber.unsubscribe(Vec::<String>::new()).await;
        let _ = self.subscriber.quit().await;
        if let Some(shared) = self.shared.upgrade() {
            shared.set_finished();
        }
        tracing::debug!(queues = self.queues.len(), "scheduler group stopped");
    }

    /// Plans (or unplans) `name`'s next transfer in the timer.
    pub(super) fn replan(&mut self, name: &str) {
        if let Some(old) = self.wake_keys.remove(name) {
            self.timer.remove(&(old, name.to_owned()));
        }
        let Some(state) = self.queues.get(name) else {
            return;
        };
        if state.running {
            return;
        }
        if let Some(at) = state.wake_at_us() {
            self.timer.insert((at, name.to_owned()));
            self.wake_keys.insert(name.to_owned(), at);
        }
    }

    /// Starts a drain for every queue whose time has come, up to the concurrency limit.
    fn start_due(&mut self) {
        let now = now_us();
        while self.jobs.len() < self.config.max_concurrent_transfers() {
            let Some((at, name)) = self.timer.first().cloned() else {
                break;
            };
            if at > now {
                break;
            }
            self.timer.pop_first();
            self.wake_keys.remove(&name);
            if let Some(state) = self.queues.get_mut(&name) {
                let drain = state.drain(&self.client, &self.token);
                self.jobs
                    .spawn(async move { Done::Drained(name, drain.await) });
            }
        }
    }

    /// The next wake-up: the earliest planned transfer (unless every transfer slot is busy: a
    /// drain's end wakes the loop) or the next sweep tick.
    fn next_wake_us(&self) -> Option<i64> {
        let planned = match self.jobs.len() < self.config.max_concurrent_transfers() {
            true => self.timer.first().map(|(at, _)| *at),
            false => None,
        };
        let sweep = match self.config.sweep_interval().is_some() && !self.queues.is_empty() {
            true => Some(self.next_sweep_us),
            false => None,
        };
        [planned, sweep].into_iter().flatten().min()
    }

    async fn on_done(&mut self, done: Done) {
        match done {
            Done::Drained(name, drained) => {
                if drained.moved() > 0 {
                    if let Some(shared) = self.shared.upgrade() {
                        // Nobody listening is fine.
                        let _ = shared.moved.send(Arc::from(name.as_str()));
                    }
                }
                if let Some(state) = self.queues.get_mut(&name) {
                    state.drained(drained);
                    if state.rerun {
                        state.due_now();
                    }
                    self.replan(&name);
                }
            }
            Done::Probed(heads) => self.on_probed(heads),
            Done::Scanned(found) => self.on_scanned(found).await,
            Done::Tidied => {}
            Done::ServerPolicy(policy) => {
                self.eviction.observe(policy, "transfer scheduler", "*");
            }
            Done::Heard(keys, pending) => self.on_heard(*keys, pending).await,
        }
    }

    async fn on_command(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Add {
                spec,
                config,
                reply,
            } => {
                let result = self.add(*spec, *config, false).await;
                let _ = reply.send(result);
            }
            Cmd::Remove { name, reply } => {
                let removed = match self.queues.get_mut(&name) {
                    Some(state) if state.refs > 1 => {
                        state.refs -= 1;
                        true
                    }
                    Some(_) => {
                        self.remove(&name).await;
                        true
                    }
                    None => false,
                };
                let _ = reply.send(removed);
            }
            Cmd::Discover { discovery, reply } => {
                match self.subscriber.psubscribe(every_channel()).await {
                    Ok(()) => {
                        self.observer
                            .discover(Some(discovery.pattern.as_deref().unwrap_or("*")));
                        self.discovery = Some(discovery);
                        // Answered when the first scan has added what it found.
                        self.discover_reply = Some(reply);
                        self.start_scan();
                    }
                    Err(err) => {
                        let _ = reply.send(Err(err.into()));
                    }
                }
            }
        }
    }

    /// Adds a queue (or another reference to it): subscribes its channel, plans a transfer now.
    pub(super) async fn add(
        &mut self,
        spec: QueueSpec,
        config: TransferConfig,
        discovered: bool,
    ) -> Result<Arc<super::Counters>> {
        let name = spec.keys.target().to_owned();
        if let Some(state) = self.queues.get_mut(&name) {
            if !discovered {
                state.warn_if_other(&spec, &config);
                state.refs += 1;
                state.discovered = false;
                self.observer.serve(&name);
            }
            return Ok(state.counters().clone());
        }
        let channel = spec.keys.channel().to_owned();
        // Discovered queues are heard through the pattern subscription.
        if !discovered {
            self.subscriber.subscribe(channel.as_str()).await?;
            self.observer.serve(&name);
        }
        let mut state = QueueState::new(spec, config, discovered, self.observer.clone());
        state.due_now();
        let counters = state.counters().clone();
        if let Some(shared) = self.shared.upgrade() {
            shared.register(&name, counters.clone(), state.spec.options);
        }
        self.queues.insert(name.clone(), state);
        self.by_channel.insert(channel, name.clone());
        self.rotation.push_back(name.clone());
        self.replan(&name);
        tracing::debug!(queue = %name, discovered, "queue added to the scheduler group");
        Ok(counters)
    }

    /// Removes the queue; its spec, if the group had it.
    pub(super) async fn remove(&mut self, name: &str) -> Option<QueueSpec> {
        let state = self.queues.remove(name)?;
        let channel = state.spec.keys.channel().to_owned();
        self.by_channel.remove(&channel);
        self.rotation.retain(|n| n != name);
        if let Some(at) = self.wake_keys.remove(name) {
            self.timer.remove(&(at, name.to_owned()));
        }
        if let Some(shared) = self.shared.upgrade() {
            shared.unregister(name);
        }
        if !state.discovered {
            let _ = self.subscriber.unsubscribe(channel).await;
        }
        self.observer.unserve(name);
        tracing::debug!(queue = %name, "queue removed from the scheduler group");
        Some(state.spec)
    }

    /// A channel message: an earlier due time re-plans the queue's transfer; an unreadable one,
    /// a lagged or closed stream, transfers now. With discovery on, a message on an unknown
    /// queue's channel adds it once the queue is seen to have pending entries.
    async fn on_message(
        &mut self,
        message: Result<Message, RecvError>,
        messages: &mut Receiver<Message>,
    ) {
        let message = match message {
            Ok(message) => message,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "fell behind its messages; transferring every queue");
                return self.all_due_now();
            }
            Err(RecvError::Closed) => {
                tracing::warn!("message stream closed; re-attaching");
                *messages = self.subscriber.message_rx();
                return self.all_due_now();
            }
        };
        let channel = message.channel.to_string();
        let name = match self.by_channel.get(&channel) {
            Some(name) => name.clone(),
            None => {
                let discovery = self.discovery.as_ref();
                if let Some(keys) = discovery.and_then(|d| d.queue_of_channel(&channel)) {
                    self.check_heard(keys);
                }
                return;
            }
        };
        let due = message.value.as_str().and_then(|s| s.parse::<i64>().ok());
        if let Some(state) = self.queues.get_mut(&name) {
            state.heard_us = now_us();
            match due {
                Some(due) => state.announce(due),
                None => {
                    tracing::warn!(queue = %name, payload = ?message.value, "unreadable channel message; transferring now");
                    state.due_now();
                }
            }
            if state.running {
                state.rerun = true;
            }
            self.replan(&name);
        }
    }

    /// The pub/sub connection came back: it has lost its subscriptions and any message sent
    /// meanwhile, so subscribe again, then transfer every queue.
    async fn on_reconnect(
        &mut self,
        reconnect: Result<Server, RecvError>,
        reconnects: &mut Receiver<Server>,
    ) {
        if let Err(RecvError::Closed) = reconnect {
            *reconnects = self.subscriber.reconnect_rx();
        }
        let channels: Vec<String> = self
            .queues
            .values()
            .filter(|s| !s.discovered)
            .map(|s| s.spec.keys.channel().to_owned())
            .collect();
        let mut failed = None;
        for chunk in channels.chunks(SUBSCRIBE_CHUNK) {
            if let Err(err) = self.subscriber.subscribe(chunk.to_vec()).await {
                failed = Some(err);
            }
        }
        if self.discovery.is_some() {
            if let Err(err) = self.subscriber.psubscribe(every_channel()).await {
                failed = Some(err);
            }
        }
        if let Some(shared) = self.shared.upgrade() {
            shared.set_subscribed(failed.is_none());
        }
        match failed {
            Some(err) => {
                tracing::warn!(error = %err, "re-subscribe failed; the sweep covers until it works")
            }
            None => crate::metrics::resubscribed(self.queues.len()),
        }
        self.all_due_now();
    }

    fn all_due_now(&mut self) {
        let names: Vec<String> = self.queues.keys().cloned().collect();
        for name in names {
            if let Some(state) = self.queues.get_mut(&name) {
                state.due_now();
                if state.running {
                    state.rerun = true;
                }
            }
            self.replan(&name);
        }
    }
}

/// The safety sweep and the server check: what [`sweep`] picks and reads, applied.
impl GroupTask {
    /// Every tick, looks at the heads of a slice of the queues (see [`sweep::pick`]) in the
    /// background.
    fn sweep(&mut self) {
        let now = now_us();
        let off = self.config.sweep_interval().is_none();
        if off || now < self.next_sweep_us || self.queues.is_empty() {
            return;
        }
        self.next_sweep_us = now + SWEEP_TICK_US;
        let picked = sweep::pick(&mut self.rotation, &mut self.queues, now, &self.config);
        if !picked.is_empty() {
            let client = self.client.clone();
            self.jobs
                .spawn(async move { Done::Probed(sweep::probe(&client, picked, now).await) });
        }
    }

    /// Takes in what the probes read, plans the queues again, tidies those left with indexes.
    fn on_probed(&mut self, heads: Vec<Probed>) {
        let (probed, untidy) = sweep::take_in(&mut self.queues, heads);
        for name in probed {
            self.replan(&name);
        }
        self.tidy(untidy);
    }

    /// Reads the server's `maxmemory-policy` in the background (so a change to one that evicts
    /// keys is warned about); plans the next read.
    fn start_server_check(&mut self) {
        let Some(every) = self.config.server_check() else {
            self.next_server_check = None;
            return;
        };
        self.next_server_check = Some(tokio::time::Instant::now() + every);
        let client = self.client.clone();
        self.jobs.spawn(async move {
            Done::ServerPolicy(crate::redis::server::maxmemory_policy(&client).await)
        });
    }

    /// Tidies delayq's indexes of `queues` in the background.
    fn tidy(&mut self, queues: Vec<QueueSpec>) {
        if queues.is_empty() {
            return;
        }
        let client = self.client.clone();
        self.jobs.spawn(async move {
            sweep::tidy_all(&client, queues).await;
            Done::Tidied
        });
    }
}

/// Discovery: its scans and the queues heard of on the pattern subscription, applied.
impl GroupTask {
    /// Starts a scan, unless one runs (the next starts when it ends).
    fn start_scan(&mut self) {
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
        let known: HashSet<String> = self.queues.keys().cloned().collect();
        self.jobs.spawn(async move {
            Done::Scanned(discovery::scan(&client, &discovery, &known).await)
        });
    }

    /// Starts the next scan now if it came due while the last one ran.
    fn rescan_if_due(&mut self) {
        if self.next_scan.is_none() {
            self.start_scan();
        }
    }

    /// A message came on the channel of the unknown queue `keys`: whether it has pending
    /// entries is read in the background.
    fn check_heard(&mut self, keys: QueueKeys) {
        let client = self.client.clone();
        self.jobs.spawn(async move {
            let (keys, pending) = discovery::heard(&client, keys).await;
            Done::Heard(Box::new(keys), pending)
        });
    }

    /// What [`check_heard`](Self::check_heard) found: a queue with pending entries is added.
    async fn on_heard(&mut self, keys: QueueKeys, pending: bool) {
        if pending && !discovery::held(|name| self.queues.contains_key(name), &keys) {
            self.add_discovered(keys).await;
        }
    }

    /// Adds a queue discovery found; false (and warned about) when it cannot be.
    async fn add_discovered(&mut self, keys: QueueKeys) -> bool {
        let Some(discovery) = &self.discovery else {
            return false;
        };
        let name = keys.target().to_owned();
        let (spec, config) = (discovery.spec(keys), discovery.transfer);
        let added = self.add(spec, config, true).await;
        if let Err(err) = &added {
            tracing::warn!(queue = %name, error = %err, "cannot add a discovered queue");
        }
        added.is_ok()
    }

    /// A scan failed: the first one turns discovery off and tells the caller of `discover`
    /// why; a later one is logged, and the next scan tries again.
    fn scan_failed(&mut self, err: Error) {
        match self.discover_reply.take() {
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
    }

    /// Adds the queues a scan found, drops the discovered queues not heard from since it began,
    /// and tidies the indexes of those dropped and of the queues that left only indexes behind.
    async fn on_scanned(&mut self, scanned: Result<Scanned>) {
        let began_us = self.scan_began_us.take().unwrap_or(i64::MIN);
        let scanned = match scanned {
            Ok(scanned) => scanned,
            Err(err) => return self.scan_failed(err),
        };
        self.rescan_if_due();
        let Some(discovery) = self.discovery.clone() else {
            return;
        };
        let mut sorted = discovery.sort(scanned, &mut self.queues, began_us);
        GroupShared::set_listed(&self.shared, std::mem::take(&mut sorted.listed));
        for name in sorted.unreadable {
            if self.unreadable_warned.insert(name.clone()) {
                discovery::warn_unreadable(&name);
            }
        }
        let (mut added, dropped) = (0, sorted.vanished.len());
        for keys in sorted.new {
            added += usize::from(self.add_discovered(keys).await);
        }
        let mut untidy = sorted.orphaned;
        for name in sorted.vanished {
            untidy.extend(self.remove(&name).await);
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
