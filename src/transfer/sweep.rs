//! What the group looks at by itself, whatever messages say. The safety sweep: every tick the
//! group looks at a slice of its queues' heads, within a budget of queues per second, so a lost
//! message, timer or subscription never strands due entries; and it notices a queue that a Java
//! peer deleted, cleared or let expire while delayq's indexes of it stayed (Redisson's calls do
//! not know them), and drops them. The server check: the server's `maxmemory-policy`, read again
//! now and then, so a change to one that evicts keys is warned about.

use super::task::{Done, GroupTask, SWEEP_TICK_US};
use crate::keys::QueueKeys;
use crate::redis::ops::tidy;
use crate::redis::reply;
use crate::redis::script::QueueSpec;
use crate::time::now_us;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::{KeysInterface, SortedSetsInterface};
use fred::prelude::Value;

/// What a probe read of one queue.
pub(super) struct Probed {
    name: String,
    /// When the probe was sent (epoch µs).
    sent_us: i64,
    /// The head's score (`None`: nothing pending).
    head: Result<Option<i64>>,
    /// delayq's indexes of the order list exist.
    indexed: bool,
}

impl GroupTask {
    /// Every tick, looks at the heads of the queues not looked at for a sweep interval, at most
    /// the budget's share, round robin: the cost does not grow with the number of queues.
    pub(super) fn sweep(&mut self) {
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
                    picked.push(state.spec.keys.clone());
                }
                self.rotation.push_back(name);
            }
        }
        if !picked.is_empty() {
            let client = self.client.clone();
            self.jobs
                .spawn(async move { Done::Probed(probe(&client, picked, now).await) });
        }
    }

    /// Takes in what the probes read; a queue with nothing pending whose indexes exist gets
    /// them tidied (dropped once its order list is gone too).
    pub(super) fn on_probed(&mut self, heads: Vec<Probed>) {
        let mut tidy = Vec::new();
        for probed in heads {
            let Some(state) = self.queues.get_mut(&probed.name) else {
                continue;
            };
            match probed.head {
                Ok(head) => {
                    if head.is_none() && probed.indexed {
                        tidy.push(state.spec.clone());
                    }
                    state.probed(head, probed.sent_us);
                }
                // The transfer will say what is wrong, with its backoff.
                Err(_) => state.due_now(),
            }
            self.replan(&probed.name);
        }
        self.tidy(tidy);
    }

    /// Reads the server's `maxmemory-policy` in the background; plans the next read.
    pub(super) fn start_server_check(&mut self) {
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

    /// Tidies delayq's indexes of `queues` in the background (see [`tidy`]).
    pub(super) fn tidy(&mut self, queues: Vec<QueueSpec>) {
        if queues.is_empty() {
            return;
        }
        let client = self.client.clone();
        self.jobs.spawn(async move {
            for queue in queues {
                let name = queue.keys.target();
                match tidy::run(&client, &queue).await {
                    Ok(0) => {}
                    Ok(deleted) => tracing::info!(
                        queue = %name,
                        deleted,
                        "the queue's keys are gone (deleted, cleared or expired by another \
                         client): delayq's indexes of it deleted"
                    ),
                    Err(err) => {
                        tracing::warn!(queue = %name, error = %err, "cannot tidy the queue's indexes")
                    }
                }
            }
            Done::Tidied
        });
    }
}

/// The head score of each queue's timeout zset, one `ZRANGE` a queue in one pipelined round
/// trip; then, for the queues with nothing pending only, whether delayq's indexes of their
/// order list exist (one `EXISTS` each, in a second round trip). A queue with entries pending,
/// the idle queue of a big deployment, costs one command a look.
async fn probe(client: &Client, picked: Vec<QueueKeys>, sent_us: i64) -> Vec<Probed> {
    let pipeline = client.pipeline();
    for keys in &picked {
        let _: std::result::Result<(), _> = pipeline
            .zrange(keys.timeout(), 0, 0, None, false, None, true)
            .await;
    }
    let replies = pipeline.try_all::<Value>().await;
    let mut probed: Vec<Probed> = picked
        .iter()
        .zip(replies.into_iter().map(Some).chain(std::iter::repeat_with(|| None)))
        .map(|(keys, zrange)| Probed {
            name: keys.target().to_owned(),
            sent_us,
            head: match zrange {
                Some(reply) => reply
                    .map_err(|e| Error::from_redis("ZRANGE", keys.timeout(), e))
                    .and_then(head_of),
                None => Err(Error::UnexpectedReply {
                    context: "ZRANGE",
                    detail: "no reply".into(),
                }),
            },
            indexed: false,
        })
        .collect();
    let empty: Vec<usize> = (0..probed.len())
        .filter(|&at| matches!(probed[at].head, Ok(None)))
        .collect();
    if empty.is_empty() {
        return probed;
    }
    let pipeline = client.pipeline();
    for &at in &empty {
        let keys = &picked[at];
        let _: std::result::Result<(), _> =
            pipeline.exists(vec![keys.index(), keys.values()]).await;
    }
    for (at, exists) in empty.into_iter().zip(pipeline.try_all::<Value>().await) {
        probed[at].indexed = matches!(exists, Ok(Value::Integer(n)) if n > 0);
    }
    probed
}

/// The head's score in a `ZRANGE 0 0 WITHSCORES` reply.
fn head_of(reply: Value) -> Result<Option<i64>> {
    match reply {
        Value::Array(items) => match items.get(1) {
            Some(score) => reply::score(score, "ZRANGE"),
            None => Ok(None),
        },
        Value::Null => Ok(None),
        other => Err(Error::UnexpectedReply {
            context: "ZRANGE",
            detail: format!("{other:?}"),
        }),
    }
}
