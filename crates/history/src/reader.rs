//! Reading a history back: one [`HistoryEntry`] per non-blank line.
//!
//! Every problem names its line (1-based) and, where it can, the field and column: bad JSON,
//! a missing or unknown field, a value of the wrong type, trailing characters after the
//! object, and a transaction that writes the same key twice. Reading a key twice is allowed
//! here (the checker decides whether the two reads are consistent). A UTF-8 byte-order mark at
//! the very start of the input (as some Windows editors write) is skipped.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::entry::HistoryEntry;
use crate::error::HistoryError;

/// The UTF-8 encoding of U+FEFF, accepted once at the start of a history.
const BYTE_ORDER_MARK: char = '\u{feff}';

/// Parses a JSON-lines history, skipping blank lines.
pub fn read_history<R: BufRead>(mut reader: R) -> Result<Vec<HistoryEntry>, HistoryError> {
    let mut entries = Vec::new();
    let mut line = String::new();
    let mut line_number = 0;
    loop {
        line.clear();
        line_number += 1;
        let bytes = reader.read_line(&mut line).map_err(|source| HistoryError::Read { line: line_number, source })?;
        if bytes == 0 {
            return Ok(entries);
        }
        // A byte-order mark (as some editors and Windows tools write) may open the file.
        let text = if line_number == 1 { line.strip_prefix(BYTE_ORDER_MARK).unwrap_or(&line) } else { &line };
        if text.trim().is_empty() {
            continue;
        }
        let entry = parse_line(text).map_err(|reason| HistoryError::Malformed { line: line_number, reason })?;
        if let Some((table, key, first_version, second_version)) = entry.key_written_twice() {
            return Err(HistoryError::KeyWrittenTwice {
                line: line_number,
                id: entry.id,
                table,
                key,
                first_version,
                second_version,
            });
        }
        entries.push(entry);
    }
}

/// Opens and parses the history file at `path`.
pub fn read_history_file(path: impl AsRef<Path>) -> Result<Vec<HistoryEntry>, HistoryError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| HistoryError::Open { path: path.to_owned(), source })?;
    read_history(BufReader::new(file))
}

/// Parses one line, or describes what is wrong with it.
fn parse_line(line: &str) -> Result<HistoryEntry, String> {
    // serde would also accept the fields as a bare array; the format is objects only.
    if !line.trim_start().starts_with('{') {
        return Err(
            r#"expected a JSON object {"id": n, "reads": [[key, version], ..], "writes": [[key, version], ..], ..}"#
                .to_owned(),
        );
    }
    let mut deserializer = serde_json::Deserializer::from_str(line);
    let entry: HistoryEntry = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let field = error.path().to_string();
        let message = describe_json_error(error.inner());
        // serde_path_to_error writes "." for the whole object and "?" for no position at all.
        if field == "." || field == "?" { message } else { format!("{field}: {message}") }
    })?;
    deserializer.end().map_err(|error| describe_json_error(&error))?;
    Ok(entry)
}

