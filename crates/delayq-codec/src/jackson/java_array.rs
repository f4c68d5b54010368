//! Java arrays under Redisson's default typing. A newtype renamed to an array class
//! (`#[serde(rename = "[I")]`) stands for a slot of that array type.
//!
//! Redisson's typer looks through array types to the innermost element type: an array gets its
//! class (`["[Ljava.lang.Long;",[..]]`) when that element type is not final, or is `Long`
//! (Redisson's special case), and otherwise only in a slot declared `Object`. So an `int[]`,
//! `double[]`, `boolean[]`, `String[]` or `int[][]` field is a bare JSON array, and a `byte[]`
//! field a bare Base64 string; `Long[]`, `Object[]` and POJO arrays carry their class.

/// Final element classes the typer leaves untyped (besides the primitives). An enum is final
/// too, but its name does not say it is an enum: an enum array is written with its class.
const FINAL_ELEMENTS: &[&str] = &[
    "java.lang.String",
    "java.lang.Integer",
    "java.lang.Boolean",
    "java.lang.Double",
    "java.lang.Float",
    "java.lang.Short",
    "java.lang.Byte",
    "java.lang.Character",
];

/// Whether `class` is a Java array class name (`[I`, `[Ljava.lang.String;`, `[[J`).
pub(crate) fn is_array(class: &str) -> bool {
    class.starts_with('[')
}

/// Whether the typer writes the class of an array of this class in a slot declared with the
/// array's own type.
pub(crate) fn typed_in_field(class: &str) -> bool {
    let inner = class.trim_start_matches('[');
    match inner.strip_prefix('L').and_then(|c| c.strip_suffix(';')) {
        Some(element) => !FINAL_ELEMENTS.contains(&element),
        // A primitive element code: `I`, `J`, `D`, …
        None => false,
    }
}

/// What the elements of an array of this class are declared as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Elements {
    /// A primitive (`int`, `long`, …): never typed.
    Primitive,
    /// `Object`: typed as at the root's elements.
    Object,
    /// Another array class (`[I` in `[[I`).
    Array(&'static str),
    /// Any other class: its declared type decides.
    Declared,
}

/// The declared type of the elements of `class` (an array class).
pub(crate) fn elements(class: &'static str) -> Elements {
    let element = &class[1..];
    if is_array(element) {
        Elements::Array(element)
    } else if element == "Ljava.lang.Object;" {
        Elements::Object
    } else if element.len() == 1 {
        Elements::Primitive
    } else {
        Elements::Declared
    }
}
