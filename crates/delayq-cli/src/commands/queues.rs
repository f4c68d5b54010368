//! `delayq queues`: every queue with any key in the Redis, one row each with its counts; a queue
//! whose keys cannot be read shows why in its row, and the others are listed all the same.

use super::Ctx;
use crate::exit;
use futures::StreamExt;

/// How many queues are read at once.
const READS_AT_ONCE: usize = 16;

/// One queue's counts.
struct Counts {
    pending: u64,
    ready: u64,
    in_flight: u64,
    dead: u64,
    quarantined: u64,
    paused: bool,
}

/// Lists the queues (those whose name matches `pattern`); false when a queue's row has an error.
pub(crate) async fn queues(ctx: &Ctx, pattern: Option<String>) -> anyhow::Result<bool> {
    let discovery = match pattern {
        Some(pattern) => delayq::Discovery::all().matching(pattern),
        None => delayq::Discovery::all(),
    };
    let names = discovery.list(&ctx.client).await?;
    let rows: Vec<(String, anyhow::Result<Counts>)> = futures::stream::iter(names)
        .map(|name: String| async move {
            let counts = counts(ctx, &name).await;
            (name, counts)
        })
        .buffered(READS_AT_ONCE)
        .collect()
        .await;
    let mut out = std::io::stdout().lock();
    let width = rows
        .iter()
        .map(|(name, _)| name.len())
        .fold("QUEUE".len(), usize::max);
    if !ctx.global.json {
        let header = [
            "QUEUE",
            "PENDING",
            "READY",
            "IN_FLIGHT",
            "DEAD",
            "QUARANTINED",
            "PAUSED",
        ];
        ctx.print(
            &mut out,
            &columns(width, header),
            serde_json::Value::default,
        )?;
    }
    let mut all_read = true;
    for (name, counts) in &rows {
        all_read &= counts.is_ok();
        ctx.print(&mut out, &text_row(width, name, counts), || {
            json_row(name, counts)
        })?;
    }
    Ok(all_read)
}

/// The counts of the queue `name`, from three reads.
async fn counts(ctx: &Ctx, name: &str) -> anyhow::Result<Counts> {
    let queue = ctx.queue(name).await?;
    let stats = queue.inspect().stats().await?;
    let reliable = queue.inspect().reliable_stats().await?;
    let paused = queue.inspect().is_paused().await?;
    Ok(Counts {
        pending: stats.pending,
        ready: stats.ready,
        in_flight: reliable.in_flight,
        dead: reliable.dead,
        quarantined: stats.quarantined,
        paused,
    })
}

/// A row of the table: the name and the counts, or `-`s and the error on one line.
fn text_row(width: usize, name: &str, counts: &anyhow::Result<Counts>) -> String {
    match counts {
        Ok(c) => {
            let [pending, ready, in_flight, dead, quarantined] =
                [c.pending, c.ready, c.in_flight, c.dead, c.quarantined].map(|n| n.to_string());
            let paused = if c.paused { "yes" } else { "no" };
            let cells = [
                name,
                &pending,
                &ready,
                &in_flight,
                &dead,
                &quarantined,
                paused,
            ];
            columns(width, cells)
        }
        Err(err) => {
            let error = exit::describe(err).replace("\n  because: ", ": ");
            let row = columns(width, [name, "-", "-", "-", "-", "-", "-"]);
            format!("{row}  error: {error}")
        }
    }
}

/// The seven cells aligned: the name `width` wide, the numbers right-aligned.
fn columns(
    width: usize,
    [name, pending, ready, in_flight, dead, quarantined, paused]: [&str; 7],
) -> String {
    format!(
        "{name:<width$}  {pending:>9}  {ready:>9}  {in_flight:>9}  {dead:>9}  {quarantined:>11}  \
         {paused:<6}"
    )
    .trim_end()
    .to_owned()
}

/// A row as a JSON object: the counts, or `error` (as on stderr for a failed command).
fn json_row(name: &str, counts: &anyhow::Result<Counts>) -> serde_json::Value {
    match counts {
        Ok(c) => serde_json::json!({
            "queue": name,
            "pending": c.pending,
            "ready": c.ready,
            "in_flight": c.in_flight,
            "dead": c.dead,
            "quarantined": c.quarantined,
            "paused": c.paused,
        }),
        Err(err) => serde_json::json!({ "queue": name, "error": exit::json_of(err) }),
    }
}
