//! `delayq check`: the server and counters of a queue, with what to fix.

use super::Ctx;
use crate::cli::QueueArg;
use delayq::inspect::{AccessCheck, CheckReport};
use delayq::time::now_ms;
use std::io::Write;

/// Prints the report; false when it has warnings.
pub(crate) async fn check(ctx: &Ctx, target: &QueueArg) -> anyhow::Result<bool> {
    let report = ctx.one(target, "check").await?.inspect().check().await?;
    print(&target.queue, &report, ctx.global.json)
}

/// The report when the connection itself was refused because the server is busy running a
/// script (`err`); `None` for any other error.
pub(crate) fn of_busy_server(target: &QueueArg, json: bool, err: &anyhow::Error) -> Option<bool> {
    let busy = err.chain().find_map(|cause| match cause.downcast_ref() {
        Some(delayq::Error::Refused {
            refusal: delayq::Refusal::Busy,
            detail,
            ..
        }) => Some(detail.clone()),
        _ => None,
    })?;
    print(&target.queue, &CheckReport::of_busy_server(busy), json).ok()
}

/// Prints `report` on the queue `queue`; false when it has warnings.
fn print(queue: &str, report: &CheckReport, json: bool) -> anyhow::Result<bool> {
    let warnings = report.warnings();
    let access = match report.access {
        AccessCheck::DryRun => "every command, key and channel (ACL DRYRUN)",
        AccessCheck::KeysOnly => "keys only (ACL DRYRUN not allowed)",
        AccessCheck::NotChecked => "could not check (neither ACL DRYRUN nor EVALSHA allowed)",
        _ => "?",
    };
    let mut out = std::io::stdout().lock();
    if json {
        as_json(&mut out, queue, report, access, &warnings)?;
    } else {
        as_text(&mut out, queue, report, access, &warnings)?;
    }
    Ok(warnings.is_empty())
}

/// The report as one JSON object on a line.
fn as_json(
    out: &mut impl Write,
    queue: &str,
    report: &CheckReport,
    access: &str,
    warnings: &[String],
) -> std::io::Result<()> {
    let mut object = serde_json::json!({
        "queue": queue,
        "busy": report.busy,
        "server": report.server,
        "maxmemory_policy": report.maxmemory_policy,
        "aof": report.aof,
        "rdb_save": report.rdb_save,
        "user": report.user,
        "access_checked": access,
        "denied": report.denied,
        "warnings": warnings,
    });
    if let Ok(stats) = &report.stats {
        object["pending"] = stats.pending.into();
        object["scheduled"] = stats.scheduled.into();
        object["ready"] = stats.ready.into();
        object["quarantined"] = stats.quarantined.into();
        object["next_due_ms"] = stats.next_due_ms.into();
    }
    if let Ok(reliable) = &report.reliable {
        object["in_flight"] = reliable.in_flight.into();
        object["overdue_in_flight"] = reliable.overdue.into();
        object["dead"] = reliable.dead.into();
    }
    if let Ok(paused) = report.paused {
        object["paused"] = paused.into();
    }
    writeln!(out, "{object}")
}

/// The report as aligned lines for a person.
fn as_text(
    out: &mut impl Write,
    queue: &str,
    report: &CheckReport,
    access: &str,
    warnings: &[String],
) -> std::io::Result<()> {
    let unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown (refused)".into());
    writeln!(out, "queue:        {queue}")?;
    if let Some(busy) = &report.busy {
        writeln!(out, "server:       busy ({busy})")?;
        return write_warnings(out, warnings);
    }
    writeln!(out, "server:       {}", unknown(&report.server))?;
    writeln!(
        out,
        "user:         {} (checked: {access})",
        unknown(&report.user)
    )?;
    writeln!(
        out,
        "memory:       maxmemory-policy {}",
        unknown(&report.maxmemory_policy)
    )?;
    let aof = report.aof.map_or("unknown".to_owned(), |on| {
        if on {
            "yes".into()
        } else {
            "no".into()
        }
    });
    writeln!(
        out,
        "persistence:  appendonly {aof}; save {:?}",
        unknown(&report.rdb_save)
    )?;
    if let Ok(stats) = &report.stats {
        let next = match stats.next_due_ms {
            Some(due) => format!("next due {}", crate::show::from_now(due, now_ms())),
            None => "nothing scheduled".to_owned(),
        };
        writeln!(
            out,
            "pending:      {} (scheduled {}), {next}",
            stats.pending, stats.scheduled
        )?;
        writeln!(out, "ready:        {}", stats.ready)?;
        writeln!(out, "quarantined:  {}", stats.quarantined)?;
    }
    if let Ok(reliable) = &report.reliable {
        writeln!(
            out,
            "in flight:    {} ({} overdue); dead letters {}",
            reliable.in_flight, reliable.overdue, reliable.dead
        )?;
    }
    if let Ok(paused) = report.paused {
        let paused = match paused {
            true => {
                "yes (delayq's schedulers and workers move and take nothing until `delayq resume`)"
            }
            false => "no",
        };
        writeln!(out, "paused:       {paused}")?;
    }
    write_warnings(out, warnings)
}

/// The warnings, one a line, or that there are none.
fn write_warnings(out: &mut impl Write, warnings: &[String]) -> std::io::Result<()> {
    if warnings.is_empty() {
        writeln!(out, "warnings:     none")?;
    }
    for warning in warnings {
        writeln!(out, "warning:      {warning}")?;
    }
    Ok(())
}
