//! `delayq ui`: the dashboard, on a loopback address unless told otherwise.

use super::Ctx;
use crate::cli::UiArgs;
use anyhow::{bail, Context};

/// Serves the dashboard until SIGINT or SIGTERM.
pub(crate) async fn ui(ctx: Ctx, args: UiArgs) -> anyhow::Result<()> {
    if !args.listen.ip().is_loopback() && !args.allow_remote {
        bail!(
            "{} is not a loopback address: anyone who reaches it would see the queues' values; \
             add --allow-remote to mean it",
            args.listen
        );
    }
    let token = match args.allow_writes {
        true => Some(token(&args)?),
        false => None,
    };
    let observed = crate::serve::Observed {
        prometheus: crate::serve::recorder()?,
        client: ctx.client.clone(),
        group: None,
    };
    let client = ctx.client.clone();
    let url = delayq::redact_url(&ctx.global.url);
    let router = crate::ui::routes(crate::ui::Ui {
        ctx,
        token,
        pattern: args.pattern.clone(),
    })
    .merge(crate::serve::routes(observed));
    let server = crate::serve::Server::start(args.listen, router, &client, None).await?;
    let mode = if args.allow_writes {
        "writes allowed (with the token)"
    } else {
        "read-only"
    };
    eprintln!(
        "delayq: dashboard of {url} on http://{}/ ({mode}; Ctrl-C to stop)",
        server.addr
    );
    super::transfer::wait_for_stop_signal().await?;
    server.shutdown().await;
    Ok(())
}

/// The write token: the file's first line, else DELAYQ_UI_TOKEN, else a new one printed once.
fn token(args: &UiArgs) -> anyhow::Result<String> {
    if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the token file {}", path.display()))?;
        let line = text.lines().next().unwrap_or("").trim().to_owned();
        if line.len() < 16 {
            bail!(
                "the token in {} is shorter than 16 characters",
                path.display()
            );
        }
        return Ok(line);
    }
    if let Ok(token) = std::env::var("DELAYQ_UI_TOKEN") {
        if token.len() >= 16 {
            return Ok(token);
        }
        bail!("DELAYQ_UI_TOKEN is shorter than 16 characters");
    }
    let token: String = (0..32)
        .map(|_| char::from_digit(rand::random_range(0..16u32), 16).unwrap_or('0'))
        .collect();
    eprintln!("delayq: write token (shown once): {token}");
    Ok(token)
}
