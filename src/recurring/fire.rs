//! Firing one queue's due schedules: a read by score of the schedules zset, then per due
//! schedule its hash, its [plan](super::plan), and the firing script.

use super::plan::{plan, Horizon, MissedDecision, Plan};
use super::spec::{own_error, Missed};
use super::stored;
use crate::metrics::FiringMetrics;
use crate::redis::ops::schedule_fire::{self, ReadAt};
use crate::redis::ops::schedule_remove;
use crate::redis::script::QueueSpec;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::SortedSetsInterface;
use futures::stream::{self, StreamExt};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};
use tracing::Instrument;

/// How a scheduler group fires the schedules of its queues
/// ([`GroupConfig::with_schedules`](crate::GroupConfig::with_schedules)).
///
/// # Examples
///
/// ```
/// use delayq::FiringConfig;
/// use std::time::Duration;
///
/// let firing = FiringConfig::default().with_lead(Duration::from_secs(5));
/// assert_eq!(firing.tick(), Duration::from_secs(1));
/// assert_eq!(firing.missed_after(), Duration::from_secs(60));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FiringConfig {
    tick: Duration,
    lead: Duration,
    missed_after: Duration,
    per_tick: usize,
    in_flight: usize,
}

impl Default for FiringConfig {
    /// A tick of 1 s, a lead of 2 s (an occurrence is offered one to two seconds before its
    /// time, so the transfer moves it on time), missed after 60 s, 10,000 schedules per queue
    /// and tick, 64 firings in flight.
    fn default() -> Self {
        FiringConfig {
            tick: Duration::from_secs(1),
            lead: Duration::from_secs(2),
            missed_after: Duration::from_secs(60),
            per_tick: 10_000,
            in_flight: 64,
        }
    }
}

impl FiringConfig {
    /// How often each queue's due schedules are read.
    /// Default: 1 s.
    #[must_use]
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// How far ahead of its time an occurrence is offered (due at its time all the same).
    /// Default: 2 s.
    #[must_use]
    pub fn with_lead(mut self, lead: Duration) -> Self {
        self.lead = lead;
        self
    }

    /// How old an occurrence is when found before it counts as missed (the schedule's
    /// [`Missed`](crate::Missed) policy decides) rather than late (it fires).
    /// Default: 60 s.
    #[must_use]
    pub fn with_missed_after(mut self, missed_after: Duration) -> Self {
        self.missed_after = missed_after;
        self
    }

    /// The most due schedules of one queue fired per tick (the rest in the next ticks).
    /// Default: 10,000.
    #[must_use]
    pub fn with_per_tick(mut self, schedules: usize) -> Self {
        self.per_tick = schedules;
        self
    }

    /// How many due schedules of a queue are fired at once (their reads and scripts pipelined
    /// on the connection): a pass over `n` due schedules takes about `n / in_flight` round
    /// trips. Each firing is its own compare-and-set, so concurrency never fires an occurrence
    /// twice.
    /// Default: 64.
    #[must_use]
    pub fn with_in_flight(mut self, firings: usize) -> Self {
        self.in_flight = firings;
        self
    }

    /// See [`with_tick`](Self::with_tick).
    pub fn tick(&self) -> Duration {
        self.tick
    }

    /// See [`with_lead`](Self::with_lead).
    pub fn lead(&self) -> Duration {
        self.lead
    }

    /// See [`with_missed_after`](Self::with_missed_after).
    pub fn missed_after(&self) -> Duration {
        self.missed_after
    }

    /// See [`with_per_tick`](Self::with_per_tick).
    pub fn per_tick(&self) -> usize {
        self.per_tick
    }

    /// See [`with_in_flight`](Self::with_in_flight).
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.tick.is_zero() || self.per_tick == 0 || self.in_flight == 0 {
            return Err(Error::InvalidConfig(
                "schedule firing: the tick, the schedules per tick and the firings in flight \
                 must be above zero"
                    .into(),
            ));
        }
        Ok(())
    }

    fn horizon(&self, now_ms: i64) -> Horizon {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4);
        Horizon {
            fire_until_ms: now_ms.saturating_add(ms(self.lead)),
            missed_before_ms: now_ms.saturating_sub(ms(self.missed_after)),
            most: OCCURRENCES_PER_CALL,
        }
    }
}

/// The most occurrences one firing call offers (a long catch-up goes in several).
const OCCURRENCES_PER_CALL: usize = 1_000;

