//! The `Upstash-*` request headers of a publish, read into [`PublishOptions`]; every header the
//! gateway does not support yet is refused (400) rather than ignored.

use crate::config::{GatewayConfig, MAX_RETRIES};
use crate::envelope::{Callback, Flow};
use crate::error::ApiError;
use crate::redact::Redact;
use axum::http::{HeaderMap, StatusCode};
use std::time::Duration;

/// What a publish asks for, besides its destination and body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PublishOptions {
    pub(crate) method: String,
    /// From now until the first attempt.
    pub(crate) delay: Duration,
    pub(crate) retries: u32,
    pub(crate) timeout: Option<Duration>,
    /// Sent to the destination: `Content-Type` and `Upstash-Forward-*` without the prefix.
    pub(crate) forward: Vec<(String, String)>,
    pub(crate) dedup: DedupAsk,
    /// `Upstash-Retry-Delay`, checked.
    pub(crate) retry_delay: Option<String>,
    /// `Upstash-Label`, split at commas.
    pub(crate) labels: Vec<String>,
    /// `Upstash-Callback` and its `Upstash-Callback-*` settings.
    pub(crate) callback: Option<Callback>,
    /// `Upstash-Failure-Callback` and its `Upstash-Failure-Callback-*` settings.
    pub(crate) failure_callback: Option<Callback>,
    /// `Upstash-Flow-Control-Key` and `-Value`.
    pub(crate) flow: Option<Flow>,
    /// `Upstash-Redact-Fields`.
    pub(crate) redact: Redact,
}

/// How a publish asks to be deduplicated.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DedupAsk {
    None,
    /// `Upstash-Deduplication-Id`.
    Id(String),
    /// `Upstash-Content-Based-Deduplication: true`.
    Content,
}

const FORWARD: &str = "upstash-forward-";

/// The longest deduplication id (delayq's own dedup keys have the same limit).
const MAX_DEDUP_ID_LEN: usize = delayq::dedup::MAX_DEDUP_KEY_LEN;

/// Headers of the connection or the framing, which the delivery's HTTP client sets: a forwarded
/// one could contradict the body sent (`upstash-*` and `proxy-*` ones are refused too).
const NOT_FORWARDED: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "user-agent",
];

/// Feature headers this gateway does not implement yet: refused, so that a client never
/// believes it got what it asked for.
const NOT_YET: &[&str] = &["upstash-cron", "upstash-schedule-id", "upstash-queue-name"];

/// Reads the options of a publish from `headers`, at `now_ms`.
pub(crate) fn parse(
    headers: &HeaderMap,
    config: &GatewayConfig,
    now_ms: i64,
) -> Result<PublishOptions, ApiError> {
    let text = |name: &str| -> Result<Option<&str>, ApiError> {
        match headers.get(name).map(|v| v.to_str()) {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v.trim())),
            Some(Err(_)) => Err(ApiError::bad_request(format!("{name} is not ASCII text"))),
        }
    };
    refuse_not_yet(headers)?;
    let method = match text("upstash-method")? {
        None | Some("") => "POST".to_owned(),
        Some(m) => match m.to_ascii_uppercase().as_str() {
            up @ ("GET" | "POST" | "PUT" | "PATCH" | "DELETE") => up.to_owned(),
            _ => return Err(ApiError::bad_request(format!("bad Upstash-Method {m:?}"))),
        },
    };
    let delay = match (text("upstash-not-before")?, text("upstash-delay")?) {
        (Some(at), _) => {
            let secs: i64 = at.parse().map_err(|_| {
                ApiError::bad_request(format!("bad Upstash-Not-Before {at:?}: unix seconds"))
            })?;
            let ms = secs.saturating_mul(1000).saturating_sub(now_ms).max(0);
            Duration::from_millis(ms as u64)
        }
        (None, Some(d)) => parse_duration(d)
            .ok_or_else(|| ApiError::bad_request(format!("bad Upstash-Delay {d:?}")))?,
        (None, None) => Duration::ZERO,
    };
    if delay > config.max_delay {
        return Err(ApiError::bad_request(format!(
            "the delay is over this gateway's maximum of {} s",
            config.max_delay.as_secs()
        )));
    }
    let retries = match text("upstash-retries")? {
        None => config.default_retries,
        Some(r) => match r.parse::<u32>() {
            Ok(n) if n <= MAX_RETRIES => n,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "bad Upstash-Retries {r:?}: a number from 0 to {MAX_RETRIES}"
                )))
            }
        },
    };
    let timeout = match text("upstash-timeout")? {
        None => None,
        Some(t) => match parse_duration(t) {
            Some(d) if !d.is_zero() => Some(d),
            _ => return Err(ApiError::bad_request(format!("bad Upstash-Timeout {t:?}"))),
        },
    };
    let dedup = dedup_ask(
        text("upstash-deduplication-id")?,
        text("upstash-content-based-deduplication")?,
    )?;
    let labels = text("upstash-label")?.map_or_else(Vec::new, labels);
    let retry_delay = retry_delay(text("upstash-retry-delay")?)?;
    Ok(PublishOptions {
        redact: redact_fields(text("upstash-redact-fields")?)?,
        flow: flow_control(
            text("upstash-flow-control-key")?,
            text("upstash-flow-control-value")?,
        )?,
        callback: callback(headers, config, "upstash-callback")?,
        failure_callback: callback(headers, config, "upstash-failure-callback")?,
        retry_delay,
        labels,
        method,
        delay,
        retries,
        timeout,
        forward: forwarded(headers)?,
        dedup,
    })
}

