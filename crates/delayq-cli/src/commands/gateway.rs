//! `delayq gateway`: the QStash-compatible gateway (`delayq-gateway`) on the listener every
//! long-running command shares, loopback unless `--allow-remote`, with `/metrics` (behind the
//! token) and `/healthz` beside it, and its deliveries, until SIGINT or SIGTERM.

use super::ui::read_private_token;
use super::Ctx;
use crate::exit::Usage;
use crate::gateway_args::GatewayArgs;
use delayq_gateway::{Gateway, GatewayConfig};

/// `config` with the secrets of `args` besides the admin tokens and the signing keys: the
/// Standard Webhooks secrets and the publish and native tokens, each from a file only its
/// owner may read.
fn with_other_secrets(
    mut config: GatewayConfig,
    args: &GatewayArgs,
) -> anyhow::Result<GatewayConfig> {
    if let Some(path) = &args.standard_webhooks_secret_file {
        config = config.with_standard_webhooks_secret(read_private_token(path)?);
    }
    if let Some(path) = &args.standard_webhooks_next_secret_file {
        config = config.with_standard_webhooks_next_secret(read_private_token(path)?);
    }
    for path in &args.publish_token_files {
        config = config.with_publish_token(read_private_token(path)?);
    }
    for path in &args.native_token_files {
        config = config.with_native_token(read_private_token(path)?);
    }
    Ok(config)
}

/// Serves the gateway and delivers its messages until SIGINT or SIGTERM.
pub(crate) async fn gateway(ctx: Ctx, args: GatewayArgs) -> anyhow::Result<()> {
    // Every file and setting is checked before the port is taken; the secrets go nowhere but
    // into the config (never into a message or the log).
    let mut admins = args.token_files.iter().map(|p| read_private_token(p));
    let token = admins
        .next()
        .ok_or_else(|| Usage("give at least one --token-file".into()))??;
    let current = read_private_token(&args.signing_key_file)?;
    let next = args
        .next_signing_key_file
        .as_deref()
        .map(read_private_token)
        .transpose()?;
    let mut config = GatewayConfig::new(token, current)
        .with_queue(args.queue.clone())
        .with_body_limit(args.body_limit)
        .with_dedup_window(args.dedup_window)
        .with_dedup_lease(args.dedup_lease)
        .with_request_timeout(args.request_timeout)
        .with_backoff(args.retry_first_wait, args.retry_max_wait)
        .with_concurrency(args.concurrency)
        .with_keep_delivered(args.keep_delivered)
        .with_events_kept(args.events_kept, args.events_max_age);
    if let Some(next) = next {
        config = config.with_next_key(next);
    }
    for token in admins {
        config = config.with_token(token?);
    }
    config = with_other_secrets(config, &args)?;
    for pattern in &args.native_queues {
        config = config.allow_native_queue(pattern.clone());
    }
    for prefix in &args.allow_destinations {
        config = config.allow_destination(prefix.clone());
    }
    let bound = crate::serve::bind(args.listen, &args.http).await?;
    // /metrics (the gateway queue's gauges and the deliveries' counters) behind the token, and
    // /healthz open, beside the API, as `delayq ui` serves them; the recorder first, so that
    // the first deliveries are counted.
    let mut observed = crate::serve::Observed::new(&ctx.client, None, &args.http)?;
    delayq_gateway::describe_metrics();
    let gateway = match Gateway::new(ctx.client.clone(), config).await {
        Ok(gateway) => gateway,
        Err(delayq_gateway::Error::InvalidConfig(why)) => return Err(Usage(why).into()),
        Err(err) => return Err(err.into()),
    };
    let guard = gateway.clone();
    observed.guard_metrics(move |headers| guard.authorizes(headers));
    let delivery = gateway.deliver()?;
    let queue = args.queue.clone();
    let gauges = crate::serve::Gauges {
        client: ctx.client.clone(),
        names: Box::new(move || vec![queue.clone()]),
        budget: args.http.metrics_read_budget,
    };
    let addr = bound.addr;
    let server = crate::serve::Server::start(bound, None, observed, gateway.router(), Some(gauges));
    crate::logging::status!(
        "QStash-compatible gateway of {} on http://{addr}/v2/ (queue {}; deliveries to {}; \
         Ctrl-C to stop)",
        delayq::names::redact_url(&ctx.global.url),
        args.queue,
        args.allow_destinations.join(", ")
    );
    let stopped = super::transfer::wait_for_stop_signal().await;
    server.shutdown().await;
    delivery.shutdown().await?;
    stopped
}
