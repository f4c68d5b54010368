//! Deduplicated offers: [`Dedup`], and [`offer_dedup`](DelayedQueue::offer_dedup) (a value
//! offered under a business key, throttled or debounced within a window; see `docs/dedup.md`).

use super::DelayedQueue;
use crate::codec::Codec;
use crate::redis::ops::offer_dedup::{self, DedupMode, DedupOffer, DedupOutcome};
use crate::time::Delay;
use crate::{Error, Result};
use std::time::Duration;

/// The longest business key, in bytes: it is part of a key name in Redis, kept per key for
/// its window.
pub const MAX_DEDUP_KEY_LEN: usize = 512;

/// How an offer is deduplicated: its business key, its window and its mode.
///
/// ```
/// use delayq::{Dedup, DedupMode};
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

impl<C: Codec> DelayedQueue<C> {
    /// Offers `value`, due after `delay`, under the business key of `dedup`, in one script
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
    /// use delayq::{Dedup, DedupOutcome};
    /// use std::time::Duration;
    ///
    /// let dedup = Dedup::throttle("order-42", Duration::from_secs(60));
    /// match queue.offer_dedup("cancel order-42", Duration::from_secs(900), &dedup).await? {
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
    /// or replaced) waits for it like [`offer`](Self::offer) and may return
    /// [`Error::NotConfirmed`]; so does a kept one (it rewrites the key's mapping as it is, so
    /// that the wait covers the pending entry, which another offer may have written and been
    /// told was not confirmed).
    pub async fn offer_dedup(
        &self,
        value: &C::Borrowed,
        delay: Duration,
        dedup: &Dedup,
    ) -> Result<DedupOutcome> {
        let delay = Delay::checked(delay)?;
        let value = self.encode(value)?;
        self.offer_dedup_encoded(delay, value, dedup).await
    }

    /// [`offer_dedup`](Self::offer_dedup) of a value already encoded.
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
            mode: dedup.mode(),
            window_ms,
            delay,
            value,
            confirmed: writer.waits(),
        };
        let outcome = offer_dedup::run(writer.client(), self.spec(), offer).await?;
        // Kept too: the entry it names may be one another offer wrote and was told was not
        // confirmed. A durable kept offer rewrites the mapping as it is, so this wait covers
        // that entry (the replication stream is one), whichever connection wrote it.
        writer.confirm(self.name()).await?;
        Ok(outcome)
    }
}
