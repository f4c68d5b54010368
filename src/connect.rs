//! Building a fred client that suits a delayed queue.

use crate::{Error, Result};
use fred::prelude::{Builder, ClientLike, Config, ReconnectPolicy};
use std::time::Duration;

/// How long a command may wait (for a reconnect, say) before it fails with a timeout.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`connect`] waits for the first connection.
const FIRST_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects a fred [`Client`](fred::clients::Client) from a URL, with a reconnect policy that
/// retries forever (100 ms doubling to 5 s), so schedulers and consumers survive restarts,
/// failovers and killed connections, and a 30 s command timeout, so a command that cannot be
/// sent (Redis down for longer, or the client closed) fails with a clear error instead of
/// waiting forever. Blocking waits of [`Consumer`](crate::Consumer) set their own, longer limit.
///
/// Accepts fred's URL forms: `redis://host:port/db`, `redis-cluster://host:port?node=host:port`,
/// `redis-sentinel://host:port?node=host:port&sentinelServiceName=mymaster`.
///
/// # Errors
///
/// A bad URL, or no connection within 10 seconds.
///
/// # Examples
///
/// ```no_run
/// # async fn ex() -> Result<(), delayq::Error> {
/// let client = delayq::connect("redis://127.0.0.1:6379").await?;
/// # Ok(()) }
/// ```
pub async fn connect(url: &str) -> Result<fred::clients::Client> {
    let config = Config::from_url(url)?;
    let client = Builder::from_config(config)
        .with_connection_config(|c| {
            c.connection_timeout = Duration::from_secs(5);
            c.max_command_attempts = 3;
        })
        .with_performance_config(|p| p.default_command_timeout = COMMAND_TIMEOUT)
        .set_policy(ReconnectPolicy::new_exponential(0, 100, 5_000, 2))
        .build()?;
    init_client(&client).await?;
    Ok(client)
}

/// Initialises a client made by `clone_new`, with a bound on the first connection.
pub(crate) async fn init_client(client: &fred::clients::Client) -> Result<()> {
    match tokio::time::timeout(FIRST_CONNECT_TIMEOUT, client.init()).await {
        Ok(Ok(_connection_task)) => Ok(()),
        Ok(Err(err)) => Err(err.into()),
        Err(_) => {
            // Stop the reconnect loop that is still trying in the background.
            let _ = client.quit().await;
            Err(Error::Redis(fred::error::Error::new(
                fred::error::ErrorKind::Timeout,
                format!(
                    "no connection to Redis within {}s",
                    FIRST_CONNECT_TIMEOUT.as_secs()
                ),
            )))
        }
    }
}