/// `Upstash-Label`'s labels: split at commas, trimmed, empty ones left out.
fn labels(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `Upstash-Redact-Fields`, read; nothing redacted without it.
fn redact_fields(text: Option<&str>) -> Result<Redact, ApiError> {
    text.map_or(Ok(Redact::default()), |fields| {
        Redact::parse(fields).map_err(ApiError::bad_request)
    })
}

/// `Upstash-Retry-Delay`, checked.
fn retry_delay(text: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(expr) = text else {
        return Ok(None);
    };
    match crate::retry_delay::check(expr) {
        Ok(()) => Ok(Some(expr.to_owned())),
        Err(why) => Err(ApiError::bad_request(format!(
            "bad Upstash-Retry-Delay {expr:?}: {why}"
        ))),
    }
}

/// How a publish asks to be deduplicated, from `Upstash-Deduplication-Id` and
/// `Upstash-Content-Based-Deduplication`.
fn dedup_ask(id: Option<&str>, content: Option<&str>) -> Result<DedupAsk, ApiError> {
    Ok(match (id, content) {
        (Some(id), _) if id.len() > MAX_DEDUP_ID_LEN => {
            return Err(ApiError::bad_request(format!(
                "Upstash-Deduplication-Id is longer than {MAX_DEDUP_ID_LEN} bytes"
            )))
        }
        (Some(id), _) if !id.is_empty() => DedupAsk::Id(id.to_owned()),
        // Python's SDK sends "True".
        (_, Some(on)) if on.eq_ignore_ascii_case("true") => DedupAsk::Content,
        _ => DedupAsk::None,
    })
}

/// Refuses the headers of features this gateway does not have yet ([`NOT_YET`]).
fn refuse_not_yet(headers: &HeaderMap) -> Result<(), ApiError> {
    for name in headers.keys() {
        let name = name.as_str();
        if NOT_YET
            .iter()
            .any(|n| name == *n || name.starts_with(&format!("{n}-")))
        {
            return Err(ApiError::bad_request(format!(
                "{name} is not supported by this gateway yet (see docs/gateway.md)"
            )));
        }
    }
    Ok(())
}

/// The most a flow-control key's parallelism and rate may be.
const MAX_FLOW: u32 = 10_000;
/// The longest flow-control period (QStash's).
const MAX_PERIOD: Duration = Duration::from_secs(7 * 24 * 3600);

/// Whether `key` may be a flow-control key: 1 to 256 printable ASCII characters.
pub(crate) fn valid_flow_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= 256 && key.bytes().all(|b| b.is_ascii_graphic())
}

