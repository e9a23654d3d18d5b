//! The write log QEMU's `blklogwrites` driver keeps, in the kernel's
//! dm-log-writes format (drivers/md/dm-log-writes.c): a superblock in
//! sector 0 (magic, version, entry count, sector size), then from sector 1
//! one entry per write, flush or FUA: a 32-byte little-endian header
//! (`sector, nr_sectors, flags, data_len`) in a sector of its own, followed
//! by `nr_sectors` sectors of data. Written by hand: no crate reads it, and
//! it is four integers a record.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

const MAGIC: u64 = 0x006a_7366_7773_6872;
pub const FLUSH: u64 = 1;
pub const FUA: u64 = 2;
pub const DISCARD: u64 = 4;
pub const MARK: u64 = 8;

/// One logged request.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Where on the disk, in log sectors.
    pub sector: u64,
    pub nr_sectors: u64,
    pub flags: u64,
    /// Where its data starts in the log file, in bytes.
    pub data_at: u64,
}

impl Entry {
    pub fn is_write(&self) -> bool {
        self.nr_sectors > 0 && self.flags & (DISCARD | MARK) == 0
    }
    pub fn is_flush(&self) -> bool {
        self.flags & FLUSH != 0
    }
}

pub struct Log {
    pub file: File,
    pub sector_size: u64,
    pub entries: Vec<Entry>,
}

fn le(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl Log {
    pub fn read(path: &Path) -> Log {
        let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut sb = [0u8; 32];
        file.read_exact_at(&mut sb, 0).unwrap();
        assert_eq!(
            le(&sb, 0),
            MAGIC,
            "{}: not a dm-log-writes log",
            path.display()
        );
        assert_eq!(le(&sb, 8), 1, "{}: log version", path.display());
        let count = le(&sb, 16);
        let ss = u64::from(u32::from_le_bytes([sb[24], sb[25], sb[26], sb[27]]));
        assert!(ss >= 512 && ss.is_power_of_two(), "log sector size {ss}");
        let mut entries = Vec::with_capacity(count as usize);
        let mut at = ss;
        for _ in 0..count {
            let mut h = [0u8; 32];
            file.read_exact_at(&mut h, at).unwrap();
            let e = Entry {
                sector: le(&h, 0),
                nr_sectors: le(&h, 8),
                flags: le(&h, 16),
                data_at: at + ss,
            };
            // Every entry QEMU writes is a flush or covers sectors: an
            // empty one is the log misread (data taken for a header).
            assert!(
                e.nr_sectors > 0 || e.flags & (FLUSH | MARK) != 0,
                "{}: entry {} at log sector {} is empty ({e:?}): the log is not what this reader expects",
                path.display(),
                entries.len(),
                at / ss
            );
            // data_len is the size of a mark's name; QEMU writes none.
            let data_len = le(&h, 24);
            let data_sectors = if e.flags & DISCARD != 0 {
                0
            } else if data_len > 0 {
                data_len.div_ceil(ss)
            } else {
                e.nr_sectors
            };
            at += ss * (1 + data_sectors);
            entries.push(e);
        }
        Log {
            file,
            sector_size: ss,
            entries,
        }
    }

    /// Entry `i`'s data, in a buffer (empty for a flush).
    pub fn data(&self, i: usize) -> Vec<u8> {
        let e = &self.entries[i];
        let mut buf = vec![0u8; (e.nr_sectors * self.sector_size) as usize];
        self.file.read_exact_at(&mut buf, e.data_at).unwrap();
        buf
    }

    /// Put entry `i` on the disk image `img` (a discard reads back as zeros).
    pub fn apply(&self, i: usize, img: &File) {
        let e = &self.entries[i];
        let off = e.sector * self.sector_size;
        if e.flags & DISCARD != 0 {
            img.write_all_at(&vec![0u8; (e.nr_sectors * self.sector_size) as usize], off)
                .unwrap();
        } else if e.is_write() {
            img.write_all_at(&self.data(i), off).unwrap();
        }
    }
}
