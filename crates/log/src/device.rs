//! The log directory as a trait, with a real implementation and a fault-injecting one.
//!
//! [`Dir`] is the only seam between the log and the operating system: files are named within
//! one directory, appended to, synced, read whole or from an offset (recovery streams a large
//! checkpoint in chunks), truncated, renamed and removed. [`FileDir`] maps it onto `std::fs`
//! with real `fsync` (`File::sync_data`, and `sync_all` on the directory), and a logger's
//! flushes ([`Dir::append_synced`]) onto direct I/O ([`crate::direct`]). [`FaultyDir`]
//! keeps everything in memory and models what a crash keeps (its flushes are appends and a
//! sync, the trait's default):
//!
//! ```text
//!  file bytes:  [ synced .............. | unsynced ....... ]
//!  crash():     [ synced .............. | torn prefix? ]     (the rest is gone)
//!  names:       created/renamed/removed names are durable only after sync_dir()
//! ```
//!
//! Faults are chosen by one `u64` seed (which torn prefix survives) and by explicit knobs:
//! fail the N-th file sync, or report a full disk once N bytes have been appended. After a
//! failed sync the file's unsynced bytes are in an unknown state (as on Linux, where the
//! kernel may drop the dirty pages and clear the error): the driver must never trust them.
//!
//! Anchors for the idea (not the code): redb's crash-consistency tests, TigerBeetle's
//! testing storage.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use thiserror::Error;

use crate::direct::{AlignedBuf, DirectFile};

/// An I/O failure, naming the directory and the file.
#[derive(Debug, Error)]
#[error("{operation} {file:?} in log directory {dir}: {source}")]
pub struct DeviceError {
    pub operation: &'static str,
    pub dir: PathBuf,
    pub file: String,
    #[source]
    pub source: std::io::Error,
}

/// A directory of log files. Names are plain file names (no separators).
pub trait Dir: Send + Sync + std::fmt::Debug {
    /// Creates an empty file, replacing any file of that name.
    fn create(&self, name: &str) -> Result<(), DeviceError>;
    /// Appends bytes at the end of a file.
    fn append(&self, name: &str, bytes: &[u8]) -> Result<(), DeviceError>;
    /// Makes a file's contents durable.
    fn sync(&self, name: &str) -> Result<(), DeviceError>;
    /// Reads a whole file.
    fn read(&self, name: &str) -> Result<Vec<u8>, DeviceError>;
    /// Cuts a file to `len` bytes (durable after `sync`).
    fn truncate(&self, name: &str, len: u64) -> Result<(), DeviceError>;
    /// Names of the files, sorted.
    fn list(&self) -> Result<Vec<String>, DeviceError>;
    /// Removes a file (durable after `sync_dir`).
    fn remove(&self, name: &str) -> Result<(), DeviceError>;
    /// Renames a file, replacing the target (durable after `sync_dir`).
    fn rename(&self, from: &str, to: &str) -> Result<(), DeviceError>;
    /// Makes creations, renames and removals durable.
    fn sync_dir(&self) -> Result<(), DeviceError>;
    /// Reads up to `buf.len()` bytes of a file from `offset`; returns how many were read
    /// (fewer only at the end of the file, 0 past it).
    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, DeviceError>;
    /// The length of a file in bytes.
    fn len(&self, name: &str) -> Result<u64, DeviceError>;
    /// Lets go of any handle kept open for a file that will not be written again (a rotated
    /// segment), so deleting it later frees its space at once.
    fn close(&self, _name: &str) {}
    /// Appends `parts` in order and makes the file durable: a logger's flush. A directory may
    /// write the file past its logical end with zeros (whole blocks for direct I/O); those
    /// zeros are gone once the file is truncated to its length.
    fn append_synced(&self, name: &str, parts: &[Vec<u8>]) -> Result<(), DeviceError> {
        for part in parts {
            self.append(name, part)?;
        }
        self.sync(name)
    }
}

