//! The order in which a `java.util.HashMap` (and so a `HashSet`) built in Java iterates its
//! keys, from their Java hash codes: what the encoder's `java_hash_order` writes.

use super::value::JavaValue;

/// The iteration order of a `java.util.HashMap` built by `new HashMap<>()` and putting keys
/// with these hash codes in this order. `None` when some bucket would hold more than 8 keys
/// (HashMap then changes its table in ways not modelled here).
pub(crate) fn hash_map_order(hashes: &[i32]) -> Option<Vec<usize>> {
    let n = hashes.len();
    // The table starts at 16 and doubles whenever size exceeds 0.75 * capacity.
    let mut cap: usize = 16;
    while n > cap / 4 * 3 {
        cap = cap.checked_mul(2)?;
    }
    let bucket = |h: i32| {
        let h = h as u32;
        ((h ^ (h >> 16)) as usize) & (cap - 1)
    };
    let mut order: Vec<usize> = (0..n).collect();
    // Stable: within a bucket, insertion order (splits on resize keep relative order).
    order.sort_by_key(|&i| hashes.get(i).map_or(0, |&h| bucket(h)));
    let mut run = 0;
    let mut last = None;
    for &i in &order {
        let b = hashes.get(i).map(|&h| bucket(h));
        if b == last {
            run += 1;
            if run > 8 {
                return None;
            }
        } else {
            run = 1;
            last = b;
        }
    }
    Some(order)
}

/// `Object.hashCode()` for values whose hash Java defines by value.
pub(crate) fn java_hash_code(v: &JavaValue) -> Option<i32> {
    Some(match v {
        JavaValue::Null => 0,
        JavaValue::Bool(b) => {
            if *b {
                1231
            } else {
                1237
            }
        }
        JavaValue::Byte(b) => i32::from(*b),
        JavaValue::Short(s) => i32::from(*s),
        JavaValue::Char(c) => i32::from(u16::try_from(u32::from(*c)).ok()?),
        JavaValue::Int(i) => *i,
        JavaValue::Long(l) => (*l ^ ((*l as u64) >> 32) as i64) as i32,
        JavaValue::Float(f) => {
            let bits = if f.is_nan() { 0x7fc0_0000 } else { f.to_bits() };
            bits as i32
        }
        JavaValue::Double(d) => {
            let bits = if d.is_nan() {
                0x7ff8_0000_0000_0000
            } else {
                d.to_bits()
            };
            (bits ^ (bits >> 32)) as i32
        }
        JavaValue::String(s) => s
            .encode_utf16()
            .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c))),
        JavaValue::Uuid(u) => {
            let hilo = ((*u >> 64) as u64) ^ (*u as u64);
            ((hilo >> 32) as i32) ^ (hilo as i32)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_codes() {
        // Values from the JDK: "k".hashCode() == 107, "hello".hashCode() == 99162322,
        // Long.hashCode(1L << 32) == 1, Boolean.TRUE.hashCode() == 1231.
        assert_eq!(java_hash_code(&"k".into()), Some(107));
        assert_eq!(java_hash_code(&"hello".into()), Some(99_162_322));
        assert_eq!(java_hash_code(&JavaValue::Long(1 << 32)), Some(1));
        assert_eq!(java_hash_code(&JavaValue::Long(-1)), Some(0));
        assert_eq!(java_hash_code(&JavaValue::Bool(true)), Some(1231));
        assert_eq!(java_hash_code(&JavaValue::Double(1.0)), Some(1_072_693_248));
    }

    #[test]
    fn hash_map_order_by_bucket_then_insertion() {
        // Buckets (cap 16): "b" = 98 & 15 = 2, "a" = 97 & 15 = 1, "q" = 113 & 15 = 1.
        let keys = ["b", "a", "q"];
        let hashes: Vec<i32> = keys
            .iter()
            .map(|k| java_hash_code(&(*k).into()).unwrap())
            .collect();
        assert_eq!(hash_map_order(&hashes).unwrap(), vec![1, 2, 0]);
        // 13 keys make the table grow to 32: 16 and 0 then land in different buckets.
        let hashes: Vec<i32> = (0..13).map(|i| 16 * (i % 2) + i / 2).collect();
        let order = hash_map_order(&hashes).unwrap();
        let sorted: Vec<i32> = order.iter().map(|&i| hashes[i] & 31).collect();
        assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "{sorted:?}");
    }
}
