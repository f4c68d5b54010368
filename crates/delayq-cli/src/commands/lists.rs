//! delayq's own lists and the target list, read without taking: dead letters (list, retry or
//! delete one, replay, purge), values in flight and ready values (list), the quarantine (list,
//! purge). A list prints the rows the dashboard's API answers (`crate::lists`), so each fact
//! has one name in both; one line (or JSON object) a row, a page read at a time.

use super::Ctx;
use crate::cli::{
    DeadAction, DeadLetterArg, InflightAction, PageArgs, QuarantineAction, QueueArg, ReadyAction,
};
use crate::lists::{self, rows};
use crate::progress::Progress;
use crate::text_codec::{base64_of, TextCodec};
use delayq::Durability;
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

/// Bytes of each value a list shows (as the dashboard's entry detail does); the row says
/// `cut` and the whole `len` of a longer one.
const SHOWN: usize = 64 * 1024;

/// Runs a `dead` action; false when `--exit-status` found no such dead letter.
pub(crate) async fn dead(ctx: &Ctx, action: DeadAction) -> anyhow::Result<bool> {
    let mut out = std::io::stdout().lock();
    match action {
        DeadAction::List { target, page } => {
            let queue = ctx.one(&target, "dead list").await?;
            let rows = |from, count| rows::dead(&queue, from, count, SHOWN);
            print_pages(ctx, &mut out, &target.queue, page, rows, dead_line).await?;
        }
        DeadAction::Retry(letter) => return one_letter(ctx, &mut out, letter, true).await,
        DeadAction::Delete(letter) => return one_letter(ctx, &mut out, letter, false).await,
        DeadAction::Replay {
            target,
            limit,
            delay,
            durability,
        } => {
            let replayed = replay(ctx, &target, limit, delay, durability.durability()).await?;
            ctx.print_answer(&mut out, &target.queue, "replayed", replayed)?;
        }
        DeadAction::Purge { target } => {
            let queue = ctx.one(&target, "dead purge").await?;
            let purged = queue.admin().purge_dead_letters().await?;
            ctx.print_answer(&mut out, &target.queue, "purged", purged)?;
        }
    }
    Ok(true)
}

/// Retries (or deletes) the dead letter `letter` names, as the dashboard's buttons do; prints
/// whether it was there (`{"queue","retried"}` or `{"queue","deleted"}` with --json).
async fn one_letter(
    ctx: &Ctx,
    out: &mut impl Write,
    letter: DeadLetterArg,
    retry: bool,
) -> anyhow::Result<bool> {
    let DeadLetterArg {
        target,
        id,
        at,
        exit_status,
    } = letter;
    let (command, field) = match retry {
        true => ("dead retry", "retried"),
        false => ("dead delete", "deleted"),
    };
    let queue = ctx.one(&target, command).await?;
    let found = match retry {
        true => lists::dead::retry(&ctx.client, &queue, at, &id).await?,
        false => lists::dead::delete(&ctx.client, &queue, at, &id).await?,
    };
    ctx.print_answer(out, &target.queue, field, found)?;
    Ok(found || !exit_status)
}

pub(crate) async fn inflight(ctx: &Ctx, action: InflightAction) -> anyhow::Result<()> {
    let InflightAction::List { target, page } = action;
    let queue = ctx.one(&target, "inflight list").await?;
    let rows = |from, count| rows::in_flight(&queue, from, count, SHOWN);
    let line = |at: usize, row: &Value| {
        let deadline = row["deadline_ms"]
            .as_i64()
            .map_or("-".into(), crate::show::time);
        let started = row["started_ms"]
            .as_i64()
            .map_or("-".into(), crate::show::time);
        let value = row["error"]
            .as_str()
            .map_or_else(|| value_text(row), str::to_owned);
        format!(
            "{at}\t{}\t{}\t{}\t{started}\t{deadline}\t{value}",
            text_of(&row["id"]),
            row["process"].as_str().unwrap_or("-"),
            row["attempt"]
                .as_u64()
                .map_or("-".into(), |n| n.to_string()),
        )
    };
    print_pages(
        ctx,
        &mut std::io::stdout().lock(),
        &target.queue,
        page,
        rows,
        line,
    )
    .await
}

pub(crate) async fn ready(ctx: &Ctx, action: ReadyAction) -> anyhow::Result<()> {
    let ReadyAction::List { target, page } = action;
    let queue = ctx.one(&target, "ready list").await?;
    let rows = |from, count| rows::ready(&queue, from, count, SHOWN);
    let line = |at: usize, row: &Value| format!("{at}\t{}", value_text(row));
    print_pages(
        ctx,
        &mut std::io::stdout().lock(),
        &target.queue,
        page,
        rows,
        line,
    )
    .await
}

