//! How [`Limits`] are written in their Redis hash, and read back (refusing what delayq did not
//! write). The limit scripts read the numbers from the same hash (`lua/lib/limit.lua`'s
//! `delayq_limit_spec`, which names these fields again and refuses what this file refuses for
//! them), so a worker carries only the version it read.

use super::rule::{KeyRule, Rate};
use super::Limits;
use crate::{Error, Result};
use std::time::Duration;

/// Hash fields, one home each (and `lua/lib/limit.lua` for the scripts).
const CONCURRENCY: &str = "concurrency";
const RATE_COUNT: &str = "rate_count";
const RATE_PERIOD_MS: &str = "rate_period_ms";
const KEY_POINTER: &str = "key_pointer";
const KEY_REGEX: &str = "key_regex";
const KEY_CONCURRENCY: &str = "key_concurrency";
const KEY_RATE_COUNT: &str = "key_rate_count";
const KEY_RATE_PERIOD_MS: &str = "key_rate_period_ms";
/// A fresh random token per store, so a worker sees that the limits changed.
pub(crate) const VERSION: &str = "version";

/// The hash fields of `limits`, with a fresh version.
pub(crate) fn to_fields(limits: &Limits) -> Vec<(String, String)> {
    let mut out = vec![(
        VERSION.to_owned(),
        format!("{:016x}", rand::random::<u64>()),
    )];
    let mut put = |field: &str, value: String| out.push((field.to_owned(), value));
    if let Some(n) = limits.concurrency {
        put(CONCURRENCY, n.to_string());
    }
    if let Some(rate) = limits.rate {
        put(RATE_COUNT, rate.count.to_string());
        put(RATE_PERIOD_MS, rate.period_ms().to_string());
    }
    match &limits.key {
        Some(KeyRule::JsonPointer(p)) => put(KEY_POINTER, p.clone()),
        Some(KeyRule::Regex(r)) => put(KEY_REGEX, r.clone()),
        None => {}
    }
    if let Some(n) = limits.key_concurrency {
        put(KEY_CONCURRENCY, n.to_string());
    }
    if let Some(rate) = limits.key_rate {
        put(KEY_RATE_COUNT, rate.count.to_string());
        put(KEY_RATE_PERIOD_MS, rate.period_ms().to_string());
    }
    out
}

/// The limits of the stored hash `key`, and its version; [`Error::MalformedLimits`], naming
/// the field, when a field is unknown, a number does not parse, or the limits do not validate.
pub(crate) fn from_fields(key: &str, fields: Vec<(String, String)>) -> Result<(Limits, String)> {
    let bad = |reason: String| Error::MalformedLimits {
        key: key.to_owned(),
        reason,
    };
    let mut limits = Limits::default();
    let mut version = String::new();
    let (mut rate, mut key_rate) = ((None, None), (None, None));
    for (field, value) in fields {
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| bad(format!("field {field:?} is {value:?}, not a whole number")))
        };
        let count = || {
            number().and_then(|n| {
                u32::try_from(n).map_err(|_| bad(format!("field {field:?} is too large")))
            })
        };
        match field.as_str() {
            VERSION => version = value.clone(),
            CONCURRENCY => limits.concurrency = Some(count()?),
            RATE_COUNT => rate.0 = Some(count()?),
            RATE_PERIOD_MS => rate.1 = Some(number()?),
            KEY_POINTER => limits.key = Some(KeyRule::JsonPointer(value.clone())),
            KEY_REGEX => limits.key = Some(KeyRule::Regex(value.clone())),
            KEY_CONCURRENCY => limits.key_concurrency = Some(count()?),
            KEY_RATE_COUNT => key_rate.0 = Some(count()?),
            KEY_RATE_PERIOD_MS => key_rate.1 = Some(number()?),
            other => return Err(bad(format!("unknown field {other:?}"))),
        }
    }
    limits.rate = rate_of(rate, RATE_COUNT, RATE_PERIOD_MS).map_err(&bad)?;
    limits.key_rate = rate_of(key_rate, KEY_RATE_COUNT, KEY_RATE_PERIOD_MS).map_err(&bad)?;
    limits.validate().map_err(|e| bad(e.to_string()))?;
    Ok((limits, version))
}

fn rate_of(
    parts: (Option<u32>, Option<u64>),
    count: &str,
    period: &str,
) -> std::result::Result<Option<Rate>, String> {
    match parts {
        (None, None) => Ok(None),
        (Some(n), Some(ms)) => Ok(Some(Rate {
            count: n,
            period: Duration::from_millis(ms),
        })),
        _ => Err(format!("{count} and {period} come together")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_round_trip_through_their_fields() {
        let limits = Limits::default()
            .with_concurrency(3)
            .with_rate(Rate::new(100, Duration::from_secs(1)).unwrap())
            .with_key(KeyRule::Regex("c=(\\w+)".into()))
            .with_key_concurrency(1)
            .with_key_rate(Rate::new(5, Duration::from_millis(250)).unwrap());
        let (back, version) = from_fields("delayq_limits:{q}", to_fields(&limits)).unwrap();
        assert_eq!(back, limits);
        assert_eq!(version.len(), 16);
    }

    #[test]
    fn hand_edited_fields_are_refused_by_name() {
        let field = |f: &str, v: &str| vec![(f.to_owned(), v.to_owned())];
        for (fields, says) in [
            (field("concurrency", "three"), "concurrency"),
            (field("concurrency", "0"), "at least 1"),
            (field("colour", "red"), "colour"),
            (field("rate_count", "5"), "come together"),
            (field("key_regex", "("), "regex"),
        ] {
            let err = from_fields("delayq_limits:{q}", fields).unwrap_err();
            assert!(matches!(err, Error::MalformedLimits { .. }), "{err}");
            let err = err.to_string();
            assert!(
                err.contains(says) && err.contains("delayq_limits:{q}"),
                "{err}"
            );
        }
    }
}
