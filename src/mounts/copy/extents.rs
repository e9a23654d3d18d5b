//! Where a file's data lies (holes skipped) and how it is moved between
//! two open files.

use std::ops::Range;
use std::os::fd::BorrowedFd;

use rustix::fs::{SeekFrom, Stat};
use rustix::io::Errno;

/// The data extents of an open file below `len`, from `SEEK_DATA`/`SEEK_HOLE`,
/// in order; holes are left out. Where the filesystem cannot tell (`lseek`
/// answers EINVAL or EOPNOTSUPP), the whole file is one extent, which is the
/// plain copy. Moves the file offset; every user here reads at explicit
/// offsets.
pub struct Extents<'f> {
    fd: BorrowedFd<'f>,
    pos: u64,
    len: u64,
    /// Ask the filesystem; false yields `0..len` at once.
    pub(super) probe: bool,
}

impl<'f> Extents<'f> {
    pub fn new(fd: BorrowedFd<'f>, len: u64) -> Self {
        Extents {
            fd,
            pos: 0,
            len,
            probe: true,
        }
    }

    /// Probe only when st_blocks says the file may have holes (as GNU cp
    /// does): fewer allocated bytes than its length. A dense file then costs
    /// no lseek calls at all, which matters for trees of many small files.
    pub fn for_stat(fd: BorrowedFd<'f>, st: &Stat) -> Self {
        let len = st.st_size as u64;
        let mut e = Extents::new(fd, len);
        e.probe = (st.st_blocks as u64).saturating_mul(512) < len;
        e
    }

    fn rest(&mut self) -> Option<std::io::Result<Range<u64>>> {
        let r = self.pos..self.len;
        self.pos = self.len;
        (!r.is_empty()).then_some(Ok(r))
    }
}

impl Iterator for Extents<'_> {
    type Item = std::io::Result<Range<u64>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.len {
            return None;
        }
        if !self.probe {
            return self.rest();
        }
        let start = match rustix::fs::seek(self.fd, SeekFrom::Data(self.pos)) {
            Ok(s) => s,
            // Nothing but a hole from pos to the end of the file.
            Err(Errno::NXIO) => {
                self.pos = self.len;
                return None;
            }
            Err(Errno::INVAL | Errno::OPNOTSUPP) if self.pos == 0 => {
                self.probe = false;
                return self.rest();
            }
            Err(e) => return Some(Err(e.into())),
        };
        if start >= self.len {
            self.pos = self.len;
            return None;
        }
        let end = match rustix::fs::seek(self.fd, SeekFrom::Hole(start)) {
            // A file that changed meanwhile may report a hole at or before
            // `start`; taking the rest as data is always correct.
            Ok(e) if e > start => e.min(self.len),
            Ok(_) | Err(Errno::NXIO) => self.len,
            Err(e) => return Some(Err(e.into())),
        };
        self.pos = end;
        Some(Ok(start..end))
    }
}

/// How file data moves between two open files. The first one the kernel
/// accepts for a pair of filesystems is kept for the rest of the tree (a tree
/// copy never changes filesystems on either side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mover {
    /// In-kernel, and reflinks where the filesystem can; one filesystem
    /// (or one type of filesystem) only.
    CopyFileRange,
    /// In-kernel page copy across filesystems (what std::io::copy falls back to).
    Sendfile,
    /// pread/pwrite through a buffer; works everywhere.
    ReadWrite,
}

/// At most this much per system call, so progress and Ctrl-C are seen
/// within a fraction of a second even inside one huge extent.
pub(super) const CHUNK: u64 = 8 << 20;
pub(super) const RW_BUF: usize = 1 << 20;
