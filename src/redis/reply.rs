//! Reading Redis replies: the shapes delayq's scripts and commands return, decoded one way each.

use crate::{Error, Result};
use bytes::Bytes;
use fred::prelude::Value;
use std::time::Duration;

fn unexpected(context: &'static str, detail: String) -> Error {
    Error::UnexpectedReply { context, detail }
}

/// A reply that must be an array of exactly `N` items.
pub(crate) fn fixed<const N: usize>(reply: Value, context: &'static str) -> Result<[Value; N]> {
    let Value::Array(items) = reply else {
        return Err(unexpected(context, format!("{reply:?}")));
    };
    <[Value; N]>::try_from(items)
        .map_err(|items| unexpected(context, format!("{} items, not {N}", items.len())))
}

/// A count (a non-negative integer).
pub(crate) fn count(value: Value, context: &'static str) -> Result<u64> {
    value
        .as_u64()
        .ok_or_else(|| unexpected(context, format!("count {value:?}")))
}

/// A zset score as Redis returns it to Lua (a decimal string, possibly `inf`), or nil/false for
/// none. Scores past the `i64` range are clamped to it.
pub(crate) fn score(value: &Value, context: &'static str) -> Result<Option<i64>> {
    match value {
        Value::Null | Value::Boolean(false) => Ok(None),
        Value::Integer(i) => Ok(Some(*i)),
        Value::Double(f) => Ok(Some(*f as i64)),
        other => {
            let text = other
                .as_str()
                .ok_or_else(|| unexpected(context, format!("score {other:?}")))?;
            text.parse::<i64>()
                .ok()
                .or_else(|| text.parse::<f64>().ok().map(|f| f as i64))
                .map(Some)
                .ok_or_else(|| unexpected(context, format!("score {text:?}")))
        }
    }
}

/// One bulk string (a value, an entry, a record).
pub(crate) fn bytes(value: Value, context: &'static str) -> Result<Bytes> {
    match value {
        Value::Bytes(b) => Ok(b),
        Value::String(s) => Ok(s.into_inner()),
        other => Err(unexpected(context, format!("not a string: {other:?}"))),
    }
}

/// A list of bulk strings; nil is the empty list, and a lone bulk string (`LPOP` without a
/// count) a list of one. An item that is not a string fails the whole reply.
pub(crate) fn bytes_list(reply: Value, context: &'static str) -> Result<Vec<Bytes>> {
    match reply {
        Value::Array(items) => items.into_iter().map(|v| bytes(v, context)).collect(),
        Value::Null => Ok(Vec::new()),
        single @ (Value::Bytes(_) | Value::String(_)) => Ok(vec![bytes(single, context)?]),
        other => Err(unexpected(context, format!("{other:?}"))),
    }
}

/// An optional bulk string (nil or false for none).
pub(crate) fn opt_bytes(reply: Value, context: &'static str) -> Result<Option<Bytes>> {
    match reply {
        Value::Null | Value::Boolean(false) => Ok(None),
        other => bytes(other, context).map(Some),
    }
}

/// One value taken into flight (`id, value, attempt` in the reply of `take.lua`,
/// `limit_take.lua` and `limit_unpark.lua`).
#[derive(Debug)]
pub(crate) struct Taken {
    pub(crate) id: String,
    pub(crate) raw: Bytes,
    pub(crate) attempt: u32,
}

/// One value taken into flight, from its three items.
pub(crate) fn taken(
    id: Value,
    value: Value,
    attempt: Value,
    context: &'static str,
) -> Result<Taken> {
    let (Some(id), Ok(raw)) = (id.as_string(), bytes(value, context)) else {
        return Err(unexpected(
            context,
            "delivery id or value is not a string".into(),
        ));
    };
    let attempt = attempt
        .as_u64()
        .map_or(u32::MAX, |a| u32::try_from(a).unwrap_or(u32::MAX));
    Ok(Taken { id, raw, attempt })
}

/// The values taken into flight that `items` lists, three items each, in order. An item that
/// cannot be read is reported beside the others (its value stays in flight, and a reaper gives
/// it back after the deadline), so that none read is dropped unsettled.
pub(crate) fn taken_list(
    items: impl IntoIterator<Item = Value>,
    context: &'static str,
) -> (Vec<Taken>, Option<Error>) {
    let mut items = items.into_iter();
    let mut out = Vec::new();
    let mut unreadable = None;
    while let (Some(id), Some(value), Some(attempt)) = (items.next(), items.next(), items.next()) {
        match taken(id, value, attempt, context) {
            Ok(one) => out.push(one),
            Err(err) => unreadable = Some(err),
        }
    }
    (out, unreadable)
}

/// Why a start waits for the queue-wide limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitFor {
    /// A slot of the concurrency cap.
    Slot,
    /// A token of the rate.
    Token,
}

impl WaitFor {
    /// The metrics label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            WaitFor::Slot => "slot",
            WaitFor::Token => "token",
        }
    }
}

/// What a limit script decided for a start: the `{ code, a, b }` the limit scripts share
/// (`lib/limit.lua`'s callers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// 1: the job may start; its slots and tokens were granted at `admitted_ms` (the Redis
    /// server's clock, epoch ms).
    Started { admitted_ms: i64 },
    /// 0: the queue-wide limits refuse for now; try again after the wait.
    Wait(Duration, WaitFor),
    /// 2: the value was held back on its key's list; `first` when the key was not held before.
    HeldBack { wait: Duration, first: bool },
    /// 3: the limits changed since the worker read them.
    Stale,
    /// 4: the delivery is no longer in flight.
    Gone,
    /// 8: the stored field named is malformed; nothing starts until the limits are stored
    /// again.
    Malformed(String),
}

