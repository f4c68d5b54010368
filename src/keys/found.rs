//! Queues found by the names of their keys: the queue a key belongs to (undoing Redisson's
//! `prefixName`), the globs discovery scans and subscribes with, and `--match`'s glob.

use super::{KeyRole, QueueKeys};
use super::{
    CHANNEL_PREFIX, DEAD_PREFIX, INDEX_PREFIX, INFLIGHT_PREFIX, ORDER_PREFIX, PAUSED_PREFIX,
    QUARANTINE_PREFIX, SCHEDULES_PREFIX, TIMEOUT_PREFIX, VALUES_PREFIX,
};

/// The keys discovery's scan looks for: a queue's Redisson keys, delayq's indexes of its order
/// list (which outlive the queue when another client deletes it), and the delayq keys a queue
/// with nothing pending may still have (in flight, dead letters, quarantine, the pause flag),
/// by which a listing of every queue finds it, and its recurring schedules (a queue with
/// schedules is one to fire, pending entries or not).
const SCANNED: [(KeyRole, &str); 9] = [
    (KeyRole::Timeout, TIMEOUT_PREFIX),
    (KeyRole::Order, ORDER_PREFIX),
    (KeyRole::Index, INDEX_PREFIX),
    (KeyRole::Values, VALUES_PREFIX),
    (KeyRole::Inflight, INFLIGHT_PREFIX),
    (KeyRole::Dead, DEAD_PREFIX),
    (KeyRole::Quarantine, QUARANTINE_PREFIX),
    (KeyRole::Paused, PAUSED_PREFIX),
    (KeyRole::Schedules, SCHEDULES_PREFIX),
];

impl QueueKeys {
    /// The queue whose timeout zset or channel is `key` (`redisson_delay_queue_timeout:{orders}`
    /// or `redisson_delay_queue_channel:{orders}` -> `orders`), undoing Redisson's `prefixName`:
    /// for a key that also fits a name in braces (`{orders}`), the plain name is taken.
    ///
    /// ```
    /// use delayq::QueueKeys;
    ///
    /// let name = |k| QueueKeys::queue_of(k).map(|keys| keys.target().to_owned());
    /// assert_eq!(name("redisson_delay_queue_timeout:{orders}").as_deref(), Some("orders"));
    /// assert_eq!(name("redisson_delay_queue_channel:{o}:eu").as_deref(), Some("{o}:eu"));
    /// assert_eq!(name("redisson_delay_queue_timeout:{a}b}").as_deref(), Some("a}b"));
    /// assert_eq!(name("redisson_delay_queue:{orders}"), None);
    /// ```
    pub fn queue_of(key: &str) -> Option<QueueKeys> {
        [TIMEOUT_PREFIX, CHANNEL_PREFIX]
            .into_iter()
            .find_map(|prefix| queue_after(key, prefix))
    }

    /// What `key`, found by discovery's scan, is to its queue (its timeout zset, order list,
    /// position index, value index, in-flight zset, dead letters, quarantine, pause flag or
    /// schedules), and the queue; `None` for any other key.
    pub(crate) fn scanned(key: &str) -> Option<(KeyRole, QueueKeys)> {
        SCANNED
            .into_iter()
            .find_map(|(role, prefix)| Some((role, queue_after(key, prefix)?)))
    }

    /// The other queue name whose delayed-queue keys are these same keys, if any: `{NAME}` for
    /// a name without `{` (`x}` and `{x}}`, `orders` and `{orders}`), `NAME` for `{NAME}`. The
    /// two share pending entries, not target lists.
    pub(crate) fn twin(&self) -> Option<String> {
        let name = self.target();
        match self.alias() {
            Some(plain) => Some(plain.to_owned()),
            None if !name.is_empty() && !name.contains(TAG_OPEN) => Some(format!("{{{name}}}")),
            None => None,
        }
    }
}

/// The character that opens a Cluster hash tag (a name holding one keeps it as it is).
const TAG_OPEN: char = '{';

/// The queue whose key named with `prefix` is `key`.
fn queue_after(key: &str, prefix: &str) -> Option<QueueKeys> {
    let rest = key.strip_prefix(prefix)?.strip_prefix(':')?;
    // Redisson's `prefixName` wraps a name in braces only when it holds no `{`: an inner part
    // without one is that name, whatever `}` it holds (`{a}b}` -> `a}b`). The name `{a}b}`
    // itself writes the same keys; discovery tells the two apart by their target lists.
    let name = match rest
        .strip_prefix(TAG_OPEN)
        .and_then(|r| r.strip_suffix('}'))
    {
        Some(inner) if !inner.is_empty() && !inner.contains(TAG_OPEN) => inner,
        _ if rest.contains(TAG_OPEN) => rest,
        _ => return None,
    };
    Some(QueueKeys::new(name))
}

/// A glob for discovery's scan matching every key [`QueueKeys::scanned`] knows, so that one
/// `SCAN` finds both the queues and the indexes a queue left behind. Redis globs have no
/// alternation: up to the shortest prefix's length, each position is a class of the characters
/// the prefixes have there (`[rd]e[dl]…`), then `*`. Besides those keys it matches only names
/// starting with a blend of the prefixes, which the scan passes over.
pub(crate) fn every_queue_key() -> String {
    glob_of(&SCANNED)
}

