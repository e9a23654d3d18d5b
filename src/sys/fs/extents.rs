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
    probe: bool,
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

    /// Whether the filesystem will be asked where the holes are.
    #[cfg(test)]
    pub fn probes(&self) -> bool {
        self.probe
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
pub const CHUNK: u64 = 8 << 20;
pub const RW_BUF: usize = 1 << 20;

/// Copy up to `len` bytes at `off` in `s` to the same offset in `d`, by
/// `mover`, falling back (and remembering it in `mover`) where the kernel
/// refuses one way for this pair of files. `buf` is the bounce buffer of
/// the last way. Returns the bytes copied: 0 only at the end of `s`.
pub fn move_data(
    mover: &mut Mover,
    buf: &mut Vec<u8>,
    s: BorrowedFd<'_>,
    d: BorrowedFd<'_>,
    off: u64,
    len: u64,
) -> std::io::Result<u64> {
    let len = len.min(CHUNK) as usize;
    loop {
        match mover {
            Mover::CopyFileRange => {
                let (mut i, mut o) = (off, off);
                match rustix::fs::copy_file_range(s, Some(&mut i), d, Some(&mut o), len) {
                    Ok(n) => return Ok(n as u64),
                    // Across filesystem types (EXDEV), or not offered here.
                    Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                        *mover = Mover::Sendfile
                    }
                    Err(Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Mover::Sendfile => {
                // sendfile writes at the output's file offset.
                rustix::fs::seek(d, SeekFrom::Start(off))?;
                let mut i = off;
                match rustix::fs::sendfile(d, s, Some(&mut i), len) {
                    Ok(n) => return Ok(n as u64),
                    Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                        *mover = Mover::ReadWrite
                    }
                    Err(Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Mover::ReadWrite => {
                if buf.is_empty() {
                    *buf = vec![0u8; RW_BUF];
                }
                let want = len.min(buf.len());
                let n = match rustix::io::pread(s, &mut buf[..want], off) {
                    Ok(n) => n,
                    Err(Errno::INTR) => continue,
                    Err(e) => return Err(e.into()),
                };
                let mut done = 0;
                while done < n {
                    match rustix::io::pwrite(d, &buf[done..n], off + done as u64) {
                        Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                        Ok(w) => done += w,
                        Err(Errno::INTR) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                return Ok(n as u64);
            }
        }
    }
}
