//! The store's content identity of a file, computed while its data is
//! copied (or only read): SHA-256 over each data extent's offset and bytes,
//! so a sparse file and its copy with the same holes hash equal.

use std::os::fd::BorrowedFd;

use rustix::fs::Stat;
use sha2::{Digest, Sha256};

use crate::sys::fs::Extents;

pub const BUF: usize = 1 << 20;

/// Copy `src`'s data extents into `dst` (holes stay holes; the length is set
/// with ftruncate) and return the content identity: SHA-256 over each
/// extent's offset and bytes, cut to 16 bytes. `dst` None only hashes.
pub fn copy_hash(
    src: BorrowedFd<'_>,
    st: &Stat,
    dst: Option<BorrowedFd<'_>>,
    buf: &mut Vec<u8>,
) -> std::io::Result<[u8; 16]> {
    buf.resize(BUF, 0);
    let mut h = Sha256::new();
    let mut copied_to = 0u64;
    for r in Extents::for_stat(src, st) {
        let (start, end) = {
            let r = r?;
            (r.start, r.end)
        };
        h.update(start.to_le_bytes());
        let mut off = start;
        while off < end {
            let want = ((end - off) as usize).min(BUF);
            let n = rustix::io::pread(src, &mut buf[..want], off)?;
            if n == 0 {
                // Shrunk while we read: the caller sees it in the second fstat.
                break;
            }
            h.update(&buf[..n]);
            if let Some(d) = dst {
                let mut w = 0;
                while w < n {
                    w += rustix::io::pwrite(d, &buf[w..n], off + w as u64)?;
                }
            }
            off += n as u64;
        }
        copied_to = off;
    }
    if let Some(d) = dst
        && copied_to != st.st_size as u64
    {
        rustix::fs::ftruncate(d, st.st_size as u64)?;
    }
    let d = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    Ok(out)
}