/// serde_json's message without its own "at line 1 column c" (always line 1 here: the
/// deserializer sees one line), with the column kept.
fn describe_json_error(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match message.strip_suffix(&position) {
        Some(bare) => format!("{bare} (column {})", error.column()),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> String {
        read_history(text.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn skips_blank_lines_and_reads_optional_ts() {
        let text =
            "\n{\"id\":1,\"reads\":[],\"writes\":[[3,1]],\"ts\":1}\n   \n{\"id\":2,\"reads\":[[3,1]],\"writes\":[]}";
        let entries = read_history(text.as_bytes()).unwrap();
        assert_eq!(
            entries,
            vec![HistoryEntry::new(1, vec![], vec![(3, 1)]).with_ts(1), HistoryEntry::new(2, vec![(3, 1)], vec![])]
        );
    }

    #[test]
    fn names_line_field_and_problem() {
        let good = "{\"id\":1,\"reads\":[],\"writes\":[]}\n";
        assert_eq!(
            error_of(&format!("{good}{{\"id\":2,\"reads\":[]}}\n")),
            "line 2: missing field `writes` (column 19)"
        );
        assert_eq!(
            error_of(&format!("{good}\n{{\"id\":2,\"reads\":[[1,\"x\"]],\"writes\":[]}}")),
            "line 3: reads[0][1]: invalid type: string \"x\", expected u64 (column 23)"
        );
        let cases = [
            ("{\"id\":1,\"reads\":[],\"writes\":[]", "line 1: EOF while parsing an object"),
            ("{\"id\":1,\"reads\":[],\"writes\":[]} x", "line 1: trailing characters"),
            ("{\"id\":-1,\"reads\":[],\"writes\":[]}", "line 1: id: invalid value: integer `-1`"),
            (
                "{\"id\":1,\"reads\":[],\"writes\":[],\"tss\":3}",
                "line 1: tss: unknown field `tss`, expected one of `id`, `reads`, `writes`, `inserts`, `deletes`, `scans`, `ts`",
            ),
            ("{\"id\":1,\"reads\":[[1]],\"writes\":[]}", "line 1: reads[0]: invalid length 1"),
            ("{\"id\":1,\"reads\":[[1,2,3,4]],\"writes\":[]}", "line 1: reads[0]: invalid length 4"),
            (
                "{\"id\":1,\"reads\":[[70000,2,3]],\"writes\":[]}",
                "line 1: reads[0]: invalid value: integer `70000`, expected a table number",
            ),
            (
                "{\"id\":1,\"reads\":[],\"writes\":[],\"scans\":[{\"low\":1,\"high\":2}]}",
                "line 1: scans[0]: missing field `rows`",
            ),
            (
                "{\"id\":1,\"reads\":[],\"writes\":[],\"scans\":[{\"low\":1,\"high\":2,\"rows\":[],\"limit\":3}]}",
                "line 1: scans[0].limit: unknown field `limit`",
            ),
            ("[1, [], []]", "line 1: expected a JSON object {\"id\": n,"),
            ("hello", "line 1: expected a JSON object"),
        ];
        for (text, expected) in cases {
            let error = error_of(text);
            assert!(error.starts_with(expected), "{text}: got {error:?}, expected {expected:?}...");
        }
    }

    #[test]
    fn rejects_a_key_written_twice_but_not_read_twice() {
        let read_twice = "{\"id\":4,\"reads\":[[1,0],[1,3]],\"writes\":[[1,5]]}";
        assert_eq!(read_history(read_twice.as_bytes()).unwrap().len(), 1);
        let written_twice = "{\"id\":1,\"reads\":[],\"writes\":[]}\n{\"id\":4,\"reads\":[],\"writes\":[[1,5],[1,6]]}";
        assert_eq!(
            error_of(written_twice),
            "line 2: transaction 4 writes key 1 twice (versions 5 and 6); a transaction installs at most one version of each key"
        );
    }

    #[test]
    fn accepts_a_byte_order_mark_at_the_start_only() {
        let with_mark =
            "\u{feff}{\"id\":1,\"reads\":[],\"writes\":[[3,1]]}\n{\"id\":2,\"reads\":[[3,1]],\"writes\":[]}\n";
        assert_eq!(read_history(with_mark.as_bytes()).unwrap().len(), 2);
        let mark_alone = "\u{feff}\n{\"id\":2,\"reads\":[],\"writes\":[]}\n";
        assert_eq!(read_history(mark_alone.as_bytes()).unwrap().len(), 1);
        let later_mark = "{\"id\":1,\"reads\":[],\"writes\":[]}\n\u{feff}{\"id\":2,\"reads\":[],\"writes\":[]}\n";
        assert!(error_of(later_mark).starts_with("line 2: expected a JSON object"));
    }

    #[test]
    fn reads_tables_inserts_deletes_and_scans() {
        let text = "{\"id\":1,\"reads\":[[2,9,0]],\"writes\":[],\"inserts\":[[2,9,4]],\"scans\":[{\"table\":2,\"low\":0,\"high\":9,\"rows\":[]}]}\n\
                    {\"id\":2,\"reads\":[],\"writes\":[],\"deletes\":[[2,9,5]],\"scans\":[{\"low\":0,\"high\":9,\"rows\":[[1,0]]}]}";
        let entries = read_history(text.as_bytes()).unwrap();
        assert_eq!(
            entries,
            vec![
                HistoryEntry::new(1, vec![], vec![]).read(2, 9, 0).insert(2, 9, 4).scan(2, 0, 9, &[]),
                HistoryEntry::new(2, vec![], vec![]).delete(2, 9, 5).scan(0, 0, 9, &[(1, 0)]),
            ]
        );
        let inserted_and_deleted = "{\"id\":4,\"reads\":[],\"writes\":[],\"inserts\":[[3,1,5]],\"deletes\":[[3,1,6]]}";
        assert_eq!(
            error_of(inserted_and_deleted),
            "line 1: transaction 4 writes key 1 of table 3 twice (versions 5 and 6); a transaction installs at most one version of each key"
        );
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let bytes = b"{\"id\":1,\"reads\":[],\"writes\":[]}\n\xff\xfe\n";
        assert!(read_history(&bytes[..]).unwrap_err().to_string().starts_with("cannot read the history at line 2"));
    }
}
