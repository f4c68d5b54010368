//! The name of the record of a master's replicas that every delayq process shares, so that a
//! wait for every replica counts the replicas any process has seen, not only this one's.

/// Prefix of the record (a hash: a number of replicas → when a process last saw that many
/// connected to the master, epoch ms).
const REPLICAS_PREFIX: &str = "delayq_replicas";

/// The record of the replicas of the master that holds `written` (a key just written), in that
/// master's keyspace: `delayq_replicas` on a server that is not a cluster (one per master,
/// carried to a promoted replica with the rest of the data); in a cluster, where each master
/// holds its own slots, `delayq_replicas:{TAG}` with the hash tag of `written` (or `written`
/// itself when it has none), so that it lives on the master of `written`'s slot. `None` for a
/// cluster key with no hash tag that contains `}`: no tag names its slot.
pub(crate) fn replicas_record(written: &str, clustered: bool) -> Option<String> {
    if !clustered {
        return Some(REPLICAS_PREFIX.to_owned());
    }
    let tag = hash_tag(written);
    (!tag.contains('}')).then(|| format!("{REPLICAS_PREFIX}:{{{tag}}}"))
}

/// The part of `key` Redis Cluster hashes: between the first `{` and the next `}` when that is
/// not empty, else the whole key.
fn hash_tag(key: &str) -> &str {
    let Some(open) = key.find('{') else {
        return key;
    };
    match key[open + 1..].find('}') {
        Some(len) if len > 0 => &key[open + 1..open + 1 + len],
        _ => key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_is_one_per_master_or_in_the_written_keys_slot() {
        let record = |written, clustered| replicas_record(written, clustered).unwrap();
        assert_eq!(record("delayq_dedup:{q}:k", false), "delayq_replicas");
        assert_eq!(record("a{}b", false), "delayq_replicas");
        assert_eq!(
            record("redisson_delay_queue_timeout:{orders}", true),
            "delayq_replicas:{orders}"
        );
        assert_eq!(record("plain", true), "delayq_replicas:{plain}");
        assert_eq!(replicas_record("a{}b", true), None);
        let slot = |k: &str| fred::util::redis_keyslot(k.as_bytes());
        for written in ["redisson_delay_queue:{o}:eu", "plain", "x{y"] {
            assert_eq!(slot(&record(written, true)), slot(written), "{written}");
        }
    }
}