/// `Upstash-Flow-Control-Key` with `Upstash-Flow-Control-Value`: `parallelism=N`, `rate=N`,
/// `period=DURATION` (1 s by default, a week at most), separated by commas; parallelism or rate
/// is needed.
pub(crate) fn flow_control(
    key: Option<&str>,
    value: Option<&str>,
) -> Result<Option<Flow>, ApiError> {
    let bad = |why: String| Err(ApiError::bad_request(why));
    let (key, value) = match (key, value) {
        (None, None) => return Ok(None),
        (Some(key), Some(value)) => (key, value),
        _ => return bad("Upstash-Flow-Control-Key and -Value go together".into()),
    };
    if !valid_flow_key(key) {
        return bad(format!(
            "bad Upstash-Flow-Control-Key {key:?}: 1 to 256 printable characters"
        ));
    }
    let (mut parallelism, mut rate, mut period) = (None, None, None);
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, v) = part.split_once('=').unwrap_or((part, ""));
        let number = || {
            v.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_FLOW).contains(n))
        };
        let slot = match name.trim() {
            "parallelism" => parallelism.replace(number()),
            "rate" => rate.replace(number()),
            "period" => period
                .replace(parse_duration(v.trim()).filter(|d| !d.is_zero() && *d <= MAX_PERIOD))
                .map(|d| d.map(|_| 0)),
            _ => {
                return bad(format!(
                    "bad Upstash-Flow-Control-Value {value:?}: unknown {part:?}"
                ))
            }
        };
        if slot.is_some() {
            return bad(format!(
                "bad Upstash-Flow-Control-Value {value:?}: {part:?} twice"
            ));
        }
    }
    let invalid = |what: &str| {
        bad(format!(
            "bad Upstash-Flow-Control-Value {value:?}: {what} (parallelism and rate from 1 to \
             {MAX_FLOW}, a period from 1s to 7d)"
        ))
    };
    if parallelism == Some(None) || rate == Some(None) || period == Some(None) {
        return invalid("a value out of range");
    }
    if parallelism.is_none() && rate.is_none() {
        return invalid("parallelism or rate is needed");
    }
    Ok(Some(Flow {
        key: key.to_owned(),
        parallelism: parallelism.flatten(),
        rate: rate.flatten(),
        period_ms: period.flatten().map_or(1000, |d| d.as_millis() as u64),
    }))
}

/// The callback `prefix` (`upstash-callback` or `upstash-failure-callback`) names, with its
/// settings: `-Forward-*`, `-Method`, `-Retries`, `-Timeout`, `-Retry-Delay`. Any other
/// setting (`-Delay`: QStash refuses delayed callbacks) is refused. The URL must be in the
/// allow-list, as a destination.
fn callback(
    headers: &HeaderMap,
    config: &GatewayConfig,
    prefix: &str,
) -> Result<Option<Callback>, ApiError> {
    let text = |name: &str| -> Result<Option<&str>, ApiError> {
        match headers.get(name).map(|v| v.to_str()) {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v.trim())),
            Some(Err(_)) => Err(ApiError::bad_request(format!("{name} is not ASCII text"))),
        }
    };
    let setting = |s: &str| format!("{prefix}-{s}");
    for name in headers.keys() {
        let Some(rest) = name.as_str().strip_prefix(&setting("")) else {
            continue;
        };
        if !(rest.starts_with("forward-")
            || ["method", "retries", "timeout", "retry-delay"].contains(&rest))
        {
            return Err(ApiError::bad_request(format!(
                "{name} is not supported by this gateway (see docs/gateway.md)"
            )));
        }
    }
    let Some(url) = text(prefix)?.filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    let parsed = reqwest::Url::parse(url).ok();
    if !parsed.is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host()) {
        return Err(ApiError::bad_request(format!(
            "bad {prefix} {url:?}: an http:// or https:// URL is needed"
        )));
    }
    if !config.allows(url) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("{prefix} {url} is not in this gateway's allow-list"),
        ));
    }
    let method = match text(&setting("method"))? {
        None | Some("") => "POST".to_owned(),
        Some(m) => match m.to_ascii_uppercase().as_str() {
            up @ ("GET" | "POST" | "PUT" | "PATCH" | "DELETE") => up.to_owned(),
            _ => return Err(ApiError::bad_request(format!("bad {prefix}-Method {m:?}"))),
        },
    };
    let retries = match text(&setting("retries"))? {
        None => None,
        Some(r) => match r.parse::<u32>() {
            Ok(n) if n <= MAX_RETRIES => Some(n),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "bad {prefix}-Retries {r:?}: a number from 0 to {MAX_RETRIES}"
                )))
            }
        },
    };
    let timeout_ms = match text(&setting("timeout"))? {
        None => None,
        Some(t) => match parse_duration(t) {
            Some(d) if !d.is_zero() => Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            _ => return Err(ApiError::bad_request(format!("bad {prefix}-Timeout {t:?}"))),
        },
    };
    Ok(Some(Callback {
        url: url.to_owned(),
        method,
        headers: forwarded_with(headers, &setting("forward-"), false)?,
        retries,
        timeout_ms,
        retry_delay: retry_delay(text(&setting("retry-delay"))?)?,
    }))
}

