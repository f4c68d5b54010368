//! The queue's operations on values already encoded, with delays already checked: the one body
//! of each, which [`DelayedQueue`]'s public methods call after encoding, and
//! [`ShardedQueue`](crate::ShardedQueue)'s after encoding a value once and picking its shard.

use super::DelayedQueue;
use crate::codec::{encode_value, Codec};
use crate::entry::OfferHandle;
use crate::redis::ops::remove::RemoveMode;
use crate::redis::ops::reschedule::Which;
use crate::redis::ops::{contains, offer, offer_unique, remove, reschedule};
use crate::redis::server;
use crate::telemetry::{self, messaging_span, Operation};
use crate::time::Delay;
use crate::{Error, Result};
use tracing::Instrument;

impl<C: Codec> DelayedQueue<C> {
    /// `value` as the queue's codec writes it.
    pub(crate) fn encode(&self, value: &C::Borrowed) -> Result<Vec<u8>> {
        encode_value(self.codec(), value)
    }

    /// Refuses encoded values longer than the server takes in one argument, before anything
    /// is sent ([`Error::ValueTooLarge`]): every operation that sends values calls it. The server's limit is read once per handle, and only
    /// for a value past the lowest limit Redis allows.
    pub(crate) async fn check_sizes<'a>(
        &self,
        values: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<()> {
        let longest = values.into_iter().map(<[u8]>::len).max().unwrap_or(0);
        if longest as u64 <= server::MIN_BULK_LIMIT {
            return Ok(());
        }
        let limit = self.bulk_limit().await?;
        if longest as u64 > limit {
            return Err(Error::ValueTooLarge {
                len: longest,
                limit,
            });
        }
        Ok(())
    }

    /// Offers each encoded value due after its delay (see [`offer_all`](Self::offer_all)).
    pub(crate) async fn offer_encoded(&self, entries: Vec<(Delay, Vec<u8>)>) -> Result<()> {
        // One value goes the way that knows its entry's id, for the span to name the message.
        let entries = match <[_; 1]>::try_from(entries) {
            Ok([(delay, value)]) => {
                return self.offer_with_handle_encoded(delay, value).await.map(drop)
            }
            Err(entries) => entries,
        };
        let span = self.offer_span(entries.len(), None);
        async {
            self.check_sizes(entries.iter().map(|(_, value)| value.as_slice()))
                .await?;
            let writer = self.writer().await?;
            offer::run(writer.client(), self.spec(), entries).await?;
            writer.confirm(self.name()).await
        }
        .instrument(span)
        .await
    }

    /// The span of an offer of `count` values (all after `delay`, when one).
    fn offer_span(&self, count: usize, delay: Option<Delay>) -> tracing::Span {
        let span = messaging_span!(
            tracing::Level::DEBUG,
            "offer",
            Operation::Send,
            "offer",
            self.name(),
            count,
            delay_ms = delay.map(Delay::ms)
        );
        telemetry::record_batch(&span, count);
        span
    }

    /// Offers an encoded value and returns its entry's handle (see
    /// [`offer_with_handle`](Self::offer_with_handle)).
    pub(crate) async fn offer_with_handle_encoded(
        &self,
        delay: Delay,
        value: Vec<u8>,
    ) -> Result<OfferHandle> {
        let span = self.offer_span(1, Some(delay));
        let handle = async {
            self.check_sizes([value.as_slice()]).await?;
            let writer = self.writer().await?;
            let handle = offer::run_with_handle(writer.client(), self.spec(), delay, value).await?;
            writer.confirm(self.name()).await?;
            Ok::<_, Error>(handle)
        }
        .instrument(span.clone())
        .await?;
        telemetry::record_message_id(&span, handle);
        Ok(handle)
    }

    /// Offers an encoded value unless an equal one is pending; true when one was (see
    /// [`offer_unique`](Self::offer_unique)).
    pub(crate) async fn offer_unique_encoded(&self, delay: Delay, value: Vec<u8>) -> Result<bool> {
        async {
            self.check_sizes([value.as_slice()]).await?;
            let writer = self.writer().await?;
            // A new entry or an equal one's new due time: a write either way.
            let replaced = offer_unique::run(writer.client(), self.spec(), delay, value).await?;
            writer.confirm(self.name()).await?;
            Ok(replaced > 0)
        }
        .instrument(self.offer_span(1, Some(delay)))
        .await
    }

    /// Removes the entries `mode` names by encoded values; true if any was removed (see
    /// [`remove`](Self::remove)).
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name(), mode = ?mode, count = values.len()))]
    pub(crate) async fn remove_encoded(
        &self,
        mode: RemoveMode,
        values: Vec<Vec<u8>>,
    ) -> Result<bool> {
        self.check_sizes(values.iter().map(Vec::as_slice)).await?;
        Ok(remove::run(self.client(), self.spec(), mode, values).await? > 0)
    }

    /// How many of the distinct encoded `values` are pending, and how many distinct values there
    /// are (see [`contains`](Self::contains)).
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name(), count = values.len()))]
    pub(crate) async fn contains_encoded(&self, mut values: Vec<Vec<u8>>) -> Result<(u64, u64)> {
        values.sort();
        values.dedup();
        let distinct = values.len() as u64;
        self.check_sizes(values.iter().map(Vec::as_slice)).await?;
        let found = contains::run(self.client(), self.spec(), values).await?;
        Ok((found, distinct))
    }

    /// Gives the entries `which` names the due time `delay` from now; true if any was pending
    /// (see [`reschedule`](Self::reschedule)).
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name(), delay_ms = delay.ms()))]
    pub(crate) async fn reschedule_encoded(&self, delay: Delay, which: Which) -> Result<bool> {
        if let Which::Value(value) = &which {
            self.check_sizes([value.as_slice()]).await?;
        }
        Ok(reschedule::run(self.client(), self.spec(), delay, which).await? > 0)
    }
}
