//! `delayq check`: the server and counters of a queue, with what to fix.

use super::Ctx;
use crate::cli::QueueArg;
use delayq::time::now_ms;
use delayq::{AccessCheck, CheckReport};
use std::io::Write;

/// Prints the report; false when it has warnings.
pub(crate) async fn check(ctx: &Ctx, target: &QueueArg) -> anyhow::Result<bool> {
    let report = ctx.one(target, "check").await?.check().await?;
    let warnings = report.warnings();
    let access = match report.access {
        AccessCheck::DryRun => "every command, key and channel (ACL DRYRUN)",
        AccessCheck::KeysOnly => "keys only (ACL DRYRUN not allowed)",
        _ => "?",
    };
    let mut out = std::io::stdout().lock();
    if ctx.global.json {
        as_json(&mut out, &target.queue, &report, access, &warnings)?;
    } else {
        as_text(&mut out, &target.queue, &report, access, &warnings)?;
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
    if warnings.is_empty() {
        writeln!(out, "warnings:     none")?;
    }
    for warning in warnings {
        writeln!(out, "warning:      {warning}")?;
    }
    Ok(())
}
