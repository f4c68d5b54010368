//! The query of QStash's DLQ calls (`GET /v2/dlq`, and `DELETE /v2/dlq`, `POST /v2/dlq/retry`
//! in bulk) as the SDKs send it: ids (`dlqIds`, repeated), or filters, each repeatable (the JS
//! SDK repeats a parameter for an array: any of the values matches), different filters all
//! having to match; `count` and `cursor`. A parameter that is not one of these, or a bad value,
//! is refused rather than ignored: a filter that is ignored widens a bulk delete.

use crate::envelope::Envelope;

/// What a DLQ call asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct DlqQuery {
    /// `dlqIds` (the message ids), without repeats.
    pub(crate) ids: Vec<String>,
    pub(crate) filter: DlqFilter,
    /// `count`, when given (checked against each call's own bounds by the caller).
    pub(crate) count: Option<usize>,
    /// `cursor`: an offset among the matching dead letters (0 when absent or empty).
    pub(crate) from: usize,
}

/// The filters of a DLQ call; an empty one matches every dead letter.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct DlqFilter {
    message_ids: Vec<String>,
    urls: Vec<String>,
    /// `topicName` (QStash's URL groups): this gateway has none, so nothing matches one.
    topic_names: Vec<String>,
    schedule_ids: Vec<String>,
    queue_names: Vec<String>,
    labels: Vec<String>,
    flow_control_keys: Vec<String>,
    response_statuses: Vec<u16>,
    /// `fromDate`, `toDate`: when the message became a dead letter, epoch ms, inclusive.
    from_ms: Option<i64>,
    to_ms: Option<i64>,
}

/// What of a dead letter a filter looks at besides its envelope.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LetterFacts {
    /// The last answer's status (0 when there was none).
    pub(crate) response_status: u16,
    pub(crate) dead_at_ms: i64,
}

impl DlqFilter {
    /// Whether no filter is given.
    pub(crate) fn is_empty(&self) -> bool {
        *self == DlqFilter::default()
    }

    /// Whether the dead letter of `envelope` with `facts` passes every filter given.
    pub(crate) fn matches(&self, envelope: &Envelope, facts: LetterFacts) -> bool {
        let any = |wanted: &[String], have: Option<&str>| {
            wanted.is_empty() || have.is_some_and(|h| wanted.iter().any(|w| w == h))
        };
        any(&self.message_ids, Some(&envelope.id))
            && any(&self.urls, Some(&envelope.url))
            && self.topic_names.is_empty()
            && any(&self.schedule_ids, envelope.schedule_id.as_deref())
            && any(&self.queue_names, envelope.queue_name.as_deref())
            && any(
                &self.flow_control_keys,
                envelope.flow.as_ref().map(|f| f.key.as_str()),
            )
            && (self.labels.is_empty() || envelope.labels.iter().any(|l| self.labels.contains(l)))
            && (self.response_statuses.is_empty()
                || self.response_statuses.contains(&facts.response_status))
            && self.from_ms.is_none_or(|from| facts.dead_at_ms >= from)
            && self.to_ms.is_none_or(|to| facts.dead_at_ms <= to)
    }
}

/// The most values one filter may be given.
const MAX_VALUES: usize = 100;

/// Reads the query's `pairs` (decoded), or says why they are not a DLQ query.
pub(crate) fn parse(pairs: Vec<(String, String)>) -> Result<DlqQuery, String> {
    let mut query = DlqQuery::default();
    let mut cursor_given = false;
    for (name, value) in pairs {
        let filter = &mut query.filter;
        let list = match name.as_str() {
            "dlqIds" => &mut query.ids,
            "messageId" => &mut filter.message_ids,
            "url" => &mut filter.urls,
            "topicName" | "urlGroup" => &mut filter.topic_names,
            "scheduleId" => &mut filter.schedule_ids,
            "queueName" => &mut filter.queue_names,
            "label" => &mut filter.labels,
            "flowControlKey" => &mut filter.flow_control_keys,
            "responseStatus" => {
                let status = value
                    .parse::<u16>()
                    .map_err(|_| format!("bad responseStatus {value:?}: an HTTP status"))?;
                filter.response_statuses.push(status);
                continue;
            }
            "fromDate" | "toDate" => {
                let ms = value
                    .parse::<i64>()
                    .map_err(|_| format!("bad {name} {value:?}: Unix milliseconds"))?;
                match name.as_str() {
                    "fromDate" => filter.from_ms = Some(ms),
                    _ => filter.to_ms = Some(ms),
                }
                continue;
            }
            "count" => {
                let count = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("bad count {value:?}: a positive number"))?;
                query.count = Some(count);
                continue;
            }
            "cursor" => {
                cursor_given = true;
                if !value.is_empty() {
                    query.from = value.parse().map_err(|_| format!("bad cursor {value:?}"))?;
                }
                continue;
            }
            "callerIp" => {
                return Err("callerIp is not kept by this gateway: it cannot filter on it".into())
            }
            other => {
                return Err(format!(
                    "unknown parameter {other:?}: the DLQ takes dlqIds, messageId, url, \
                     topicName, scheduleId, queueName, label, flowControlKey, responseStatus, \
                     fromDate, toDate, count and cursor"
                ))
            }
        };
        if value.is_empty() {
            return Err(format!("an empty {name}"));
        }
        list.push(value);
    }
    check(&query, cursor_given)?;
    query.ids.sort();
    query.ids.dedup();
    Ok(query)
}

