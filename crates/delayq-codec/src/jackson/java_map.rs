//! [`JavaHashMap`]: a string-keyed map that serializes in `java.util.HashMap`'s iteration order.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::marker::PhantomData;

/// A string-keyed map whose entries serialize in the order a `java.util.HashMap` holding the
/// same entries iterates them, so that Jackson codecs give the bytes Java gives (needed for
/// `remove(map)` / `contains(map)` against Java-written values).
///
/// The Java map is assumed to be a default `new HashMap<>()` filled by `put` in this map's
/// insertion order, which is also how Jackson builds the maps it decodes: 16 buckets, doubled
/// whenever the size exceeds 3/4 of them, bucket `(h ^ (h >>> 16)) & (buckets - 1)` with
/// `h = key.hashCode()`, buckets in index order, colliding keys in insertion order. A Java map
/// made with an explicit capacity or copied with `new HashMap<>(other)` can have fewer buckets
/// and iterate differently; a bucket with 8 or more colliding keys (a "tree bin", very rare) is
/// not modelled either.
///
/// Decoding keeps the order of the bytes as the insertion order.
///
/// ```
/// use delayq_codec::{Codec, JavaHashMap, JsonJacksonCodec};
///
/// let mut map = JavaHashMap::new();
/// map.insert("b", 1);
/// map.insert("a", 2);
/// map.insert("zz", 3);
/// let codec = JsonJacksonCodec::<JavaHashMap<i32>>::new();
/// // "zz".hashCode() = 3904, which lands in bucket 0 of 16; "a" is 97 (bucket 1), "b" is 98.
/// assert_eq!(
///     codec.encode(&map).unwrap(),
///     br#"{"@class":"java.util.HashMap","zz":3,"a":2,"b":1}"#,
/// );
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct JavaHashMap<V> {
    /// Entries in insertion order.
    entries: Vec<(String, V)>,
}

impl<V> JavaHashMap<V> {
    /// An empty map.
    pub const fn new() -> Self {
        JavaHashMap {
            entries: Vec::new(),
        }
    }

    /// Inserts or replaces a value (like Java's `put`, a replaced key keeps its place) and
    /// returns the old value.
    pub fn insert(&mut self, key: impl Into<String>, value: V) -> Option<V> {
        let key = key.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => Some(std::mem::replace(v, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    /// The value for `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Removes `key` and returns its value.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(i).1)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Entries in `java.util.HashMap` iteration order.
    pub fn iter_java_order(&self) -> impl Iterator<Item = (&str, &V)> {
        let mask = table_size(self.entries.len()) - 1;
        let mut order: Vec<(usize, usize)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (spread(java_hash_code(k)) as usize & mask, i))
            .collect();
        // Stable on the insertion index: colliding keys keep insertion order.
        order.sort_unstable();
        order.into_iter().map(move |(_, i)| {
            let (k, v) = &self.entries[i];
            (k.as_str(), v)
        })
    }
}

impl<V> Default for JavaHashMap<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: fmt::Debug> fmt::Debug for JavaHashMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter_java_order()).finish()
    }
}

impl<K: Into<String>, V> FromIterator<(K, V)> for JavaHashMap<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = JavaHashMap::new();
        for (k, v) in iter {
            map.insert(k, v);
        }
        map
    }
}

/// Java's `String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, wrapping.
pub(crate) fn java_hash_code(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// `HashMap.hash`: the high half folded into the low half.
fn spread(h: i32) -> u32 {
    let h = h as u32;
    h ^ (h >> 16)
}

/// The bucket count of a default `HashMap` after `len` puts.
fn table_size(len: usize) -> usize {
    let mut n = 16usize;
    while len > n / 4 * 3 {
        n *= 2;
    }
    n
}

impl<V: Serialize> Serialize for JavaHashMap<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (k, v) in self.iter_java_order() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for JavaHashMap<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor<V>(PhantomData<fn() -> V>);

        impl<'de, V: Deserialize<'de>> Visitor<'de> for MapVisitor<V> {
            type Value = JavaHashMap<V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map with string keys")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut map = JavaHashMap::new();
                while let Some((k, v)) = access.next_entry::<String, V>()? {
                    map.insert(k, v);
                }
                Ok(map)
            }
        }

        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_codes_match_java() {
        // Values of "x".hashCode() in Java.
        assert_eq!(java_hash_code(""), 0);
        assert_eq!(java_hash_code("k"), 107);
        assert_eq!(java_hash_code("hello"), 99_162_322);
        assert_eq!(java_hash_code("polygenelubricants"), i32::MIN);
        assert_eq!(java_hash_code("😀"), 1_772_899);
    }

    #[test]
    fn table_grows_like_java() {
        assert_eq!(table_size(0), 16);
        assert_eq!(table_size(12), 16);
        assert_eq!(table_size(13), 32);
        assert_eq!(table_size(24), 32);
        assert_eq!(table_size(25), 64);
    }

    #[test]
    fn order_follows_buckets_then_insertion() {
        // "Aa" and "BB" share the hash code 2112: same bucket, insertion order kept.
        let map: JavaHashMap<i32> = [("BB", 1), ("c", 2), ("Aa", 3)].into_iter().collect();
        let keys: Vec<&str> = map.iter_java_order().map(|(k, _)| k).collect();
        // 2112 & 15 = 0, 'c' = 99 & 15 = 3.
        assert_eq!(keys, ["BB", "Aa", "c"]);
        // Growing to 32 buckets moves keys: "a".."z" are 97..122.
        let many: JavaHashMap<()> = (b'a'..=b'z')
            .map(|c| ((c as char).to_string(), ()))
            .collect();
        let keys: String = many.iter_java_order().map(|(k, _)| k).collect();
        // 64 buckets (26 > 24): indexes 33..58 in code order.
        assert_eq!(keys, "abcdefghijklmnopqrstuvwxyz");
        let mid: JavaHashMap<()> = (b'a'..=b'p')
            .map(|c| ((c as char).to_string(), ()))
            .collect();
        let keys: String = mid.iter_java_order().map(|(k, _)| k).collect();
        // 16 keys > 12: 32 buckets, 'a'=97 → 1 ... 'p'=112 → 16.
        assert_eq!(keys, "abcdefghijklmnop");
        let small: JavaHashMap<()> = ["q", "a"].into_iter().map(|k| (k, ())).collect();
        let keys: Vec<&str> = small.iter_java_order().map(|(k, _)| k).collect();
        // 16 buckets: 'q'=113 → 1, 'a'=97 → 1: same bucket, insertion order.
        assert_eq!(keys, ["q", "a"]);
    }
}
