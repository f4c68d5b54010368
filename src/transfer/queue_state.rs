//! One queue in a scheduler group: what is known of its next due time, its retries after
//! failures, and the drain (transfers until nothing due is left) that runs for it.

use super::config::TransferConfig;
use super::tally::TransferTally;
use super::Counters;
use crate::observe::Observer;
use crate::redis::ops::index_values;
use crate::redis::ops::transfer::{self, PassCost, TransferLimits, TransferOutcome};
use crate::redis::script::QueueSpec;
use crate::retry::{Backoff, FailureLog, Retrying};
use crate::time::now_us;
use crate::Result;
use fred::clients::Client;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The first wait after a failed transfer (it doubles up to the config's `max_backoff`).
const FIRST_RETRY_WAIT: Duration = Duration::from_millis(100);

/// How often a paused queue's flag is read again.
const PAUSED_RECHECK_MS: i64 = crate::keys::PAUSED_RECHECK.as_millis() as i64;

/// The state of one queue.
#[derive(Debug)]
pub(super) struct QueueState {
    pub(super) spec: QueueSpec,
    pub(super) config: TransferConfig,
    /// Where its transfers are recorded: counters, metrics and the console's activity.
    tally: TransferTally,
    /// Handles that asked for this queue (a group may be shared).
    pub(super) refs: usize,
    /// Found by discovery (and dropped by it when the queue vanishes), not added by hand.
    pub(super) discovered: bool,
    /// Current batch size (adaptive between the config's bounds).
    batch: usize,
    /// What the order-list pass costs, as this queue's transfers measured it.
    pass_cost: Arc<PassCost>,
    /// The earliest due time known (by the queue's clock), from transfers, probes, messages.
    next_due: Option<i64>,
    /// How far the queue's clock is ahead of this process's, in µs (0 with the client's): see
    /// [`ClockBounds`].
    clock_ahead_us: i64,
    retrying: Retrying,
    /// After a failed transfer: when to retry (epoch µs by this process's clock). Its own
    /// field, not counted from `last_check_us`: the sweep's probes move that one, and a retry
    /// counted from it never came while the sweep kept looking at the queue.
    retry_at_us: Option<i64>,
    failures: FailureLog,
    /// When a transfer or probe last ran (epoch µs).
    pub(super) last_check_us: i64,
    /// When something other than a probe last told of the queue's due time (epoch µs): a
    /// channel message, a drain's end, a transfer asked for now. A probe sent before it may
    /// have read the queue before what it told, so that probe's reply only adds to it.
    told_us: i64,
    /// When the queue was last heard from (epoch µs): added, a channel message, a transfer
    /// that found entries, found by a scan. Discovery drops only queues not heard from since
    /// its scan began.
    pub(super) heard_us: i64,
    /// The last transfer found the queue paused.
    paused: bool,
    /// A drain is running.
    pub(super) running: bool,
    /// Something asked for a transfer while one ran: run another when it ends.
    pub(super) rerun: bool,
}

/// What a drain did.
#[derive(Debug)]
pub(super) struct Drained {
    pub(super) result: Result<Option<i64>>,
    pub(super) clock_bounds: Option<ClockBounds>,
    pub(super) batch: usize,
    pub(super) outcomes: Vec<TransferOutcome>,
    pub(super) took: Duration,
    /// The transfer found the queue paused.
    pub(super) paused: bool,
}

impl Drained {
    /// Values moved onto the target list.
    pub(super) fn moved(&self) -> u64 {
        self.outcomes.iter().map(|outcome| outcome.moved).sum()
    }
}

impl QueueState {
    /// The queue's counters, for the group's stats.
    pub(super) fn counters(&self) -> &Arc<Counters> {
        self.tally.counters()
    }

    pub(super) fn new(
        spec: QueueSpec,
        config: TransferConfig,
        discovered: bool,
        observer: Observer,
    ) -> QueueState {
        QueueState {
            tally: TransferTally::new(spec.keys.target(), observer),
            batch: config.batch_size(),
            pass_cost: Arc::default(),
            retrying: Retrying::new(Backoff::doubling(FIRST_RETRY_WAIT, config.max_backoff())),
            spec,
            config,
            refs: 1,
            discovered,
            next_due: None,
            clock_ahead_us: 0,
            retry_at_us: None,
            failures: FailureLog::default(),
            last_check_us: 0,
            told_us: 0,
            heard_us: now_us(),
            paused: false,
            running: false,
            rerun: false,
        }
    }

    pub(super) fn name(&self) -> &str {
        self.spec.keys.target()
    }

    /// When this queue next needs a transfer, epoch µs by this process's clock: after a failure
    /// at the retry time; otherwise at the due time by the queue's clock.
    pub(super) fn wake_at_us(&self) -> Option<i64> {
        if let Some(at) = self.retry_at_us {
            return Some(at);
        }
        self.next_due.map(|due| {
            due.saturating_mul(1_000)
                .saturating_sub(self.clock_ahead_us)
        })
    }

    /// A due time announced on the channel: only an earlier one changes the plan (a later one
    /// is covered by the planned transfer, which re-reads the head). Ignored while retrying.
    pub(super) fn announce(&mut self, due: i64) {
        self.told_us = now_us();
        if self.retry_at_us.is_none() && self.next_due.is_none_or(|known| due < known) {
            self.next_due = Some(due);
        }
    }

    /// Transfer as soon as possible (a resubscribe, an unreadable message, a new queue).
    pub(super) fn due_now(&mut self) {
        self.told_us = now_us();
        self.retry_at_us = None;
        self.next_due = Some(i64::MIN);
    }

    /// The head a probe sent at `sent_us` read (`None`: nothing pending). The probe's reply
    /// and the channel's messages come on two connections, in either order: when a message (or
    /// a drain) told of the queue after the probe was sent, the probe may have read the queue
    /// before that offer, so only an earlier head of its own is taken; a running drain will
    /// say what is pending itself.
    pub(super) fn probed(&mut self, head: Option<i64>, sent_us: i64) {
        self.last_check_us = now_us();
        if self.retry_at_us.is_some() || self.running {
            return;
        }
        self.next_due = match self.told_us >= sent_us {
            true => [self.next_due, head].into_iter().flatten().min(),
            false => head,
        };
    }

    /// Starts a drain: the future to run, with this queue's settings.
    pub(super) fn drain(
        &mut self,
        client: &Client,
        token: &CancellationToken,
    ) -> impl std::future::Future<Output = Drained> + Send + 'static {
        self.running = true;
        self.rerun = false;
        self.last_check_us = now_us();
        // The due time this drain was planned for, by the queue's clock (for the lateness).
        let planned = self.next_due.filter(|&due| due > 0);
        drain(
            client.clone(),
            self.spec.clone(),
            self.config,
            (self.batch, self.pass_cost.clone()),
            token.clone(),
            (self.tally.clone(), planned),
        )
    }

    /// Warns that a second handle of the queue asks for other options or transfer settings
    /// than those in force, which the queue keeps.
    pub(super) fn warn_if_other(&self, spec: &QueueSpec, config: &TransferConfig) {
        if spec.options != self.spec.options || *config != self.config {
            tracing::warn!(
                queue = %self.name(),
                in_force = ?(self.spec.options, self.config),
                asked = ?(spec.options, config),
                "the queue is in this scheduler group already: it keeps the options and \
                 transfer settings it was added with, not those another handle asks for"
            );
        }
    }

    /// Takes in what a drain did: counters, the next due time, or a retry with backoff (doubling
    /// from 100 ms while the error may pass by itself, at once the longest wait when someone has
    /// to act). Each kind of error is logged once, its repeats at debug, the recovery at info.
    pub(super) fn drained(&mut self, drained: Drained) {
        self.running = false;
        self.last_check_us = now_us();
        self.told_us = self.last_check_us;
        self.batch = drained.batch;
        if let Some(bounds) = drained.clock_bounds {
            self.clock_ahead_us = bounds.narrow(self.clock_ahead_us);
        }
        self.count(&drained);
        if let Ok(head) = &drained.result {
            if head.is_some() || drained.moved() > 0 {
                self.heard_us = self.last_check_us;
            }
            self.note_pause(drained.paused);
        }
        match drained.result {
            Ok(head) => {
                self.tally.drained_ok();
                self.next_due = head;
                self.retrying.succeeded();
                self.retry_at_us = None;
                let failed = self.failures.recovered();
                if failed > 0 {
                    tracing::info!(queue = %self.name(), failed, "transfers work again");
                }
            }
            Err(err) => {
                self.tally.failed(&err);
                let transient = err.is_transient();
                let wait = match transient {
                    true => self.retrying.failed(),
                    false => self.config.max_backoff(),
                };
                let wait_us = i64::try_from(wait.as_micros()).unwrap_or(i64::MAX);
                self.retry_at_us = Some(self.last_check_us.saturating_add(wait_us));
                let retry_in_ms = wait.as_millis() as u64;
                if self.failures.first_of_kind(&err.to_string()) {
                    tracing::warn!(queue = %self.name(), error = %err, transient, retry_in_ms, "transfer failed; retrying (repeats of this error are logged at debug)");
                } else {
                    tracing::debug!(queue = %self.name(), error = %err, retry_in_ms, "transfer failed again");
                }
            }
        }
    }

    /// Logs when the queue is first found paused, and when it is found resumed: a paused
    /// queue's values stay pending with nothing else to say why.
    fn note_pause(&mut self, paused: bool) {
        if paused == self.paused {
            return;
        }
        self.paused = paused;
        match paused {
            true => tracing::info!(
                queue = %self.name(),
                paused_key = self.spec.keys.paused(),
                "the queue is paused: its due values stay pending until it is resumed \
                 (`delayq resume`); looked at again every second"
            ),
            false => {
                tracing::info!(queue = %self.name(), "the queue is resumed: transferring it again")
            }
        }
    }

    fn count(&self, drained: &Drained) {
        // Each call was recorded as it came back (`drain`); this only logs.
        let (mut moved, mut quarantined) = (0, 0);
        for outcome in &drained.outcomes {
            moved += outcome.moved;
            quarantined += outcome.quarantined;
        }
        if quarantined > 0 {
            tracing::error!(
                queue = self.name(),
                quarantined,
                quarantine_key = self.spec.keys.quarantine(),
                "malformed entries moved to quarantine"
            );
        }
        if drained.outcomes.len() > 1 {
            let ms = drained.took.as_millis() as u64;
            let calls = drained.outcomes.len();
            tracing::info!(queue = %self.name(), moved, calls, ms, "caught up a backlog");
        } else if moved > 0 {
            tracing::debug!(
                queue = self.name(),
                moved,
                batch = self.batch,
                "transferred"
            );
        }
    }
}

