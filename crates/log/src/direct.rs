//! Appending to a log segment with direct I/O (`O_DIRECT`): the flush's bytes go from one
//! reused, block-aligned buffer to the device, bypassing the page cache.
//!
//! Why: a buffered `write` copies every byte of the log into freshly allocated page-cache
//! pages, and on this 2-vCPU machine that copy is the logger's whole cost. Measured on ycsb
//! with two workers (BENCHMARKS.md, "Durability"): with the log on tmpfs, so not waiting for
//! any disk, the logger spent 1.14 s of system time in 2 s (57% of a core) copying the log
//! into freshly allocated page-cache pages, fell behind the workers, and commits waited a
//! median 80-128 ms for their epochs. With direct I/O the copy is the device's DMA from a
//! buffer that stays mapped.
//!
//! Direct I/O needs the buffer address, the length and the file offset all aligned to the
//! device's block, so a flush that ends mid-block is written padded with zeros, and the next
//! flush starts by rewriting that last partial block with its bytes unchanged:
//!
//! ```text
//!  file:    | block | block | block |
//!  flush 1: [hdr  e1 e1 e1 e1 m1|000]          written: blocks 0-2, logical end at m1
//!  flush 2:                 [e1 m1 e2 e2 e2|0] written from block 2 again (e1 m1 as before)
//! ```
//!
//! Durable bytes are only ever rewritten with the same values, so a write torn anywhere
//! keeps every earlier flush intact; the zeros after the logical end read as the end of the
//! log (a frame never has length 0, see `recovery`). A full segment is truncated to its logical
//! length and synced before the next segment is created, so padding is only ever found at
//! the end of the newest segment.
//!
//! Where the file system refuses `O_DIRECT` (tmpfs), [`DirectFile::open`] returns `None` and
//! the caller falls back to buffered appends.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// Alignment of direct writes: the largest logical block size of common devices.
pub const BLOCK: usize = 4096;

/// A byte buffer whose contents start at a [`BLOCK`]-aligned address, built on a `Vec` with
/// room to spare (no `unsafe`: the aligned start is found inside the allocation). It grows to
/// the largest flush and is handed from one segment to the next ([`DirectFile::into_buffer`]):
/// a fresh one would be zero-filled by the kernel page by page for every 64 MiB segment.
#[derive(Debug, Default)]
pub struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn capacity(&self) -> usize {
        self.raw.len() - self.start
    }

    /// Makes room for `capacity` bytes, keeping the contents.
    fn reserve(&mut self, capacity: usize) {
        if capacity <= self.capacity() {
            return;
        }
        let capacity = capacity.next_power_of_two().max(BLOCK);
        let mut raw = vec![0u8; capacity + BLOCK];
        let start = raw.as_ptr().align_offset(BLOCK);
        raw[start..start + self.len].copy_from_slice(self.bytes());
        self.raw = raw;
        self.start = start;
    }

    fn bytes(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }

    fn extend(&mut self, bytes: &[u8]) {
        self.reserve(self.len + bytes.len());
        let at = self.start + self.len;
        self.raw[at..at + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Zero-fills up to the next multiple of [`BLOCK`] and returns the padded bytes.
    fn padded(&mut self) -> &[u8] {
        let padded = self.len.next_multiple_of(BLOCK);
        self.reserve(padded);
        self.raw[self.start + self.len..self.start + padded].fill(0);
        &self.raw[self.start..self.start + padded]
    }

    /// Keeps only the last `keep` bytes, moved to the front.
    fn keep_tail(&mut self, keep: usize) {
        let from = self.start + self.len - keep;
        self.raw.copy_within(from..from + keep, self.start);
        self.len = keep;
    }
}

/// A segment opened for direct appends.
#[derive(Debug)]
pub struct DirectFile {
    file: File,
    /// The file's logical length: bytes written, not counting the padding.
    len: u64,
    /// The bytes of the last partial block (`len % BLOCK` of them), then a flush's bytes.
    stage: AlignedBuf,
}

impl DirectFile {
    /// Opens `path` for direct appends after its current contents, staging flushes in
    /// `buffer` (its contents are dropped), or `None` where the file system does not support
    /// direct I/O.
    pub fn open(path: &Path, mut buffer: AlignedBuf) -> io::Result<Option<Self>> {
        let file = match OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(path) {
            Ok(file) => file,
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => return Ok(None),
            Err(error) => return Err(error),
        };
        let len = file.metadata()?.len();
        buffer.len = 0;
        let mut direct = Self { file, len, stage: buffer };
        // The partial last block, read through a buffered handle (direct reads would need
        // aligned lengths too).
        let tail = (len % BLOCK as u64) as usize;
        let mut bytes = vec![0u8; tail];
        File::open(path)?.read_exact_at(&mut bytes, len - tail as u64)?;
        direct.stage.extend(&bytes);
        Ok(Some(direct))
    }

    /// Logical length of the file.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Closes the file, keeping its staging buffer for the next one.
    pub fn into_buffer(self) -> AlignedBuf {
        self.stage
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `parts` in one direct write (from the start of the last partial block, padded
    /// to a whole block) and syncs the file.
    pub fn append_synced(&mut self, parts: &[Vec<u8>]) -> io::Result<()> {
        let tail = self.stage.len;
        let added: usize = parts.iter().map(Vec::len).sum();
        self.stage.reserve(tail + added + BLOCK);
        for part in parts {
            self.stage.extend(part);
        }
        let offset = self.len - tail as u64;
        self.file.write_all_at(self.stage.padded(), offset)?;
        // `fdatasync` still matters: the file's size and newly allocated blocks are metadata,
        // and the device may hold the write in a volatile cache.
        self.file.sync_data()?;
        self.len += added as u64;
        self.stage.keep_tail((self.len % BLOCK as u64) as usize);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_of_any_length_read_back_in_order_padded_with_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("segment");
        std::fs::write(&path, b"header").unwrap();
        let Some(mut file) = DirectFile::open(&path, AlignedBuf::default()).unwrap() else {
            eprintln!("no direct I/O on this file system; nothing to test");
            return;
        };
        let mut expected = b"header".to_vec();
        let mut seed = 7u64;
        for round in 0..40 {
            let parts: Vec<Vec<u8>> = (0..round % 4)
                .map(|part| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    let len = (seed >> 33) as usize % (3 * BLOCK);
                    (0..len).map(|i| (i + part + round) as u8 | 1).collect()
                })
                .collect();
            file.append_synced(&parts).unwrap();
            expected.extend(parts.concat());
            assert_eq!(file.len(), expected.len() as u64);
            let on_disk = std::fs::read(&path).unwrap();
            assert_eq!(on_disk.len() % BLOCK, 0, "padded to whole blocks");
            assert_eq!(&on_disk[..expected.len()], &expected[..], "round {round}");
            assert!(on_disk[expected.len()..].iter().all(|&byte| byte == 0), "padding is zeros");
        }
        let buffer = file.into_buffer();
        // Cut back to its logical end (as a full segment is) and reopened, it goes on there.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(expected.len() as u64).unwrap();
        let mut file = DirectFile::open(&path, buffer).unwrap().unwrap();
        file.append_synced(&[b"more".to_vec()]).unwrap();
        expected.extend(b"more");
        assert_eq!(&std::fs::read(&path).unwrap()[..expected.len()], &expected[..]);
    }
}