/// A wait in ms and its reason (`'slot'`, else a token), as the limit scripts give them.
pub(crate) fn wait_for(
    ms: &Value,
    why: &Value,
    context: &'static str,
) -> Result<(Duration, WaitFor)> {
    let ms = score(ms, context)?.unwrap_or(0).max(0) as u64;
    let why = match why.as_str().as_deref() {
        Some("slot") => WaitFor::Slot,
        _ => WaitFor::Token,
    };
    Ok((Duration::from_millis(ms), why))
}

/// The decision of code `code` with the items after it, `a` and `b`.
pub(crate) fn decision(
    code: Option<i64>,
    a: Option<&Value>,
    b: Option<&Value>,
    context: &'static str,
) -> Result<Decision> {
    let none = Value::Null;
    let (a, b) = (a.unwrap_or(&none), b.unwrap_or(&none));
    let ms = |v: &Value| -> Result<Duration> {
        Ok(Duration::from_millis(
            score(v, context)?.unwrap_or(0).max(0) as u64,
        ))
    };
    Ok(match code {
        Some(1) => Decision::Started {
            admitted_ms: score(a, context)?
                .ok_or_else(|| unexpected(context, "a start without its grant time".into()))?,
        },
        Some(0) => {
            let (wait, why) = wait_for(a, b, context)?;
            Decision::Wait(wait, why)
        }
        Some(2) => Decision::HeldBack {
            wait: ms(a)?,
            first: b.as_i64() == Some(1),
        },
        Some(3) => Decision::Stale,
        Some(4) => Decision::Gone,
        Some(8) => Decision::Malformed(a.as_string().unwrap_or_default()),
        other => return Err(unexpected(context, format!("decision code {other:?}"))),
    })
}

/// The answer of the scripts that take for a worker (`limit_take.lua`, `limit_unpark.lua`)
/// when the queue is paused: `{ 9 }`, nothing taken.
const PAUSED: i64 = 9;

/// Whether a take script's reply `items` says the queue is paused (see [`PAUSED`]).
pub(crate) fn is_paused(items: &[Value]) -> bool {
    matches!(items, [code] if code.as_i64() == Some(PAUSED))
}

/// A whole reply that is one decision: `{ code, a, b }` (fewer items where the code needs
/// fewer).
pub(crate) fn decision_reply(reply: &Value, context: &'static str) -> Result<Decision> {
    let Value::Array(items) = reply else {
        return Err(unexpected(context, format!("{reply:?}")));
    };
    decision(
        items.first().and_then(Value::as_i64),
        items.get(1),
        items.get(2),
        context,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_arrays_and_counts() {
        let reply = Value::Array(vec![Value::Integer(3), Value::Null]);
        let [n, head] = fixed::<2>(reply, "t.lua").unwrap();
        assert_eq!(count(n, "t.lua").unwrap(), 3);
        assert_eq!(score(&head, "t.lua").unwrap(), None);
        assert!(fixed::<3>(Value::Array(vec![]), "t.lua").is_err());
        assert!(fixed::<1>(Value::Integer(1), "t.lua").is_err());
        assert!(count(Value::Integer(-1), "t.lua").is_err());
    }

    #[test]
    fn scores() {
        let s = |text: &str| score(&Value::String(text.into()), "t");
        assert_eq!(s("1767225600123").unwrap(), Some(1_767_225_600_123));
        assert_eq!(s("1.5e3").unwrap(), Some(1500));
        assert_eq!(s("-inf").unwrap(), Some(i64::MIN));
        assert!(s("soon").is_err());
        assert_eq!(score(&Value::Boolean(false), "t").unwrap(), None);
    }

    #[test]
    fn byte_lists_refuse_non_strings() {
        let list = Value::Array(vec![Value::Bytes("a".into()), Value::String("b".into())]);
        assert_eq!(bytes_list(list, "t").unwrap(), vec!["a", "b"]);
        assert!(bytes_list(Value::Array(vec![Value::Integer(1)]), "t").is_err());
        assert!(bytes_list(Value::Null, "t").unwrap().is_empty());
        assert_eq!(
            bytes_list(Value::Bytes("x".into()), "t").unwrap(),
            vec!["x"]
        );
        assert_eq!(opt_bytes(Value::Boolean(false), "t").unwrap(), None);
    }

    #[test]
    fn decisions_and_takes_read_one_way() {
        let v = |items: Vec<Value>| Value::Array(items);
        let int = Value::Integer;
        let text = |t: &str| Value::String(t.into());
        let d = |reply: Value| decision_reply(&reply, "t").unwrap();
        assert_eq!(
            d(v(vec![int(1), int(1_700)])),
            Decision::Started { admitted_ms: 1_700 }
        );
        assert_eq!(
            d(v(vec![int(0), int(40), text("slot")])),
            Decision::Wait(Duration::from_millis(40), WaitFor::Slot)
        );
        assert_eq!(
            d(v(vec![int(2), int(5), int(1)])),
            Decision::HeldBack {
                wait: Duration::from_millis(5),
                first: true
            }
        );
        assert_eq!(d(v(vec![int(3)])), Decision::Stale);
        assert_eq!(
            d(v(vec![int(8), text("concurrency")])),
            Decision::Malformed("concurrency".into())
        );
        assert!(decision_reply(&v(vec![int(1)]), "t").is_err());
        assert!(decision_reply(&v(vec![int(9)]), "t").is_err());

        let (taken, bad) = taken_list(
            vec![
                text("a"),
                Value::Bytes("va".into()),
                int(2),
                v(vec![]),
                Value::Bytes("vb".into()),
                int(1),
            ],
            "t",
        );
        assert_eq!(taken.len(), 1);
        assert_eq!((taken[0].id.as_str(), taken[0].attempt), ("a", 2));
        assert!(bad.is_some());
    }
}