/// What one call tells of the server's clock against this process's: the server read its time
/// between the call's start and its reply, so its lead is at least `server - end` and at most
/// `server - start` (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ClockBounds {
    least_us: i64,
    most_us: i64,
}

impl ClockBounds {
    fn of_call(server_us: i64, start_us: i64, end_us: i64) -> ClockBounds {
        ClockBounds {
            least_us: server_us.saturating_sub(end_us),
            most_us: server_us.saturating_sub(start_us),
        }
    }

    /// The lead estimate kept after this call: the last one, moved just inside these bounds
    /// when outside them. Keeps the highest lower bound seen while the clocks hold still (a wake-up
    /// then never comes before the server's due time by more than a call's round trip), and
    /// follows a clock that steps.
    pub(super) fn narrow(self, last_us: i64) -> i64 {
        last_us.min(self.most_us).max(self.least_us)
    }

    fn tighter(self, other: Option<ClockBounds>) -> ClockBounds {
        match other {
            Some(o) if o.most_us - o.least_us < self.most_us - self.least_us => o,
            _ => self,
        }
    }
}

/// Transfers until nothing due is left; the earliest due time still pending. A paused queue
/// (its flag read by the transfer script itself) is looked at again in a second.
async fn drain(
    client: Client,
    spec: QueueSpec,
    config: TransferConfig,
    (mut batch, pass_cost): (usize, Arc<PassCost>),
    token: CancellationToken,
    (tally, mut planned): (TransferTally, Option<i64>),
) -> Drained {
    let started = Instant::now();
    let mut outcomes = Vec::new();
    let mut clock_bounds = None;
    let mut paused = false;
    let result = loop {
        let call = Instant::now();
        let start_us = now_us();
        let limits = TransferLimits {
            heed_pause: true,
            ..config.limits(batch)
        };
        let outcome = match transfer::run(&client, &spec, limits, &pass_cost).await {
            Ok(outcome) => outcome,
            Err(err) => break Err(err),
        };
        if let Some(server_us) = outcome.server_time_us {
            clock_bounds =
                Some(ClockBounds::of_call(server_us, start_us, now_us()).tighter(clock_bounds));
        }
        paused = outcome.paused;
        if outcome.paused {
            tally.paused();
            break Ok(Some(outcome.now_ms + PAUSED_RECHECK_MS));
        }
        tally.transferred(&outcome, call.elapsed().as_secs_f64());
        if let Some(due) = planned.take().filter(|_| outcome.moved > 0) {
            tally.lateness(outcome.now_ms.saturating_sub(due).max(0) as f64 / 1000.0);
        }
        let taken = outcome.moved + outcome.quarantined;
        batch = config.next_batch(batch, taken, call.elapsed());
        outcomes.push(outcome);
        match outcome.next_due_ms {
            // A backlog: more is due already. Keep going unless asked to stop.
            Some(due) if due <= outcome.now_ms && taken > 0 && !token.is_cancelled() => continue,
            head => break Ok(head),
        }
    };
    let result = match (result, outcomes.last()) {
        (Ok(head), Some(last)) if last.value_index_behind => {
            Ok(index_values::keep_up(&client, &spec, head, last.now_ms).await)
        }
        (result, _) => result,
    };
    Drained {
        result,
        clock_bounds,
        batch,
        outcomes,
        took: started.elapsed(),
        paused,
    }
}

