//! The rates and key rules of a queue's limits: how they are written and read, and how a
//! value's key is found in its bytes.

use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// At most `count` starts per `period`, smoothed (one every `period / count`; see the module
/// docs for the exact bound).
///
/// Read as `COUNT/PERIOD` (the one grammar of the library, the `delayq` command's `--rate`
/// and the dashboard): COUNT a whole number from 1 to 4294967295; PERIOD a duration as people
/// type it, in any case, a bare unit meaning one of it: `100/s`, `5/min`, `10/250ms`,
/// `1000/1h`, `3/1.5s`, `1/1h30m`, `2/2 hours 5 min`, `7/d`. Units: `ms` (`msec`), `s` (`sec`,
/// `second`), `m` (`min`, `minute`), `h` (`hr`, `hour`), `d` (`day`), `w` (`week`), `month`
/// (30.44 days), `y` (`year`, 365.25 days), plurals too; decimals are rounded to whole
/// milliseconds. Written as `COUNT/NUNIT` in the largest unit that is exact (`5/1m`), which
/// reads back as the same rate.
///
/// ```
/// use delayq::limit::Rate;
/// use std::time::Duration;
///
/// let rate: Rate = "100/1s".parse().unwrap();
/// assert_eq!(rate, Rate::new(100, Duration::from_secs(1)).unwrap());
/// assert_eq!("5/min".parse::<Rate>().unwrap().to_string(), "5/1m");
/// assert_eq!("3/250ms".parse::<Rate>().unwrap().to_string(), "3/250ms");
/// assert_eq!("3/1.5s".parse::<Rate>().unwrap().to_string(), "3/1500ms");
/// assert!("0/1s".parse::<Rate>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Starts allowed per period (at least 1).
    pub count: u32,
    /// The period (at least 1 ms, whole milliseconds).
    pub period: Duration,
}

impl Rate {
    /// `count` per `period`; refused when `count` is 0 or `period` is under 1 ms.
    pub fn new(count: u32, period: Duration) -> Result<Rate> {
        let rate = Rate { count, period };
        rate.validate()?;
        Ok(rate)
    }

    /// Refuses a count of 0, a period under 1 ms or over a year.
    pub fn validate(&self) -> Result<()> {
        if self.count == 0 {
            return Err(invalid(format!(
                "rate {self}: the count must be at least 1"
            )));
        }
        if self.period < Duration::from_millis(1) || self.period > MAX_PERIOD {
            return Err(invalid(format!(
                "rate {}/{:?}: the period must be from 1 ms to a year",
                self.count, self.period
            )));
        }
        Ok(())
    }

    /// The period in whole milliseconds.
    pub(crate) fn period_ms(&self) -> u64 {
        self.period.as_millis() as u64
    }
}

/// The longest period a rate may have.
const MAX_PERIOD: Duration = Duration::from_secs(366 * 24 * 3600);

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.period.as_millis();
        let (n, unit) = match ms {
            0 => (0, "ms"),
            ms if ms % 3_600_000 == 0 => (ms / 3_600_000, "h"),
            ms if ms % 60_000 == 0 => (ms / 60_000, "m"),
            ms if ms % 1_000 == 0 => (ms / 1_000, "s"),
            ms => (ms, "ms"),
        };
        write!(f, "{}/{n}{unit}", self.count)
    }
}

impl FromStr for Rate {
    type Err = Error;

    fn from_str(text: &str) -> Result<Rate> {
        const EXAMPLES: &str = "use COUNT/PERIOD, e.g. 100/s, 5/min, 10/250ms, 1000/1h";
        let refused = |why: String| invalid(format!("rate {text:?}: {why}"));
        let Some((count, period)) = text.trim().split_once('/') else {
            return Err(refused(format!("not a rate; {EXAMPLES}")));
        };
        let count = count.trim();
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(refused(format!(
                "the count {count:?} is not a whole number; {EXAMPLES}"
            )));
        }
        let count: u32 = match count.parse() {
            Ok(0) => return Err(refused("the count must be at least 1".into())),
            Ok(n) => n,
            Err(_) => return Err(refused(format!("the count is over {}", u32::MAX))),
        };
        let period = period.trim();
        let ms = period_ms(period).ok_or_else(|| {
            refused(format!(
                "the period {period:?} is not a duration; {EXAMPLES}"
            ))
        })?;
        if ms == 0 {
            return Err(refused("the period must be at least 1ms".into()));
        }
        Rate::new(count, Duration::from_millis(ms))
    }
}

