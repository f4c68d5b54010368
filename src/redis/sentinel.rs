//! Following Sentinel's master switches: a client made through Sentinel reconnects as soon as a
//! sentinel announces `+switch-master`.

use fred::clients::{Client, SubscriberClient};
use fred::interfaces::{EventInterface, PubsubInterface};
use fred::prelude::{Builder, ClientLike, Config, ServerConfig};
use fred::types::ConnectHandle;
use std::time::Duration;
use tokio::sync::mpsc;

use super::reconnect_policy;

/// For a client configured through Sentinel: subscribes to `+switch-master` on every sentinel
/// and forces `client` to reconnect (fred then asks the sentinels for the master again) when
/// one of them announces a new master for the client's service. Ends, closing its sentinel
/// connections, when the client's connection task ends (after `quit`).
pub(super) fn follow_switches(client: &Client, mut connection_task: ConnectHandle) {
    let ServerConfig::Sentinel {
        hosts,
        service_name,
        ..
    } = client.client_config().server
    else {
        return;
    };
    let client = client.clone();
    tokio::spawn(async move {
        let (announcements_tx, mut announcements) = mpsc::unbounded_channel::<String>();
        let mut listeners = Vec::new();
        for sentinel in hosts {
            let config = Config {
                server: ServerConfig::new_centralized(sentinel.host.to_string(), sentinel.port),
                ..Config::default()
            };
            let listener = match Builder::from_config(config)
                .set_policy(reconnect_policy())
                .build_subscriber_client()
            {
                Ok(listener) => listener,
                Err(err) => {
                    tracing::warn!(%err, "cannot build a client for a sentinel");
                    continue;
                }
            };
            let forward = announcements_tx.clone();
            let task = tokio::spawn(listen_to_sentinel(listener.clone(), forward));
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

/// Connects to one sentinel, keeps a `+switch-master` subscription across reconnects, and
/// forwards every message's text.
async fn listen_to_sentinel(listener: SubscriberClient, forward: mpsc::UnboundedSender<String>) {
    let mut messages = listener.message_rx();
    let _connection_task = listener.connect();
    let _resubscribe_task = listener.manage_subscriptions();
    // Until the first subscription succeeds (the sentinel may be down for now).
    while let Err(err) = listener.subscribe("+switch-master").await {
        tracing::debug!(%err, "cannot subscribe to a sentinel yet");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
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