#[cfg(test)]
mod tests {
    use super::{ClockBounds, QueueState};
    use crate::observe::Observer;
    use crate::options::QueueOptions;
    use crate::redis::script::QueueSpec;
    use crate::transfer::TransferConfig;

    /// A probe's reply and a channel message come on two connections, in either order: a
    /// probe that read an empty queue just before an offer, answered after the offer's message,
    /// must not erase the due time the message announced (the queue would then wait for the
    /// sweep's next round, ~50 s at 10,000 queues, instead of its wake-up).
    #[test]
    fn a_probe_sent_before_a_message_keeps_the_due_time_the_message_announced() {
        let spec = QueueSpec::new("q", QueueOptions::default());
        let mut state = QueueState::new(spec, TransferConfig::default(), true, Observer::default());
        state.probed(Some(5_000), crate::time::now_us());
        assert_eq!(state.wake_at_us(), Some(5_000_000));
        // The sweep sends a probe; the queue is empty when Redis runs it.
        let sent_us = crate::time::now_us();
        // An offer's message arrives first: due at 1_000 ms.
        state.announce(1_000);
        // Then the probe's reply: nothing pending (read before the offer).
        state.probed(None, sent_us);
        assert_eq!(state.wake_at_us(), Some(1_000_000));
        // A later offer's message is not earlier than the plan, but a probe sent before it may
        // have missed it all the same: the plan stands, and its transfer reads the head.
        let sent_us = crate::time::now_us();
        state.announce(2_000);
        state.probed(None, sent_us);
        assert_eq!(state.wake_at_us(), Some(1_000_000));
        // A probe sent after the last message tells the truth: nothing pending.
        state.probed(None, state.told_us + 1);
        assert_eq!(state.wake_at_us(), None);
    }

