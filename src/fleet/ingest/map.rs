//! A regular input file mapped read-only: its blocks are parsed where the
//! page cache holds them, with no copy into a buffer and no fresh memory to
//! zero for it (reading 4 MiB blocks cost a memset, a copy and a page fault
//! per 4 KiB of every block).
//!
//! If another process truncates the file while it is read, touching the
//! lost pages raises SIGBUS; a fleet file is written once and then analyzed
//! (`collect --output` replaces files by rename, which leaves this mapping
//! intact), so that is accepted, as ripgrep does for the files it maps.

use std::cell::Cell;
use std::fs::File;
use std::os::fd::AsRawFd;

pub(super) struct Map {
    ptr: *mut libc::c_void,
    len: usize,
    /// Bytes before this offset are no longer mapped in (see [`Map::release`]).
    released: Cell<usize>,
}

/// Smaller files are read: mapping costs more than it saves there.
const MIN_MAP_BYTES: u64 = 1 << 20;

impl Map {
    /// The file mapped, or None where mapping does not fit (not a regular
    /// file, small, or the kernel refuses): then it is read as a stream.
    pub(super) fn new(file: &File) -> Option<Map> {
        let meta = file.metadata().ok()?;
        if !meta.file_type().is_file() || meta.len() < MIN_MAP_BYTES {
            return None;
        }
        let len = usize::try_from(meta.len()).ok()?;
        // SAFETY: a fresh read-only private mapping of a file we hold open;
        // nothing else aliases it, and it is unmapped once in Drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: the range was just mapped. Advice only: a failure changes nothing.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        Some(Map {
            ptr,
            len,
            released: Cell::new(0),
        })
    }

    pub(super) fn bytes(&self) -> &[u8] {
        // SAFETY: `len` readable bytes mapped at `ptr` for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }

    /// Drop the pages before `upto` from this process (they stay in the page
    /// cache, and read back the same if touched again): mapped pages count in
    /// the peak RSS, and a 10-million-host file is 1 GB.
    pub(super) fn release(&self, upto: usize) {
        let page = rustix::param::page_size();
        let from = self.released.get();
        let to = upto.min(self.len) / page * page;
        if to <= from {
            return;
        }
        // SAFETY: page-aligned subrange of our own mapping; for a private
        // unmodified file mapping DONTNEED only drops the page table entries.
        unsafe {
            libc::madvise(
                self.ptr.cast::<u8>().add(from).cast(),
                to - from,
                libc::MADV_DONTNEED,
            )
        };
        self.released.set(to);
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `new`, once.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}