/// A glob matching every key named with one of `prefixes` and a `:`.
fn glob_of(prefixes: &[(KeyRole, &str)]) -> String {
    let prefixes: Vec<Vec<char>> = prefixes
        .iter()
        .map(|(_, prefix)| format!("{prefix}:").chars().collect())
        .collect();
    let common = prefixes.iter().map(Vec::len).min().unwrap_or(0);
    let mut glob = String::new();
    for at in 0..common {
        let mut class: Vec<char> = Vec::new();
        for prefix in &prefixes {
            if !class.contains(&prefix[at]) {
                class.push(prefix[at]);
            }
        }
        let escaped: String = class.iter().flat_map(|c| glob_char(*c)).collect();
        match class.len() {
            1 => glob.push_str(&escaped),
            _ => glob.push_str(&format!("[{escaped}]")),
        }
    }
    glob.push('*');
    glob
}

/// `c` in a Redis glob, escaped when it would mean something.
fn glob_char(c: char) -> Vec<char> {
    match c {
        '*' | '?' | '[' | ']' | '\\' | '^' | '-' => vec!['\\', c],
        _ => vec![c],
    }
}

/// A glob matching the channel of every delayed queue (discovery's pattern subscription).
pub(crate) fn every_channel() -> String {
    format!("{CHANNEL_PREFIX}:*")
}

/// Whether `name` matches the glob `pattern` (`*` any run of characters, `?` one character),
/// as `delayq transfer --all --match PATTERN` selects queues.
///
/// ```
/// assert!(delayq::names::glob_match("tenant-*", "tenant-42"));
/// assert!(delayq::names::glob_match("orders-?", "orders-a"));
/// assert!(!delayq::names::glob_match("tenant-*", "orders"));
/// ```
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // The last `*` seen and where the name was then, to backtrack to.
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_glob_covers_each_scanned_prefix() {
        assert_eq!(
            every_queue_key(),
            "[rd]e[dl][ia][sy][sq][o_][nivdqps][_naeuc][dlfauh][euldrs][lxei:ad]*"
        );
    }

    #[test]
    fn every_scanned_key_matches_the_scan_glob_and_names_its_queue() {
        let keys = QueueKeys::new("q");
        for (role, _) in SCANNED {
            let key = keys.of(role).unwrap();
            assert_eq!(QueueKeys::scanned(key), Some((role, keys.clone())), "{key}");
            assert!(glob_match_redis(&every_queue_key(), key), "{key}");
        }
        for other in ["delayq_inflight_data:{q}", "q", "decoy:1"] {
            assert_eq!(QueueKeys::scanned(other), None, "{other}");
        }
    }

    /// Redis's glob with classes, enough for the globs built here.
    fn glob_match_redis(glob: &str, key: &str) -> bool {
        let mut key = key.chars();
        let mut glob = glob.chars();
        while let Some(g) = glob.next() {
            match g {
                '*' => return true,
                '[' => {
                    let class: String = glob.by_ref().take_while(|c| *c != ']').collect();
                    match key.next() {
                        Some(c) if class.contains(c) => {}
                        _ => return false,
                    }
                }
                '\\' => {
                    if glob.next() != key.next() {
                        return false;
                    }
                }
                g if Some(g) == key.next() => {}
                _ => return false,
            }
        }
        key.next().is_none()
    }

    #[test]
    fn names_holding_a_closing_brace_are_read_back_as_written() {
        for name in ["a}b", "x}", "tenant}orders", "}", "}}", "orders"] {
            let keys = QueueKeys::new(name);
            for key in [keys.timeout(), keys.channel()] {
                let found = QueueKeys::queue_of(key).unwrap();
                assert_eq!(found.target(), name, "{key}");
            }
            let twin = keys.twin().unwrap();
            assert_eq!(twin, format!("{{{name}}}"));
            assert_eq!(QueueKeys::new(twin.as_str()).timeout(), keys.timeout());
            assert_eq!(QueueKeys::new(twin).twin().as_deref(), Some(name));
        }
        assert_eq!(QueueKeys::new("{o}:eu").twin(), None);
    }

    #[test]
    fn scanned_keys_name_their_queue_and_role() {
        let keys = QueueKeys::new("q");
        for (role, _) in SCANNED {
            let key = keys.of(role).unwrap();
            assert_eq!(QueueKeys::scanned(key), Some((role, keys.clone())), "{key}");
        }
        let tagged = QueueKeys::new("{o}:eu");
        assert_eq!(
            QueueKeys::scanned("delayq_values:{o}:eu"),
            Some((KeyRole::Values, tagged))
        );
        for other in [
            "redisson_delay_queue_channel:{q}",
            "delayq_inflight_data:{q}",
            "delayq_attempts:{q}",
            "decoy:1",
        ] {
            assert_eq!(QueueKeys::scanned(other), None, "{other}");
        }
    }
}