/// A dead letter's line: position, id, attempts, time, error (on one line), value; for a
/// record delayq did not write, why it does not read and its first bytes in hex.
fn dead_line(at: usize, row: &Value) -> String {
    if let Some(malformed) = row["malformed"].as_str() {
        return format!("{at}\t-\t-\t-\t{malformed}\t{}", value_text(row));
    }
    let time = row["dead_at_ms"]
        .as_i64()
        .map_or("-".into(), crate::show::time);
    let error = text_of(&row["error"]).replace(['\n', '\t'], " ");
    format!(
        "{at}\t{}\t{}\t{time}\t{error}\t{}",
        text_of(&row["id"]),
        row["attempts"],
        value_text(row)
    )
}

/// A row's value as a line shows it: its text (or hex), ending in `…` when it is only its
/// start.
fn value_text(row: &Value) -> String {
    let text = row["value"].as_str().or(row["hex"].as_str()).unwrap_or("");
    match row["cut"] == true {
        true => format!("{text}…"),
        false => text.to_owned(),
    }
}

fn text_of(value: &Value) -> String {
    value.as_str().unwrap_or("-").to_owned()
}

/// Prints the rows `rows(from, count)` reads of `queue`'s list, a page at a time from
/// `page.from` (`page.limit` of them; 0: to the end): `line(at, row)` for each, or with --json
/// the [`record`] of each.
async fn print_pages<F, Fut>(
    ctx: &Ctx,
    out: &mut impl Write,
    queue: &str,
    page: PageArgs,
    mut rows: F,
    line: impl Fn(usize, &Value) -> String,
) -> anyhow::Result<()>
where
    F: FnMut(usize, usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Vec<Value>>>,
{
    let mut left = if page.limit == 0 {
        usize::MAX
    } else {
        page.limit
    };
    let mut at = page.from;
    while left > 0 {
        let wanted = left.min(lists::STEP);
        let read = rows(at, wanted).await?;
        let got = read.len();
        for row in read {
            ctx.print(out, &line(at, &row), || {
                record(ctx.codec(queue), queue, at, row)
            })?;
            at += 1;
        }
        left -= got;
        if got < wanted {
            break;
        }
    }
    Ok(())
}

/// A row of `queue`'s list as a JSON record: `queue`, its position `at`, then the row's fields
/// as the dashboard's API names them; a value read whole by the queue's codec in its JSON form
/// (`value`, or `value_base64` for --codec bytes: the convention of every command's records),
/// a value cut short as the text of its start (`cut`: true, with its whole `len`).
fn record(codec: &TextCodec, queue: &str, at: usize, row: Value) -> Value {
    let Value::Object(fields) = row else {
        return row;
    };
    let mut record = json!({ "queue": queue, "at": at });
    let whole = fields.get("cut") == Some(&Value::Bool(false));
    let read_by = fields
        .get("codec")
        .and_then(Value::as_str)
        .map(str::to_owned);
    for (name, field) in fields {
        match (name.as_str(), &read_by, field.as_str()) {
            ("value", Some(read_by), Some(text)) if whole => {
                let (name, json) = codec.json_field_read_by(read_by, text);
                record[name] = json;
            }
            _ => record[name] = field,
        }
    }
    record
}

/// Dead letters replayed a chunk at a time (one short script each), with progress; stops at a
/// chunk of records that do not parse. Each chunk waits for `durability`.
async fn replay(
    ctx: &Ctx,
    target: &QueueArg,
    limit: usize,
    delay: Duration,
    durability: Durability,
) -> anyhow::Result<u64> {
    const CHUNK: usize = 1_000;
    let queue = ctx.one(target, "dead replay").await?;
    let queue = queue.with_durability(durability);
    let dead = queue.inspect().reliable_stats().await?.dead;
    let total = if limit == 0 {
        dead
    } else {
        dead.min(limit as u64)
    };
    let mut progress = Progress::new("replayed", total);
    let mut replayed = 0;
    while replayed < total {
        let chunk = CHUNK.min((total - replayed) as usize);
        let n = queue.admin().replay_dead_letters(chunk, delay).await?;
        if n == 0 {
            break;
        }
        replayed += n;
        progress.update(replayed);
    }
    progress.finish(replayed);
    Ok(replayed)
}

pub(crate) async fn quarantine(ctx: &Ctx, action: QuarantineAction) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match action {
        QuarantineAction::List { target, limit } => {
            let queue = ctx.one(&target, "quarantine list").await?;
            for entry in queue.inspect().quarantined(limit).await? {
                let hex = crate::text_codec::encode_hex(&entry);
                ctx.print(&mut out, &format!("{}\t{hex}", entry.len()), || {
                    json!({
                        "queue": target.queue,
                        "len": entry.len(),
                        "entry_base64": base64_of(&entry),
                    })
                })?;
            }
        }
        QuarantineAction::Purge { target } => {
            let queue = ctx.one(&target, "quarantine purge").await?;
            let purged = queue.admin().purge_quarantine().await?;
            ctx.print_answer(&mut out, &target.queue, "purged", purged)?;
        }
    }
    Ok(())
}
