//! Search inside one of a queue's lists, bounded: Redis cannot search a list or a sorted set by
//! a member's start without reading it, so one request reads at most [`WINDOW`] entries from
//! `from`, in pages of [`STEP`] (read a member per command, see `preview.rs`), and answers the matches with the
//! position where the next request carries on (`next`; none at the end of the list).
//!
//! An entry matches `q` when the text its row shows starts with it (the decoded value, or the
//! hex of an entry shown only as bytes, where `q` may also be the bytes' start as text), or its
//! name does (a pending entry's handle, a delivery id, a dead letter's id).

use crate::text_codec::encode_hex;
use serde_json::{json, Value};

pub(super) use crate::lists::{STEP, WINDOW};
/// The longest `q`: the rows compared show this many bytes of each value.
pub(super) const MAX_QUERY: usize = super::preview::PREVIEW;

/// What one search request found.
pub(super) struct Found {
    /// The matching rows, each with its position `at`.
    pub(super) rows: Vec<Value>,
    /// Entries read.
    pub(super) scanned: usize,
    /// Where the search carries on; `None`: the end of the list was reached.
    pub(super) next: Option<usize>,
}

impl Found {
    /// Puts the matching rows into the detail answer `body`, with what was searched.
    pub(super) fn answer(self, q: &str, body: &mut Value) {
        body["q"] = json!(q);
        body["scanned"] = json!(self.scanned);
        body["next"] = json!(self.next);
        body["window"] = json!(WINDOW);
        body["rows"] = json!(self.rows);
    }
}

/// Reads `page(offset, count)` from `from` in steps of [`STEP`] up to [`WINDOW`] entries, and
/// keeps the rows matching `q`, at most `limit` (the search stops at the limit-th match).
pub(super) async fn scan<F, Fut>(
    from: usize,
    limit: usize,
    q: &str,
    mut page: F,
) -> anyhow::Result<Found>
where
    F: FnMut(usize, usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Vec<Value>>>,
{
    let query = Query::new(q);
    let mut rows = Vec::new();
    let mut at = from;
    let end = from.saturating_add(WINDOW);
    while at < end {
        let step = STEP.min(end - at);
        let read = page(at, step).await?;
        let got = read.len();
        for (i, mut row) in read.into_iter().enumerate() {
            if !query.matches(&row) {
                continue;
            }
            row["at"] = json!(at + i);
            rows.push(row);
            if rows.len() == limit {
                let next = at + i + 1;
                return Ok(Found {
                    rows,
                    scanned: next - from,
                    next: Some(next),
                });
            }
        }
        at += got;
        if got < step {
            return Ok(Found {
                rows,
                scanned: at - from,
                next: None,
            });
        }
    }
    Ok(Found {
        rows,
        scanned: at - from,
        next: Some(at),
    })
}

/// `q` in the forms a row is compared with.
struct Query<'a> {
    text: &'a str,
    lower: String,
    hex: String,
}

impl<'a> Query<'a> {
    fn new(text: &'a str) -> Self {
        Query {
            text,
            lower: text.to_ascii_lowercase(),
            hex: encode_hex(text.as_bytes()),
        }
    }

    fn matches(&self, row: &Value) -> bool {
        let starts = |key: &str, with: &str| row[key].as_str().is_some_and(|v| v.starts_with(with));
        let named = ["handle", "id"]
            .iter()
            .any(|key| starts(key, self.text) || starts(key, &self.lower));
        let raw = starts("hex", &self.lower) || starts("hex", &self.hex);
        named || raw || starts("value", self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_matches_by_shown_text_hex_bytes_or_name() {
        let query = Query::new("ord");
        assert!(query.matches(&json!({ "value": "order-1" })));
        assert!(!query.matches(&json!({ "value": "an order" })));
        assert!(query.matches(&json!({ "hex": encode_hex(b"order") })));
        assert!(Query::new("6f72").matches(&json!({ "hex": "6f7264" })));
        assert!(Query::new("08AB").matches(&json!({ "handle": "08ab00", "value": "x" })));
        assert!(Query::new("d1").matches(&json!({ "id": "d1", "value": "x" })));
    }

    #[tokio::test]
    async fn a_scan_reads_a_window_in_steps_and_says_where_to_carry_on() {
        let values: Vec<Value> = (0..2_500)
            .map(|i| json!({ "value": format!("v{i}") }))
            .collect();
        let page = |offset: usize, count: usize| {
            let slice: Vec<Value> = values.iter().skip(offset).take(count).cloned().collect();
            assert!(count <= STEP);
            async move { Ok(slice) }
        };
        let first = scan(0, 50, "v1999", page).await.unwrap();
        assert_eq!((first.rows.len(), first.next), (0, Some(WINDOW)));
        let second = scan(WINDOW, 50, "v1999", page).await.unwrap();
        assert_eq!(second.rows[0]["at"], 1999);
        let last = scan(2 * WINDOW, 50, "v", page).await.unwrap();
        assert_eq!((last.rows.len(), last.next), (50, Some(2_050)));
        let end = scan(2_400, 500, "v", page).await.unwrap();
        assert_eq!((end.rows.len(), end.next, end.scanned), (100, None, 100));
    }
}
