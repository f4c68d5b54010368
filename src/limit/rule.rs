//! The rates and key rules of a queue's limits: how they are written and read, and how a
//! value's key is found in its bytes.

use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// At most `count` starts per `period`, smoothed (one every `period / count`; see the module
/// docs for the exact bound).
///
/// Written and read as `COUNT/PERIOD`, the period in `ms`, `s`, `m` or `h` (a bare unit means
/// one of it):
///
/// ```
/// use delayq::limit::Rate;
/// use std::time::Duration;
///
/// let rate: Rate = "100/1s".parse().unwrap();
/// assert_eq!(rate, Rate::new(100, Duration::from_secs(1)).unwrap());
/// assert_eq!("5/m".parse::<Rate>().unwrap().to_string(), "5/1m");
/// assert_eq!("3/250ms".parse::<Rate>().unwrap().to_string(), "3/250ms");
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
        let bad = || {
            invalid(format!(
                "rate {text:?}: expected COUNT/PERIOD, e.g. 100/1s or 5/250ms"
            ))
        };
        let (count, period) = text.trim().split_once('/').ok_or_else(bad)?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        let period = period.trim();
        let digits = period.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let n: u64 = match &period[..digits] {
            "" => 1,
            n => n.parse().map_err(|_| bad())?,
        };
        let unit_ms = match &period[digits..] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return Err(bad()),
        };
        let ms = n.checked_mul(unit_ms).ok_or_else(bad)?;
        Rate::new(count, Duration::from_millis(ms))
    }
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
        for text in ["1/1ms", "100/1s", "7/90s", "2/1h", "9/1500ms"] {
            assert_eq!(text.parse::<Rate>().unwrap().to_string(), text);
        }
        for bad in [
            "", "1", "a/1s", "1/", "1/1", "1/1d", "0/1s", "1/0s", "-1/1s",
        ] {
            assert!(bad.parse::<Rate>().is_err(), "{bad}");
        }
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
