//! Reading Redis replies: the shapes delayq's scripts and commands return, decoded one way each.

use crate::{Error, Result};
use bytes::Bytes;
use fred::prelude::Value;

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
}
