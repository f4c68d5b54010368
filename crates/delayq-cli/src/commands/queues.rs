//! `delayq queues`: every queue with any key in the Redis, one row each with its counts and its
//! recurring schedules (a queue that refills after it was emptied may have one); a queue
//! whose keys cannot be read shows why in its row, and the others are listed all the same.
//! Names longer than [`NAME_COLUMN`] are cut in the table (never in `--json`).

use super::Ctx;
use crate::exit;
use futures::StreamExt;

/// How many queues are read at once.
const READS_AT_ONCE: usize = 16;
/// The widest the name column gets; a longer name is cut, ending in `…`.
const NAME_COLUMN: usize = 64;

/// One queue's counts.
struct Counts {
    pending: u64,
    ready: u64,
    in_flight: u64,
    dead: u64,
    quarantined: u64,
    paused: bool,
    /// Recurring schedules that offer into the queue.
    schedules: u64,
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
    let all_read = rows.iter().all(|(_, counts)| counts.is_ok());
    if ctx.global.json {
        for (name, counts) in &rows {
            ctx.print(&mut out, "", || json_row(name, counts))?;
        }
        return Ok(all_read);
    }
    let rows: Vec<(String, anyhow::Result<Counts>)> = rows
        .into_iter()
        .map(|(name, counts)| (crate::show::name(&name).into_owned(), counts))
        .collect();
    let width = rows
        .iter()
        .map(|(name, _)| name.chars().count().min(NAME_COLUMN))
        .fold("QUEUE".len(), usize::max);
    let header = [
        "QUEUE",
        "PENDING",
        "READY",
        "IN_FLIGHT",
        "DEAD",
        "QUARANTINED",
        "PAUSED",
        "SCHEDULES",
    ];
    let text = columns(width, header);
    ctx.print(&mut out, &text, serde_json::Value::default)?;
    for (name, counts) in &rows {
        let text = text_row(width, &cut(name), counts);
        ctx.print(&mut out, &text, serde_json::Value::default)?;
    }
    Ok(all_read)
}

/// `name` as the table shows it: at most [`NAME_COLUMN`] characters, the last `…` when cut.
fn cut(name: &str) -> std::borrow::Cow<'_, str> {
    match name.char_indices().nth(NAME_COLUMN - 1) {
        Some((end, _)) if name.chars().count() > NAME_COLUMN => format!("{}…", &name[..end]).into(),
        _ => name.into(),
    }
}

/// The counts of the queue `name`, from four reads.
async fn counts(ctx: &Ctx, name: &str) -> anyhow::Result<Counts> {
    use delayq::fred::interfaces::SortedSetsInterface;
    let queue = ctx.queue(name).await?;
    let stats = queue.inspect().stats().await?;
    let reliable = queue.inspect().reliable_stats().await?;
    let paused = queue.inspect().is_paused().await?;
    let schedules: u64 = ctx.client.zcard(queue.keys().schedules()).await?;
    Ok(Counts {
        pending: stats.pending,
        ready: stats.ready,
        in_flight: reliable.in_flight,
        dead: reliable.dead,
        quarantined: stats.quarantined,
        paused,
        schedules,
    })
}

/// A row of the table: the name and the counts, or `-`s and the error on one line.
fn text_row(width: usize, name: &str, counts: &anyhow::Result<Counts>) -> String {
    match counts {
        Ok(c) => {
            let [pending, ready, in_flight, dead, quarantined, schedules] = [
                c.pending,
                c.ready,
                c.in_flight,
                c.dead,
                c.quarantined,
                c.schedules,
            ]
            .map(|n| n.to_string());
            let paused = if c.paused { "yes" } else { "no" };
            let cells = [
                name,
                &pending,
                &ready,
                &in_flight,
                &dead,
                &quarantined,
                paused,
                &schedules,
            ];
            columns(width, cells)
        }
        Err(err) => {
            let error = exit::describe(err).replace("\n  because: ", ": ");
            let row = columns(width, [name, "-", "-", "-", "-", "-", "-", "-"]);
            format!("{row}  error: {error}")
        }
    }
}

/// The eight cells aligned: the name `width` characters wide (at most [`NAME_COLUMN`], far
/// below the formatter's limit), the numbers right-aligned.
fn columns(
    width: usize,
    [name, pending, ready, in_flight, dead, quarantined, paused, schedules]: [&str; 8],
) -> String {
    format!(
        "{name:<width$}  {pending:>9}  {ready:>9}  {in_flight:>9}  {dead:>9}  {quarantined:>11}  \
         {paused:<6}  {schedules:>9}"
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
            "schedules": c.schedules,
        }),
        Err(err) => serde_json::json!({ "queue": name, "error": exit::json_of(err) }),
    }
}
