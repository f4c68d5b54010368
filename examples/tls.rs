//! A connection with explicit settings: timeouts, and TLS options from the environment when
//! `REDIS_URL` is a `rediss://` URL. Offers one value, takes it back when due, and exits.
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --example tls
//! REDIS_URL=rediss://127.0.0.1:6380 TLS_CA_FILE=ca.pem cargo run --example tls
//! # mutual TLS, and a server certificate for a name other than the URL's host:
//! REDIS_URL=rediss://127.0.0.1:6380 TLS_CA_FILE=ca.pem TLS_CERT_FILE=client.pem \
//!     TLS_KEY_FILE=client.key TLS_SERVER_NAME=redis.internal cargo run --example tls
//! ```

use delayq::codec::StringCodec;
use delayq::{ConnectOptions, DelayedQueue, TlsOptions};
use std::time::Duration;

/// TLS options from `TLS_CA_FILE`, `TLS_CERT_FILE` + `TLS_KEY_FILE` and `TLS_SERVER_NAME`.
fn tls_from_env() -> TlsOptions {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut tls = TlsOptions::new();
    if let Some(ca) = var("TLS_CA_FILE") {
        tls = tls.ca_file(ca);
    }
    if let (Some(cert), Some(key)) = (var("TLS_CERT_FILE"), var("TLS_KEY_FILE")) {
        tls = tls.client_cert(cert, key);
    }
    if let Some(name) = var("TLS_SERVER_NAME") {
        tls = tls.server_name(name);
    }
    tls
}

#[tokio::main]
async fn main() -> Result<(), delayq::Error> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let mut options = ConnectOptions::new()
        .connect_timeout(Duration::from_secs(5))
        .command_timeout(Duration::from_secs(10));
    // TLS options with a plaintext URL are an error, so they are set for TLS URLs only.
    if url.starts_with("rediss") || url.starts_with("valkeys") {
        options = options.tls(tls_from_env());
    }
    let client = options.connect(&url).await?;
    // The password, if the URL holds one, is never printed.
    println!("connected to {}", delayq::names::redact_url(&url));

    let name = format!("example:tls:{}", std::process::id());
    let queue = DelayedQueue::new(client, name.as_str(), StringCodec).await?;
    queue
        .offer("hello over TLS", Duration::from_millis(200))
        .await?;
    let consumer = queue.consumer().await?;
    match consumer.poll(Duration::from_secs(10)).await? {
        Some(value) => println!("took {value:?}"),
        None => println!("nothing arrived within 10 s"),
    }
    queue.delete().await?;
    Ok(())
}
