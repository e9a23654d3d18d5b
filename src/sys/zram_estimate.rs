//! What a directory's data would cost in zram, estimated without root and
//! without making a device: a bounded sample of its files, cut in 4 KiB
//! pages as zram stores them, each page compressed in this process with
//! LZ4 and costed as zram costs it.
//!
//! The compressor is `lz4_flex` (LZ4's block format, the format the
//! kernel's `lz4` back end writes; a well-kept crate rather than a
//! compressor written here). It stands in for zram's `lz4`; `lzo` and
//! `lzo-rle` compress text within a few percent of it (measured on this
//! machine's zram: 2.31x lz4 vs 2.26x lzo for logs), zstd better. It is an
//! estimate: a device made by `bench zram:ALG` measures the real cost.
//!
//! How zram costs a page: one repeated machine word (zeros) costs no data
//! (`same_pages`); a page that compresses to more than zsmalloc's largest
//! shared size class (about 3/4 of a page) is stored whole (`huge_pages`);
//! any other costs its compressed length, rounded up to zsmalloc's 16-byte
//! size classes. zsmalloc's fragmentation and zram's per-page table are not
//! counted.

use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

use serde::{Deserialize, Serialize};

const PAGE: usize = 4096;
/// Compressed pages longer than this are stored whole (zsmalloc's
/// `huge_class_size` is about this on 4 KiB pages).
const HUGE: usize = PAGE * 3 / 4;
/// zsmalloc's size classes step by PAGE_SIZE >> 8 bytes.
const CLASS: usize = PAGE >> 8;

/// The estimate for a sample of a directory's files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The zram back end this stands in for.
    pub algorithm: String,
    /// What computed it.
    pub computed_with: String,
    pub files_sampled: u64,
    pub bytes_sampled: u64,
    pub pages: u64,
    /// Pages of one repeated word: no data stored.
    pub same_pages: u64,
    /// Pages that did not compress below the huge size: stored whole.
    pub huge_pages: u64,
    /// The RAM the sample would cost in zram.
    pub ram_bytes: u64,
    /// bytes_sampled / ram_bytes; None for an empty sample.
    pub data_per_ram_ratio: Option<f64>,
    /// The sample stopped at the byte budget: DIR holds more.
    pub truncated: bool,
}

/// What one page costs in zram, in bytes, and which kind it is.
fn page_cost(page: &[u8], scratch: &mut Vec<u8>) -> (u64, Kind) {
    let word = &page[..8];
    if page.chunks_exact(8).all(|w| w == word) && page.len() == PAGE {
        return (0, Kind::Same);
    }
    scratch.resize(lz4_flex::block::get_maximum_output_size(page.len()), 0);
    let n = lz4_flex::block::compress_into(page, scratch).unwrap_or(PAGE);
    if n > HUGE {
        (PAGE as u64, Kind::Huge)
    } else {
        (
            n.div_ceil(CLASS).max(2) as u64 * CLASS as u64,
            Kind::Compressed,
        )
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Same,
    Huge,
    Compressed,
}

/// Estimate what zram would cost for `dir`'s regular files, reading at
/// most `budget` bytes: files in directory order, no symlink followed, no
/// other file system entered, unreadable files skipped. The last page of a
/// file is zero-padded, as in a file system on zram.
pub fn estimate(dir: &Path, budget: u64) -> Estimate {
    let mut e = Estimate {
        algorithm: "lz4".into(),
        computed_with: "lz4_flex (LZ4 block format, in process)".into(),
        ..Estimate::default()
    };
    let Ok(top) = std::fs::symlink_metadata(dir) else {
        return e;
    };
    let mut stack = vec![dir.to_path_buf()];
    let mut scratch = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for ent in entries {
            let Ok(m) = ent.metadata() else { continue };
            if m.dev() != top.dev() {
                continue;
            }
            let ft = m.file_type();
            if ft.is_dir() {
                stack.push(ent.path());
                continue;
            }
            if !ft.is_file() || ft.is_fifo() {
                continue;
            }
            if e.bytes_sampled >= budget {
                e.truncated = true;
                return finish(e);
            }
            let Ok(mut f) = std::fs::File::options()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOATIME)
                .open(ent.path())
                .or_else(|_| {
                    std::fs::File::options()
                        .read(true)
                        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                        .open(ent.path())
                })
            else {
                continue;
            };
            e.files_sampled += 1;
            loop {
                let want = buf.len().min((budget - e.bytes_sampled) as usize);
                if want == 0 {
                    e.truncated = true;
                    break;
                }
                let n = read_full(&mut f, &mut buf[..want]);
                if n == 0 {
                    break;
                }
                e.bytes_sampled += n as u64;
                for chunk in buf[..n].chunks(PAGE) {
                    let mut page = [0u8; PAGE];
                    page[..chunk.len()].copy_from_slice(chunk);
                    let (cost, kind) = page_cost(&page, &mut scratch);
                    e.pages += 1;
                    e.ram_bytes += cost;
                    match kind {
                        Kind::Same => e.same_pages += 1,
                        Kind::Huge => e.huge_pages += 1,
                        Kind::Compressed => {}
                    }
                }
                if n < want {
                    break;
                }
            }
        }
    }
    finish(e)
}

/// Fill `buf` as far as the file goes (a short read is not the end).
fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

fn finish(mut e: Estimate) -> Estimate {
    e.data_per_ram_ratio = (e.ram_bytes > 0).then(|| e.bytes_sampled as f64 / e.ram_bytes as f64);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_cost_nothing_random_costs_its_size_and_text_compresses() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("zeros"), vec![0u8; 64 * PAGE]).unwrap();
        let z = estimate(d.path(), 1 << 30);
        assert_eq!((z.pages, z.same_pages, z.ram_bytes), (64, 64, 0));
        assert_eq!(z.data_per_ram_ratio, None);

        let d = tempfile::tempdir().unwrap();
        let mut r = vec![0u8; 64 * PAGE];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for b in &mut r {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        std::fs::write(d.path().join("random"), &r).unwrap();
        let rnd = estimate(d.path(), 1 << 30);
        assert_eq!((rnd.pages, rnd.huge_pages), (64, 64));
        assert_eq!(rnd.ram_bytes, 64 * PAGE as u64);

        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let log: String = (0..20_000)
            .map(|i| {
                format!(
                    "Nov 27 21:{:02}:{:02} host app[{i}]: request ok\n",
                    i % 60,
                    i % 59
                )
            })
            .collect();
        std::fs::write(d.path().join("sub/app.log"), &log).unwrap();
        std::os::unix::fs::symlink("/dev/zero", d.path().join("link")).unwrap();
        let t = estimate(d.path(), 1 << 30);
        assert_eq!(t.files_sampled, 1, "the symlink is not followed");
        assert_eq!(t.bytes_sampled, log.len() as u64);
        assert!(t.data_per_ram_ratio.unwrap() > 2.0, "{t:?}");
        assert!(!t.truncated);

        let small = estimate(d.path(), 3 * PAGE as u64);
        assert!(
            small.truncated && small.bytes_sampled == 3 * PAGE as u64,
            "{small:?}"
        );
    }
}
