//! Durations and rates as people type them on a command line.

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

/// Parses a rate `N/PERIOD` as people type it: `100/s`, `5/min`, `10/250ms`, `1000/1h`, `3/1.5s`
/// (a bare unit is one of it): N from 1 to 4294967295 starts per PERIOD, a duration of at least
/// 1 ms in any unit [`parse_duration`] reads (the library bounds it further).
pub(crate) fn parse_rate(text: &str) -> Result<(u32, Duration), String> {
    const EXAMPLES: &str = "use N/PERIOD, e.g. 100/s, 5/min, 10/250ms, 1000/1h";
    let Some((count, period)) = text.trim().split_once('/') else {
        return Err(format!("{text:?} is not a rate; {EXAMPLES}"));
    };
    let count = count.trim();
    if count.is_empty() || !count.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "{text:?}: the count {count:?} is not a whole number; {EXAMPLES}"
        ));
    }
    let count: u32 = match count.parse() {
        Ok(0) => return Err(format!("{text:?}: the count must be at least 1")),
        Ok(n) => n,
        Err(_) => return Err(format!("{text:?}: the count is over {}", u32::MAX)),
    };
    let period = period.trim();
    // `100/s`: a unit alone is one of it.
    let starts_with_digit = period.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    let period = match starts_with_digit {
        true => parse_duration(period),
        false => parse_duration(&format!("1{period}")),
    }
    .map_err(|e| format!("{text:?}: the period {period:?} is not a duration ({e})"))?;
    if period < Duration::from_millis(1) {
        return Err(format!("{text:?}: the period must be at least 1ms"));
    }
    Ok((count, period))
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

    #[test]
    fn rates_as_people_type_them() {
        let rate = |t: &str| {
            let (count, period) = parse_rate(t).unwrap();
            (count, period.as_millis())
        };
        assert_eq!(rate("100/s"), (100, 1_000));
        assert_eq!(rate("5/min"), (5, 60_000));
        assert_eq!(rate("10/250ms"), (10, 250));
        assert_eq!(rate("1000/1h"), (1000, 3_600_000));
        assert_eq!(rate("3/1.5s"), (3, 1_500));
        assert_eq!(rate(" 7 / 2s "), (7, 2_000));
        assert_eq!(rate("4294967295/d"), (u32::MAX, 86_400_000));
        let err = |t: &str| parse_rate(t).unwrap_err();
        assert!(err("100").contains("not a rate"));
        assert!(err("0/s").contains("at least 1"));
        assert!(err("-1/s").contains("not a whole number"));
        assert!(err("1.5/s").contains("not a whole number"));
        assert!(err("/s").contains("not a whole number"));
        assert!(err("4294967296/s").contains("over 4294967295"));
        assert!(err("99999999999999999999999/s").contains("over"));
        assert!(err("10/parsec").contains("not a duration"));
        assert!(err("10/").contains("not a duration"));
        assert!(err("10/0s").contains("at least 1ms"));
        assert!(err("10/-1s").contains("not a duration"));
        assert!(err("10/99999999999999999999d").contains("not a duration"));
    }
}