    #[test]
    fn the_clock_lead_keeps_the_highest_lower_bound_and_follows_a_step() {
        // Same clocks: the server read its time 40 µs into a 100 µs call.
        let call = ClockBounds::of_call(1_040, 1_000, 1_100);
        assert_eq!((call.least_us, call.most_us), (-60, 40));
        // 0 lies inside: kept (a wake-up at the due µs is neither early nor late).
        assert_eq!(call.narrow(0), 0);
        // A server 5 ms ahead: the estimate moves up to the lower bound, so a wake-up is never
        // early by more than the call's round trip.
        let ahead = ClockBounds::of_call(6_040, 1_000, 1_100);
        assert_eq!(ahead.narrow(0), 4_940);
        // A later, faster call raises the lower bound; a slower one does not lower it.
        assert_eq!(
            ClockBounds::of_call(6_050, 1_000, 1_020).narrow(4_940),
            5_030
        );
        assert_eq!(
            ClockBounds::of_call(6_050, 1_000, 3_000).narrow(5_030),
            5_030
        );
        // The server's clock steps back 10 ms: the estimate follows it.
        assert_eq!(
            ClockBounds::of_call(-3_960, 1_000, 1_100).narrow(5_030),
            -4_960
        );
        // Of two calls, the one with the narrower bounds is kept.
        let slow = ClockBounds::of_call(2_000, 1_000, 3_000);
        assert_eq!(slow.tighter(Some(call)), call);
        assert_eq!(call.tighter(Some(slow)), call);
    }
}
