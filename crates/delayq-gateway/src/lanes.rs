//! Lanes: the delayq queues beside the gateway's own, one per QStash queue
//! (`GATEWAY:q:NAME`, a concurrency cap of its parallelism) and one per set of flow-control
//! values (`GATEWAY:fc:pP-rR-MS`, per-key limits of those values, the key being the message's
//! flow-control key). They are listed in the hash `delayq_gateway_lanes:{GATEWAY}` (lane name
//! to [`Lane`] as JSON), which every gateway process reads to start or stop a worker per lane:
//! a lane made by another process is served too, and a paused queue's worker stops.

use crate::envelope::Envelope;
use bytes::Bytes;
use delayq::codec::ByteArrayCodec;
use delayq::fred::clients::Client;
use delayq::fred::interfaces::HashesInterface;
use delayq::limit::{Limits, Rate};
use delayq::DelayedQueue;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The most paused flow-control keys a new flow-control lane takes from another.
const MAX_PAUSED: usize = 10_000;

/// The longest QStash queue name.
pub(crate) const MAX_NAME: usize = 100;

/// What a lane is, as the registry holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Lane {
    /// The QStash queue's name; none for a flow-control lane.
    #[serde(default)]
    pub(crate) queue: Option<String>,
    /// A queue's parallelism, or the per-key parallelism of a flow-control lane.
    #[serde(default)]
    pub(crate) parallelism: Option<u32>,
    /// A flow-control lane's per-key rate: starts per `period_ms`.
    #[serde(default)]
    pub(crate) rate: Option<u32>,
    #[serde(default)]
    pub(crate) period_ms: u64,
    #[serde(default)]
    pub(crate) paused: bool,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl Lane {
    /// The delayq limits that make the lane what it is.
    pub(crate) fn limits(&self) -> Result<Limits> {
        let mut limits = Limits::default();
        match self.queue {
            Some(_) => limits = limits.with_concurrency(self.parallelism.unwrap_or(1).max(1)),
            None => {
                if let Some(p) = self.parallelism {
                    limits = limits.with_key_concurrency(p);
                }
                if let Some(rate) = self.rate {
                    let period = Duration::from_millis(self.period_ms.max(1));
                    limits = limits.with_key_rate(Rate::new(rate, period)?);
                }
            }
        }
        Ok(limits)
    }
}

/// Whether `name` may name a QStash queue: 1 to [`MAX_NAME`] letters, digits, `-`, `.`, `_`.
pub(crate) fn valid_queue_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

/// The lanes of one gateway queue: the registry and this process's queue handles.
pub(crate) struct Lanes {
    client: Client,
    gateway: String,
    registry: String,
    queues: Mutex<HashMap<String, DelayedQueue<ByteArrayCodec>>>,
    /// Flow-control lanes known to be registered (they are never removed).
    known: Mutex<std::collections::HashSet<String>>,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl Lanes {
    pub(crate) fn new(client: Client, gateway: &str) -> Lanes {
        let registry = match gateway.contains('{') && gateway.contains('}') {
            true => format!("delayq_gateway_lanes:{gateway}"),
            false => format!("delayq_gateway_lanes:{{{gateway}}}"),
        };
        Lanes {
            client,
            gateway: gateway.to_owned(),
            registry,
            queues: Mutex::new(HashMap::new()),
            known: Mutex::new(std::collections::HashSet::new()),
        }
    }

    /// The lane of QStash queue `name`.
    pub(crate) fn queue_lane(&self, name: &str) -> String {
        format!("{}:q:{name}", self.gateway)
    }

    /// The lane of the flow-control values.
    pub(crate) fn flow_lane(&self, parallelism: Option<u32>, rate: Option<u32>, ms: u64) -> String {
        let p = parallelism.unwrap_or(0);
        let r = rate.unwrap_or(0);
        format!("{}:fc:p{p}-r{r}-{ms}", self.gateway)
    }

    /// The delayq queue of lane `name` (built once per process: its transfers run here).
    pub(crate) async fn queue(&self, name: &str) -> Result<DelayedQueue<ByteArrayCodec>> {
        if let Some(queue) = self.cached(name) {
            return Ok(queue);
        }
        let queue = DelayedQueue::builder(self.client.clone(), name, ByteArrayCodec)
            .build()
            .await?;
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        Ok(queues.entry(name.to_owned()).or_insert(queue).clone())
    }

    fn cached(&self, name: &str) -> Option<DelayedQueue<ByteArrayCodec>> {
        let queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        queues.get(name).cloned()
    }

    /// Every lane in the registry (entries that do not read are left out).
    pub(crate) async fn all(&self) -> Result<HashMap<String, Lane>> {
        let raw: HashMap<String, Bytes> = self.client.hgetall(&self.registry).await?;
        Ok(raw
            .into_iter()
            .filter_map(|(name, json)| Some((name, serde_json::from_slice(&json).ok()?)))
            .collect())
    }

    pub(crate) async fn get(&self, name: &str) -> Result<Option<Lane>> {
        let raw: Option<Bytes> = self.client.hget(&self.registry, name).await?;
        Ok(raw.and_then(|json| serde_json::from_slice(&json).ok()))
    }

    /// Stores `lane` as `name`, its limits first (so that no worker serves it unlimited); a
    /// flow-control lane new to the registry takes the keys paused in another one first, so
    /// that a paused key's messages published with new values start no sooner.
    pub(crate) async fn put(&self, name: &str, lane: &Lane) -> Result<()> {
        let queue = self.queue(name).await?;
        queue.limits().set(&lane.limits()?).await?;
        if lane.queue.is_none() {
            let other = self
                .all()
                .await?
                .into_iter()
                .find(|(other, lane)| other != name && lane.queue.is_none());
            if let Some((other, _)) = other {
                let from = self.queue(&other).await?;
                for key in from.limits().paused_keys(MAX_PAUSED).await? {
                    queue.limits().pause_key(&key).await?;
                }
            }
        }
        let json = serde_json::to_vec(lane).unwrap_or_default();
        self.client
            .hset::<i64, _, _>(&self.registry, (name, Bytes::from(json)))
            .await?;
        Ok(())
    }

    /// Stores `lane` as `name` unless it is there already.
    pub(crate) async fn ensure(&self, name: &str, lane: &Lane) -> Result<()> {
        let flow = lane.queue.is_none();
        if flow
            && self
                .known
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(name)
        {
            return Ok(());
        }
        if self.get(name).await?.is_none() {
            self.put(name, lane).await?;
        }
        if flow {
            let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
            known.insert(name.to_owned());
        }
        Ok(())
    }

    /// Removes lane `name` and its limits; whether it was there.
    pub(crate) async fn remove(&self, name: &str) -> Result<bool> {
        let removed: i64 = self.client.hdel(&self.registry, name).await?;
        self.queue(name).await?.limits().clear().await?;
        Ok(removed > 0)
    }
}

/// The flow-control key of a lane's message, for its per-key limits.
pub(crate) fn flow_key(value: &[u8]) -> Option<String> {
    Envelope::decode(value).ok()?.flow.map(|flow| flow.key)
}
