//! Byte strings kept for as long as something holds them, read back rarely, and kept out of the
//! process's memory: appended to one anonymous temporary file ([`Pack`]), read back by position.
//! The deflated schema texts ([`crate::schema_texts`]) are what it holds: tens of KiB a
//! definition, read only to compile a version and to build its OpenAPI parts, and — held on the
//! heap — blocks of every size scattered over the allocator's pages, which kept those pages
//! resident among the freed blocks of the work that made them.
//!
//! - The file comes from `tempfile::tempfile()`, as the kept OpenAPI documents' do
//!   (`versa-server`'s `spill.rs`): in `TMPDIR`, unlinked at creation, so a crash leaves nothing
//!   behind. It costs page cache, which the kernel writes back and reclaims under pressure, not
//!   the process's RSS. It is made on the first string kept.
//! - A string no one holds any more ([`Packed`] dropped) leaves a hole; once the holes are half
//!   the file and at least [`Pack::compact_from`] bytes, the live strings are copied into a
//!   fresh file (they keep their slot numbers, so no holder notices) and the old one is closed,
//!   which frees its space. A file therefore stays within twice what is held, plus that minimum.
//! - When no file can be made or a write fails (a read-only or full `TMPDIR`), the string is
//!   kept in memory instead, in a block of its own size, and nothing fails for it; the first
//!   such fallback is logged as a warning, later ones at debug level.
//! - One lock guards the file and the slot table: a read (a `pread` of one string, from the page
//!   cache unless the kernel reclaimed it) holds it, so a compaction never moves a string under
//!   a reader.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

/// Makes the file strings are kept in ([`tempfile::tempfile`] when serving; tests pass one that
/// fails, to take the in-memory path).
pub(crate) type OpenFile = fn() -> io::Result<File>;

/// One byte string kept in a [`Pack`]: released when dropped. Sixteen bytes on the heap's side,
/// whatever the string's length.
pub(crate) struct Packed {
    pack: &'static Pack,
    slot: u32,
    len: u32,
}

/// Where strings are kept: one file, and the slot table that says where each string is.
#[derive(Debug)]
pub(crate) struct Pack {
    inner: Mutex<Inner>,
    open: OpenFile,
    /// The least bytes of holes that make a compaction worth it.
    compact_from: u64,
}

#[derive(Debug, Default)]
struct Inner {
    /// `None` until the first string, or after no file could be made.
    file: Option<File>,
    /// A file was asked for already (made or not).
    opened: bool,
    /// The file's length: where the next string goes.
    end: u64,
    /// Bytes of the file no string holds.
    holes: u64,
    /// By slot number.
    slots: Vec<Slot>,
    /// Slot numbers free for reuse.
    free: Vec<u32>,
    /// After a compaction failed: the holes to wait for before the next try.
    retry_at: u64,
}

#[derive(Debug)]
enum Slot {
    Free,
    File {
        at: u64,
        len: u32,
    },
    /// Exactly sized (no spare capacity).
    Memory(Box<[u8]>),
}

/// The process's pack: compacted once it holds a MiB of holes.
pub(crate) static PACK: LazyLock<Pack> = LazyLock::new(|| Pack::new(tempfile::tempfile, 1 << 20));

/// Whether a fallback to memory was logged as a warning already.
static WARNED: AtomicBool = AtomicBool::new(false);

impl Pack {
    pub(crate) fn new(open: OpenFile, compact_from: u64) -> Pack {
        Pack { inner: Mutex::default(), open, compact_from }
    }

    /// Keeps `bytes` until the returned [`Packed`] is dropped.
    pub(crate) fn keep(&'static self, bytes: &[u8]) -> Packed {
        let mut inner = self.lock();
        if !inner.opened {
            inner.opened = true;
            inner.file = (self.open)().map_err(|error| fell_back(&error)).ok();
        }
        let at = inner.end;
        let len = u32::try_from(bytes.len()).ok();
        let in_file = match (&inner.file, len) {
            (Some(file), Some(_)) => match file.write_all_at(bytes, at) {
                Ok(()) => true,
                Err(error) => {
                    fell_back(&error);
                    false
                }
            },
            _ => false,
        };
        let slot = if let (true, Some(len)) = (in_file, len) {
            inner.end += u64::from(len);
            Slot::File { at, len }
        } else {
            Slot::Memory(bytes.into())
        };
        let slot = match inner.free.pop() {
            Some(free) => {
                inner.slots[free as usize] = slot;
                free
            }
            None => {
                inner.slots.push(slot);
                // More strings than slot numbers would need 2^32 of them held at once.
                u32::try_from(inner.slots.len() - 1).unwrap_or(u32::MAX)
            }
        };
        Packed { pack: self, slot, len: len.unwrap_or(u32::MAX) }
    }

    /// What the pack holds now: `(file length, bytes of holes in it, strings in memory)`.
    #[cfg(test)]
    fn usage(&self) -> (u64, u64, usize) {
        let inner = self.lock();
        (inner.end, inner.holes, inner.slots.iter().filter(|s| matches!(s, Slot::Memory(_))).count())
    }

    fn release(&self, packed: &Packed) {
        let mut inner = self.lock();
        let Some(slot) = inner.slots.get_mut(packed.slot as usize) else { return };
        if let Slot::File { len, .. } = std::mem::replace(slot, Slot::Free) {
            inner.holes += u64::from(len);
        }
        inner.free.push(packed.slot);
        if inner.holes >= self.compact_from.max(inner.retry_at).max(1) && inner.holes * 2 >= inner.end {
            self.compact(&mut inner);
        }
    }

