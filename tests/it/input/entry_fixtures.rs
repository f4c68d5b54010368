//! Entries packed by the real Redisson's own offer script (`entries.hex`, captured by
//! compat-tests' `GoldenFixturesTest` beside the codec fixtures in
//! `crates/delayq-codec/tests/fixtures/redisson/<version>/`): delayq unpacks each to the value
//! Redisson packed, and refuses damaged copies rather than misreading them.

use delayq::entry::{unpack, EntryFormat};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// `entries.hex` of every captured Redisson version: rows of format, value hex, entry hex.
fn captured_rows() -> Vec<(PathBuf, Vec<String>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("crates/delayq-codec/tests/fixtures/redisson");
    let mut rows = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let file = dir.unwrap().path().join("entries.hex");
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        for line in text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            rows.push((file.clone(), line.split('\t').map(str::to_owned).collect()));
        }
    }
    assert!(!rows.is_empty(), "no entries under {root:?}");
    rows
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn entries_written_by_redisson_unpack() {
    let mut formats = BTreeSet::new();
    for (dir, row) in captured_rows() {
        let format = match row[0].as_str() {
            "current" => EntryFormat::Current,
            "legacy" => EntryFormat::Legacy,
            other => panic!("unknown entry format {other}"),
        };
        formats.insert(row[0].clone());
        let value = hex(&row[1]);
        let raw = hex(&row[2]);
        let entry = unpack(&raw, format).unwrap();
        assert_eq!(entry.format, format, "{dir:?}");
        assert_eq!(entry.value, &value[..], "{dir:?}");
        match format {
            EntryFormat::Current => {
                assert_eq!(raw.len(), 17 + value.len());
                assert_eq!(entry.id, &raw[1..9]);
            }
            _ => assert_eq!(raw.len(), 16 + value.len()),
        }
        // Damaged copies are refused, never misread.
        for cut in [1, 2, raw.len() - 8] {
            let short = &raw[..raw.len() - cut];
            if let Ok(e) = unpack(short, format) {
                assert_ne!(
                    e.value,
                    &value[..],
                    "{dir:?}: truncated entry read as whole"
                );
            }
        }
        let mut long = raw.clone();
        long.push(0);
        if let Ok(e) = unpack(&long, format) {
            assert_ne!(
                e.value,
                &value[..],
                "{dir:?}: entry with a trailing byte accepted"
            );
        }
    }
    assert!(formats.contains("current"), "no current-format capture");
    assert!(formats.contains("legacy"), "no legacy-format capture");
}
