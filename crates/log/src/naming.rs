//! File names in the log directory: `segment-<number>.log`, `checkpoint-<begin epoch>.ckpt`,
//! and the temporary `checkpoint.tmp` a checkpoint is written to before its rename.
//! Numbers are zero-padded to 20 digits so names sort in numeric order.

/// Name of the file a checkpoint is written to before it is renamed into place.
pub const CHECKPOINT_TEMP_NAME: &str = "checkpoint.tmp";

/// A file the log owns, identified by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogFile {
    Segment { number: u64 },
    Checkpoint { begin_epoch: u64 },
}

pub fn segment_name(number: u64) -> String {
    format!("segment-{number:020}.log")
}

pub fn checkpoint_name(begin_epoch: u64) -> String {
    format!("checkpoint-{begin_epoch:020}.ckpt")
}

/// The file a name denotes, or `None` for names the log does not own.
pub fn parse(name: &str) -> Option<LogFile> {
    if let Some(number) = name.strip_prefix("segment-").and_then(|rest| rest.strip_suffix(".log")) {
        return Some(LogFile::Segment { number: number.parse().ok()? });
    }
    let begin_epoch = name.strip_prefix("checkpoint-")?.strip_suffix(".ckpt")?;
    Some(LogFile::Checkpoint { begin_epoch: begin_epoch.parse().ok()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort_numerically() {
        assert_eq!(parse(&segment_name(12)), Some(LogFile::Segment { number: 12 }));
        assert_eq!(parse(&checkpoint_name(7)), Some(LogFile::Checkpoint { begin_epoch: 7 }));
        assert!(segment_name(9) < segment_name(10));
        assert_eq!(parse(CHECKPOINT_TEMP_NAME), None);
        assert_eq!(parse("segment-x.log"), None);
    }
}
