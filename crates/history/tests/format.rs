//! The history file: what HistoryWriter writes, read_history reads back, and malformed files
//! are reported by line.

mod support;

use std::io::Write;

use ordo_history::{HistoryEntry, HistoryError, HistoryWriter, check, read_history, read_history_file};
use proptest::prelude::*;

fn entry_strategy() -> impl Strategy<Value = HistoryEntry> {
    let pairs = || proptest::collection::vec((any::<u64>(), any::<u64>()), 0..5);
    (any::<u64>(), pairs(), pairs(), proptest::option::of(any::<u64>())).prop_map(|(id, reads, mut writes, ts)| {
        writes.sort_unstable();
        writes.dedup_by_key(|&mut (key, _)| key);
        HistoryEntry { id, reads, writes, ts }
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
