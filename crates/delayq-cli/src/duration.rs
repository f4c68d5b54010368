//! Durations as people type them on a command line (rates: the library's
//! [`Rate`](delayq::limit::Rate) parser).

use std::time::Duration;

/// Parses durations as people type them, through humantime: `250ms`, `10s`, `1h30m`,
/// `2 hours 5 min`, `90sec`, `1d`; also in capitals (`10S`) and with decimals (`1.5s`,
/// `0.25h`), and `0`. Negative durations are refused.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('-') {
        return Err(format!(
            "{text:?} is negative; a delay must be zero or more"
        ));
    }
    if trimmed.chars().all(|c| c == '0') && !trimmed.is_empty() {
        return Ok(Duration::ZERO);
    }
    // humantime reads `M` as months; people typing `10M` mean minutes as often: take every unit
    // in lower case. Decimals become whole milliseconds first (humantime takes integers only).
    let lower = trimmed.to_lowercase();
    let normalized = decimals_to_ms(&lower).map_err(|e| format!("{text:?}: {e}"))?;
    humantime::parse_duration(&normalized).map_err(|e| {
        format!("{text:?} is not a duration ({e}); use e.g. 250ms, 10s, 1.5s, 1h30m, 2d")
    })
}

/// Rewrites each `<int>.<fraction><unit>` as the whole milliseconds it is (`1.5s` -> `1500ms`).
fn decimals_to_ms(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(number_len);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        if number.contains('.') {
            let value: f64 = number
                .parse()
                .map_err(|_| format!("{number:?} is no number"))?;
            let unit_ms = match unit.trim() {
                "ms" | "msec" => 1.0,
                "s" | "sec" | "secs" | "second" | "seconds" => 1_000.0,
                "m" | "min" | "mins" | "minute" | "minutes" => 60_000.0,
                "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000.0,
                "d" | "day" | "days" => 86_400_000.0,
                "w" | "week" | "weeks" => 604_800_000.0,
                other => return Err(format!("no decimals with the unit {other:?}")),
            };
            let ms = (value * unit_ms).round();
            if !ms.is_finite() || ms > 1e17 {
                return Err("too long".into());
            }
            out.push_str(&format!("{ms:.0}ms "));
        } else {
            out.push_str(number);
            out.push_str(unit);
        }
        rest = tail;
    }
    Ok(out.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_people_type_them() {
        let ms = |t: &str| parse_duration(t).unwrap().as_millis();
        assert_eq!(ms("250ms"), 250);
        assert_eq!(ms("10s"), 10_000);
        assert_eq!(ms("15m"), 900_000);
        assert_eq!(ms("2h"), 7_200_000);
        assert_eq!(ms("1h30m"), 5_400_000);
        assert_eq!(ms("1.5s"), 1_500);
        assert_eq!(ms("90sec"), 90_000);
        assert_eq!(ms("10S"), 10_000);
        assert_eq!(ms("2 hours 5 min"), 7_500_000);
        assert_eq!(ms("0.25h"), 900_000);
        assert_eq!(ms("0"), 0);
        assert_eq!(ms("1d"), 86_400_000);
        assert!(parse_duration("-5s").unwrap_err().contains("negative"));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
    }
}