/// Implements [`Dir`] for a pointer type by forwarding every method to what it points to.
macro_rules! forward_dir {
    ($($pointer:tt)*) => {
        impl<D: Dir + ?Sized> Dir for $($pointer)* {
            fn create(&self, name: &str) -> Result<(), DeviceError> {
                (**self).create(name)
            }
            fn append(&self, name: &str, bytes: &[u8]) -> Result<(), DeviceError> {
                (**self).append(name, bytes)
            }
            fn sync(&self, name: &str) -> Result<(), DeviceError> {
                (**self).sync(name)
            }
            fn read(&self, name: &str) -> Result<Vec<u8>, DeviceError> {
                (**self).read(name)
            }
            fn truncate(&self, name: &str, len: u64) -> Result<(), DeviceError> {
                (**self).truncate(name, len)
            }
            fn list(&self) -> Result<Vec<String>, DeviceError> {
                (**self).list()
            }
            fn remove(&self, name: &str) -> Result<(), DeviceError> {
                (**self).remove(name)
            }
            fn rename(&self, from: &str, to: &str) -> Result<(), DeviceError> {
                (**self).rename(from, to)
            }
            fn sync_dir(&self) -> Result<(), DeviceError> {
                (**self).sync_dir()
            }
            fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, DeviceError> {
                (**self).read_at(name, offset, buf)
            }
            fn len(&self, name: &str) -> Result<u64, DeviceError> {
                (**self).len(name)
            }
            fn close(&self, name: &str) {
                (**self).close(name);
            }
            fn append_synced(&self, name: &str, parts: &[Vec<u8>]) -> Result<(), DeviceError> {
                (**self).append_synced(name, parts)
            }
        }
    };
}

// A shared directory is a directory: the logger, the checkpoint thread and recovery can hold
// the same one; and so is a borrowed one.
forward_dir!(Arc<D>);
forward_dir!(&D);

/// A real directory on a file system.
#[derive(Debug)]
pub struct FileDir {
    path: PathBuf,
    /// Files kept open for appending, so each append is not an `open`.
    open_files: Mutex<BTreeMap<String, File>>,
    /// Files a logger flushes to with direct I/O ([`Dir::append_synced`]), or `None` where
    /// the file system refused it; any other operation on the file closes its entry first.
    /// Each file has a lock of its own, so the logger's flush never waits for a checkpoint's.
    direct_files: Mutex<BTreeMap<String, SharedDirectFile>>,
    /// Staging buffers of closed direct files, for the next ones.
    spare_buffers: Mutex<Vec<AlignedBuf>>,
}

/// Staging buffers [`FileDir`] keeps: one for the logger's segment, one for a checkpoint.
const SPARE_BUFFERS_MAX: usize = 2;

type SharedDirectFile = Arc<Mutex<Option<DirectFile>>>;

