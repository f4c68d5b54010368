//! `delayq gateway`'s options: the listener, the token and signing key files, the allow-list
//! of destinations and the delivery settings.

use crate::duration::parse_duration;
use clap::Args;
use std::time::Duration;

/// `delayq gateway`'s options.
#[derive(Debug, Args)]
pub(crate) struct GatewayArgs {
    /// Where to serve the API; a loopback address unless --allow-remote.
    #[arg(
        long,
        env = "DELAYQ_GATEWAY_LISTEN",
        value_name = "ADDR",
        default_value = "127.0.0.1:8480"
    )]
    pub(crate) listen: std::net::SocketAddr,
    #[command(flatten, next_help_heading = "HTTP listener")]
    pub(crate) http: crate::serve::ListenArgs,
    /// A file (mode 0600, first line at least 16 characters) holding an admin token, which
    /// clients send as `Authorization: Bearer TOKEN` (the SDKs' QSTASH_TOKEN): every route
    /// (repeatable, at least one; also --admin-token-file).
    #[arg(
        long = "token-file",
        visible_alias = "admin-token-file",
        env = "DELAYQ_GATEWAY_TOKEN_FILE",
        value_delimiter = ',',
        value_name = "PATH",
        required = true
    )]
    pub(crate) token_files: Vec<std::path::PathBuf>,
    /// A file (mode 0600) holding a publish-only token: publish, batch, enqueue, and reading
    /// the messages published with it; any other route is answered 403 (repeatable).
    #[arg(
        long = "publish-token-file",
        env = "DELAYQ_GATEWAY_PUBLISH_TOKEN_FILE",
        value_delimiter = ',',
        value_name = "PATH"
    )]
    pub(crate) publish_token_files: Vec<std::path::PathBuf>,
    /// A file (mode 0600) holding a token of the native queues (/v1/queues/...) only
    /// (repeatable).
    #[arg(
        long = "native-token-file",
        env = "DELAYQ_GATEWAY_NATIVE_TOKEN_FILE",
        value_delimiter = ',',
        value_name = "PATH"
    )]
    pub(crate) native_token_files: Vec<std::path::PathBuf>,
    /// A file (mode 0600) holding the current signing key (QSTASH_CURRENT_SIGNING_KEY of the
    /// receivers): every delivery's Upstash-Signature is made with it.
    #[arg(long, env = "DELAYQ_GATEWAY_SIGNING_KEY_FILE", value_name = "PATH")]
    pub(crate) signing_key_file: std::path::PathBuf,
    /// A file (mode 0600) holding the next signing key (QSTASH_NEXT_SIGNING_KEY); default: the
    /// current one.
    #[arg(
        long,
        env = "DELAYQ_GATEWAY_NEXT_SIGNING_KEY_FILE",
        value_name = "PATH"
    )]
    pub(crate) next_signing_key_file: Option<std::path::PathBuf>,
    // The text is --help's: a bare URL reads best there.
    #[allow(rustdoc::bare_urls)]
    /// A file (mode 0600) holding a Standard Webhooks secret (`whsec_` and base64 of 24 to 64
    /// bytes): every attempt then also carries webhook-id, webhook-timestamp and
    /// webhook-signature (https://www.standardwebhooks.com), beside Upstash-Signature.
    #[arg(
        long,
        env = "DELAYQ_GATEWAY_STANDARD_WEBHOOKS_SECRET_FILE",
        value_name = "PATH"
    )]
    pub(crate) standard_webhooks_secret_file: Option<std::path::PathBuf>,
    /// During a rotation, a file (mode 0600) holding the next Standard Webhooks secret: every
    /// webhook-signature then holds both signatures, space-separated (`v1,SIG1 v1,SIG2`), so
    /// that receivers on either secret verify it. Needs --standard-webhooks-secret-file.
    #[arg(
        long,
        env = "DELAYQ_GATEWAY_STANDARD_WEBHOOKS_NEXT_SECRET_FILE",
        value_name = "PATH",
        requires = "standard_webhooks_secret_file"
    )]
    pub(crate) standard_webhooks_next_secret_file: Option<std::path::PathBuf>,
    /// Deliver only to destinations with URL-PREFIX's scheme, host and port whose path starts
    /// with its path (repeatable, required); anything else is refused at publish (403).
    #[arg(
        long = "allow-destination",
        env = "DELAYQ_GATEWAY_ALLOW_DESTINATION",
        value_delimiter = ',',
        value_name = "URL-PREFIX",
        required = true
    )]
    pub(crate) allow_destinations: Vec<String>,
    /// Allow the native queues (/v1/queues/NAME/...: offer a value into a Redisson queue for
    /// Java consumers) whose names match PATTERN, `*` standing for any run of characters
    /// (repeatable; none by default: every native request is refused).
    #[arg(
        long = "native-queue",
        env = "DELAYQ_GATEWAY_NATIVE_QUEUE",
        value_delimiter = ',',
        value_name = "PATTERN"
    )]
    pub(crate) native_queues: Vec<String>,
    /// The delayq queue the messages are entries of.
    #[arg(
        long,
        env = "DELAYQ_GATEWAY_QUEUE",
        value_name = "NAME",
        default_value = "delayq-gateway"
    )]
    pub(crate) queue: String,
    /// The largest body accepted, in bytes (413 past it).
    #[arg(long, env = "DELAYQ_GATEWAY_BODY_LIMIT", value_name = "BYTES", default_value_t = 1024 * 1024)]
    pub(crate) body_limit: usize,
    /// How long a deduplication id is remembered, whatever became of its message.
    #[arg(long, env = "DELAYQ_GATEWAY_DEDUP_WINDOW", value_name = "DURATION", value_parser = parse_duration, default_value = "10m")]
    pub(crate) dedup_window: Duration,
    /// How long a publish may take between claiming its deduplication id and storing its
    /// message; a publish with the id after that (its first publisher died) takes it over.
    #[arg(long, env = "DELAYQ_GATEWAY_DEDUP_LEASE", value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub(crate) dedup_lease: Duration,
    /// The timeout of one delivery attempt (Upstash-Timeout may lower it).
    #[arg(long, env = "DELAYQ_GATEWAY_REQUEST_TIMEOUT", value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub(crate) request_timeout: Duration,
    /// The wait before the first retry; each next one is about twelve times longer (QStash's
    /// e^2.5), up to --retry-max-wait; a destination's Retry-After replaces it.
    #[arg(long, env = "DELAYQ_GATEWAY_RETRY_FIRST_WAIT", value_name = "DURATION", value_parser = parse_duration, default_value = "12s")]
    pub(crate) retry_first_wait: Duration,
    /// The longest wait between two attempts.
    #[arg(long, env = "DELAYQ_GATEWAY_RETRY_MAX_WAIT", value_name = "DURATION", value_parser = parse_duration, default_value = "1d")]
    pub(crate) retry_max_wait: Duration,
    /// Deliveries in flight at once in this process.
    #[arg(
        long,
        env = "DELAYQ_GATEWAY_CONCURRENCY",
        value_name = "N",
        default_value_t = 16
    )]
    pub(crate) concurrency: usize,
    /// How long a delivered message stays readable with GET /v2/messages/{id} (0: gone once
    /// delivered, as QStash).
    #[arg(long, env = "DELAYQ_GATEWAY_KEEP_DELIVERED", value_name = "DURATION", value_parser = parse_duration, default_value = "0")]
    pub(crate) keep_delivered: Duration,
    /// The most events (GET /v2/events, /v2/logs) kept; older ones are trimmed.
    #[arg(
        long,
        env = "DELAYQ_GATEWAY_EVENTS_KEPT",
        value_name = "N",
        default_value_t = 10_000
    )]
    pub(crate) events_kept: usize,
    /// The longest an event is kept.
    #[arg(long, env = "DELAYQ_GATEWAY_EVENTS_MAX_AGE", value_name = "DURATION", value_parser = parse_duration, default_value = "1d")]
    pub(crate) events_max_age: Duration,
}
