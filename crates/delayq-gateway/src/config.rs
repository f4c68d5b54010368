//! [`GatewayConfig`]: who may publish, where messages may go, how they are delivered.

use crate::error::{Error, Result};
use std::fmt;
use std::time::Duration;

/// The most retries a message may ask for with `Upstash-Retries`.
pub const MAX_RETRIES: u32 = 100;

/// The gateway's settings. Secrets (tokens, signing keys) are never shown by `Debug`.
#[derive(Clone)]
#[non_exhaustive]
pub struct GatewayConfig {
    pub(crate) queue: String,
    pub(crate) tokens: Vec<String>,
    pub(crate) publish_tokens: Vec<String>,
    pub(crate) native_tokens: Vec<String>,
    pub(crate) current_key: String,
    pub(crate) next_key: String,
    pub(crate) destinations: Vec<String>,
    pub(crate) body_limit: usize,
    pub(crate) dedup_window: Duration,
    pub(crate) dedup_lease: Duration,
    pub(crate) max_delay: Duration,
    pub(crate) default_retries: u32,
    pub(crate) request_timeout: Duration,
    pub(crate) backoff_first: Duration,
    pub(crate) backoff_max: Duration,
    pub(crate) concurrency: usize,
    /// `whsec_...`: the Standard Webhooks signature is added to every attempt.
    pub(crate) standard_webhooks_secret: Option<String>,
    /// `whsec_...`: during a rotation, a second Standard Webhooks signature.
    pub(crate) standard_webhooks_next_secret: Option<String>,
    /// Patterns of the native queues' names (`*` for any run of characters).
    pub(crate) native_queues: Vec<String>,
    pub(crate) keep_delivered: Duration,
    pub(crate) events_kept: usize,
    pub(crate) events_max_age: Duration,
}

impl fmt::Debug for GatewayConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatewayConfig")
            .field("queue", &self.queue)
            .field("tokens", &format_args!("[{} redacted]", self.tokens.len()))
            .field(
                "publish_tokens",
                &format_args!("[{} redacted]", self.publish_tokens.len()),
            )
            .field(
                "native_tokens",
                &format_args!("[{} redacted]", self.native_tokens.len()),
            )
            .field("destinations", &self.destinations)
            .field("body_limit", &self.body_limit)
            .field("dedup_window", &self.dedup_window)
            .field("dedup_lease", &self.dedup_lease)
            .field("max_delay", &self.max_delay)
            .field("default_retries", &self.default_retries)
            .field("request_timeout", &self.request_timeout)
            .field("backoff_first", &self.backoff_first)
            .field("backoff_max", &self.backoff_max)
            .field("concurrency", &self.concurrency)
            .field("native_queues", &self.native_queues)
            .field(
                "standard_webhooks_secret",
                &self.standard_webhooks_secret.as_ref().map(|_| "redacted"),
            )
            .field(
                "standard_webhooks_next_secret",
                &self
                    .standard_webhooks_next_secret
                    .as_ref()
                    .map(|_| "redacted"),
            )
            .field("keep_delivered", &self.keep_delivered)
            .field("events_kept", &self.events_kept)
            .field("events_max_age", &self.events_max_age)
            .finish_non_exhaustive()
    }
}

impl GatewayConfig {
    /// A gateway that accepts `token` (as `Authorization: Bearer TOKEN`, with the admin role:
    /// every route) and signs deliveries
    /// with `current_key` (the next key is the same until [`with_next_key`](Self::with_next_key)).
    /// Nothing may be published until [`allow_destination`](Self::allow_destination) is given.
    pub fn new(token: impl Into<String>, current_key: impl Into<String>) -> GatewayConfig {
        let current_key = current_key.into();
        GatewayConfig {
            queue: "delayq-gateway".into(),
            tokens: vec![token.into()],
            publish_tokens: Vec::new(),
            native_tokens: Vec::new(),
            next_key: current_key.clone(),
            current_key,
            destinations: Vec::new(),
            body_limit: 1024 * 1024,
            dedup_window: Duration::from_secs(10 * 60),
            dedup_lease: Duration::from_secs(10),
            max_delay: Duration::from_secs(365 * 24 * 3600),
            default_retries: 3,
            request_timeout: Duration::from_secs(30),
            backoff_first: Duration::from_secs(12),
            backoff_max: Duration::from_secs(24 * 3600),
            concurrency: 16,
            standard_webhooks_secret: None,
            standard_webhooks_next_secret: None,
            native_queues: Vec::new(),
            keep_delivered: Duration::ZERO,
            events_kept: 10_000,
            events_max_age: Duration::from_secs(24 * 3600),
        }
    }

