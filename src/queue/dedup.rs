//! Deduplicated offers: [`Dedup`], the door [`dedup`](DelayedQueue::dedup) and its
//! [`Deduplicated::offer`] (a value offered under a business key, throttled or debounced within
//! a window; see `docs/dedup.md`), and what an offer did ([`DedupOutcome`]).

use super::DelayedQueue;
use crate::codec::Codec;
use crate::entry::OfferHandle;
use crate::redis::ops::offer_dedup::{self, Decision, DedupOffer};
use crate::time::Delay;
use crate::{Error, Result};
use std::time::Duration;

/// The longest business key, in bytes: it is part of a key name in Redis, kept per key for
/// its window.
pub const MAX_DEDUP_KEY_LEN: usize = 512;

/// What a deduplicated offer does while the key's entry is pending and its window open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DedupMode {
    /// The first offer's entry stays as it is; later offers are dropped.
    Throttle,
    /// Each offer replaces the pending entry (value and due time) and starts the window again.
    Debounce,
}

impl DedupMode {
    /// The mode as `offer_dedup.lua` takes it.
    fn to_arg(self) -> &'static str {
        match self {
            DedupMode::Throttle => "throttle",
            DedupMode::Debounce => "debounce",
        }
    }
}

/// What a deduplicated offer did, with the handle and due time of the key's pending entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DedupOutcome {
    /// No entry of the key was pending within its window: this offer's value was offered.
    Offered {
        /// The new entry.
        handle: OfferHandle,
        /// Its due time, epoch ms.
        due_ms: i64,
    },
    /// Throttle: the key's entry is pending within its window; it stays and this offer was
    /// dropped.
    Kept {
        /// The pending entry (made by an earlier offer).
        handle: OfferHandle,
        /// Its due time, epoch ms (unchanged).
        due_ms: i64,
    },
    /// Debounce: the key's pending entry was replaced by this offer's value, due after this
    /// offer's delay.
    Replaced {
        /// The new entry (the replaced one is gone).
        handle: OfferHandle,
        /// Its due time, epoch ms.
        due_ms: i64,
    },
}

impl DedupOutcome {
    /// The handle of the key's pending entry after the offer.
    pub fn handle(&self) -> OfferHandle {
        match *self {
            DedupOutcome::Offered { handle, .. }
            | DedupOutcome::Kept { handle, .. }
            | DedupOutcome::Replaced { handle, .. } => handle,
        }
    }

    /// The due time of the key's pending entry after the offer, epoch ms.
    pub fn due_ms(&self) -> i64 {
        match *self {
            DedupOutcome::Offered { due_ms, .. }
            | DedupOutcome::Kept { due_ms, .. }
            | DedupOutcome::Replaced { due_ms, .. } => due_ms,
        }
    }

    /// What happened, in one word: `offered`, `kept` or `replaced`.
    pub fn as_str(&self) -> &'static str {
        match self {
            DedupOutcome::Offered { .. } => "offered",
            DedupOutcome::Kept { .. } => "kept",
            DedupOutcome::Replaced { .. } => "replaced",
        }
    }

    /// Whether this offer's value is now pending (offered or replaced; false: dropped).
    pub fn is_pending(&self) -> bool {
        !matches!(self, DedupOutcome::Kept { .. })
    }
}

/// How an offer is deduplicated: its business key, its window and its mode.
///
/// ```
/// use delayq::dedup::{Dedup, DedupMode};
/// use std::time::Duration;
///
/// let dedup = Dedup::debounce("customer-7", Duration::from_secs(30));
/// assert_eq!(dedup.mode(), DedupMode::Debounce);
/// assert_eq!(dedup.key(), "customer-7");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dedup {
    key: String,
    window: Duration,
    mode: DedupMode,
}

impl Dedup {
    /// `key` deduplicated for `window` in `mode`.
    pub fn new(key: impl Into<String>, window: Duration, mode: DedupMode) -> Dedup {
        Dedup {
            key: key.into(),
            window,
            mode,
        }
    }

    /// Throttle: while the key's entry is pending and its window open, later offers are dropped.
    pub fn throttle(key: impl Into<String>, window: Duration) -> Dedup {
        Dedup::new(key, window, DedupMode::Throttle)
    }

    /// Debounce: while the key's entry is pending and its window open, each offer replaces it
    /// (value and due time) and opens the window again.
    pub fn debounce(key: impl Into<String>, window: Duration) -> Dedup {
        Dedup::new(key, window, DedupMode::Debounce)
    }

    /// The business key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// How long the key's mapping lasts from the offer that set it.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// Throttle or debounce.
    pub fn mode(&self) -> DedupMode {
        self.mode
    }

    /// The window in whole ms; refuses an empty or too long key and a window under 1 ms.
    pub(crate) fn checked_window_ms(&self) -> Result<i64> {
        if self.key.is_empty() {
            return Err(Error::InvalidConfig("a dedup key is empty".into()));
        }
        if self.key.len() > MAX_DEDUP_KEY_LEN {
            return Err(Error::InvalidConfig(format!(
                "a dedup key is {} bytes, more than {MAX_DEDUP_KEY_LEN}",
                self.key.len()
            )));
        }
        let window = Delay::span(self.window)?.ms();
        if window == 0 {
            return Err(Error::InvalidConfig(format!(
                "a dedup window must be at least 1 ms, not {:?}",
                self.window
            )));
        }
        Ok(window)
    }
}