/// A period as people type it (see [`Rate`]) in whole milliseconds (rounded); `None` when it
/// is no duration, or longer than `u64` milliseconds.
fn period_ms(text: &str) -> Option<u64> {
    let text = text.to_ascii_lowercase();
    // `100/s`: a unit alone is one of it.
    let text = match text.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        true => text,
        false => format!("1{text}"),
    };
    let mut rest = text.trim();
    let mut total: f64 = 0.0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(number_end);
        let tail = tail.trim_start();
        let unit_end = tail
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return None;
        }
        let number: f64 = number.parse().ok()?;
        total += number * unit_ms(unit)?;
        rest = tail.trim_start_matches([' ', ',']);
    }
    let ms = total.round();
    (ms.is_finite() && ms <= u64::MAX as f64).then_some(ms as u64)
}

/// Milliseconds in one `unit` (lower case).
fn unit_ms(unit: &str) -> Option<f64> {
    const DAY: f64 = 86_400_000.0;
    Some(match unit {
        "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => 1.0,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000.0,
        "d" | "day" | "days" => DAY,
        "w" | "week" | "weeks" => 7.0 * DAY,
        "month" | "months" => 30.44 * DAY,
        "y" | "year" | "years" => 365.25 * DAY,
        _ => return None,
    })
}

/// How a value's key is read from its bytes (as UTF-8 text) when the worker has no
/// [`limit_key`](crate::WorkerBuilder::limit_key) closure. A value without a key (the pointer
/// finds nothing, the regex does not match, the bytes are not UTF-8) gets only the queue-wide
/// limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRule {
    /// A JSON pointer (RFC 6901, e.g. `/customer/id`) into the value as JSON; a string is the
    /// key as it is, a number or boolean its JSON text. Needs the feature `json`.
    JsonPointer(String),
    /// A regex (the `regex-lite` syntax): the first capture group, or the whole match when it
    /// has no group.
    Regex(String),
}

impl KeyRule {
    /// Refuses a pointer that does not start with `/` (or is not empty), a regex that does not
    /// compile, or a pointer without the feature `json`.
    pub fn validate(&self) -> Result<()> {
        self.compile().map(|_| ())
    }

    /// The rule ready to read keys.
    pub(crate) fn compile(&self) -> Result<KeyReader> {
        match self {
            KeyRule::JsonPointer(pointer) => {
                if !(pointer.is_empty() || pointer.starts_with('/')) {
                    return Err(invalid(format!(
                        "key pointer {pointer:?}: a JSON pointer starts with '/'"
                    )));
                }
                if cfg!(feature = "json") {
                    Ok(KeyReader::Pointer(pointer.clone()))
                } else {
                    Err(invalid(format!(
                        "key pointer {pointer:?}: this build has no JSON support (feature `json`)"
                    )))
                }
            }
            KeyRule::Regex(pattern) => regex_lite::Regex::new(pattern)
                .map(KeyReader::Regex)
                .map_err(|e| invalid(format!("key regex {pattern:?}: {e}"))),
        }
    }
}

impl fmt::Display for KeyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyRule::JsonPointer(p) => write!(f, "pointer {p}"),
            KeyRule::Regex(r) => write!(f, "regex {r}"),
        }
    }
}

/// A compiled [`KeyRule`].
#[derive(Debug, Clone)]
pub(crate) enum KeyReader {
    Pointer(String),
    Regex(regex_lite::Regex),
}

impl KeyReader {
    /// The key of the value `raw`, if it has one.
    pub(crate) fn key_of(&self, raw: &[u8]) -> Option<String> {
        let text = std::str::from_utf8(raw).ok()?;
        match self {
            KeyReader::Pointer(pointer) => pointer_key(text, pointer),
            KeyReader::Regex(regex) => {
                let found = regex.captures(text)?;
                let group = found.get(1).or_else(|| found.get(0))?;
                Some(group.as_str().to_owned())
            }
        }
    }
}

