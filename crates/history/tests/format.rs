//! The history file: what HistoryWriter writes, read_history reads back, and malformed files
//! are reported by line.

mod support;

use std::io::Write;

use ordo_history::{Access, HistoryEntry, HistoryError, HistoryWriter, Scan, check, read_history, read_history_file};
use proptest::prelude::*;

fn access_strategy() -> impl Strategy<Value = Access> {
    (prop_oneof![Just(0u16), any::<u16>()], any::<u64>(), any::<u64>())
        .prop_map(|(table, key, version)| Access::in_table(table, key, version))
}

fn scan_strategy() -> impl Strategy<Value = Scan> {
    (any::<u16>(), any::<u64>(), any::<u64>(), proptest::collection::vec((any::<u64>(), any::<u64>()), 0..4))
        .prop_map(|(table, low, high, rows)| Scan { table, low, high, rows })
}

fn entry_strategy() -> impl Strategy<Value = HistoryEntry> {
    let accesses = || proptest::collection::vec(access_strategy(), 0..5);
    (
        any::<u64>(),
        accesses(),
        accesses(),
        accesses(),
        accesses(),
        proptest::collection::vec(scan_strategy(), 0..3),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(id, reads, writes, inserts, deletes, scans, ts)| {
            let mut entry = HistoryEntry { id, reads, writes, inserts, deletes, scans, ts };
            // A transaction writes each key once, whatever the effect.
            let mut seen = std::collections::BTreeSet::new();
            for list in [&mut entry.writes, &mut entry.inserts, &mut entry.deletes] {
                list.retain(|access| seen.insert((access.table, access.key)));
            }
            entry
        })
}

proptest! {
    #[test]
    fn writer_and_reader_round_trip(entries in proptest::collection::vec(entry_strategy(), 0..20)) {
        let mut writer = HistoryWriter::new(Vec::new());
        for entry in &entries {
            writer.append(entry).unwrap();
        }
        prop_assert_eq!(writer.entries_written(), entries.len() as u64);
        let bytes = writer.finish().unwrap();
        prop_assert_eq!(bytes.split(|&byte| byte == b'\n').count(), entries.len() + 1);
        prop_assert_eq!(read_history(&bytes[..]).unwrap(), entries);
    }
}

#[test]
fn a_simulated_history_survives_a_file_round_trip() {
    let config =
        support::SerialConfig { transactions: 500, keys: 40, keys_per_transaction_max: 5, read_only_percent: 20 };
    let entries = support::serial_history(11, &config);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    let mut writer = HistoryWriter::create(&path).unwrap();
    for entry in &entries {
        writer.append(entry).unwrap();
    }
    writer.finish().unwrap().sync_all().unwrap();
    let read = read_history_file(&path).unwrap();
    assert_eq!(read, entries);
    assert_eq!(check(&read).unwrap().transactions, 500);
}

#[test]
fn the_line_format_is_exact() {
    let mut writer = HistoryWriter::new(Vec::new());
    writer.append(&HistoryEntry::new(3, vec![(1, 0)], vec![(1, 7)])).unwrap();
    writer.append(&HistoryEntry::new(4, vec![], vec![(2, 8)]).with_ts(8)).unwrap();
    let text = String::from_utf8(writer.finish().unwrap()).unwrap();
    assert_eq!(
        text,
        "{\"id\":3,\"reads\":[[1,0]],\"writes\":[[1,7]]}\n{\"id\":4,\"reads\":[],\"writes\":[[2,8]],\"ts\":8}\n"
    );
}

#[test]
fn old_format_lines_are_written_byte_for_byte_as_before() {
    let old = "{\"id\":3,\"reads\":[[1,0],[2,5]],\"writes\":[[1,7]],\"ts\":7}\n";
    let entries = read_history(old.as_bytes()).unwrap();
    let mut writer = HistoryWriter::new(Vec::new());
    writer.append(&entries[0]).unwrap();
    assert_eq!(String::from_utf8(writer.finish().unwrap()).unwrap(), old);
}

#[test]
fn a_file_starting_with_a_byte_order_mark_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bom.jsonl");
    std::fs::write(&path, "\u{feff}{\"id\":1,\"reads\":[],\"writes\":[[1,1]]}\n").unwrap();
    assert_eq!(read_history_file(&path).unwrap(), vec![HistoryEntry::new(1, vec![], vec![(1, 1)])]);
}

#[test]
fn malformed_files_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    let mut file = std::fs::File::create(&path).unwrap();
    writeln!(file, "{{\"id\":1,\"reads\":[],\"writes\":[[1,1]]}}").unwrap();
    writeln!(file).unwrap();
    writeln!(file, "{{\"id\":2,\"reads\":[[1,1]],\"writes\":[[1,\"two\"]]}}").unwrap();
    drop(file);
    let error = read_history_file(&path).unwrap_err();
    assert!(matches!(error, HistoryError::Malformed { line: 3, .. }), "{error:?}");
    assert_eq!(error.to_string(), "line 3: writes[0][1]: invalid type: string \"two\", expected u64 (column 42)");
}

#[test]
fn missing_and_unwritable_files_say_which_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let error = read_history_file(&missing).unwrap_err();
    assert_eq!(error.to_string(), format!("cannot open history file {}", missing.display()));
    assert_eq!(std::error::Error::source(&error).map(|e| e.to_string().contains("No such file")), Some(true));
    let nowhere = dir.path().join("no/such/dir/history.jsonl");
    let error = HistoryWriter::create(&nowhere).unwrap_err();
    assert_eq!(error.to_string(), format!("cannot create history file {}", nowhere.display()));
    assert!(std::error::Error::source(&error).is_some(), "the OS error is the source");
}

#[test]
fn write_errors_are_reported_not_swallowed() {
    #[derive(Debug)]
    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut writer = HistoryWriter::new(Full);
    writer.append(&HistoryEntry::new(1, vec![], vec![])).unwrap(); // still in the buffer
    let error = writer.finish().unwrap_err();
    assert_eq!(error.to_string(), "cannot write the history (entries appended so far: 1)");
    assert_eq!(std::error::Error::source(&error).map(ToString::to_string), Some("disk full".to_owned()));
}
