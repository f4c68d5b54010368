//! The token tree between serde and the JSON / MessagePack bytes.
//!
//! Encoding builds a [`Node`] with the type information already decided (see the `ser` module),
//! then a writer renders it. Decoding parses the bytes into a [`Node`] and the `de` module reads
//! the Rust value out of it.

/// One value in Jackson's token model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// JSON `null`, MessagePack nil.
    Null,
    /// A boolean.
    Bool(bool),
    /// Any integer; writers reject what their format cannot hold.
    Int(i128),
    /// A number no `i128` holds, as its decimal text: a big integer (`123…890`) or a decimal
    /// (`12.50`, `1E+3`). Kept as text so that nothing is rounded on the way to the Rust value.
    Number(String),
    /// A Java `double`.
    F64(f64),
    /// A Java `float`.
    F32(f32),
    /// Text.
    Str(String),
    /// A Java `byte[]`: Base64 text in JSON, `bin` in MessagePack.
    Bytes(Vec<u8>),
    /// An array.
    Seq(Vec<Node>),
    /// An object, entries in output order.
    Map(Vec<(String, Node)>),
    /// Jackson's type information around a value: written as a leading `"@class"` property when
    /// the value is an object, and as a `["class", value]` wrapper array otherwise.
    Typed(String, Box<Node>),
}

impl Node {
    /// What serde calls this node in "invalid type" errors.
    pub(crate) fn unexpected(&self) -> serde::de::Unexpected<'_> {
        use serde::de::Unexpected;
        match self {
            Node::Null => Unexpected::Unit,
            Node::Bool(b) => Unexpected::Bool(*b),
            Node::Int(i) => match i64::try_from(*i) {
                Ok(v) => Unexpected::Signed(v),
                Err(_) => match u64::try_from(*i) {
                    Ok(v) => Unexpected::Unsigned(v),
                    Err(_) => Unexpected::Other("a big integer"),
                },
            },
            Node::Number(_) => Unexpected::Other("a number"),
            Node::F64(f) => Unexpected::Float(*f),
            Node::F32(f) => Unexpected::Float(f64::from(*f)),
            Node::Str(s) => Unexpected::Str(s),
            Node::Bytes(b) => Unexpected::Bytes(b),
            Node::Seq(_) => Unexpected::Seq,
            Node::Map(_) => Unexpected::Map,
            Node::Typed(_, inner) => inner.unexpected(),
        }
    }
}

/// Turns an object's entries into a node, lifting a string `"@class"` property (wherever it is,
/// as Jackson's property-based type reader does) into [`Node::Typed`].
pub(crate) fn lift_class(mut entries: Vec<(String, Node)>) -> Node {
    let pos = entries
        .iter()
        .position(|(k, v)| k == "@class" && matches!(v, Node::Str(_)));
    match pos {
        Some(i) => match entries.remove(i) {
            (_, Node::Str(class)) => Node::Typed(class, Box::new(Node::Map(entries))),
            // `position` only matched a string value.
            (k, other) => {
                entries.insert(i, (k, other));
                Node::Map(entries)
            }
        },
        None => Node::Map(entries),
    }
}

/// Whether `s` is a Java binary class name as `Class.getName()` prints it: dotted identifiers
/// (`java.lang.Long`, `com.example.Outer$Inner`) or an array descriptor (`[B`,
/// `[Ljava.lang.String;`). Names in the default package (no dot) are not accepted, so that plain
/// words are never taken for type ids.
pub(crate) fn is_java_class_name(s: &str) -> bool {
    if let Some(rest) = s.strip_prefix('[') {
        let elem = rest.trim_start_matches('[');
        return match elem {
            "Z" | "B" | "C" | "S" | "I" | "J" | "F" | "D" => true,
            _ => elem
                .strip_prefix('L')
                .and_then(|e| e.strip_suffix(';'))
                .is_some_and(|name| !name.is_empty() && name.split('.').all(is_java_identifier)),
        };
    }
    s.contains('.') && s.split('.').all(is_java_identifier)
}

fn is_java_identifier(seg: &str) -> bool {
    let mut chars = seg.chars();
    match chars.next() {
        Some(c) if c.is_alphabetic() || c == '_' || c == '$' => {
            chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        }
        _ => false,
    }
}

/// Orders property names as Java's `String.compareTo` does (UTF-16 code units), which is what
/// Jackson's `SORT_PROPERTIES_ALPHABETICALLY` uses.
pub(crate) fn java_string_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_class_names() {
        for ok in [
            "java.lang.Long",
            "com.example.Outer$Inner",
            "[B",
            "[[I",
            "[Ljava.lang.String;",
            "org.é.Ünïcode",
        ] {
            assert!(is_java_class_name(ok), "{ok}");
        }
        for bad in [
            "",
            "hello",
            "a..b",
            ".a",
            "a.",
            "1a.b",
            "a b.c",
            "[",
            "[X",
            "[L;",
            "[Ljava.lang.String",
            "a.b-c",
        ] {
            assert!(!is_java_class_name(bad), "{bad}");
        }
    }

    #[test]
    fn utf16_order_differs_from_utf8() {
        // U+FF21 (fullwidth A) sorts after a supplementary char in UTF-8 but before it in UTF-16.
        assert_eq!(
            java_string_cmp("\u{FF21}", "\u{1F600}"),
            std::cmp::Ordering::Greater
        );
        assert!("\u{FF21}" < "\u{1F600}");
        assert_eq!(java_string_cmp("id", "sku"), std::cmp::Ordering::Less);
    }

    #[test]
    fn class_property_is_lifted_anywhere() {
        let node = lift_class(vec![
            ("k".into(), Node::Str("v".into())),
            ("@class".into(), Node::Str("java.util.HashMap".into())),
        ]);
        assert_eq!(
            node,
            Node::Typed(
                "java.util.HashMap".into(),
                Box::new(Node::Map(vec![("k".into(), Node::Str("v".into()))]))
            )
        );
        let not_string = vec![("@class".to_string(), Node::Int(1))];
        assert_eq!(lift_class(not_string.clone()), Node::Map(not_string));
    }
}
