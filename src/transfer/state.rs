//! What a scheduler group's task and every handle of it share ([`GroupShared`]), and the
//! requests a handle sends the task ([`Cmd`]), and what the task's background jobs return
//! ([`Done`]).

use super::config::TransferConfig;
use super::discovery::{Discovery, Scanned};
use super::queue_state::Drained;
use super::sweep::Probed;
use super::{Counters, SchedulerStats};
use crate::keys::QueueKeys;
use crate::options::QueueOptions;
use crate::redis::script::QueueSpec;
use crate::Result;
use fred::clients::Client;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How many "moved" notices a slow listener may fall behind before it is told it lagged.
pub(super) const MOVED_BACKLOG: usize = 1024;

/// What a background job of the loop returns.
pub(super) enum Done {
    Drained(String, Drained),
    Probed(Vec<Probed>),
    Scanned(Result<Scanned>),
    Tidied,
    ServerPolicy(Option<String>),
    /// A message on an unknown queue's channel, and whether the queue has pending entries.
    Heard(Box<QueueKeys>, bool),
}

/// A request to the group's task.
pub(super) enum Cmd {
    Add {
        spec: Box<QueueSpec>,
        config: Box<TransferConfig>,
        reply: oneshot::Sender<Result<Arc<Counters>>>,
    },
    Remove {
        name: String,
        reply: oneshot::Sender<bool>,
    },
    Discover {
        discovery: Discovery,
        reply: oneshot::Sender<Result<()>>,
    },
}

/// What the task and every handle of a group share.
#[derive(Debug)]
pub(super) struct GroupShared {
    pub(super) commands: mpsc::UnboundedSender<Cmd>,
    pub(super) token: CancellationToken,
    pub(super) join: Mutex<Option<JoinHandle<()>>>,
    pub(super) finished: AtomicBool,
    pub(super) counters: Mutex<HashMap<String, Arc<Counters>>>,
    /// Each queue's options, for firing its recurring schedules.
    pub(super) options: Mutex<HashMap<String, QueueOptions>>,
    /// The task firing recurring schedules, when the config has one.
    pub(super) firing: Mutex<Option<JoinHandle<()>>>,
    /// The counters of queues the group had and removed, by name (added up when a name came
    /// and went more than once): the group's totals count them.
    pub(super) retired: Mutex<HashMap<String, SchedulerStats>>,
    /// The name of each queue a drain moved values of, for workers waiting on several queues.
    pub(super) moved: broadcast::Sender<Arc<str>>,
    /// The pub/sub connection, for [`SchedulerGroup::is_subscribed`].
    pub(super) subscriber: Client,
    /// The last re-subscribe failed.
    pub(super) resubscribe_failed: AtomicBool,
    /// What the last discovery scan listed, sorted: every queue with a key of its own.
    pub(super) listed: Mutex<Vec<String>>,
}

impl GroupShared {
    pub(super) fn register(&self, name: &str, counters: Arc<Counters>, options: QueueOptions) {
        self.counters().insert(name.to_owned(), counters);
        lock(&self.options).insert(name.to_owned(), options);
    }

    /// The queues of the group with their options, sorted by name.
    pub(super) fn queues(&self) -> Vec<(String, QueueOptions)> {
        let mut queues: Vec<_> = lock(&self.options)
            .iter()
            .map(|(name, options)| (name.clone(), *options))
            .collect();
        queues.sort_by(|a, b| a.0.cmp(&b.0));
        queues
    }

    pub(super) fn unregister(&self, name: &str) {
        lock(&self.options).remove(name);
        let Some(counters) = self.counters().remove(name) else {
            return;
        };
        let mut retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
        let sum = retired.entry(name.to_owned()).or_default();
        *sum = sum.plus(&counters.snapshot());
    }

    /// Every queue's counters since the group started, those removed included, by name.
    pub(super) fn totals(&self) -> HashMap<String, SchedulerStats> {
        let mut totals = self
            .retired
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for (name, counters) in self.counters().iter() {
            let sum = totals.entry(name.clone()).or_default();
            *sum = sum.plus(&counters.snapshot());
        }
        totals
    }

    /// What the last discovery scan listed, for the group `shared` (if it is still there).
    pub(super) fn set_listed(shared: &std::sync::Weak<GroupShared>, listed: Vec<String>) {
        if let Some(shared) = shared.upgrade() {
            *lock(&shared.listed) = listed;
        }
    }

    pub(super) fn set_subscribed(&self, subscribed: bool) {
        self.resubscribe_failed
            .store(!subscribed, Ordering::Release);
    }

    pub(super) fn set_finished(&self) {
        self.finished.store(true, Ordering::Release);
    }

    pub(super) fn counters(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Counters>>> {
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for GroupShared {
    fn drop(&mut self) {
        // The last handle is gone: stop the task (it finishes a transfer in progress).
        self.token.cancel();
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
