//! `delayq ui`: the dashboard, on a loopback address unless told otherwise.

use super::Ctx;
use crate::cli::UiArgs;
use crate::exit::Usage;
use anyhow::Context;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Serves the dashboard until SIGINT or SIGTERM.
pub(crate) async fn ui(ctx: Ctx, args: UiArgs) -> anyhow::Result<()> {
    let bound = crate::serve::bind(args.listen, &args.http).await?;
    let token = match args.allow_writes {
        true => Some(token(&args)?),
        false => None,
    };
    let mut observed = crate::serve::Observed::new(&ctx.client, None, &args.http)?;
    let url = delayq::names::redact_url(&ctx.global.url);
    let admin = match &args.admin_token_file {
        Some(path) => Some(read_private_token(path)?),
        None => token.as_ref().map(|t| t.text.clone()),
    };
    let operator = args.operator_token_file.as_deref().map(read_private_token);
    let reader = args.read_token_file.as_deref().map(read_private_token);
    let access = crate::ui::Tokens::new(reader.transpose()?, operator.transpose()?, admin)
        .map_err(|err| Usage(err.to_string()))?;
    let reads = match access.reads_need_token() {
        true => "; reads need a role's token",
        false => "",
    };
    let mode = match access.roles() {
        roles if roles.is_empty() => "read-only".to_owned(),
        roles => format!(
            "writes allowed to {}, each with its token",
            roles.join(" and ")
        ),
    } + reads;
    let listing = Listing::start(&ctx, args.pattern.clone());
    let gauges = crate::serve::Gauges {
        client: ctx.client.clone(),
        names: Box::new(listing.names()),
        budget: args.http.metrics_read_budget,
    };
    let access = Arc::new(access);
    if access.reads_need_token() {
        let access = access.clone();
        observed.guard_metrics(move |headers| access.may_read(headers));
    }
    let pages = crate::ui::routes(crate::ui::Ui {
        ctx,
        access,
        pattern: args.pattern.clone(),
        seen: observed.readings(),
        origins: args.http.allow_hosts.clone(),
        body_wait: args.http.http_header_timeout,
        lagging_after: args.lagging_after.unwrap_or(crate::ui::LAGGING_AFTER),
    });
    let base = args.base_path.as_ref();
    let server = crate::serve::Server::start(bound, base, observed, pages, Some(gauges));
    crate::logging::status!(
        "dashboard of {url} on http://{}{}/ ({mode}; Ctrl-C to stop)",
        server.addr,
        base.map_or("", crate::serve::BasePath::as_str)
    );
    let stopped = super::transfer::wait_for_stop_signal().await;
    server.shutdown().await;
    listing.stop().await;
    if let Some(Token {
        made_up: Some(path),
        ..
    }) = &token
    {
        let _ = std::fs::remove_file(path);
    }
    stopped
}

/// How often the queues whose gauges `/metrics` exports are listed again.
const LIST_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// The queues the dashboard's `/metrics` exports gauges of (every queue with a key, within
/// `--match`), listed again every [`LIST_EVERY`] by a task stopped with [`Listing::stop`].
struct Listing {
    names: Arc<Mutex<Vec<String>>>,
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Listing {
    fn start(ctx: &Ctx, pattern: Option<String>) -> Listing {
        let names = Arc::new(Mutex::new(Vec::new()));
        let stop = tokio_util::sync::CancellationToken::new();
        let mut discovery = delayq::Discovery::all();
        if let Some(pattern) = pattern {
            discovery = discovery.matching(pattern);
        }
        let (client, shared, stopped) = (ctx.client.clone(), names.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(LIST_EVERY);
            loop {
                tokio::select! {
                    _ = stopped.cancelled() => break,
                    _ = tick.tick() => {}
                }
                match discovery.list(&client).await {
                    Ok(found) => *shared.lock().unwrap_or_else(|e| e.into_inner()) = found,
                    Err(err) => tracing::warn!(error = %err, "cannot list the queues for /metrics"),
                }
            }
        });
        Listing { names, stop, task }
    }

    /// The latest listing, as the gauges' read asks for it.
    fn names(&self) -> impl Fn() -> Vec<String> + Send + Sync + 'static {
        let names = self.names.clone();
        move || names.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// The write token, and the file it was made up into when this process made it.
struct Token {
    text: String,
    /// Removed at exit: the token lives as long as the process.
    made_up: Option<PathBuf>,
}

/// The write token: `--token-file`'s first line (a file only its owner may read), else DELAYQ_UI_TOKEN, else a new one written
/// to a file only this user can read (`--token-file PATH` when that does not exist yet, else
/// one in $XDG_RUNTIME_DIR or the temp dir). The token is printed only to a terminal, never
/// into a log.
fn token(args: &UiArgs) -> anyhow::Result<Token> {
    match &args.token_file {
        Some(path) if path.exists() => {
            return Ok(Token {
                text: read_private_token(path)?,
                made_up: None,
            })
        }
        Some(path) => {
            let text = new_token(path)?;
            return Ok(Token {
                text,
                made_up: None,
            });
        }
        None => {}
    }
    if let Ok(token) = std::env::var("DELAYQ_UI_TOKEN") {
        if token.len() >= 16 {
            return Ok(Token {
                text: token,
                made_up: None,
            });
        }
        return Err(Usage("DELAYQ_UI_TOKEN is shorter than 16 characters".into()).into());
    }
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let path = dir.join(format!("delayq-ui-{}.token", std::process::id()));
    let text = new_token(&path)?;
    Ok(Token {
        text,
        made_up: Some(path),
    })
}

/// A role's token from `path`, a file no one but its owner may read or write (as ssh asks of
/// a key): a token others can read is everyone's. Every problem with the file is a usage
/// error (exit 2): the command line named it.
pub(super) fn read_private_token(path: &Path) -> anyhow::Result<String> {
    let unreadable = |err: std::io::Error| {
        Usage(format!(
            "cannot read the token file {}: {err}",
            path.display()
        ))
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(path).map_err(unreadable)?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(Usage(format!(
                "the token file {} has mode {mode:04o}: others may read or change it; \
                 chmod 600 it",
                path.display()
            ))
            .into());
        }
    }
    let text = std::fs::read_to_string(path).map_err(unreadable)?;
    let line = text.lines().next().unwrap_or("").trim().to_owned();
    if line.len() < 16 {
        return Err(Usage(format!(
            "the token in {} is shorter than 16 characters",
            path.display()
        ))
        .into());
    }
    Ok(line)
}

/// Makes up a token and writes it to `path`, a new file (never one that exists: someone else
/// could have chosen its content) readable by this user only.
fn new_token(path: &Path) -> anyhow::Result<String> {
    let token: String = (0..32)
        .map(|_| char::from_digit(rand::random_range(0..16u32), 16).unwrap_or('0'))
        .collect();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(path)
        .and_then(|mut file| writeln!(file, "{token}"));
    written.with_context(|| format!("cannot write the token file {}", path.display()))?;
    if std::io::stderr().is_terminal() {
        eprintln!("delayq: write token: {token} (also in {})", path.display());
    } else {
        crate::logging::status!("write token in {} (mode 0600)", path.display());
    }
    Ok(token)
}
