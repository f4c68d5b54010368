//! Running a parsed command: connect, then hand over to the command's group.

mod check;
mod docs;
mod gateway;
mod limit;
mod lists;
mod pause;
mod queue;
mod queues;
mod schedule;
mod take;
mod target;
mod transfer;
mod ui;
mod work;

use crate::cli::{Cli, Command, Global};
use crate::codec_choice::Codecs;
pub(crate) use crate::ctx::Ctx;
use crate::exit::Usage;
use anyhow::{bail, Context};
use delayq::fred::clients::Client;
use delayq::names::redact_url;

/// Connects as the global options say; no message carries the password.
async fn connect(global: &Global) -> anyhow::Result<Client> {
    let url = redact_url(&global.url);
    let options = global.connection.options();
    let mut config = options.config(&global.url).map_err(|err| {
        let what = match err {
            // A URL the client cannot parse (a bad port or database number) is the command
            // line's fault: a usage error.
            delayq::Error::Redis(_) => {
                return anyhow::Error::from(Usage(format!("bad Redis URL {url}: {err}")))
            }
            _ => format!("cannot use the connection settings for {url}"),
        };
        anyhow::Error::from(err).context(what)
    })?;
    if let Some(password) = password(global)? {
        config.password = Some(password);
    }
    match delayq::connect_with(&options.builder_for(config)).await {
        Ok(client) => Ok(client),
        Err(err @ delayq::Error::Tls { failure, .. }) => {
            let hint = crate::connection::tls_hint(failure);
            Err(err).with_context(|| format!("cannot connect to {url}: {hint}"))
        }
        Err(err) if err.is_connection_error() => {
            Err(err).with_context(|| format!("cannot connect to {url}"))
        }
        Err(err) => Err(err.into()),
    }
}

/// The password from `--password-file` or `--password-from-env`, if either is given.
fn password(global: &Global) -> anyhow::Result<Option<String>> {
    if let Some(path) = &global.password_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the password file {}", path.display()))?;
        let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
        if line.is_empty() {
            bail!("the password file {} is empty", path.display());
        }
        return Ok(Some(line.to_owned()));
    }
    if global.password_env {
        return match std::env::var("REDIS_PASSWORD") {
            Ok(password) if !password.is_empty() => Ok(Some(password)),
            _ => bail!("--password-from-env: REDIS_PASSWORD is not set"),
        };
    }
    Ok(None)
}

/// Runs the command; false when it ran but has something to report by its exit status (a
/// `remove`/`reschedule`/`cancel --exit-status` that found nothing, a check that warns, a
/// queue `queues` could not read).
pub(crate) async fn run(cli: Cli) -> anyhow::Result<bool> {
    match cli.command {
        Command::Completions { shell } => return docs::completions(shell).map(|()| true),
        Command::Man => return docs::man().map(|()| true),
        _ => {}
    }
    let global = cli.global;
    let codecs =
        Codecs::new(global.codec, &global.codec_for, global.java_class.clone()).map_err(Usage)?;
    let client = match (connect(&global).await, &cli.command) {
        (Ok(client), _) => client,
        // A server busy with a script refuses the connection's first command: that is what
        // `check` is there to say.
        (Err(err), Command::Check { target }) => {
            return check::of_busy_server(target, global.json, &err).ok_or(err)
        }
        (Err(err), _) => return Err(err),
    };
    let ctx = Ctx {
        client,
        codecs,
        global,
    };
    dispatch(ctx, cli.command).await
}

/// Runs `command` with the connection and options of `ctx`; as [`run`].
async fn dispatch(ctx: Ctx, command: Command) -> anyhow::Result<bool> {
    let done = |result: anyhow::Result<()>| result.map(|()| true);
    match command {
        Command::Offer {
            target,
            value,
            delay,
            unique,
            handle,
            dedup,
            durability,
        } => {
            let values = ctx.values(&value, &target.queue)?;
            let durability = durability.durability();
            done(match dedup.dedup() {
                Some(dedup) => {
                    queue::offer_dedup(&ctx, &target, &values, delay, &dedup, durability).await
                }
                None => {
                    let how = queue::OfferHow::of(unique, handle);
                    queue::offer(&ctx, &target, &values, delay, how, durability).await
                }
            })
        }
        Command::Cancel {
            target,
            handle,
            exit_status,
        } => queue::cancel(&ctx, &target, &handle)
            .await
            .map(|found| found || !exit_status),
        Command::Queues { pattern } => queues::queues(&ctx, pattern).await,
        Command::Reschedule {
            target,
            value,
            delay,
            exit_status,
        } => {
            let values = ctx.values(&value, &target.queue)?;
            queue::reschedule(&ctx, &target, &values, delay)
                .await
                .map(|found| found || !exit_status)
        }
        Command::Take {
            target,
            count,
            timeout,
        } => take::take(&ctx, &target, count, timeout).await,
        Command::Remove {
            target,
            value,
            exit_status,
        } => {
            let values = ctx.values(&value, &target.queue)?;
            queue::remove(&ctx, &target, &values)
                .await
                .map(|found| found || !exit_status)
        }
        Command::Peek { target, limit } => done(queue::peek(&ctx, &target, limit).await),
        Command::Stats { target } => done(queue::stats(&ctx, &target).await),
        Command::Check { target } => check::check(&ctx, &target).await,
        Command::Clear { target } => done(queue::clear(&ctx, &target).await),
        Command::Pause { target } => done(pause::pause(&ctx, &target, true).await),
        Command::Resume { target } => done(pause::pause(&ctx, &target, false).await),
        Command::Work(args) => done(work::work(&ctx, args).await),
        Command::Dead { action } => lists::dead(&ctx, action).await,
        Command::Inflight { action } => done(lists::inflight(&ctx, action).await),
        Command::Ready { action } => done(lists::ready(&ctx, action).await),
        Command::Quarantine { action } => done(lists::quarantine(&ctx, action).await),
        Command::Schedule { action } => schedule::schedule(&ctx, action).await,
        Command::Transfer(args) => done(transfer::transfer(&ctx, &args).await),
        Command::Ui(args) => done(ui::ui(ctx, args).await),
        Command::Gateway(args) => done(gateway::gateway(ctx, args).await),
        Command::Limit { action } => limit::limit(&ctx, action).await,
        Command::Completions { .. } | Command::Man => Ok(true),
    }
}