    /// The delayq queue the messages are entries of. Default: `delayq-gateway`.
    #[must_use]
    pub fn with_queue(mut self, name: impl Into<String>) -> Self {
        self.queue = name.into();
        self
    }

    /// Accepts `token` too, with the admin role (several processes or clients with their
    /// own). Default: the one token given to [`new`](Self::new).
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.tokens.push(token.into());
        self
    }

    /// Accepts `token` with the publish role: publish, batch, enqueue, and reading the
    /// messages published with it; any other route is answered 403. Default: none.
    #[must_use]
    pub fn with_publish_token(mut self, token: impl Into<String>) -> Self {
        self.publish_tokens.push(token.into());
        self
    }

    /// Accepts `token` with the native role: the native queues (`/v1/queues/...`) only.
    /// Default: none.
    #[must_use]
    pub fn with_native_token(mut self, token: impl Into<String>) -> Self {
        self.native_tokens.push(token.into());
        self
    }

    /// The next signing key, which receivers try when the current one fails. Default: the
    /// current key.
    #[must_use]
    pub fn with_next_key(mut self, key: impl Into<String>) -> Self {
        self.next_key = key.into();
        self
    }

    /// Allows destinations with the scheme, host and port of `prefix` (an `http://` or
    /// `https://` URL) whose path starts with its path: `http://10.0.0.5:3000/hooks/` allows
    /// `http://10.0.0.5:3000/hooks/orders?id=1`. Required: without any, the gateway refuses to
    /// start. Default: none.
    #[must_use]
    pub fn allow_destination(mut self, prefix: impl Into<String>) -> Self {
        self.destinations.push(prefix.into());
        self
    }

    /// The largest body accepted; a bigger one is answered 413. Default: 1 MiB.
    #[must_use]
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// How long a deduplication id is remembered, whatever became of its message. Default:
    /// 10 minutes (QStash's documented window).
    #[must_use]
    pub fn with_dedup_window(mut self, window: Duration) -> Self {
        self.dedup_window = window;
        self
    }

    /// How long a publish may take between claiming its deduplication id and storing its
    /// message. A publish with the id meanwhile waits for the first to be stored and answers
    /// its id; once the lease is over (the first publisher died or lost Redis after claiming)
    /// it takes the id over and stores its own message. A publisher slower than the lease may
    /// then store a second message under the id (a duplicate, never a loss). Default: 10 s.
    #[must_use]
    pub fn with_dedup_lease(mut self, lease: Duration) -> Self {
        self.dedup_lease = lease;
        self
    }

    /// The longest `Upstash-Delay` (or `Upstash-Not-Before` ahead) accepted. Default: 365 days.
    #[must_use]
    pub fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// The timeout of one delivery attempt; `Upstash-Timeout` may lower it. Default: 30 s.
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The wait before the first retry, growing about twelvefold per retry (QStash's
    /// `e^2.5`) up to `max`; a destination's `Retry-After` replaces it. Default: 12 s, 1 day.
    #[must_use]
    pub fn with_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.backoff_first = first;
        self.backoff_max = max;
        self
    }

    /// Deliveries in flight at once in this process. Default: 16.
    #[must_use]
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// Adds a [Standard Webhooks](https://www.standardwebhooks.com) signature to every attempt,
    /// beside `Upstash-Signature`: `webhook-id` (the message id), `webhook-timestamp` and
    /// `webhook-signature` (`v1,` base64 HMAC-SHA256 of `ID.TIMESTAMP.BODY`), made with
    /// `secret` (`whsec_` and the base64 of 24 to 64 bytes). Default: none.
    #[must_use]
    pub fn with_standard_webhooks_secret(mut self, secret: impl Into<String>) -> Self {
        self.standard_webhooks_secret = Some(secret.into());
        self
    }

    /// During a rotation of the Standard Webhooks secret, the next secret (the same format):
    /// every attempt's `webhook-signature` then holds two signatures, space-separated as the
    /// spec has them (`v1,SIG1 v1,SIG2`, the current secret's first), so that receivers
    /// holding either secret verify it. Needs
    /// [`with_standard_webhooks_secret`](Self::with_standard_webhooks_secret). Default: none.
    #[must_use]
    pub fn with_standard_webhooks_next_secret(mut self, secret: impl Into<String>) -> Self {
        self.standard_webhooks_next_secret = Some(secret.into());
        self
    }

    /// Allows the native queues (`/v1/queues/{name}/...`) whose names match `pattern`, where
    /// `*` stands for any run of characters (`orders`, `orders:*`, `*`). Default: none, and
    /// every native request is refused (403).
    #[must_use]
    pub fn allow_native_queue(mut self, pattern: impl Into<String>) -> Self {
        self.native_queues.push(pattern.into());
        self
    }

    /// How long a delivered message stays readable with `GET /v2/messages/{id}`. Default:
    /// zero (gone once delivered, as QStash's "removed shortly after delivery").
    #[must_use]
    pub fn with_keep_delivered(mut self, keep: Duration) -> Self {
        self.keep_delivered = keep;
        self
    }

    /// How many events (`GET /v2/events`) are kept at most, and for how long at most (the
    /// older ones are trimmed as new ones come). Default: 10,000 and 1 day.
    #[must_use]
    pub fn with_events_kept(mut self, count: usize, max_age: Duration) -> Self {
        self.events_kept = count;
        self.events_max_age = max_age;
        self
    }

    /// Refuses settings that cannot work.
    pub(crate) fn validate(&self) -> Result<()> {
        let invalid = |why: String| Err(Error::InvalidConfig(why));
        let all: Vec<&String> = self
            .tokens
            .iter()
            .chain(&self.publish_tokens)
            .chain(&self.native_tokens)
            .collect();
        if all.iter().any(|t| t.len() < 16) {
            return invalid("every token must have at least 16 characters".into());
        }
        let distinct: std::collections::HashSet<&String> = all.iter().copied().collect();
        if distinct.len() != all.len() {
            return invalid("a token is given twice: give each role and client its own".into());
        }
        if self.current_key.is_empty() || self.next_key.is_empty() {
            return invalid("the signing keys must not be empty".into());
        }
        if self.destinations.is_empty() {
            return invalid(
                "no destination is allowed: give at least one allow_destination prefix".into(),
            );
        }
        for prefix in &self.destinations {
            match reqwest::Url::parse(prefix) {
                Ok(url)
                    if matches!(url.scheme(), "http" | "https")
                        && url.has_host()
                        && url.query().is_none()
                        && url.username().is_empty() => {}
                _ => {
                    return invalid(format!(
                        "{prefix:?} is not an http:// or https:// URL without a query or user"
                    ))
                }
            }
        }
        self.webhooks_signer()?;
        if self.native_queues.iter().any(String::is_empty) {
            return invalid("a native queue pattern must not be empty".into());
        }
        if self.concurrency == 0 || self.body_limit == 0 || self.request_timeout.is_zero() {
            return invalid("concurrency, body limit and request timeout must be positive".into());
        }
        Ok(())
    }

    /// The Standard Webhooks signer, when the signature is asked for, or why the secrets are
    /// not ones.
    pub(crate) fn webhooks_signer(&self) -> Result<Option<crate::webhooks::Signer>> {
        let next = self.standard_webhooks_next_secret.as_deref();
        match (&self.standard_webhooks_secret, next) {
            (Some(current), next) => crate::webhooks::Signer::new(current, next)
                .map(Some)
                .map_err(Error::InvalidConfig),
            (None, Some(_)) => Err(Error::InvalidConfig(
                "a next Standard Webhooks secret needs a current one".into(),
            )),
            (None, None) => Ok(None),
        }
    }

    /// Whether `url` may be a destination: for some allowed prefix, the same scheme, host and
    /// port (as a URL parser reads them, so that no spelling of another host passes), and a path
    /// that starts with the prefix's.
    pub(crate) fn allows(&self, url: &str) -> bool {
        let Ok(url) = reqwest::Url::parse(url) else {
            return false;
        };
        self.destinations.iter().any(|prefix| {
            let Ok(prefix) = reqwest::Url::parse(prefix) else {
                return false;
            };
            url.scheme() == prefix.scheme()
                && url.host_str() == prefix.host_str()
                && url.port_or_known_default() == prefix.port_or_known_default()
                && url.path().starts_with(prefix.path())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_list_compares_what_a_parser_reads() {
        let config = GatewayConfig::new("t".repeat(16), "k")
            .allow_destination("http://127.0.0.1:3000/hooks/")
            .allow_destination("https://api.example");
        for ok in [
            "http://127.0.0.1:3000/hooks/a?x=1",
            "http://2130706433:3000/hooks/a",
            "https://API.example/anything",
            "https://api.example:443/x",
        ] {
            assert!(config.allows(ok), "{ok}");
        }
        for refused in [
            "http://127.0.0.1:3000/other",
            "http://127.0.0.1:30000/hooks/",
            "http://127.0.0.1:3000@127.0.0.2/hooks/",
            "https://api.example.evil.test/",
            "https://api.example@evil.test/",
            "http://api.example/",
            "https://api.example:8443/",
            "not a url",
        ] {
            assert!(!config.allows(refused), "{refused}");
        }
        assert!(config.validate().is_ok());
        let bad = GatewayConfig::new("t".repeat(16), "k").allow_destination("http://h/?q=1");
        assert!(bad.validate().is_err());
    }
}
