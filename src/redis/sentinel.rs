//! Following Sentinel's master switches: a client made through Sentinel reconnects as soon as a
//! sentinel announces `+switch-master`.

use fred::clients::{Client, SubscriberClient};
use fred::interfaces::{EventInterface, PubsubInterface};
use fred::prelude::{Builder, ClientLike, Config, Server, ServerConfig};
use fred::types::ConnectHandle;
use std::time::Duration;
use tokio::sync::mpsc;

use crate::retry::{Backoff, Retrying};

/// For a client configured through Sentinel: subscribes to `+switch-master` on every sentinel
/// and forces `client` to reconnect (fred then asks the sentinels for the master again) when
/// one of them announces a new master for the client's service. Ends, closing its sentinel
/// connections, when the client's connection task ends (after `quit`).
///
/// The listeners connect the way the client reaches sentinels: the same TLS settings, timeouts
/// and reconnect policy, and the sentinels' own credentials (`sentinelUsername` /
/// `sentinelPassword`), not the data nodes'.
pub(super) fn follow_switches(client: &Client, mut connection_task: ConnectHandle) {
    let config = client.client_config();
    let ServerConfig::Sentinel {
        hosts,
        service_name,
        ..
    } = config.server.clone()
    else {
        return;
    };
    let client = client.clone();
    tokio::spawn(async move {
        let (announcements_tx, mut announcements) = mpsc::unbounded_channel::<String>();
        let mut listeners = Vec::new();
        for sentinel in hosts {
            let address = format!("{}:{}", sentinel.host, sentinel.port);
            let listener = match listener_builder(&client, &config, sentinel)
                .build_subscriber_client()
            {
                Ok(listener) => listener,
                Err(err) => {
                    tracing::warn!(sentinel = %address, %err, "cannot build a client for a sentinel; its +switch-master announcements are not followed");
                    continue;
                }
            };
            let forward = announcements_tx.clone();
            let task = tokio::spawn(listen_to_sentinel(listener.clone(), address, forward));
            listeners.push((listener, task));
        }
        drop(announcements_tx);

        let mut last_announcement = None;
        loop {
            tokio::select! {
                _ = &mut connection_task => break,
                announcement = announcements.recv() => {
                    let Some(announcement) = announcement else { break };
                    // "<service> <old ip> <old port> <new ip> <new port>", once per sentinel.
                    let mut words = announcement.split_whitespace();
                    if words.next() != Some(service_name.as_str())
                        || last_announcement.as_ref() == Some(&announcement)
                    {
                        continue;
                    }
                    tracing::info!(%announcement, "sentinel switched master; reconnecting");
                    if let Err(err) = client.force_reconnection().await {
                        tracing::warn!(%err, "reconnect after a master switch failed");
                    }
                    last_announcement = Some(announcement);
                }
            }
        }
        for (listener, task) in listeners {
            task.abort();
            let _ = listener.quit().await;
        }
    });
}

/// A builder for a plain connection to one sentinel, from the client's own configuration: its
/// TLS settings (and the server name the client gives that sentinel), the sentinels'
/// credentials, the client's timeouts and reconnect policy.
fn listener_builder(client: &Client, config: &Config, sentinel: Server) -> Builder {
    let (username, password) = match &config.server {
        ServerConfig::Sentinel {
            username, password, ..
        } => (username.clone(), password.clone()),
        _ => (None, None),
    };
    let mut listener_config = config.clone();
    listener_config.server = ServerConfig::Centralized { server: sentinel };
    listener_config.username = username;
    listener_config.password = password;
    listener_config.database = None;
    let mut builder = Builder::from_config(listener_config);
    builder.set_connection_config(client.connection_config().clone());
    if let Some(policy) = client.client_reconnect_policy() {
        builder.set_policy(policy);
    }
    builder
}

/// Waits between attempts to connect and subscribe to a sentinel: 100 ms doubling to 5 s.
fn listener_backoff() -> Backoff {
    Backoff::doubling(Duration::from_millis(100), Duration::from_secs(5))
}

/// Connects to one sentinel (retrying until it works), keeps a `+switch-master` subscription
/// across reconnects, and forwards every message's text. The first failure to connect or
/// subscribe is a warning (with fred's reason: a wrong password, a TLS error), so a listener
/// that cannot work is never silent.
async fn listen_to_sentinel(
    listener: SubscriberClient,
    address: String,
    forward: mpsc::UnboundedSender<String>,
) {
    let mut messages = listener.message_rx();
    let mut retrying = Retrying::new(listener_backoff());
    let _connection_task = loop {
        match super::connect_bounded(&listener).await {
            Ok(task) => break task,
            Err(err) => {
                report_failure(&address, &err, retrying.failures(), "connect to");
                tokio::time::sleep(retrying.failed()).await;
            }
        }
    };
    let _resubscribe_task = listener.manage_subscriptions();
    let mut retrying = Retrying::new(listener_backoff());
    while let Err(err) = listener.subscribe("+switch-master").await {
        report_failure(&address, &err, retrying.failures(), "subscribe on");
        tokio::time::sleep(retrying.failed()).await;
    }
    tracing::debug!(sentinel = %address, "following +switch-master");
    loop {
        match messages.recv().await {
            Ok(message) => {
                if let Some(text) = message.value.as_str() {
                    if forward.send(text.to_string()).is_err() {
                        break;
                    }
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        }
    }
}

/// A warning for the first failure, debug lines for the retries after it.
fn report_failure(address: &str, err: &dyn std::fmt::Display, failures: u32, what: &str) {
    if failures == 0 {
        tracing::warn!(
            sentinel = %address,
            %err,
            "cannot {what} a sentinel to follow +switch-master; retrying (until then a failover \
             is noticed only when the old master drops its clients)"
        );
    } else {
        tracing::debug!(sentinel = %address, %err, failures, "still cannot {what} a sentinel");
    }
}