    /// Copies the live strings into a fresh file and drops the old one (with no string left in
    /// it, only drops it: the next string makes a new one). When that fails, the old file
    /// stays, holes and all, and is tried again once the holes have doubled.
    fn compact(&self, inner: &mut Inner) {
        if inner.holes == inner.end {
            (inner.file, inner.opened, inner.end, inner.holes, inner.retry_at) = (None, false, 0, 0, 0);
            return;
        }
        match self.copy_live(inner) {
            Ok((fresh, moves)) => {
                for (i, at) in moves {
                    if let Some(Slot::File { at: old, .. }) = inner.slots.get_mut(i) {
                        *old = at;
                    }
                }
                (inner.file, inner.end, inner.holes, inner.retry_at) = (Some(fresh), inner.end - inner.holes, 0, 0);
            }
            Err(error) => {
                tracing::debug!(%error, "compacting the schema texts' file failed: kept as it is");
                inner.retry_at = inner.holes.saturating_mul(2);
            }
        }
    }

    /// A fresh file with the live strings of `inner`'s, and where each slot's string now is.
    fn copy_live(&self, inner: &Inner) -> io::Result<(File, Vec<(usize, u64)>)> {
        let old = inner.file.as_ref().ok_or_else(|| io::Error::other("no file"))?;
        let fresh = (self.open)()?;
        let (mut moves, mut end, mut buf) = (Vec::new(), 0, Vec::new());
        for (i, slot) in inner.slots.iter().enumerate() {
            if let Slot::File { at, len } = *slot {
                buf.resize(len as usize, 0);
                old.read_exact_at(&mut buf, at)?;
                fresh.write_all_at(&buf, end)?;
                moves.push((i, end));
                end += u64::from(len);
            }
        }
        Ok((fresh, moves))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Each step leaves the table consistent before the next: a panic cannot break it halfway.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Packed {
    /// The string's length.
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Calls `f` with the string (read back from the file, or as kept in memory).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&[u8]) -> R) -> io::Result<R> {
        let inner = self.pack.lock();
        match inner.slots.get(self.slot as usize) {
            Some(Slot::File { at, .. }) => {
                let mut buf = vec![0; self.len()];
                inner.file.as_ref().ok_or_else(|| io::Error::other("no file"))?.read_exact_at(&mut buf, *at)?;
                drop(inner);
                Ok(f(&buf))
            }
            Some(Slot::Memory(bytes)) => Ok(f(bytes)),
            _ => Err(io::Error::other("a released string")),
        }
    }
}

impl std::fmt::Debug for Packed {
    /// The slot and the length (not the pack, whose table lists every string).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packed").field("slot", &self.slot).field("len", &self.len).finish()
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        self.pack.release(self);
    }
}

/// Logs a fallback to memory: a warning the first time in the process, then at debug level.
fn fell_back(error: &io::Error) {
    if WARNED.swap(true, Ordering::Relaxed) {
        tracing::debug!(%error, "no temporary file: schema texts kept in memory");
    } else {
        tracing::warn!(
            %error,
            dir = %std::env::temp_dir().display(),
            "no temporary file (TMPDIR): schema texts are kept in memory instead; further fallbacks are logged at debug level"
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    fn read(packed: &Packed) -> Vec<u8> {
        packed.with(<[u8]>::to_vec).unwrap()
    }

    /// Strings are kept in the file and read back as kept; once half the file is holes it is
    /// compacted, and every string still held reads the same; with none held the file goes.
    #[test]
    fn kept_in_a_file_and_compacted() {
        let pack: &'static Pack = Box::leak(Box::new(Pack::new(tempfile::tempfile, 100)));
        let strings: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 40 + usize::from(i)]).collect();
        let mut held: Vec<Option<Packed>> = strings.iter().map(|s| Some(pack.keep(s))).collect();
        let whole: u64 = strings.iter().map(|s| s.len() as u64).sum();
        assert_eq!(pack.usage(), (whole, 0, 0), "all in the file");
        assert_eq!(read(held[3].as_ref().unwrap()), strings[3]);
        assert_eq!(held[3].as_ref().unwrap().len(), strings[3].len());

        for i in [0, 2, 4] {
            held[i] = None;
        }
        assert_eq!(pack.usage(), (whole, 40 + 42 + 44, 0), "holes, not yet half the file");
        for i in [1, 5, 6] {
            held[i] = None;
        }
        let live: u64 = [3, 7, 8, 9].iter().map(|&i| strings[i].len() as u64).sum();
        assert_eq!(pack.usage(), (live, 0, 0), "compacted");
        for i in [3, 7, 8, 9] {
            assert_eq!(read(held[i].as_ref().unwrap()), strings[i], "string {i} after compaction");
        }
        let again = pack.keep(b"a slot used again");
        assert_eq!(read(&again), b"a slot used again");
        assert_eq!(read(held[9].as_ref().unwrap()), strings[9]);

        let large = pack.keep(&[7; 120]);
        drop(held);
        drop(again);
        assert_eq!(pack.usage(), (137, 17, 0), "compacted again, then fewer holes than the minimum stay");
        drop(large);
        assert_eq!(pack.usage(), (0, 0, 0), "no file left with no string held");
        assert_eq!(read(&pack.keep(b"new file")), b"new file");
    }

    /// Without a file (a read-only or full `TMPDIR`) strings are kept in memory, and read the same.
    #[test]
    fn kept_in_memory_when_no_file() {
        fn failing() -> io::Result<File> {
            Err(io::Error::other("read-only"))
        }
        let pack: &'static Pack = Box::leak(Box::new(Pack::new(failing, 0)));
        let one = pack.keep(b"one");
        let two = pack.keep(b"two");
        assert_eq!(pack.usage(), (0, 0, 2));
        drop(one);
        assert_eq!((read(&two), pack.usage()), (b"two".to_vec(), (0, 0, 1)));
    }
}
