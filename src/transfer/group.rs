//! [`SchedulerGroup`]: any number of queues transferred by one task, on one pub/sub connection,
//! with one timer and one budgeted safety sweep; queues added and removed at run time, or found
//! by discovery.

use super::config::{GroupConfig, TransferConfig};
use super::discovery::Discovery;
use super::state::{lock, Cmd, GroupShared, MOVED_BACKLOG};
use super::task::GroupTask;
use super::{Counters, SchedulerStats};
use crate::options::QueueOptions;
use crate::redis::script::QueueSpec;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::{ClientLike, EventInterface};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Transfers any number of queues from one task: one pub/sub connection (classic pub/sub
/// reaches it from every node of a Cluster), one precise timer, one safety sweep within a
/// budget of queues per second (see [`GroupConfig::with_sweep_budget`]), at most
/// [`max_concurrent_transfers`](GroupConfig::with_max_concurrent_transfers) transfers at
/// once. Queues are added and removed at run time, or found by [`discover`](Self::discover).
/// Cheap to clone; the last clone dropped stops it (without waiting);
/// [`shutdown`](Self::shutdown) stops it and waits.
///
/// # Examples
///
/// ```no_run
/// # async fn ex(client: delayq::fred::clients::Client) -> Result<(), delayq::Error> {
/// use delayq::{Discovery, GroupConfig, SchedulerGroup};
///
/// let group = SchedulerGroup::spawn(client, GroupConfig::default()).await?;
/// group.add("orders").await?;
/// group.add("invoices").await?;
/// // Or every Redisson delayed queue of the Redis, as they come and go:
/// group.discover(Discovery::all().matching("tenant-*")).await?;
/// // ...
/// group.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SchedulerGroup {
    shared: Arc<GroupShared>,
}

impl SchedulerGroup {
    /// Starts an empty group: commands go through `client`, the channel messages of every queue
    /// come on one more connection (a client like `client`, with room for a burst of messages).
    ///
    /// # Errors
    ///
    /// An invalid config, or no pub/sub connection.
    pub async fn spawn(client: Client, config: GroupConfig) -> Result<SchedulerGroup> {
        config.validate()?;
        let subscriber = crate::redis::subscriber_of(&client);
        crate::redis::init_client(&subscriber).await?;
        // Receivers are taken before any subscription so that no message is missed.
        let messages = subscriber.message_rx();
        let reconnects = subscriber.reconnect_rx();
        let (commands, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(GroupShared {
            commands,
            token: CancellationToken::new(),
            join: Mutex::new(None),
            finished: AtomicBool::new(false),
            counters: Mutex::default(),
            options: Mutex::default(),
            firing: Mutex::default(),
            retired: Mutex::default(),
            moved: broadcast::channel(MOVED_BACKLOG).0,
            subscriber: subscriber.clone(),
            resubscribe_failed: AtomicBool::new(false),
            listed: Mutex::default(),
        });
        let eviction =
            crate::redis::server::warn_if_evicting(&client, "transfer scheduler", "*").await;
        let firing = config
            .schedules()
            .map(|config| super::firing::spawn(client.clone(), Arc::downgrade(&shared), config));
        *lock(&shared.firing) = firing;
        let task = match GroupTask::new(client, subscriber.clone(), config, shared.clone()) {
            Ok(task) => task,
            Err(err) => {
                let _ = subscriber.quit().await;
                return Err(err);
            }
        };
        let join = tokio::spawn(
            task.with_eviction_watch(eviction)
                .run(rx, messages, reconnects),
        );
        *shared.join.lock().unwrap_or_else(PoisonError::into_inner) = Some(join);
        Ok(SchedulerGroup { shared })
    }

    /// Adds the queue `name` (default [`QueueOptions`] and [`TransferConfig`]);
    /// its channel is subscribed and a first transfer planned when this returns. Adding a queue
    /// the group has counts one more reference (see [`remove`](Self::remove)).
    ///
    /// # Errors
    ///
    /// The subscription failed, or the group has stopped.
    pub async fn add(&self, name: impl Into<String>) -> Result<()> {
        let spec = QueueSpec::new(name, QueueOptions::default());
        self.add_spec(spec, TransferConfig::default())
            .await
            .map(drop)
    }

    /// Adds the queue `name` with its own entry format and clock, and transfer settings. A queue
    /// the group has already keeps the settings it was added with (a second add that asks for
    /// others is logged as a warning, naming both).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add), or an invalid config.
    pub async fn add_with(
        &self,
        name: impl Into<String>,
        options: QueueOptions,
        config: TransferConfig,
    ) -> Result<()> {
        config.validate()?;
        let spec = QueueSpec::new(name, options);
        self.add_spec(spec, config).await.map(drop)
    }

    pub(super) async fn add_spec(
        &self,
        spec: QueueSpec,
        config: TransferConfig,
    ) -> Result<Arc<Counters>> {
        let (reply, answer) = oneshot::channel();
        self.shared
            .commands
            .send(Cmd::Add {
                spec: Box::new(spec),
                config: Box::new(config),
                reply,
            })
            .map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }

    /// Drops one reference to the queue `name`; the last one stops transferring it and
    /// unsubscribes its channel. False when the group does not have it.
    pub async fn remove(&self, name: &str) -> bool {
        let (reply, answer) = oneshot::channel();
        let cmd = Cmd::Remove {
            name: name.to_owned(),
            reply,
        };
        if self.shared.commands.send(cmd).is_err() {
            return false;
        }
        answer.await.unwrap_or(false)
    }

    /// Finds every Redisson delayed queue of the Redis that `discovery` takes and keeps finding
    /// new ones (a pattern subscription on their channels, a periodic scan of their timeout
    /// zsets on every master) and dropping those that vanish, while the group runs. Returns
    /// once the first scan has added the queues it found ([`names`](Self::names) lists them).
    ///
    /// # Errors
    ///
    /// The pattern subscription or the first scan failed (e.g. an ACL without `SCAN`), or the
    /// group has stopped. Later scans that fail are logged and tried again.
    pub async fn discover(&self, discovery: Discovery) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.shared
            .commands
            .send(Cmd::Discover { discovery, reply })
            .map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }

