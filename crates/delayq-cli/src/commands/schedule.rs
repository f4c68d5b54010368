//! `delayq schedule`: recurring schedules of a queue (set, list, remove, pause, resume,
//! trigger). Firing them is the business of every running `transfer` and `work`.

use super::Ctx;
use crate::exit::Usage;
use crate::schedule_args::{ScheduleAction, ScheduleSetArgs, ScheduleTarget};
use crate::show;
use crate::text_codec::base64_of;
use delayq::codec::ByteArrayCodec;
use delayq::codec::Codec;
use delayq::{DelayedQueue, Discovery, Missed, Recurrence, Schedule, ScheduleInfo};

/// Runs the action; false when `remove --exit-status` found nothing.
pub(crate) async fn schedule(ctx: &Ctx, action: ScheduleAction) -> anyhow::Result<bool> {
    match action {
        ScheduleAction::Set(args) => set(ctx, args).await.map(|()| true),
        ScheduleAction::List { queue } => list(ctx, queue).await.map(|()| true),
        ScheduleAction::Remove {
            target,
            exit_status,
        } => {
            let removed = raw_queue(ctx, &target.queue)
                .await?
                .schedules()
                .remove(&target.id)
                .await?;
            print_about(ctx, &target, "removed", removed)?;
            Ok(removed || !exit_status)
        }
        ScheduleAction::Pause { target } => {
            raw_queue(ctx, &target.queue)
                .await?
                .schedules()
                .pause(&target.id)
                .await?;
            print_about(ctx, &target, "paused", true).map(|()| true)
        }
        ScheduleAction::Resume { target } => {
            let info = raw_queue(ctx, &target.queue)
                .await?
                .schedules()
                .resume(&target.id)
                .await?;
            print_next(ctx, &target, &info).map(|()| true)
        }
        ScheduleAction::Trigger { target } => {
            let handle = raw_queue(ctx, &target.queue)
                .await?
                .schedules()
                .trigger(&target.id)
                .await?;
            let handle = handle.to_string();
            let mut out = std::io::stdout();
            ctx.print(
                &mut out,
                &handle,
                || serde_json::json!({ "queue": target.queue, "id": target.id, "handle": handle }),
            )?;
            Ok(true)
        }
    }
}

/// The queue `queue` with values as bytes, for its schedules' door (this command encodes and
/// decodes them with the queue's text codec itself, so an undecodable value still shows).
async fn raw_queue(ctx: &Ctx, queue: &str) -> delayq::Result<DelayedQueue<ByteArrayCodec>> {
    DelayedQueue::builder(ctx.client.clone(), queue, ByteArrayCodec)
        .options(ctx.global.options())
        .transfer(false)
        .build()
        .await
}

async fn set(ctx: &Ctx, args: ScheduleSetArgs) -> anyhow::Result<()> {
    let recurrence = match (&args.cron, args.every) {
        (Some(expr), _) => Recurrence::cron(expr.as_str(), args.tz.as_str())?,
        (None, Some(every)) => Recurrence::every(every)?,
        (None, None) => return Err(Usage("give --cron or --every".into()).into()),
    };
    let value_args = crate::cli::ValueArgs {
        value: args.value.clone(),
        value_file: args.value_file.clone(),
    };
    let text = match ctx.values(&value_args, &args.target.queue)?.as_slice() {
        [one] => one.clone(),
        _ => return Err(Usage("a schedule offers one value".into()).into()),
    };
    let value = ctx.codec(&args.target.queue).encode(&text)?;
    let mut schedule = Schedule::new(args.target.id.as_str(), recurrence, value)
        .missed(Missed::parse(&args.missed)?);
    if let Some(start) = args.start {
        schedule = schedule.start_ms(start);
    }
    if let Some(end) = args.end {
        schedule = schedule.end_ms(end);
    }
    let info = raw_queue(ctx, &args.target.queue)
        .await?
        .schedules()
        .set(schedule)
        .await?;
    print_next(ctx, &args.target, &info)
}

async fn list(ctx: &Ctx, queue: Option<String>) -> anyhow::Result<()> {
    let queues = match queue {
        Some(queue) => vec![queue],
        None => Discovery::all().list(&ctx.client).await?,
    };
    let mut out = std::io::stdout();
    let now = delayq::time::now_ms();
    for queue in queues {
        for info in raw_queue(ctx, &queue).await?.schedules().list().await? {
            let text = describe(ctx, &queue, &info, now);
            ctx.print(&mut out, &text, || record(ctx, &queue, &info))?;
        }
    }
    Ok(())
}

/// A schedule's line: queue, id, recurrence, next and last occurrence, state.
fn describe(ctx: &Ctx, queue: &str, info: &ScheduleInfo, now: i64) -> String {
    let schedule = &info.schedule;
    let when = match &schedule.recurrence {
        Recurrence::Cron { expr, zone } => format!("cron '{expr}' {zone}"),
        Recurrence::Every(every) => format!("every {}", humantime::format_duration(*every)),
        _ => "?".to_owned(),
    };
    let next = match (schedule.paused, info.next_ms) {
        (true, _) => "paused".to_owned(),
        (false, Some(ms)) => format!("next {} ({})", show::time(ms), show::from_now(ms, now)),
        (false, None) => "ended".to_owned(),
    };
    let last = info.last_ms.map_or("never fired".to_owned(), |ms| {
        format!("last {}", show::time(ms))
    });
    let value = ctx
        .codec(queue)
        .decode(&schedule.value)
        .unwrap_or_else(|_| format!("base64:{}", base64_of(&schedule.value)));
    format!(
        "{queue}\t{}\t{when}\t{next}\t{last}\tmissed {}\t{value}",
        schedule.id, schedule.missed
    )
}

/// A schedule's JSON record (docs/cli.md's shape: `queue`, snake_case, `_ms` times).
fn record(ctx: &Ctx, queue: &str, info: &ScheduleInfo) -> serde_json::Value {
    let schedule = &info.schedule;
    let mut record = serde_json::json!({ "queue": queue, "id": schedule.id });
    show::recurrence_fields(&mut record, &schedule.recurrence);
    match ctx.codec(queue).decode(&schedule.value) {
        Ok(text) => {
            let (field, json) = ctx.codec(queue).json_field(&text);
            record[field] = json;
        }
        Err(err) => {
            record["value_base64"] = base64_of(&schedule.value).into();
            record["value_error"] = err.to_string().into();
        }
    }
    record["missed"] = schedule.missed.to_string().into();
    record["paused"] = schedule.paused.into();
    record["start_ms"] = schedule.start_ms.into();
    record["end_ms"] = schedule.end_ms.into();
    record["next_ms"] = info.next_ms.into();
    record["last_ms"] = info.last_ms.into();
    record
}

/// Prints a schedule's next occurrence (after set and resume).
fn print_next(ctx: &Ctx, target: &ScheduleTarget, info: &ScheduleInfo) -> anyhow::Result<()> {
    let text = info.next_ms.map_or("ended".to_owned(), show::time);
    ctx.print(
        &mut std::io::stdout(),
        &text,
        || serde_json::json!({ "queue": target.queue, "id": target.id, "next_ms": info.next_ms }),
    )?;
    Ok(())
}

/// Prints a true/false answer about a schedule.
fn print_about(
    ctx: &Ctx,
    target: &ScheduleTarget,
    field: &str,
    answer: bool,
) -> anyhow::Result<()> {
    ctx.print(&mut std::io::stdout(), &answer.to_string(), || {
        let mut record = serde_json::json!({ "queue": target.queue, "id": target.id });
        record[field] = answer.into();
        record
    })?;
    Ok(())
}