/// What one firing of a queue's due schedules did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct FireTally {
    /// Entries offered.
    pub offered: u64,
    /// Firings another process (or a change of the schedule) got to first: no-ops.
    pub lost: u64,
    /// Schedules that were due.
    pub due: u64,
    /// Due schedules whose hash could not be read (logged; the others fire all the same).
    pub invalid: u64,
}

/// Due schedules read at once: a page is fired (`in_flight` at a time) before the next is read.
const PAGE: usize = 500;

/// Fires the due schedules of `queue` at `now_ms`: the due set read in pages, each page's
/// schedules fired `in_flight` at a time, up to `per_tick` schedules; recorded with `held`, the
/// queue's handles its caller keeps, or else handles made for this pass if it finds a due
/// schedule.
pub(crate) async fn fire_due(
    client: &Client,
    queue: &QueueSpec,
    now_ms: i64,
    config: &FiringConfig,
    held: Option<&Arc<FiringMetrics>>,
) -> Result<FireTally> {
    let mut unreadable = None;
    let fired = fire_pages(client, queue, now_ms, config, held, &mut unreadable).await;
    if let Some((id, err)) = unreadable {
        let invalid = fired.as_ref().map_or(1, |tally| tally.invalid);
        say_unreadable(queue.keys.target(), invalid, &id, &err);
    }
    fired
}

/// How often a queue's unreadable schedules are logged again while they last.
const SAY_UNREADABLE_EVERY: Duration = Duration::from_secs(60);

/// When each queue's unreadable schedules were last logged (by its target list; one entry a
/// queue that ever had one, in this process).
static UNREADABLE_SAID: LazyLock<Mutex<HashMap<String, Instant>>> = LazyLock::new(Default::default);

/// Logs a pass's unreadable schedules of `queue`: `invalid` of them, `id` one, `err` its error;
/// at most once a [`SAY_UNREADABLE_EVERY`] a queue (thousands of them would otherwise log
/// thousands of lines a tick).
fn say_unreadable(queue: &str, invalid: u64, id: &str, err: &Error) {
    let now = Instant::now();
    let mut said = UNREADABLE_SAID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match said.get(queue) {
        Some(at) if now.duration_since(*at) < SAY_UNREADABLE_EVERY => return,
        _ => said.insert(queue.to_owned(), now),
    };
    drop(said);
    let repeat_s = SAY_UNREADABLE_EVERY.as_secs();
    tracing::warn!(
        queue,
        invalid,
        schedule = %id,
        error = %err,
        repeat_s,
        "schedules that cannot be read are not fired; their neighbours are (one of them named)"
    );
}

/// [`fire_due`]'s pages; the first unreadable schedule and its error into `unreadable`.
async fn fire_pages(
    client: &Client,
    queue: &QueueSpec,
    now_ms: i64,
    config: &FiringConfig,
    held: Option<&Arc<FiringMetrics>>,
    unreadable: &mut Option<(String, Error)>,
) -> Result<FireTally> {
    let horizon = config.horizon(now_ms);
    let mut tally = FireTally::default();
    // Fired schedules leave the due range; the unreadable ones stay in it and are skipped by
    // the next page's offset. A schedule another process moves meanwhile shifts
    // the offset by one: whatever that skips is due still, and fires at the next tick.
    let mut stayed = 0;
    // Without handles held by the caller, they are made once a pass finds a due schedule: a
    // queue whose schedules are not due gets no series.
    let mut firing: Option<Firing> = None;
    loop {
        let room = config.per_tick.saturating_sub(tally_len(&tally));
        let ids = due_page(client, queue, &horizon, stayed, room.min(PAGE)).await?;
        let read = ids.len();
        if read == 0 {
            return Ok(tally);
        }
        let firing = &*firing.get_or_insert_with(|| Firing {
            horizon,
            now_ms,
            metrics: held
                .cloned()
                .unwrap_or_else(|| Arc::new(FiringMetrics::new(queue.keys.target()))),
        });
        let mut fired = stream::iter(ids)
            .map(|id| async move {
                let span =
                    tracing::debug_span!("schedule_fire", queue = queue.keys.target(), id = %id);
                let fired = fire_one(client, queue, &id, firing).instrument(span).await;
                (id, fired)
            })
            .buffer_unordered(config.in_flight);
        while let Some((id, fired)) = fired.next().await {
            tally.due += 1;
            match fired {
                Ok(Fired::Offered(offered)) => tally.offered += offered,
                Ok(Fired::Lost) => tally.lost += 1,
                Ok(Fired::Untouched) => {}
                // A hash another writer got wrong (a field that does not parse, or a key of
                // another type) stops that schedule only, not its neighbours.
                Err(err) if own_error(&err, &queue.keys.schedule(&id)) => {
                    tally.invalid += 1;
                    stayed += 1;
                    tracing::debug!(
                        queue = queue.keys.target(),
                        schedule = %id,
                        error = %err,
                        "a schedule that cannot be read is not fired"
                    );
                    unreadable.get_or_insert((id, err));
                }
                Err(err) => return Err(err),
            }
        }
        if read < PAGE || tally_len(&tally) >= config.per_tick {
            return Ok(tally);
        }
    }
}