/// Refuses a query whose filters have too many values, or with ids beside filters or a cursor.
fn check(query: &DlqQuery, cursor_given: bool) -> Result<(), String> {
    let filter = &query.filter;
    let lists = [
        &query.ids,
        &filter.message_ids,
        &filter.urls,
        &filter.topic_names,
        &filter.schedule_ids,
        &filter.queue_names,
        &filter.labels,
        &filter.flow_control_keys,
    ];
    if lists.iter().any(|l| l.len() > MAX_VALUES) || filter.response_statuses.len() > MAX_VALUES {
        return Err(format!("a filter is given more than {MAX_VALUES} values"));
    }
    if !query.ids.is_empty() && (!filter.is_empty() || cursor_given) {
        return Err("give dlqIds or filters (with a cursor), not both".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn envelope() -> Envelope {
        Envelope {
            id: "msg_1".into(),
            method: "POST".into(),
            url: "http://a/x".into(),
            headers: Vec::new(),
            body: Vec::new(),
            retries: 0,
            timeout_ms: None,
            created_ms: 0,
            not_before_ms: 0,
            labels: Vec::new(),
            retry_delay: None,
            owner: None,
            schedule_id: None,
            callback: None,
            failure_callback: None,
            lane: None,
            queue_name: None,
            flow: None,
            redact: Default::default(),
        }
    }

    #[test]
    fn filters_the_sdks_send() {
        let query = parse(pairs(&[
            ("url", "http://a/x"),
            ("url", "http://a/y"),
            ("label", "l1"),
            ("responseStatus", "500"),
            ("fromDate", "1000"),
            ("toDate", "2000"),
            ("count", "10"),
            ("cursor", ""),
        ]))
        .unwrap();
        assert_eq!(query.count, Some(10));
        assert_eq!(query.from, 0);
        let mut env = envelope();
        env.url = "http://a/y".into();
        env.labels = vec!["l0".into(), "l1".into()];
        let facts = LetterFacts {
            response_status: 500,
            dead_at_ms: 1500,
        };
        assert!(query.filter.matches(&env, facts));
        let late = LetterFacts {
            dead_at_ms: 2001,
            ..facts
        };
        assert!(!query.filter.matches(&env, late));
        let other = LetterFacts {
            response_status: 404,
            ..facts
        };
        assert!(!query.filter.matches(&env, other));
        env.url = "http://a/z".into();
        assert!(!query.filter.matches(&env, facts));
        // No URL group holds a message here.
        let groups = parse(pairs(&[("topicName", "g")])).unwrap();
        assert!(!groups.filter.matches(&envelope(), facts));
        assert!(parse(vec![]).unwrap().filter.is_empty());
    }

    #[test]
    fn bad_queries_are_refused() {
        for bad in [
            &[("responseStatus", "five")][..],
            &[("fromDate", "yesterday")],
            &[("count", "0")],
            &[("cursor", "x")],
            &[("url", "")],
            &[("callerIp", "127.0.0.1")],
            &[("api", "llm")],
            &[("dlqIds", "a"), ("url", "http://a/")],
        ] {
            assert!(parse(pairs(bad)).is_err(), "{bad:?}");
        }
        let many: Vec<(&str, &str)> = vec![("label", "l"); MAX_VALUES + 1];
        assert!(parse(pairs(&many)).is_err());
        let ids = parse(pairs(&[("dlqIds", "b"), ("dlqIds", "a"), ("dlqIds", "b")])).unwrap();
        assert_eq!(ids.ids, ["a", "b"]);
    }
}
