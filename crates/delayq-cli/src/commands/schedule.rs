//! `delayq schedule`: recurring schedules of a queue (set, list, remove, pause, resume,
//! trigger). Firing them is the business of every running `transfer` and `work`.

use super::target::{each, Target};
use super::Ctx;
use crate::cli::QueueArg;
use crate::exit::Usage;
use crate::schedule_args::{ScheduleAction, ScheduleSetArgs, ScheduleTarget};
use crate::show;
use crate::text_codec::base64_of;
use delayq::codec::{ByteArrayCodec, Codec};
use delayq::{DelayedQueue, Discovery, Missed, Recurrence, Schedule, ScheduleInfo, ShardedQueue};

/// Runs the action; false when `remove --exit-status` found nothing.
pub(crate) async fn schedule(ctx: &Ctx, action: ScheduleAction) -> anyhow::Result<bool> {
    match action {
        ScheduleAction::Set(args) => set(ctx, args).await.map(|()| true),
        ScheduleAction::List {
            queue,
            shards,
            previous_shards,
        } => {
            let queue = queue.map(|queue| QueueArg {
                queue,
                shards,
                previous_shards,
            });
            list(ctx, queue).await
        }
        ScheduleAction::Remove {
            target,
            exit_status,
        } => {
            let queue = raw_queue(ctx, &queue_arg(&target)).await?;
            let removed = each!(&queue, q => q.schedules().remove(&target.id).await)?;
            print_about(ctx, &target, "removed", removed)?;
            Ok(removed || !exit_status)
        }
        ScheduleAction::Pause { target } => {
            let queue = raw_queue(ctx, &queue_arg(&target)).await?;
            each!(&queue, q => q.schedules().pause(&target.id).await)?;
            print_about(ctx, &target, "paused", true).map(|()| true)
        }
        ScheduleAction::Resume { target } => {
            let queue = raw_queue(ctx, &queue_arg(&target)).await?;
            let info = each!(&queue, q => q.schedules().resume(&target.id).await)?;
            print_next(ctx, &target, &info).map(|()| true)
        }
        ScheduleAction::Trigger { target } => {
            let queue = raw_queue(ctx, &queue_arg(&target)).await?;
            let handle = each!(&queue, q => q.schedules().trigger(&target.id).await?.to_string());
            let queue = &target.queue;
            let mut out = std::io::stdout();
            ctx.print(
                &mut out,
                &handle,
                || serde_json::json!({ "queue": queue, "id": target.id, "handle": handle }),
            )?;
            Ok(true)
        }
    }
}

/// The queue a schedule action is about.
fn queue_arg(target: &ScheduleTarget) -> QueueArg {
    QueueArg {
        queue: target.queue.clone(),
        shards: target.sharding.shards,
        previous_shards: target.sharding.previous_shards,
    }
}

/// The queue `arg` names (sharded with `--shards`: its schedules live in its shards) with
/// values as bytes, for its schedules' door: this command encodes and decodes them with the
/// queue's text codec itself, so an undecodable value still shows.
async fn raw_queue(
    ctx: &Ctx,
    arg: &QueueArg,
) -> delayq::Result<Target<DelayedQueue<ByteArrayCodec>, ShardedQueue<ByteArrayCodec>>> {
    Ok(match arg.shards {
        None => Target::One(
            DelayedQueue::builder(ctx.client.clone(), arg.queue.as_str(), ByteArrayCodec)
                .options(ctx.global.options())
                .transfer(false)
                .build()
                .await?,
        ),
        Some(n) => {
            let mut builder =
                ShardedQueue::builder(ctx.client.clone(), arg.queue.as_str(), n, ByteArrayCodec)
                    .options(ctx.global.options())
                    .transfer(false);
            if let Some(previous) = arg.previous_shards {
                builder = builder.previous_shards(previous);
            }
            Target::Sharded(builder.build().await?)
        }
    })
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
    let queue = &queue_arg(&args.target);
    let text = match ctx.values(&value_args, &queue.queue)?.as_slice() {
        [one] => one.clone(),
        _ => return Err(Usage("a schedule offers one value".into()).into()),
    };
    let value = ctx.codec(&queue.queue).encode(&text)?;
    let mut schedule = Schedule::new(args.target.id.as_str(), recurrence, value)
        .missed(Missed::parse(&args.missed)?);
    if let Some(start) = args.start {
        schedule = schedule.start_ms(start);
    }
    if let Some(end) = args.end {
        // The library keeps an end in the past (a given clock may fire what came before it);
        // from the command line it is a mistake that would store a schedule that never fires.
        let now = delayq::time::now_ms();
        if end < now {
            return Err(Usage(format!(
                "--end {} is in the past: the schedule would never fire; nothing was written",
                crate::show::time(end)
            ))
            .into());
        }
        schedule = schedule.end_ms(end);
    }
    let queue = raw_queue(ctx, queue).await?;
    let info = each!(&queue, q => q.schedules().set(schedule).await)?;
    print_next(ctx, &args.target, &info)
}

/// Lists the schedules (of `queue`, or of every queue); false when a row is an error.
async fn list(ctx: &Ctx, queue: Option<QueueArg>) -> anyhow::Result<bool> {
    let queues = match queue {
        Some(queue) => vec![queue],
        None => Discovery::all()
            .list(&ctx.client)
            .await?
            .into_iter()
            .map(|queue| QueueArg {
                queue,
                shards: None,
                previous_shards: None,
            })
            .collect(),
    };
    let mut out = std::io::stdout();
    let now = delayq::time::now_ms();
    let mut all_read = true;
    for queue in queues {
        let raw = raw_queue(ctx, &queue).await?;
        let rows = match each!(&raw, q => q.schedules().rows().await) {
            Ok(rows) => rows,
            // One queue's key of another type is that queue's row, not the listing's end.
            Err(err @ delayq::Error::WrongType { .. }) => {
                print_error_row(ctx, &queue.queue, None, &err)?;
                all_read = false;
                continue;
            }
            Err(err) => return Err(err.into()),
        };
        for row in rows {
            match &row.info {
                Ok(info) => {
                    let text = describe(ctx, &queue.queue, info, now);
                    ctx.print(&mut out, &text, || record(ctx, &queue.queue, info))?;
                }
                Err(err) => {
                    print_error_row(ctx, &queue.queue, Some(&row.id), err)?;
                    all_read = false;
                }
            }
        }
    }
    Ok(all_read)
}

/// The row of a schedule (or, without `id`, a queue's schedules) that cannot be read: queue,
/// id, `error: REASON` (JSON: `queue`, `id`, `error`), and a warning on stderr.
fn print_error_row(
    ctx: &Ctx,
    queue: &str,
    id: Option<&str>,
    err: &delayq::Error,
) -> anyhow::Result<()> {
    tracing::warn!(queue, schedule = id, error = %err, "a schedule that cannot be read");
    let text = format!(
        "{}\t{}\terror: {err}",
        show::name(queue),
        show::name(id.unwrap_or("-"))
    );
    ctx.print(
        &mut std::io::stdout(),
        &text,
        || serde_json::json!({ "queue": queue, "id": id, "error": err.to_string() }),
    )?;
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
        "{}\t{}\t{when}\t{next}\t{last}\tmissed {}\t{value}",
        show::name(queue),
        show::name(&schedule.id),
        schedule.missed
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