/// How many due schedules a pass has handled so far.
fn tally_len(tally: &FireTally) -> usize {
    usize::try_from(tally.due).unwrap_or(usize::MAX)
}

/// Up to `count` ids of due schedules after the first `skip`, by next occurrence.
async fn due_page(
    client: &Client,
    queue: &QueueSpec,
    horizon: &Horizon,
    skip: usize,
    count: usize,
) -> Result<Vec<String>> {
    let key = queue.keys.schedules();
    let as_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let limit = Some((as_i64(skip), as_i64(count)));
    client
        .zrangebyscore(key, "-inf", horizon.fire_until_ms, false, limit)
        .await
        .map_err(|e| Error::from_redis("ZRANGEBYSCORE", key, e))
}

/// What firing one schedule did.
enum Fired {
    /// The firing counted: entries offered (none when its policy skipped missed ones).
    Offered(u64),
    /// Another process (or a change of the schedule) got there first.
    Lost,
    /// Nothing to fire (its hash says it is paused, ended or not due: it has left the due
    /// range since the read), nothing written.
    Untouched,
}

/// One pass's instants, and the handles it records with.
struct Firing {
    horizon: Horizon,
    now_ms: i64,
    metrics: Arc<FiringMetrics>,
}

/// Fires the schedule `id`.
async fn fire_one(client: &Client, queue: &QueueSpec, id: &str, firing: &Firing) -> Result<Fired> {
    let Some(info) = stored::read(client, queue, id).await? else {
        // No hash: removed meanwhile (the zset member went with it), or a member another
        // writer left behind, which would stay due for ever.
        if schedule_remove::run_ghost(client, queue, id).await? {
            tracing::warn!(
                queue = queue.keys.target(),
                schedule = %id,
                "removed a schedule id whose hash is gone"
            );
        }
        return Ok(Fired::Lost);
    };
    let Some(plan) = plan(&info, firing.horizon)? else {
        return Ok(Fired::Untouched);
    };
    let read = ReadAt {
        rev: info.rev,
        next_ms: plan.from_ms,
    };
    let offered =
        schedule_fire::run(client, queue, id, read, &plan.occurrences, plan.then_ms).await?;
    let Some(offered) = offered else {
        return Ok(Fired::Lost);
    };
    log_decision(queue, id, &plan);
    record(firing, &plan);
    Ok(Fired::Offered(offered))
}

/// The log line of a missed-occurrence decision (only by the process whose firing counted).
fn log_decision(queue: &QueueSpec, id: &str, plan: &Plan) {
    let Some(MissedDecision {
        policy,
        first_ms,
        latest_ms,
        fired,
        capped,
    }) = plan.missed
    else {
        return;
    };
    tracing::info!(
        queue = queue.keys.target(),
        schedule = id,
        policy = %policy,
        first_missed_ms = first_ms,
        latest_missed_ms = latest_ms,
        fired,
        capped,
        next_ms = ?plan.then_ms,
        "missed occurrences of a schedule: fired {fired} by its policy"
    );
}

/// The metrics of a firing that counted (only the process whose firing counted records it).
fn record(firing: &Firing, plan: &Plan) {
    firing.metrics.fired(firing.now_ms, &plan.occurrences);
    if let Some(decision) = plan.missed {
        firing.metrics.missed(match decision.policy {
            Missed::Skip => "skip",
            Missed::Latest => "latest",
            Missed::All { .. } => "all",
        });
    }
}