/// `Content-Type` and the `Upstash-Forward-*` headers without their prefix, in the request's
/// order.
fn forwarded(headers: &HeaderMap) -> Result<Vec<(String, String)>, ApiError> {
    forwarded_with(headers, FORWARD, true)
}

/// The headers named `prefix*` without the prefix (and `Content-Type` when `content_type`).
fn forwarded_with(
    headers: &HeaderMap,
    prefix: &str,
    content_type: bool,
) -> Result<Vec<(String, String)>, ApiError> {
    let mut out = Vec::new();
    for (name, value) in headers {
        let name = name.as_str();
        let kept = if content_type && name == "content-type" {
            "Content-Type"
        } else if let Some(rest) = name.strip_prefix(prefix).filter(|r| !r.is_empty()) {
            if NOT_FORWARDED.contains(&rest)
                || rest.starts_with("upstash-")
                || rest.starts_with("proxy-")
            {
                return Err(ApiError::bad_request(format!(
                    "{name}: the gateway sets {rest} itself; it cannot be forwarded"
                )));
            }
            rest
        } else {
            continue;
        };
        let value = value
            .to_str()
            .map_err(|_| ApiError::bad_request(format!("{name} is not ASCII text")))?;
        out.push((kept.to_owned(), value.to_owned()));
    }
    // `Upstash-Forward-Content-Type` (Python's SDK prefixes every header it is given) wins
    // over the request's own `Content-Type`: one is sent.
    if out.iter().any(|(name, _)| name == "content-type") {
        out.retain(|(name, _)| name != "Content-Type");
    }
    Ok(out)
}