/// Offers deduplicated by one business key: made by `queue.dedup(dedup)` (e.g.
/// [`DelayedQueue::dedup`]); borrows the queue.
#[derive(Debug, Clone)]
pub struct Deduplicated<'a, Q> {
    queue: &'a Q,
    dedup: Dedup,
}

impl<'a, Q> Deduplicated<'a, Q> {
    /// Offers of `queue` under `dedup`.
    pub(crate) fn of(queue: &'a Q, dedup: Dedup) -> Self {
        Deduplicated { queue, dedup }
    }

    /// The business key, window and mode of these offers.
    pub fn dedup(&self) -> &Dedup {
        &self.dedup
    }

    /// The queue these offers go to.
    pub(crate) fn queue(&self) -> &'a Q {
        self.queue
    }
}

/// **Door: deduplicated offers** (see [`Deduplicated`]).
impl<C: Codec> DelayedQueue<C> {
    /// Offers deduplicated by `dedup`'s business key within its window (throttled or
    /// debounced): see [`Deduplicated::offer`] and `docs/dedup.md`.
    pub fn dedup(&self, dedup: Dedup) -> Deduplicated<'_, DelayedQueue<C>> {
        Deduplicated::of(self, dedup)
    }

    /// [`Deduplicated::offer`] of a value already encoded.
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name(), key = %dedup.key(), mode = ?dedup.mode()))]
    pub(crate) async fn offer_dedup_encoded(
        &self,
        delay: Delay,
        value: Vec<u8>,
        dedup: &Dedup,
    ) -> Result<DedupOutcome> {
        let window_ms = dedup.checked_window_ms()?;
        self.check_sizes([value.as_slice()]).await?;
        let mapping = self.keys().dedup(dedup.key());
        let writer = self.writer().await?;
        let offer = DedupOffer {
            mapping: &mapping,
            mode: dedup.mode().to_arg(),
            window_ms,
            delay,
            value,
            confirmed: writer.waits(),
        };
        let reply = offer_dedup::run(writer.client(), self.spec(), offer).await?;
        let (handle, due_ms) = (reply.handle, reply.due_ms);
        let outcome = match reply.decision {
            Decision::Offered => DedupOutcome::Offered { handle, due_ms },
            Decision::Kept => DedupOutcome::Kept { handle, due_ms },
            Decision::Replaced => DedupOutcome::Replaced { handle, due_ms },
        };
        // Kept too: the entry it names may be one another offer wrote and was told was not
        // confirmed. A durable kept offer rewrites the mapping as it is, so this wait covers
        // that entry (the replication stream is one), whichever connection wrote it.
        writer.confirm(self.name()).await?;
        Ok(outcome)
    }
}

impl<C: Codec> Deduplicated<'_, DelayedQueue<C>> {
    /// Offers `value`, due after `delay`, under this door's business key, in one script
    /// (atomic, so concurrent offers of one key see each other): while an entry the key's last
    /// offer made is pending and the key's window is open, a throttled offer is dropped
    /// ([`DedupOutcome::Kept`]: that entry stays) and a debounced one replaces that entry with
    /// its own value, due after its own delay ([`DedupOutcome::Replaced`], the window opened
    /// again); otherwise the value is offered ([`DedupOutcome::Offered`]) and the key's window
    /// opens. An entry transferred, taken, removed or cancelled, by any peer, no longer counts.
    ///
    /// The key's mapping is the string `delayq_dedup:{NAME}:KEY`
    /// ([`QueueKeys::dedup`](crate::QueueKeys::dedup)), expiring with the window. See
    /// `docs/dedup.md`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> delayq::Result<()> {
    /// use delayq::dedup::{Dedup, DedupOutcome};
    /// use std::time::Duration;
    ///
    /// let dedup = Dedup::throttle("order-42", Duration::from_secs(60));
    /// match queue.dedup(dedup).offer("cancel order-42", Duration::from_secs(900)).await? {
    ///     DedupOutcome::Kept { handle, .. } => println!("already pending: {handle}"),
    ///     outcome => println!("{}: {}", outcome.as_str(), outcome.handle()),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for an empty key, a key over [`MAX_DEDUP_KEY_LEN`] bytes or a
    /// window under 1 ms; [`Error::InvalidDelay`], [`Error::Encode`]; [`Error::WrongType`] when
    /// the mapping's name holds something else than a string (nothing is written); or a Redis
    /// error. On a queue with a [`Durability`](crate::Durability), an offer that wrote (offered
    /// or replaced) waits for it like [`offer`](DelayedQueue::offer) and may return
    /// [`Error::NotConfirmed`]; so does a kept one (it rewrites the key's mapping as it is, so
    /// that the wait covers the pending entry, which another offer may have written and been
    /// told was not confirmed).
    pub async fn offer(&self, value: &C::Borrowed, delay: Duration) -> Result<DedupOutcome> {
        let delay = Delay::checked(delay)?;
        let value = self.queue.encode(value)?;
        self.queue
            .offer_dedup_encoded(delay, value, &self.dedup)
            .await
    }
}
