//! A queue's flow-control limits and their use as people and scripts read them (`limit get`,
//! `limit set`, `stats`, the dashboard), and limits from the text the command line and the
//! dashboard take (`100/s`, `off`).

use delayq::limit::{KeyRule, LimitUsage, Limits, Rate};
use serde_json::{json, Value};

/// A rate from the text `--rate` takes (`100/s`, `5/min`, `10/250ms`), read by the library's
/// parser (the one grammar of the library, the command line and the dashboard).
pub(crate) fn rate_of(text: &str) -> Result<Rate, String> {
    text.parse::<Rate>().map_err(|err| match err {
        delayq::Error::InvalidLimits(why) => why,
        other => other.to_string(),
    })
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
    let (pointer, regex) = match &limits.key() {
        Some(KeyRule::JsonPointer(p)) => (Some(p.as_str()), None),
        Some(KeyRule::Regex(r)) => (None, Some(r.as_str())),
        _ => (None, None),
    };
    json!({
        "concurrency": limits.concurrency(),
        "rate": limits.rate().as_ref().map(Rate::to_string),
        "key_pointer": pointer,
        "key_regex": regex,
        "key_concurrency": limits.key_concurrency(),
        "key_rate": limits.key_rate().as_ref().map(Rate::to_string),
    })
}

/// The limits in one line: `concurrency 3, rate 100/1s, per key (pointer /k): concurrency 1`.
pub(crate) fn summary(limits: &Limits) -> String {
    let mut parts = Vec::new();
    if let Some(n) = limits.concurrency() {
        parts.push(format!("concurrency {n}"));
    }
    if let Some(rate) = &limits.rate() {
        parts.push(format!("rate {rate}"));
    }
    let key = match &limits.key() {
        Some(rule) => Some(rule.to_string()),
        None if limits.per_key() => Some("keys from the worker's closure".to_owned()),
        None => None,
    };
    if let Some(key) = key {
        let mut per = Vec::new();
        if let Some(n) = limits.key_concurrency() {
            per.push(format!("concurrency {n}"));
        }
        if let Some(rate) = &limits.key_rate() {
            per.push(format!("rate {rate}"));
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

/// What is in use as one JSON object: `slots_held`, `keys_busy` (keys with slots held),
/// `keys_held` and `values_held` (values held back for their key), `top_held` (the keys with
/// the most held back, most first: `key`, `values`), `next_token_ms` (when the queue-wide rate
/// has its next start, `null` when it has one now).
pub(crate) fn usage_json(usage: &LimitUsage) -> Value {
    let top: Vec<Value> = usage
        .top_held
        .iter()
        .map(|(key, values)| json!({ "key": key, "values": values }))
        .collect();
    json!({
        "slots_held": usage.slots_held,
        "keys_busy": usage.keys_busy,
        "keys_held": usage.keys_held,
        "values_held": usage.values_held,
        "top_held": top,
        "next_token_ms": usage.next_token_at.map(epoch_ms),
    })
}

fn epoch_ms(at: std::time::SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What is in use in one line: `2 slots held, 120 values held back for 2 keys (A 100, B 20)`.
pub(crate) fn usage_line(usage: &LimitUsage) -> String {
    let top: Vec<String> = usage
        .top_held
        .iter()
        .map(|(key, values)| format!("{key} {values}"))
        .collect();
    let mut line = format!(
        "{} slots held, {} values held back for {} keys",
        usage.slots_held, usage.values_held, usage.keys_held
    );
    if !top.is_empty() {
        line.push_str(&format!(" ({})", top.join(", ")));
    }
    line
}

/// Whether `limits` has no limit at all.
pub(crate) fn is_empty(limits: &Limits) -> bool {
    limits.concurrency().is_none()
        && limits.rate().is_none()
        && limits.key().is_none()
        && limits.key_concurrency().is_none()
        && limits.key_rate().is_none()
}

/// A caution for per-key limits without a key rule: `delayq work` then applies only the
/// queue-wide ones (a library worker may read keys with its own closure).
pub(crate) fn keyless_caution(limits: &Limits) -> Option<&'static str> {
    (limits.per_key() && limits.key().is_none()).then_some(
        "per-key limits without a key rule: `delayq work` applies only the queue-wide limits \
         (give --key-pointer or --key-regex; a library worker may read keys with its closure)",
    )
}