/// A duration as QStash writes it: `<n><unit>` repeated, units `s`, `m`, `h`, `d`
/// (`50s`, `1d10h30m`); a bare number is seconds.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok().map(Duration::from_secs);
    }
    let (mut total, mut number) = (0u64, None::<u64>);
    for c in text.chars() {
        if let Some(d) = c.to_digit(10) {
            number = Some(
                number
                    .unwrap_or(0)
                    .checked_mul(10)?
                    .checked_add(u64::from(d))?,
            );
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return None,
        };
        total = total.checked_add(number.take()?.checked_mul(unit)?)?;
    }
    match (number, text.is_empty()) {
        (None, false) => Some(Duration::from_secs(total)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("50s"), Some(Duration::from_secs(50)));
        assert_eq!(parse_duration("1m"), Some(Duration::from_secs(60)));
        assert_eq!(
            parse_duration("1d10h30m"),
            Some(Duration::from_secs(86_400 + 36_000 + 1_800))
        );
        assert_eq!(parse_duration("7"), Some(Duration::from_secs(7)));
        for bad in [
            "",
            "s",
            "10x",
            "1.5s",
            "-1s",
            "10s5",
            "99999999999999999999d",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    #[test]
    fn options() {
        let config = GatewayConfig::new("t".repeat(16), "k");
        let now = 1_700_000_000_000;
        let got = parse(
            &headers(&[
                ("Upstash-Method", "put"),
                ("Upstash-Delay", "10s"),
                ("Upstash-Retries", "0"),
                ("Upstash-Forward-X-Order", "17"),
                ("Content-Type", "text/plain"),
                ("Upstash-Content-Based-Deduplication", "True"),
                ("Upstash-Telemetry-Sdk", "x"),
                ("Upstash-Label", "billing, eu"),
            ]),
            &config,
            now,
        )
        .unwrap();
        assert_eq!(got.method, "PUT");
        assert_eq!(got.delay, Duration::from_secs(10));
        assert_eq!(got.retries, 0);
        assert_eq!(got.labels, ["billing", "eu"]);
        assert_eq!(got.dedup, DedupAsk::Content);
        assert!(got.forward.contains(&("x-order".into(), "17".into())));
        assert!(got
            .forward
            .contains(&("Content-Type".into(), "text/plain".into())));
        assert_eq!(got.forward.len(), 2);
        let typed = parse(
            &headers(&[
                ("Content-Type", "text/plain"),
                ("Upstash-Forward-Content-Type", "application/json"),
            ]),
            &config,
            now,
        )
        .unwrap();
        assert_eq!(
            typed.forward,
            [("content-type".to_owned(), "application/json".to_owned())]
        );
        // Not-Before wins over Delay.
        let at = parse(
            &headers(&[
                ("Upstash-Delay", "10s"),
                ("Upstash-Not-Before", "1700000030"),
            ]),
            &config,
            now,
        )
        .unwrap();
        assert_eq!(at.delay, Duration::from_secs(30));
        for bad in [
            ("Upstash-Delay", "ten"),
            ("Upstash-Retries", "-1"),
            ("Upstash-Retries", "101"),
            ("Upstash-Method", "TRACE"),
            ("Upstash-Callback", "http://127.0.0.1/cb"),
            ("Upstash-Callback-Delay", "10s"),
            ("Upstash-Flow-Control-Key", "k"),
            ("Upstash-Flow-Control-Value", "parallelism=1"),
            ("Upstash-Retry-Delay", "pow(2)"),
            ("Upstash-Delay", "400d"),
            ("Upstash-Forward-Content-Length", "5"),
            ("Upstash-Forward-Upstash-Signature", "x"),
            ("Upstash-Forward-Host", "evil"),
            ("Upstash-Deduplication-Id", &"x".repeat(513)),
        ] {
            assert!(parse(&headers(&[bad]), &config, now).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn flow_control_values() {
        let flow = |v| flow_control(Some("k"), Some(v));
        let got = flow("parallelism=2, rate=5, period=1d").unwrap().unwrap();
        assert_eq!(
            (got.parallelism, got.rate, got.period_ms),
            (Some(2), Some(5), 86_400_000)
        );
        let got = flow("rate=3,period=5403").unwrap().unwrap();
        assert_eq!(
            (got.parallelism, got.rate, got.period_ms),
            (None, Some(3), 5_403_000)
        );
        assert_eq!(flow("parallelism=1").unwrap().unwrap().period_ms, 1000);
        for bad in [
            "",
            "period=1s",
            "parallelism=0",
            "parallelism=x",
            "rate=-1",
            "parallelism=1, parallelism=2",
            "parallelism=1, burst=2",
            "rate=1, period=8d",
            "rate=1, period=0s",
            "parallelism=99999999999",
        ] {
            assert!(flow(bad).is_err(), "{bad}");
        }
        assert!(flow_control(None, Some("parallelism=1")).is_err());
        assert!(flow_control(Some("a b"), Some("parallelism=1")).is_err());
        assert_eq!(flow_control(None, None).unwrap(), None);
    }
}