impl FileDir {
    /// Opens (creating if needed) the directory at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, DeviceError> {
        let path = path.as_ref().to_path_buf();
        fs::create_dir_all(&path).map_err(|source| DeviceError {
            operation: "create directory",
            dir: path.clone(),
            file: String::new(),
            source,
        })?;
        Ok(Self {
            path,
            open_files: Mutex::new(BTreeMap::new()),
            direct_files: Mutex::new(BTreeMap::new()),
            spare_buffers: Mutex::new(Vec::new()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, operation: &'static str, file: &str, source: std::io::Error) -> DeviceError {
        DeviceError { operation, dir: self.path.clone(), file: file.to_string(), source }
    }

    fn with_file<T>(
        &self,
        operation: &'static str,
        name: &str,
        action: impl FnOnce(&mut File) -> std::io::Result<T>,
    ) -> Result<T, DeviceError> {
        let mut files = self.open_files.lock();
        if !files.contains_key(name) {
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .open(self.path.join(name))
                .map_err(|source| self.error(operation, name, source))?;
            files.insert(name.to_string(), file);
        }
        let file = files.get_mut(name).expect("inserted above");
        action(file).map_err(|source| self.error(operation, name, source))
    }

    /// Closes the file's direct handle, if it has one: the next direct flush reopens it after
    /// whatever the file then holds.
    fn forget_direct(&self, name: &str) {
        let closed = self.direct_files.lock().remove(name);
        if let Some(direct) = closed.and_then(|file| file.lock().take()) {
            let mut spares = self.spare_buffers.lock();
            if spares.len() < SPARE_BUFFERS_MAX {
                spares.push(direct.into_buffer());
            }
        }
    }
}

impl Dir for FileDir {
    fn create(&self, name: &str) -> Result<(), DeviceError> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .truncate(false)
            .open(self.path.join(name))
            .and_then(|file| file.set_len(0).map(|()| file))
            .map_err(|source| self.error("create", name, source))?;
        self.forget_direct(name);
        self.open_files.lock().insert(name.to_string(), file);
        Ok(())
    }

    fn append(&self, name: &str, bytes: &[u8]) -> Result<(), DeviceError> {
        self.forget_direct(name);
        self.with_file("append to", name, |file| file.write_all(bytes))
    }

    fn sync(&self, name: &str) -> Result<(), DeviceError> {
        self.with_file("fsync", name, |file| file.sync_data())
    }

    fn read(&self, name: &str) -> Result<Vec<u8>, DeviceError> {
        let mut bytes = Vec::new();
        File::open(self.path.join(name))
            .and_then(|mut file| file.read_to_end(&mut bytes))
            .map_err(|source| self.error("read", name, source))?;
        Ok(bytes)
    }

    fn truncate(&self, name: &str, len: u64) -> Result<(), DeviceError> {
        self.forget_direct(name);
        self.with_file("truncate", name, |file| file.set_len(len))
    }

    fn list(&self) -> Result<Vec<String>, DeviceError> {
        let entries = fs::read_dir(&self.path).map_err(|source| self.error("list", "", source))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| self.error("list", "", source))?;
            if entry.file_type().is_ok_and(|kind| kind.is_file()) {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn remove(&self, name: &str) -> Result<(), DeviceError> {
        self.forget_direct(name);
        self.open_files.lock().remove(name);
        fs::remove_file(self.path.join(name)).map_err(|source| self.error("remove", name, source))
    }

    fn rename(&self, from: &str, to: &str) -> Result<(), DeviceError> {
        self.forget_direct(from);
        self.forget_direct(to);
        let mut files = self.open_files.lock();
        files.remove(from);
        files.remove(to);
        fs::rename(self.path.join(from), self.path.join(to)).map_err(|source| self.error("rename", from, source))
    }

    fn sync_dir(&self) -> Result<(), DeviceError> {
        File::open(&self.path)
            .and_then(|dir| dir.sync_all())
            .map_err(|source| self.error("fsync directory", "", source))
    }

    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, DeviceError> {
        let mut read = || -> std::io::Result<usize> {
            let mut file = File::open(self.path.join(name))?;
            file.seek(SeekFrom::Start(offset))?;
            let mut filled = 0;
            while filled < buf.len() {
                match file.read(&mut buf[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(error) => return Err(error),
                }
            }
            Ok(filled)
        };
        read().map_err(|source| self.error("read", name, source))
    }

    fn len(&self, name: &str) -> Result<u64, DeviceError> {
        fs::metadata(self.path.join(name)).map(|meta| meta.len()).map_err(|source| self.error("stat", name, source))
    }

    fn close(&self, name: &str) {
        self.forget_direct(name);
        self.open_files.lock().remove(name);
    }

    /// One direct write from an aligned buffer (see [`crate::direct`]), falling back to
    /// buffered appends where the file system has no direct I/O.
    fn append_synced(&self, name: &str, parts: &[Vec<u8>]) -> Result<(), DeviceError> {
        let file = {
            let mut direct_files = self.direct_files.lock();
            if !direct_files.contains_key(name) {
                let buffer = self.spare_buffers.lock().pop().unwrap_or_default();
                let opened = DirectFile::open(&self.path.join(name), buffer)
                    .map_err(|source| self.error("open", name, source))?;
                direct_files.insert(name.to_string(), Arc::new(Mutex::new(opened)));
            }
            Arc::clone(&direct_files[name])
        };
        let mut file = file.lock();
        match &mut *file {
            Some(direct) => direct.append_synced(parts).map_err(|source| self.error("append to", name, source)),
            None => {
                // The trait's default, minus `append`'s `forget_direct`: the `None` entry stays,
                // so the next flush does not try `O_DIRECT` again.
                drop(file);
                for part in parts {
                    self.with_file("append to", name, |file| file.write_all(part))?;
                }
                self.sync(name)
            }
        }
    }
}

/// One file's bytes in [`FaultyDir`]: what was written and how much of it a crash keeps.
#[derive(Debug, Clone, Default)]
struct FaultyFile {
    /// What reads see now.
    current: Vec<u8>,
    /// What survives a crash (the contents at the last successful sync).
    durable: Vec<u8>,
    /// Length of `current` at the last operation that was not an append (a truncate or a
    /// create): bytes past it were appended since and can be torn.
    append_start: usize,
    /// Whether anything but appends changed the file since its last sync (else `durable` is
    /// a prefix of `current`, and a sync only copies the new tail).
    rewritten: bool,
}

#[derive(Debug)]
struct FaultyState {
    /// Inode-like ids so renames move contents.
    files: BTreeMap<u64, FaultyFile>,
    names: BTreeMap<String, u64>,
    durable_names: BTreeMap<String, u64>,
    next_file_id: u64,
    rng_state: u64,
    syncs: u64,
    fail_sync_number: Option<u64>,
    appended_bytes: u64,
    append_bytes_max: Option<u64>,
    /// Mutating operations left before the simulated power cut; after it every operation
    /// fails until [`FaultyDir::crash`].
    operations_before_power_cut: Option<u64>,
    crashes: u64,
}

/// An in-memory directory that forgets unsynced data on [`FaultyDir::crash`]. Cloning shares
/// the same state (the "disk"), so a test can keep a handle across a simulated restart.
#[derive(Debug, Clone)]
pub struct FaultyDir {
    state: Arc<Mutex<FaultyState>>,
}

impl FaultyDir {
    /// An empty directory whose random choices derive from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            state: Arc::new(Mutex::new(FaultyState {
                files: BTreeMap::new(),
                names: BTreeMap::new(),
                durable_names: BTreeMap::new(),
                next_file_id: 0,
                rng_state: seed ^ 0x9E37_79B9_7F4A_7C15,
                syncs: 0,
                fail_sync_number: None,
                appended_bytes: 0,
                append_bytes_max: None,
                operations_before_power_cut: None,
                crashes: 0,
            })),
        }
    }

    /// Makes the `n`-th file sync from now (1-based) fail.
    pub fn fail_sync_after(&self, n: u64) {
        let mut state = self.state.lock();
        state.fail_sync_number = Some(state.syncs + n);
    }

    /// Reports a full disk once `bytes` more bytes have been appended.
    pub fn disk_full_after(&self, bytes: u64) {
        let mut state = self.state.lock();
        state.append_bytes_max = Some(state.appended_bytes + bytes);
    }

    /// Simulates power loss: every file returns to its synced contents (keeping, when
    /// `torn` is set, a seeded random prefix of its unsynced appended bytes), names return to
    /// the last directory sync, and injected faults are cleared.
    pub fn crash(&self, torn: bool) {
        let mut state = self.state.lock();
        state.crashes += 1;
        let ids: Vec<u64> = state.files.keys().copied().collect();
        for id in ids {
            let random = next_random(&mut state.rng_state);
            let file = state.files.get_mut(&id).expect("listed above");
            let mut kept = file.durable.clone();
            let appended_from = file.append_start.max(kept.len());
            if torn && file.current.len() > appended_from && file.current.starts_with(&kept) {
                let unsynced = &file.current[kept.len()..];
                let keep_len = (random % (unsynced.len() as u64 + 1)) as usize;
                kept.extend_from_slice(&unsynced[..keep_len]);
            }
            file.current.clone_from(&kept);
            file.durable = kept;
            file.append_start = file.current.len();
            file.rewritten = false;
        }
        state.names = state.durable_names.clone();
        let live: Vec<u64> = state.names.values().copied().collect();
        state.files.retain(|id, _| live.contains(id));
        state.fail_sync_number = None;
        state.append_bytes_max = None;
        state.operations_before_power_cut = None;
    }

    /// Cuts the power after `operations` more mutating operations (create, append, sync,
    /// truncate, remove, rename, directory sync) have completed: every later one fails, and
    /// an append that fails this way leaves a seeded prefix of its bytes unsynced. Call
    /// [`FaultyDir::crash`] to restart.
    pub fn power_cut_after(&self, operations: u64) {
        self.state.lock().operations_before_power_cut = Some(operations);
    }

    /// Whether the simulated power is off.
    pub fn is_powered_off(&self) -> bool {
        self.state.lock().operations_before_power_cut == Some(0)
    }

    /// Flips one bit of a file's durable and current contents (simulated media corruption).
    pub fn corrupt(&self, name: &str, offset: usize) {
        let mut state = self.state.lock();
        let id = state.names[name];
        let file = state.files.get_mut(&id).expect("named file exists");
        for bytes in [&mut file.current, &mut file.durable] {
            if offset < bytes.len() {
                bytes[offset] ^= 0x10;
            }
        }
    }

    /// File syncs attempted so far.
    pub fn syncs(&self) -> u64 {
        self.state.lock().syncs
    }

    fn missing(name: &str) -> DeviceError {
        DeviceError {
            operation: "open",
            dir: PathBuf::from("<faulty>"),
            file: name.to_string(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        }
    }

    /// Counts one mutating operation; `Err` once the power is cut.
    fn operate(state: &mut FaultyState, name: &str) -> Result<(), DeviceError> {
        match &mut state.operations_before_power_cut {
            Some(0) => Err(DeviceError {
                operation: "operate on",
                dir: PathBuf::from("<faulty>"),
                file: name.to_string(),
                source: std::io::Error::other("simulated power cut"),
            }),
            Some(left) => {
                *left -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn file_mut<'a>(state: &'a mut FaultyState, name: &str) -> Result<&'a mut FaultyFile, DeviceError> {
        let id = *state.names.get(name).ok_or_else(|| Self::missing(name))?;
        Ok(state.files.get_mut(&id).expect("named file exists"))
    }
}

fn next_random(state: &mut u64) -> u64 {
    // splitmix64: a tiny, well-known generator; enough to pick torn lengths.
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Dir for FaultyDir {
    fn create(&self, name: &str) -> Result<(), DeviceError> {
        let mut state = self.state.lock();
        Self::operate(&mut state, name)?;
        let id = state.next_file_id;
        state.next_file_id += 1;
        state.files.insert(id, FaultyFile::default());
        state.names.insert(name.to_string(), id);
        Ok(())
    }

    fn append(&self, name: &str, bytes: &[u8]) -> Result<(), DeviceError> {
        let mut state = self.state.lock();
        if let Err(error) = Self::operate(&mut state, name) {
            // The power cut interrupts this append: part of it may reach the file.
            let random = next_random(&mut state.rng_state);
            let kept = (random % (bytes.len() as u64 + 1)) as usize;
            Self::file_mut(&mut state, name)?.current.extend_from_slice(&bytes[..kept]);
            return Err(error);
        }
        let room = state.append_bytes_max.map_or(u64::MAX, |max| max.saturating_sub(state.appended_bytes));
        let written = (bytes.len() as u64).min(room) as usize;
        state.appended_bytes += written as u64;
        Self::file_mut(&mut state, name)?.current.extend_from_slice(&bytes[..written]);
        if written < bytes.len() {
            return Err(DeviceError {
                operation: "append to",
                dir: PathBuf::from("<faulty>"),
                file: name.to_string(),
                source: std::io::Error::from(std::io::ErrorKind::StorageFull),
            });
        }
        Ok(())
    }

    fn sync(&self, name: &str) -> Result<(), DeviceError> {
        let mut state = self.state.lock();
        Self::operate(&mut state, name)?;
        state.syncs += 1;
        if state.fail_sync_number == Some(state.syncs) {
            return Err(DeviceError {
                operation: "fsync",
                dir: PathBuf::from("<faulty>"),
                file: name.to_string(),
                source: std::io::Error::other("injected fsync failure"),
            });
        }
        let file = Self::file_mut(&mut state, name)?;
        if file.rewritten || file.durable.len() > file.current.len() {
            file.durable.clone_from(&file.current);
        } else {
            let synced = file.durable.len();
            file.durable.extend_from_slice(&file.current[synced..]);
        }
        file.rewritten = false;
        Ok(())
    }

    fn read(&self, name: &str) -> Result<Vec<u8>, DeviceError> {
        let mut state = self.state.lock();
        Ok(Self::file_mut(&mut state, name)?.current.clone())
    }

    fn truncate(&self, name: &str, len: u64) -> Result<(), DeviceError> {
        let mut state = self.state.lock();
        Self::operate(&mut state, name)?;
        let file = Self::file_mut(&mut state, name)?;
        file.current.resize(len as usize, 0);
        file.append_start = file.current.len();
        file.rewritten = true;
        Ok(())
    }

    fn list(&self) -> Result<Vec<String>, DeviceError> {
        Ok(self.state.lock().names.keys().cloned().collect())
    }

    fn remove(&self, name: &str) -> Result<(), DeviceError> {
        let mut state = self.state.lock();
        Self::operate(&mut state, name)?;
        state.names.remove(name).ok_or_else(|| Self::missing(name))?;
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> Result<(), DeviceError> {
        let mut state = self.state.lock();
        Self::operate(&mut state, from)?;
        let id = state.names.remove(from).ok_or_else(|| Self::missing(from))?;
        state.names.insert(to.to_string(), id);
        Ok(())
    }

    fn sync_dir(&self) -> Result<(), DeviceError> {
        let mut state = self.state.lock();
        Self::operate(&mut state, "")?;
        state.durable_names = state.names.clone();
        Ok(())
    }

    fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, DeviceError> {
        let mut state = self.state.lock();
        let current = &Self::file_mut(&mut state, name)?.current;
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(current.len());
        let len = buf.len().min(current.len() - start);
        buf[..len].copy_from_slice(&current[start..start + len]);
        Ok(len)
    }

    fn len(&self, name: &str) -> Result<u64, DeviceError> {
        let mut state = self.state.lock();
        Ok(Self::file_mut(&mut state, name)?.current.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_keeps_only_synced_bytes_and_synced_names() {
        let dir = FaultyDir::new(1);
        dir.create("a").unwrap();
        dir.append("a", b"hello").unwrap();
        dir.sync("a").unwrap();
        dir.sync_dir().unwrap();
        dir.append("a", b" world").unwrap();
        let mut buf = [0; 4];
        assert_eq!((dir.read_at("a", 7, &mut buf).unwrap(), &buf), (4, b"orld"));
        dir.create("b").unwrap();
        dir.crash(false);
        assert_eq!(dir.read("a").unwrap(), b"hello");
        assert_eq!(dir.len("a").unwrap(), 5);
        assert_eq!(dir.list().unwrap(), vec!["a".to_string()]);
    }

    #[test]
    fn torn_crash_keeps_a_prefix_of_the_unsynced_append() {
        for seed in 0..50 {
            let dir = FaultyDir::new(seed);
            dir.create("a").unwrap();
            dir.sync_dir().unwrap();
            dir.append("a", b"abc").unwrap();
            dir.sync("a").unwrap();
            dir.append("a", b"defgh").unwrap();
            dir.crash(true);
            let bytes = dir.read("a").unwrap();
            assert!(b"abcdefgh".starts_with(&bytes) && bytes.len() >= 3, "seed {seed}: {bytes:?}");
        }
    }

    #[test]
    fn injected_faults_fail_the_chosen_operations() {
        let dir = FaultyDir::new(2);
        dir.create("a").unwrap();
        dir.fail_sync_after(2);
        dir.sync("a").unwrap();
        assert!(dir.sync("a").is_err());
        dir.disk_full_after(4);
        let error = dir.append("a", b"123456").unwrap_err();
        assert_eq!(error.source.kind(), std::io::ErrorKind::StorageFull);
        assert_eq!(dir.read("a").unwrap(), b"1234");
    }

    #[test]
    fn unsynced_rename_is_undone_by_a_crash() {
        let dir = FaultyDir::new(3);
        dir.create("tmp").unwrap();
        dir.append("tmp", b"x").unwrap();
        dir.sync("tmp").unwrap();
        dir.sync_dir().unwrap();
        dir.rename("tmp", "final").unwrap();
        dir.crash(false);
        assert_eq!(dir.list().unwrap(), vec!["tmp".to_string()]);
        dir.rename("tmp", "final").unwrap();
        dir.sync_dir().unwrap();
        dir.crash(false);
        assert_eq!(dir.read("final").unwrap(), b"x");
    }

    #[test]
    fn file_dir_round_trips_and_names_the_directory_in_errors() {
        let temp = tempfile::tempdir().unwrap();
        let dir = FileDir::open(temp.path().join("wal")).unwrap();
        dir.create("a").unwrap();
        dir.append("a", b"abc").unwrap();
        dir.sync("a").unwrap();
        dir.truncate("a", 2).unwrap();
        dir.append("a", b"z").unwrap();
        dir.sync_dir().unwrap();
        assert_eq!(dir.read("a").unwrap(), b"abz");
        let mut buf = [0; 8];
        assert_eq!((dir.read_at("a", 1, &mut buf).unwrap(), &buf[..2]), (2, &b"bz"[..]));
        assert_eq!((dir.read_at("a", 9, &mut buf).unwrap(), dir.len("a").unwrap()), (0, 3));
        dir.rename("a", "b").unwrap();
        assert_eq!(dir.list().unwrap(), vec!["b".to_string()]);
        let error = dir.read("missing").unwrap_err();
        assert!(error.to_string().contains("wal"), "{error}");
        dir.remove("b").unwrap();
        assert!(dir.list().unwrap().is_empty());
    }
}