#[cfg(feature = "json")]
fn pointer_key(text: &str, pointer: &str) -> Option<String> {
    let doc: serde_json::Value = serde_json::from_str(text).ok()?;
    match doc.pointer(pointer)? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

#[cfg(not(feature = "json"))]
fn pointer_key(_text: &str, _pointer: &str) -> Option<String> {
    None
}

/// The error for limits that cannot work.
pub(crate) fn invalid(detail: String) -> Error {
    Error::InvalidLimits(detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_round_trip_and_refuse_nonsense() {
        for text in ["1/1ms", "100/1s", "7/90s", "2/1h", "9/1500ms", "4/24h"] {
            assert_eq!(text.parse::<Rate>().unwrap().to_string(), text);
        }
        for bad in [
            "", "1", "a/1s", "1/", "1/1", "0/1s", "1/0s", "-1/1s", "1/2y",
        ] {
            assert!(bad.parse::<Rate>().is_err(), "{bad}");
        }
    }

    /// The grammar people type, as `--rate` has always taken it: units in any case and by any
    /// of their names, a bare unit, decimals, sums of terms.
    #[test]
    fn rates_as_people_type_them() {
        let rate = |t: &str| {
            let rate: Rate = t.parse().unwrap();
            (rate.count, rate.period.as_millis())
        };
        assert_eq!(rate("100/s"), (100, 1_000));
        assert_eq!(rate("5/min"), (5, 60_000));
        assert_eq!(rate("5/m"), (5, 60_000));
        assert_eq!(
            rate("5/10M"),
            (5, 600_000),
            "M is minutes, as the CLI always read it"
        );
        assert_eq!(rate("10/250ms"), (10, 250));
        assert_eq!(rate("1000/1h"), (1000, 3_600_000));
        assert_eq!(rate("3/1.5s"), (3, 1_500));
        assert_eq!(rate(" 7 / 2s "), (7, 2_000));
        assert_eq!(rate("2/1h30m"), (2, 5_400_000));
        assert_eq!(rate("2/2 hours 5 min"), (2, 7_500_000));
        assert_eq!(rate("1/0.25h"), (1, 900_000));
        assert_eq!(rate("4294967295/d"), (u32::MAX, 86_400_000));
        assert_eq!(rate("1/1w"), (1, 604_800_000));
        let err = |t: &str| t.parse::<Rate>().unwrap_err().to_string();
        assert!(err("100").contains("not a rate"));
        assert!(err("0/s").contains("at least 1"));
        assert!(err("-1/s").contains("not a whole number"));
        assert!(err("1.5/s").contains("not a whole number"));
        assert!(err("/s").contains("not a whole number"));
        assert!(err("4294967296/s").contains("over 4294967295"));
        assert!(err("99999999999999999999999/s").contains("over"));
        assert!(err("10/parsec").contains("not a duration"));
        assert!(err("10/5").contains("not a duration"));
        assert!(err("10/").contains("not a duration"));
        assert!(err("10/1.2.3s").contains("not a duration"));
        assert!(err("10/0s").contains("at least 1ms"));
        assert!(err("10/0.1ms").contains("at least 1ms"));
        assert!(err("10/-1s").contains("not a duration"));
        assert!(err("10/99999999999999999999d").contains("not a duration"));
        assert!(err("10/2y").contains("from 1 ms to a year"));
    }

    #[test]
    fn regex_rules_read_the_first_group_or_the_match() {
        let group = KeyRule::Regex("customer=(\\w+)".into()).compile().unwrap();
        assert_eq!(group.key_of(b"x customer=ab1 y").as_deref(), Some("ab1"));
        assert_eq!(group.key_of(b"nothing"), None);
        assert_eq!(group.key_of(&[0xff, 0xfe]), None);
        let whole = KeyRule::Regex("[a-z]+".into()).compile().unwrap();
        assert_eq!(whole.key_of(b"12abc3").as_deref(), Some("abc"));
        assert!(KeyRule::Regex("(".into()).validate().is_err());
    }

    #[cfg(feature = "json")]
    #[test]
    fn pointer_rules_read_json() {
        let rule = KeyRule::JsonPointer("/c/id".into()).compile().unwrap();
        assert_eq!(rule.key_of(br#"{"c":{"id":"a"}}"#).as_deref(), Some("a"));
        assert_eq!(rule.key_of(br#"{"c":{"id":7}}"#).as_deref(), Some("7"));
        assert_eq!(rule.key_of(br#"{"c":{}}"#), None);
        assert_eq!(rule.key_of(b"not json"), None);
        assert!(KeyRule::JsonPointer("c".into()).validate().is_err());
    }
}
