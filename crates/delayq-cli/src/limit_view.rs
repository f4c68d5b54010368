//! A queue's flow-control limits and their use as people and scripts read them (`limit get`,
//! `limit set`, `stats`, the dashboard), and limits from the text the command line and the
//! dashboard take (`100/s`, `off`).

use crate::duration::parse_rate;
use delayq::{KeyRule, LimitUsage, Limits, Rate};
use serde_json::{json, Value};

/// How many keys with values held back `limit get`, `stats` and the dashboard show, the most
/// held back first.
pub(crate) const TOP_KEYS: usize = 10;

/// A rate as `--rate` takes it: `100/1s`, `10/250ms`, `5/1m`.
pub(crate) fn rate_text(rate: &Rate) -> String {
    format!(
        "{}/{}",
        rate.count,
        humantime::format_duration(rate.period)
    )
}

/// A rate from the text `--rate` takes.
pub(crate) fn rate_of(text: &str) -> Result<Rate, String> {
    parse_rate(text).map(|(count, period)| Rate::new(count, period))
}

/// A limit's count: 1 to 4294967295.
pub(crate) fn count_of(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(0) => Err("a limit is at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "{text:?} is not a whole number from 1 to {}",
            u32::MAX
        )),
    }
}

/// The limits as one JSON object: each limit by its flag's name, `null` when not set, rates
/// as `--rate` takes them.
pub(crate) fn limits_json(limits: &Limits) -> Value {
    let (pointer, regex) = match &limits.key {
        Some(KeyRule::JsonPointer(p)) => (Some(p.as_str()), None),
        Some(KeyRule::Regex(r)) => (None, Some(r.as_str())),
        _ => (None, None),
    };
    json!({
        "concurrency": limits.concurrency,
        "rate": limits.rate.as_ref().map(rate_text),
        "key_pointer": pointer,
        "key_regex": regex,
        "key_concurrency": limits.key_concurrency,
        "key_rate": limits.key_rate.as_ref().map(rate_text),
    })
}

/// The limits in one line: `concurrency 3, rate 100/1s, per key (pointer /k): concurrency 1`.
pub(crate) fn summary(limits: &Limits) -> String {
    let mut parts = Vec::new();
    if let Some(n) = limits.concurrency {
        parts.push(format!("concurrency {n}"));
    }
    if let Some(rate) = &limits.rate {
        parts.push(format!("rate {}", rate_text(rate)));
    }
    let key = match &limits.key {
        Some(KeyRule::JsonPointer(p)) => Some(format!("pointer {p}")),
        Some(KeyRule::Regex(r)) => Some(format!("regex {r}")),
        _ => None,
    };
    if let Some(key) = key {
        let mut per = Vec::new();
        if let Some(n) = limits.key_concurrency {
            per.push(format!("concurrency {n}"));
        }
        if let Some(rate) = &limits.key_rate {
            per.push(format!("rate {}", rate_text(rate)));
        }
        let per = match per.is_empty() {
            true => "no limit".to_owned(),
            false => per.join(", "),
        };
        parts.push(format!("per key ({key}): {per}"));
    }
    match parts.is_empty() {
        true => "none".to_owned(),
        false => parts.join(", "),
    }
}

/// What is in use as one JSON object: `slots_held`, `held_back` (values parked in all) and
/// `held_back_keys` (the [`TOP_KEYS`] keys with the most parked: `key`, `held_back`,
/// `running`).
pub(crate) fn usage_json(usage: &LimitUsage) -> Value {
    let keys: Vec<Value> = usage
        .keys
        .iter()
        .take(TOP_KEYS)
        .map(|k| json!({ "key": k.key, "held_back": k.held_back, "running": k.running }))
        .collect();
    json!({
        "slots_held": usage.slots_held,
        "held_back": usage.held_back,
        "held_back_keys": keys,
    })
}

/// What is in use in one line: `2 slots held, 120 held back (A 100, B 20)`.
pub(crate) fn usage_line(usage: &LimitUsage) -> String {
    let keys: Vec<String> = usage
        .keys
        .iter()
        .take(TOP_KEYS)
        .map(|k| format!("{} {}", k.key, k.held_back))
        .collect();
    let mut line = format!(
        "{} slots held, {} held back",
        usage.slots_held, usage.held_back
    );
    if !keys.is_empty() {
        line.push_str(&format!(" ({})", keys.join(", ")));
    }
    line
}

/// Whether `limits` has no limit at all.
pub(crate) fn is_empty(limits: &Limits) -> bool {
    limits.concurrency.is_none()
        && limits.rate.is_none()
        && limits.key.is_none()
        && limits.key_concurrency.is_none()
        && limits.key_rate.is_none()
}

/// The reason `limits` cannot be stored as they are, if any: a per-key limit needs a key rule.
pub(crate) fn incomplete(limits: &Limits) -> Option<&'static str> {
    let per_key = limits.key_concurrency.is_some() || limits.key_rate.is_some();
    (per_key && limits.key.is_none())
        .then_some("a per-key limit needs a key rule: give --key-pointer or --key-regex")
}
