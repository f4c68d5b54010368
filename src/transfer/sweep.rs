//! What the group looks at by itself, whatever messages say. The safety sweep: every tick the
//! group looks at a slice of its queues' heads, within a budget of queues per second, so a lost
//! message, timer or subscription never strands due entries; and it notices a queue that a Java
//! peer deleted, cleared or let expire while delayq's indexes of it stayed (Redisson's calls do
//! not know them), and drops them. What it picks, reads and finds is returned for the group's
//! task to apply.

use super::config::GroupConfig;
use super::queue_state::QueueState;
use crate::keys::QueueKeys;
use crate::redis::ops::tidy;
use crate::redis::reply;
use crate::redis::script::QueueSpec;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::{KeysInterface, SortedSetsInterface};
use fred::prelude::Value;
use std::collections::{HashMap, VecDeque};

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

/// How often the sweep looks at a slice of the queues.
pub(super) const SWEEP_TICK_US: i64 = 100_000;

/// The queues the sweep looks at this tick (at `now`, epoch µs): those not looked at for the
/// sweep's interval, at most a tick's share of its budget, round robin from where the last tick
/// stopped, so the cost does not grow with the number of queues. Each picked queue counts as
/// looked at now.
pub(super) fn pick(
    rotation: &mut VecDeque<String>,
    queues: &mut HashMap<String, QueueState>,
    now: i64,
    config: &GroupConfig,
) -> Vec<QueueKeys> {
    let Some(interval) = config.sweep_interval() else {
        return Vec::new();
    };
    let interval_us = i64::try_from(interval.as_micros()).unwrap_or(i64::MAX);
    let budget = (config.sweep_budget() as usize).div_ceil(10).max(1);
    let mut picked = Vec::new();
    for _ in 0..rotation.len() {
        if picked.len() >= budget {
            break;
        }
        let Some(name) = rotation.pop_front() else {
            break;
        };
        if let Some(state) = queues.get_mut(&name) {
            if !state.running && now - state.last_check_us >= interval_us {
                state.last_check_us = now;
                picked.push(state.spec.keys.clone());
            }
            rotation.push_back(name);
        }
    }
    picked
}

/// Takes what the probes read into the queues' states: the names of the queues to plan again,
/// and the queues with nothing pending whose indexes exist, to tidy (dropped once their order
/// list is gone too).
pub(super) fn take_in(
    queues: &mut HashMap<String, QueueState>,
    heads: Vec<Probed>,
) -> (Vec<String>, Vec<QueueSpec>) {
    let (mut replan, mut tidy) = (Vec::new(), Vec::new());
    for probed in heads {
        let Some(state) = queues.get_mut(&probed.name) else {
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
        replan.push(probed.name);
    }
    (replan, tidy)
}

/// Tidies delayq's indexes of `queues`, one after the other (see [`tidy`]).
pub(super) async fn tidy_all(client: &Client, queues: Vec<QueueSpec>) {
    for queue in queues {
        let name = queue.keys.target();
        match tidy::run(client, &queue).await {
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
}

/// The head score of each queue's timeout zset, one `ZRANGE` a queue in one pipelined round
/// trip; then, for the queues with nothing pending only, whether delayq's indexes of their
/// order list exist (one `EXISTS` each, in a second round trip). A queue with entries pending,
/// the idle queue of a big deployment, costs one command a look.
pub(super) async fn probe(client: &Client, picked: Vec<QueueKeys>, sent_us: i64) -> Vec<Probed> {
    let pipeline = client.pipeline();
    for keys in &picked {
        let _: std::result::Result<(), _> = pipeline
            .zrange(keys.timeout(), 0, 0, None, false, None, true)
            .await;
    }
    let replies = pipeline.try_all::<Value>().await;
    let mut probed: Vec<Probed> = picked
        .iter()
        .zip(
            replies
                .into_iter()
                .map(Some)
                .chain(std::iter::repeat_with(|| None)),
        )
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
