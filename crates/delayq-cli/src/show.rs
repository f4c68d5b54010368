//! Times for people: RFC 3339 and how far from now. Scores Redis holds as `-inf`/`+inf` (a
//! foreign writer's) are shown as such, never as a date 292 million years away.

use std::time::{Duration, UNIX_EPOCH};

/// A schedule's recurrence into its JSON `record`: `cron` and `zone`, or `every_ms`.
pub(crate) fn recurrence_fields(record: &mut serde_json::Value, recurrence: &delayq::Recurrence) {
    match recurrence {
        delayq::Recurrence::Cron { expr, zone } => {
            record["cron"] = expr.as_str().into();
            record["zone"] = zone.as_str().into();
        }
        delayq::Recurrence::Every(every) => {
            record["every_ms"] = (every.as_millis() as u64).into();
        }
        _ => {}
    }
}

/// The latest epoch ms RFC 3339 can show (9999-12-31T23:59:59.999Z).
const LAST_RFC3339_MS: i64 = 253_402_300_799_999;

/// `2026-11-23T10:00:00.123Z`, or the raw ms when it is no date.
pub(crate) fn time(ms: i64) -> String {
    match ms {
        i64::MIN => "-inf".to_owned(),
        i64::MAX => "+inf".to_owned(),
        0..=LAST_RFC3339_MS => {
            let at = UNIX_EPOCH + Duration::from_millis(ms as u64);
            humantime::format_rfc3339_millis(at).to_string()
        }
        _ => format!("{ms} ms since the epoch"),
    }
}

/// `in 5s`, `3m 2s ago`, `now`; `due since ever` / `never` for infinite scores.
pub(crate) fn from_now(ms: i64, now_ms: i64) -> String {
    match ms {
        i64::MIN => return "due since ever".to_owned(),
        i64::MAX => return "never".to_owned(),
        _ => {}
    }
    let delta = ms.saturating_sub(now_ms);
    if delta == 0 {
        return "now".to_owned();
    }
    let span = span(delta.unsigned_abs());
    if delta > 0 {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

/// A length of time to the precision people read: ms under 10 s, then whole seconds.
fn span(ms: u64) -> String {
    let d = if ms < 10_000 {
        Duration::from_millis(ms)
    } else {
        Duration::from_secs(ms / 1000)
    };
    humantime::format_duration(d).to_string()
}

/// How long a due time has passed (0 when it has not), saturating.
pub(crate) fn overdue_ms(due_ms: i64, now_ms: i64) -> i64 {
    now_ms.saturating_sub(due_ms).max(0)
}

/// A name (of a queue, a schedule) as a text row shows it: control characters escaped
/// (`\n`, `\u{1b}`), so that a name cannot split a row or reach the terminal as an escape;
/// `--json` shows names as they are.
pub(crate) fn name(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.chars().any(char::is_control) {
        return name.into();
    }
    name.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect::<String>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_spans() {
        assert_eq!(time(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
        assert_eq!(time(i64::MIN), "-inf");
        assert_eq!(time(-5), "-5 ms since the epoch");
        assert_eq!(from_now(10_250, 10_000), "in 250ms");
        assert_eq!(from_now(0, 125_500), "2m 5s ago");
        assert_eq!(from_now(i64::MIN, 5), "due since ever");
        assert_eq!(from_now(i64::MAX, i64::MIN), "never");
        assert_eq!(overdue_ms(i64::MIN, i64::MAX), i64::MAX);
        assert_eq!(overdue_ms(10, 5), 0);
    }
}