    /// The names of the queues the group transfers now.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.shared.counters().keys().cloned().collect();
        names.sort();
        names
    }

    /// The names of every queue the group's last discovery scan found a key of its own of,
    /// sorted, as [`Discovery::list`] lists them: those the group transfers, and those with
    /// nothing to transfer but dead letters, deliveries in flight, a quarantine or a pause flag
    /// (found by the same `SCAN`, at no further cost). Empty without discovery, or before its
    /// first scan ends.
    pub fn listed(&self) -> Vec<String> {
        lock(&self.shared.listed).clone()
    }

    /// Counters of every queue together since the group started, queues removed since (by
    /// hand, or dropped by discovery) included.
    pub fn stats(&self) -> SchedulerStats {
        self.shared
            .totals()
            .values()
            .fold(SchedulerStats::default(), |sum, c| sum.plus(c))
    }

    /// Each queue's counters since the group started, sorted by name: every queue the group
    /// has had, those removed since included (a queue added again adds up).
    pub fn totals(&self) -> Vec<(String, SchedulerStats)> {
        let mut totals: Vec<_> = self.shared.totals().into_iter().collect();
        totals.sort_by(|a, b| a.0.cmp(&b.0));
        totals
    }

    /// Counters of the queue `name`.
    pub fn queue_stats(&self, name: &str) -> Option<SchedulerStats> {
        self.shared.counters().get(name).map(|c| c.snapshot())
    }

    /// True while the group's pub/sub connection is up and its channels are subscribed (after a
    /// reconnect, once they are subscribed again). While false, due times are found only by
    /// the safety sweep.
    pub fn is_subscribed(&self) -> bool {
        self.shared.subscriber.is_connected()
            && !self.shared.resubscribe_failed.load(Ordering::Acquire)
            && !self.is_finished()
    }

    /// True once the group's task has ended.
    pub fn is_finished(&self) -> bool {
        self.shared.finished.load(Ordering::Acquire)
    }

    /// Stops the group, for every clone: transfers in progress complete (scripts are atomic),
    /// then it unsubscribes and closes its pub/sub connection.
    ///
    /// # Cancel safety
    ///
    /// Dropping this future after it started still stops the group; only the wait for it to
    /// finish is cut short.
    pub async fn shutdown(self) {
        self.shared.token.cancel();
        let join = self
            .shared
            .join
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(join) = join {
            if let Err(err) = join.await {
                tracing::warn!(error = %err, "scheduler group task failed");
            }
        }
        let firing = lock(&self.shared.firing).take();
        if let Some(join) = firing {
            if let Err(err) = join.await {
                tracing::warn!(error = %err, "schedule firing task failed");
            }
        }
    }

    /// The names of queues as the group moves values onto their target lists (a listener that
    /// falls behind gets `Lagged` and should look at every queue it waits on).
    pub(crate) fn moved_rx(&self) -> broadcast::Receiver<Arc<str>> {
        self.shared.moved.subscribe()
    }

    /// Whether `other` is this group's.
    pub(super) fn same_as_weak(&self, other: &std::sync::Weak<GroupShared>) -> bool {
        std::sync::Weak::ptr_eq(&Arc::downgrade(&self.shared), other)
    }

    pub(super) fn shared(&self) -> &Arc<GroupShared> {
        &self.shared
    }

    pub(super) fn from_shared(shared: Arc<GroupShared>) -> SchedulerGroup {
        SchedulerGroup { shared }
    }
}
