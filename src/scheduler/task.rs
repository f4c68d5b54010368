//! The group's task: one loop for every queue of a scheduler group. It starts a drain when a
//! queue's due time comes (by the precise timer), takes in channel messages, resubscribes and
//! catches up after a reconnect, looks at a slice of the queues' heads every tick (the safety
//! sweep, within its budget), and runs discovery's rescans.

use super::config::{GroupConfig, TransferConfig};
use super::group::{scan, Cmd, Discovery, GroupShared};
use super::queue_state::{Drained, QueueState};
use super::timer::PreciseTimer;
use crate::keys::{every_channel, QueueKeys};
use crate::redis::reply;
use crate::redis::script::QueueSpec;
use crate::time::now_us;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::{ClientLike, EventInterface, PubsubInterface, SortedSetsInterface};
use fred::prelude::Value;
use fred::types::config::Server;
use fred::types::Message;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use tokio::sync::broadcast::{error::RecvError, Receiver};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How often the sweep looks at a slice of the queues.
const SWEEP_TICK_US: i64 = 100_000;
/// Channels subscribed per command.
const SUBSCRIBE_CHUNK: usize = 500;

/// What a background job of the loop returns.
enum Done {
    Drained(String, Drained),
    Probed(Vec<(String, Result<Option<i64>>)>),
    Scanned(Result<Vec<QueueKeys>>),
}

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
            client,
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
        })
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
            let scan_at = self.next_scan;
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
                _ = async { match scan_at { Some(at) => tokio::time::sleep_until(at).await, None => std::future::pending().await } } => self.start_scan(),
            }
        }
        self.stop().await;
    }

    /// Lets running drains finish (scripts are atomic; drains stop between calls), then
    /// unsubscribes and closes the pub/sub connection.
    async fn stop(&mut self) {
        while self.jobs.join_next().await.is_some() {}
        let _ = self.subscriber.unsubscribe(Vec::<String>::new()).await;
        let _ = self.subscriber.quit().await;
        if let Some(shared) = self.shared.upgrade() {
            shared.set_finished();
        }
        tracing::debug!(queues = self.queues.len(), "scheduler group stopped");
    }

    /// Plans (or unplans) `name`'s next transfer in the timer.
    fn replan(&mut self, name: &str) {
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

    /// Every tick, looks at the heads of the queues not looked at for a sweep interval, at most
    /// the budget's share, round robin: a lost message, timer or subscription never strands due
    /// entries, and the cost does not grow with the number of queues.
    fn sweep(&mut self) {
        let Some(interval) = self.config.sweep_interval() else {
            return;
        };
        let now = now_us();
        if now < self.next_sweep_us || self.queues.is_empty() {
            return;
        }
        self.next_sweep_us = now + SWEEP_TICK_US;
        let interval_us = i64::try_from(interval.as_micros()).unwrap_or(i64::MAX);
        let budget = (self.config.sweep_budget() as usize).div_ceil(10).max(1);
        let mut picked = Vec::new();
        for _ in 0..self.rotation.len() {
            if picked.len() >= budget {
                break;
            }
            let Some(name) = self.rotation.pop_front() else {
                break;
            };
            if let Some(state) = self.queues.get_mut(&name) {
                if !state.running && now - state.last_check_us >= interval_us {
                    state.last_check_us = now;
                    picked.push((name.clone(), state.spec.keys.timeout().to_owned()));
                }
                self.rotation.push_back(name);
            }
        }
        if !picked.is_empty() {
            let client = self.client.clone();
            self.jobs
                .spawn(async move { Done::Probed(probe(&client, picked).await) });
        }
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
            Done::Probed(heads) => {
                for (name, head) in heads {
                    if let Some(state) = self.queues.get_mut(&name) {
                        match head {
                            Ok(head) => state.probed(head),
                            // The transfer will say what is wrong, with its backoff.
                            Err(_) => state.due_now(),
                        }
                        self.replan(&name);
                    }
                }
            }
            Done::Scanned(found) => self.on_scanned(found).await,
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
    async fn add(
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
            }
            return Ok(state.counters.clone());
        }
        let channel = spec.keys.channel().to_owned();
        // Discovered queues are heard through the pattern subscription.
        if !discovered {
            self.subscriber.subscribe(channel.as_str()).await?;
        }
        let mut state = QueueState::new(spec, config, discovered);
        state.due_now();
        let counters = state.counters.clone();
        if let Some(shared) = self.shared.upgrade() {
            shared.register(&name, counters.clone());
        }
        self.queues.insert(name.clone(), state);
        self.by_channel.insert(channel, name.clone());
        self.rotation.push_back(name.clone());
        self.replan(&name);
        tracing::debug!(queue = %name, discovered, "queue added to the scheduler group");
        Ok(counters)
    }

    async fn remove(&mut self, name: &str) {
        let Some(state) = self.queues.remove(name) else {
            return;
        };
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
        tracing::debug!(queue = %name, "queue removed from the scheduler group");
    }

    /// A channel message: an earlier due time re-plans the queue's transfer; an unreadable one,
    /// a lagged or closed stream, transfers now. With discovery on, a message on an unknown
    /// queue's channel adds it.
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
            None => match self.discovered_queue(&channel) {
                Some(keys) => {
                    let name = keys.target().to_owned();
                    if let Err(err) = self.add_discovered(keys).await {
                        tracing::warn!(queue = %name, error = %err, "cannot add a discovered queue");
                    }
                    return;
                }
                None => return,
            },
        };
        let due = message.value.as_str().and_then(|s| s.parse::<i64>().ok());
        if let Some(state) = self.queues.get_mut(&name) {
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

    /// The queue of `channel`, if discovery is on and its pattern takes it.
    fn discovered_queue(&self, channel: &str) -> Option<QueueKeys> {
        let discovery = self.discovery.as_ref()?;
        let keys = QueueKeys::queue_of(channel)?;
        discovery.takes(keys.target()).then_some(keys)
    }

    async fn add_discovered(&mut self, keys: QueueKeys) -> Result<()> {
        let Some(discovery) = &self.discovery else {
            return Ok(());
        };
        let spec = QueueSpec {
            keys,
            options: discovery.options,
        };
        let config = discovery.transfer;
        self.add(spec, config, true).await.map(drop)
    }

    fn start_scan(&mut self) {
        let Some(discovery) = &self.discovery else {
            return;
        };
        self.next_scan = Some(tokio::time::Instant::now() + discovery.rescan);
        let client = self.client.clone();
        let discovery = discovery.clone();
        self.jobs
            .spawn(async move { Done::Scanned(scan(&client, &discovery).await) });
    }

    /// Adds the queues a scan found, and drops discovered queues it no longer finds.
    async fn on_scanned(&mut self, found: Result<Vec<QueueKeys>>) {
        let found = match found {
            Ok(found) => found,
            Err(err) => {
                match self.discover_reply.take() {
                    // The first scan: the caller hears why discovery cannot work.
                    Some(reply) => {
                        self.discovery = None;
                        self.next_scan = None;
                        let _ = reply.send(Err(err));
                    }
                    None => {
                        tracing::warn!(error = %err, "discovery scan failed; trying again at the next")
                    }
                }
                return;
            }
        };
        let names: HashSet<String> = found.iter().map(|k| k.target().to_owned()).collect();
        let (mut added, mut dropped) = (0, 0);
        for keys in found {
            if !self.queues.contains_key(keys.target()) {
                let name = keys.target().to_owned();
                match self.add_discovered(keys).await {
                    Ok(()) => added += 1,
                    Err(err) => {
                        tracing::warn!(queue = %name, error = %err, "cannot add a discovered queue")
                    }
                }
            }
        }
        let vanished: Vec<String> = self
            .queues
            .iter()
            .filter(|(name, state)| state.discovered && !state.running && !names.contains(*name))
            .map(|(name, _)| name.clone())
            .collect();
        for name in vanished {
            self.remove(&name).await;
            dropped += 1;
        }
        if added + dropped > 0 {
            tracing::info!(added, dropped, queues = self.queues.len(), "discovery");
        }
        if let Some(reply) = self.discover_reply.take() {
            let _ = reply.send(Ok(()));
        }
    }
}

/// The head score of each queue's timeout zset, in one pipelined round trip.
async fn probe(
    client: &Client,
    picked: Vec<(String, String)>,
) -> Vec<(String, Result<Option<i64>>)> {
    let pipeline = client.pipeline();
    for (_, timeout) in &picked {
        let _: std::result::Result<(), _> = pipeline
            .zrange(timeout.as_str(), 0, 0, None, false, None, true)
            .await;
    }
    let replies = pipeline.try_all::<Value>().await;
    picked
        .into_iter()
        .zip(replies)
        .map(|((name, key), reply)| {
            let head = reply
                .map_err(|e| Error::from_redis("ZRANGE", &key, e))
                .and_then(|reply| match reply {
                    Value::Array(items) => match items.get(1) {
                        Some(score) => reply::score(score, "ZRANGE"),
                        None => Ok(None),
                    },
                    Value::Null => Ok(None),
                    other => Err(Error::UnexpectedReply {
                        context: "ZRANGE",
                        detail: format!("{other:?}"),
                    }),
                });
            (name, head)
        })
        .collect()
}
