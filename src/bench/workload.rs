//! What a benchmark does: one [`Workload`] is one row of the result table, and
//! its label says exactly what was measured (block size, durability, cache state).

use serde::{Deserialize, Serialize};

use crate::units::fmt_bytes;

/// "1 MiB", "4 KiB", "512 MiB" for exact sizes (labels), else like fmt_bytes.
pub fn fmt_size(b: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if b >= (1u64 << shift) && b.is_multiple_of(1u64 << shift) {
            return format!("{} {unit}", b >> shift);
        }
    }
    fmt_bytes(b)
}

/// Emptied per-run directories of small-file/metadata runs kept per thread
/// (each holds one inode; see the engine's `after_run`).
pub const KEEP_RUN_DIRS: usize = 32;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// The operation a workload times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// Write `size` bytes in `bs` blocks into fresh file(s).
    SeqWrite,
    /// Overwrite an existing file front to back (iozone "rewrite").
    Rewrite,
    /// Read file(s) front to back in `bs` blocks.
    SeqRead,
    /// `bs`-sized reads at random aligned offsets.
    RandRead,
    /// `bs`-sized writes at random aligned offsets into an existing file.
    RandWrite,
    /// Create files of `bs` bytes each (the Kirkland survey's `dd oflag=dsync` loop, without a fork per file).
    SmallFiles,
    /// Create, stat and unlink empty files; each syscall is one op.
    Metadata,
}

crate::variants::all_variants!(
    Op,
    [
        SeqWrite, Rewrite, SeqRead, RandRead, RandWrite, SmallFiles, Metadata
    ]
);

impl Op {
    pub fn is_read(self) -> bool {
        matches!(self, Op::SeqRead | Op::RandRead)
    }
    /// Ops that work on files written before the first run.
    pub fn reads_existing_files(self) -> bool {
        matches!(
            self,
            Op::SeqRead | Op::RandRead | Op::RandWrite | Op::Rewrite
        )
    }
    /// Ops after whose runs every file is whole (full size, random data) and
    /// unchanged since a write that made it whole.
    pub fn leaves_complete_files(self) -> bool {
        self == Op::SeqWrite || self.is_read()
    }
    /// Ops whose runs may be shortened to an op count (each op stands alone),
    /// as opposed to whole-file runs whose meaning depends on the file size.
    pub fn op_counted(self) -> bool {
        matches!(
            self,
            Op::RandRead | Op::RandWrite | Op::SmallFiles | Op::Metadata
        )
    }
}

/// How a write is made durable, and so what its time includes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sync {
    /// Buffered: on a disk this times the page cache, not the disk.
    None,
    /// One fsync(2) at the end of the run, inside the timing (dd conv=fsync).
    FsyncEnd,
    /// O_DSYNC: every write waits for the device (dd oflag=dsync).
    Dsync,
    /// fsync(2) after every N writes (sysbench --file-fsync-freq).
    FsyncEvery(u64),
    /// fsync(2) on each file before close (small-file workloads).
    FsyncEach,
}

impl Sync {
    pub fn label(self) -> String {
        match self {
            Sync::None => "buffered, no fsync".into(),
            Sync::FsyncEnd => "fsync at end".into(),
            Sync::Dsync => "O_DSYNC".into(),
            Sync::FsyncEvery(n) => format!("fsync every {n} writes"),
            Sync::FsyncEach => "fsync per file".into(),
        }
    }
    pub fn durable(self) -> bool {
        self != Sync::None
    }
}

/// What state the page cache should be in when a read starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheWant {
    /// Evict the file from the page cache before each run (and check it).
    Cold,
    /// Read once untimed, then time reads served from the page cache.
    Warm,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Stable key, used in JSON/CSV and by `--compare` to match rows.
    pub id: String,
    /// What exactly is measured, in words.
    pub label: String,
    pub op: Op,
    /// Block (record) size of each I/O, or the size of each small file.
    pub bs_bytes: u64,
    /// Total bytes of the file set for file workloads.
    pub size_bytes: u64,
    /// Files the data is spread over (per thread); for small-file and metadata
    /// workloads the nominal number of files per run.
    pub files: u64,
    /// Upper bound of ops per run for op-counted workloads (runs may be shorter).
    pub ops: u64,
    pub sync: Sync,
    /// O_DIRECT for all I/O of this workload.
    pub direct: bool,
    pub cache: CacheWant,
    pub threads: u32,
    /// Requests in flight per thread (io_uring when > 1).
    pub iodepth: u32,
}

impl Workload {
    fn base(id: &str, op: Op, bs: u64, size: u64) -> Workload {
        Workload {
            id: id.into(),
            label: String::new(),
            op,
            bs_bytes: bs,
            size_bytes: size,
            files: 1,
            ops: 0,
            sync: Sync::None,
            direct: false,
            cache: CacheWant::Cold,
            threads: 1,
            iodepth: 1,
        }
    }

    /// Fills `label` from the parameters so a label cannot disagree with what runs.
    pub fn labelled(mut self) -> Workload {
        let bs = fmt_size(self.bs_bytes);
        let sync = if self.direct {
            // O_DIRECT writes skip the page cache, so "buffered" would be wrong.
            match self.sync {
                Sync::None => "O_DIRECT, no fsync".to_string(),
                s => format!("O_DIRECT, {}", s.label()),
            }
        } else {
            self.sync.label()
        };
        let mut l = match self.op {
            Op::SeqWrite => format!("seq write {bs}, {sync}"),
            Op::Rewrite => format!("rewrite {bs}, {sync}"),
            Op::SeqRead => format!("seq read {bs}, {}", self.cache_label()),
            Op::RandRead => format!("rand read {bs}, {}", self.cache_label()),
            Op::RandWrite => format!("rand write {bs}, {sync}"),
            Op::SmallFiles => format!("create {bs} files, {sync}, fresh dir"),
            Op::Metadata => "create/stat/unlink empty files, fresh dir".to_string(),
        };
        if self.threads > 1 || self.iodepth > 1 {
            l.push_str(&format!(", Q{}T{}", self.iodepth, self.threads));
        }
        if !matches!(self.op, Op::SmallFiles | Op::Metadata) {
            if self.files > 1 {
                l.push_str(&format!(
                    ", {} in {} files",
                    fmt_size(self.size_bytes),
                    self.files
                ));
            } else if matches!(self.op, Op::SeqWrite | Op::Rewrite | Op::SeqRead) {
                l.push_str(&format!(", {} file", fmt_size(self.size_bytes)));
            }
        }
        self.label = l;
        self
    }

    /// Whether this workload starts from files an earlier one left. Only
    /// cold reads: they evict the file before every run, so how it got into
    /// the page cache cannot matter. Anything that uses cached pages writes
    /// its own, because their history changes the figure: on this project's
    /// VM, warm reads of an ext4 file written by 1 MiB writes ran at 8.4 GiB/s,
    /// of the same data read back after eviction at 5.6 GiB/s (smaller page
    /// cache folios), and buffered 4 KiB random writes into a handed-on file
    /// at 46k instead of 466k IOPS.
    pub fn takes_stock(&self) -> bool {
        self.op.is_read() && (self.cache == CacheWant::Cold || self.direct)
    }

    fn cache_label(&self) -> &'static str {
        if self.direct {
            "cold (O_DIRECT)"
        } else {
            match self.cache {
                CacheWant::Cold => "cold",
                CacheWant::Warm => "warm",
            }
        }
    }

    /// Bytes this workload keeps on the target at its peak (per target, all threads).
    pub fn footprint_bytes(&self) -> u64 {
        let per_thread = match self.op {
            // Small files occupy at least one 4 KiB block each on every common fs.
            Op::SmallFiles => self.ops.max(self.files) * self.bs_bytes.max(4 * KIB),
            Op::Metadata => 0,
            _ => self.size_bytes,
        };
        per_thread.saturating_mul(self.threads as u64)
    }

    /// Inodes this workload needs at its peak.
    pub fn footprint_inodes(&self) -> u64 {
        let per_thread = match self.op {
            // + the emptied per-run directories kept for a while.
            Op::SmallFiles | Op::Metadata => self.ops.max(self.files) + KEEP_RUN_DIRS as u64 + 1,
            _ => self.files,
        };
        (per_thread + 2) * self.threads as u64
    }

    /// Results are bytes/s for streaming workloads, ops/s for the others.
    pub fn reports_bytes(&self) -> bool {
        matches!(self.op, Op::SeqWrite | Op::Rewrite | Op::SeqRead)
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        let w = &self.id;
        anyhow::ensure!(
            self.bs_bytes > 0 || self.op == Op::Metadata,
            "workload {w}: --bs must be > 0"
        );
        anyhow::ensure!(
            self.threads >= 1 && self.iodepth >= 1,
            "workload {w}: --threads and --iodepth must be >= 1"
        );
        anyhow::ensure!(self.files >= 1, "workload {w}: --files must be >= 1");
        if !matches!(self.op, Op::SmallFiles | Op::Metadata) {
            anyhow::ensure!(
                self.size_bytes >= self.bs_bytes * self.files,
                "workload {w}: --size {} is smaller than --bs {} x --files {}; raise --size",
                fmt_bytes(self.size_bytes),
                fmt_bytes(self.bs_bytes),
                self.files
            );
        }
        if self.iodepth > 1 {
            anyhow::ensure!(
                matches!(
                    self.op,
                    Op::SeqRead | Op::SeqWrite | Op::RandRead | Op::RandWrite
                ),
                "workload {w}: --iodepth > 1 applies to seq-read, seq-write, rand-read and rand-write only"
            );
            anyhow::ensure!(
                !matches!(self.sync, Sync::FsyncEvery(_) | Sync::FsyncEach),
                "workload {w}: with --iodepth > 1 use --sync none, fsync-end or dsync"
            );
        }
        if self.direct {
            anyhow::ensure!(
                self.bs_bytes.is_multiple_of(4096),
                "workload {w}: O_DIRECT needs --bs a multiple of 4 KiB (got {})",
                self.bs_bytes
            );
        }
        Ok(())
    }
}

/// Sizes that scale a preset: the default suite, or a tiny one for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    /// File size of streaming workloads.
    pub size_bytes: u64,
    /// Nominal files per small-file/metadata run (the Kirkland survey's loop used 10 000).
    pub files: u64,
    /// Nominal ops per random-I/O run.
    pub rand_ops: u64,
}

impl Scale {
    /// 512 MiB files: large enough to leave the CPU caches, small enough that
    /// the whole suite stays under a minute on a 2-core VM with a virtio disk.
    pub const DEFAULT: Scale = Scale {
        size_bytes: 512 * MIB,
        files: 10_000,
        rand_ops: 65_536,
    };
    /// `--quick`: seconds, not a minute; for tests and smoke runs.
    pub const QUICK: Scale = Scale {
        size_bytes: 8 * MIB,
        files: 200,
        rand_ops: 1024,
    };
}

/// The named workload sets (`--preset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// The default suite: streaming, random, small files, metadata
    Default,
    /// What temp files see: seq write + fsync, random 4 KiB read, small files + fsync, metadata
    TempFile,
    /// dd with 1 MiB blocks: buffered vs conv=fsync vs oflag=dsync (why buffered dd lets a disk "win")
    Dd,
    /// sysbench fileio: 128 files, 16 KiB blocks, fsync every 100 writes; seqwr, seqrd cold and warm
    Sysbench,
    /// iozone -a style matrix: file sizes x record sizes for write/rewrite/read/reread/randread/randwrite
    Iozone,
    /// Small files: create 1 KiB and 64 KiB files, with and without fsync, plus metadata
    Smallfiles,
    /// CrystalDiskMark: SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1 (read and write)
    Crystal,
}

crate::variants::all_variants!(
    Preset,
    [Default, TempFile, Dd, Sysbench, Iozone, Smallfiles, Crystal]
);

fn seq_write(scale: Scale, sync: Sync, bs: u64, id: &str) -> Workload {
    let mut w = Workload::base(id, Op::SeqWrite, bs, scale.size_bytes);
    w.sync = sync;
    if sync == Sync::Dsync {
        // Each O_DSYNC write waits for the device on its own, so the run can be
        // cut to an op count without changing what is measured.
        w.ops = scale.size_bytes / bs;
    }
    w.labelled()
}

fn seq_read(scale: Scale, cache: CacheWant, bs: u64, id: &str) -> Workload {
    let mut w = Workload::base(id, Op::SeqRead, bs, scale.size_bytes);
    w.cache = cache;
    w.labelled()
}

fn rand(scale: Scale, op: Op, sync: Sync, id: &str) -> Workload {
    let mut w = Workload::base(id, op, 4 * KIB, scale.size_bytes);
    w.sync = sync;
    w.ops = scale.rand_ops;
    w.labelled()
}

fn small_files(scale: Scale, bs: u64, sync: Sync, id: &str) -> Workload {
    let mut w = Workload::base(id, Op::SmallFiles, bs, 0);
    w.files = scale.files;
    w.ops = scale.files;
    w.sync = sync;
    w.labelled()
}

fn metadata(scale: Scale) -> Workload {
    let mut w = Workload::base("metadata", Op::Metadata, 0, 0);
    w.files = scale.files;
    w.ops = scale.files;
    w.labelled()
}

/// The workloads of a preset at a scale.
pub fn preset(p: Preset, scale: Scale) -> Vec<Workload> {
    use CacheWant::*;
    match p {
        Preset::Default => vec![
            seq_write(scale, Sync::FsyncEnd, MIB, "seq-write-1m-fsync"),
            seq_write(scale, Sync::Dsync, MIB, "seq-write-1m-dsync"),
            seq_read(scale, Cold, MIB, "seq-read-1m-cold"),
            seq_read(scale, Warm, MIB, "seq-read-1m-warm"),
            rand(scale, Op::RandRead, Sync::None, "rand-read-4k-cold"),
            rand(scale, Op::RandWrite, Sync::None, "rand-write-4k"),
            rand(scale, Op::RandWrite, Sync::Dsync, "rand-write-4k-dsync"),
            small_files(scale, KIB, Sync::FsyncEach, "smallfiles-1k-fsync"),
            metadata(scale),
        ],
        Preset::TempFile => temp_file_workloads(scale),
        Preset::Dd => vec![
            seq_write(scale, Sync::None, MIB, "dd-1m-buffered"),
            seq_write(scale, Sync::FsyncEnd, MIB, "dd-1m-conv-fsync"),
            seq_write(scale, Sync::Dsync, MIB, "dd-1m-oflag-dsync"),
            seq_read(scale, Cold, MIB, "dd-1m-read-cold"),
        ],
        Preset::Sysbench => {
            let mk = |op: Op, cache, id: &str| {
                let mut w = Workload::base(id, op, 16 * KIB, scale.size_bytes);
                w.files = 128;
                w.cache = cache;
                if op == Op::SeqWrite {
                    w.sync = Sync::FsyncEvery(100);
                }
                w.labelled()
            };
            vec![
                mk(Op::SeqWrite, Cold, "sysbench-seqwr"),
                mk(Op::SeqRead, Cold, "sysbench-seqrd-cold"),
                mk(Op::SeqRead, Warm, "sysbench-seqrd-warm"),
            ]
        }
        Preset::Iozone => iozone_matrix(scale),
        Preset::Smallfiles => vec![
            small_files(scale, KIB, Sync::None, "smallfiles-1k"),
            small_files(scale, KIB, Sync::FsyncEach, "smallfiles-1k-fsync"),
            small_files(scale, 64 * KIB, Sync::None, "smallfiles-64k"),
            small_files(scale, 64 * KIB, Sync::FsyncEach, "smallfiles-64k-fsync"),
            metadata(scale),
        ],
        Preset::Crystal => {
            let mk = |op: Op, bs: u64, qd: u32, id: &str| {
                let mut w = Workload::base(id, op, bs, scale.size_bytes);
                w.iodepth = qd;
                // CrystalDiskMark measures the device: O_DIRECT, as it does.
                w.direct = true;
                if op.op_counted() {
                    w.ops = scale.rand_ops;
                }
                w.labelled()
            };
            vec![
                mk(Op::SeqRead, MIB, 8, "crystal-seq1m-q8t1-read"),
                mk(Op::SeqWrite, MIB, 8, "crystal-seq1m-q8t1-write"),
                mk(Op::SeqRead, MIB, 1, "crystal-seq1m-q1t1-read"),
                mk(Op::SeqWrite, MIB, 1, "crystal-seq1m-q1t1-write"),
                mk(Op::RandRead, 4 * KIB, 32, "crystal-rnd4k-q32t1-read"),
                mk(Op::RandWrite, 4 * KIB, 32, "crystal-rnd4k-q32t1-write"),
                mk(Op::RandRead, 4 * KIB, 1, "crystal-rnd4k-q1t1-read"),
                mk(Op::RandWrite, 4 * KIB, 1, "crystal-rnd4k-q1t1-write"),
            ]
        }
    }
}

/// The short set `advise` runs: what a program's temp files actually do.
pub fn temp_file_workloads(scale: Scale) -> Vec<Workload> {
    vec![
        seq_write(scale, Sync::FsyncEnd, MIB, "seq-write-1m-fsync"),
        rand(scale, Op::RandRead, Sync::None, "rand-read-4k-cold"),
        small_files(scale, KIB, Sync::FsyncEach, "smallfiles-1k-fsync"),
        metadata(scale),
    ]
}

/// iozone's file sizes x record sizes, capped at the scale's file size.
fn iozone_matrix(scale: Scale) -> Vec<Workload> {
    // 66 cells per target: sizes stop at 128 MiB so the preset stays in minutes.
    let mut sizes = vec![64 * KIB, MIB, 16 * MIB, 128 * MIB];
    sizes.retain(|&s| s <= scale.size_bytes);
    if sizes.is_empty() {
        sizes.push(scale.size_bytes);
    }
    let records = [4 * KIB, 64 * KIB, MIB];
    let mut out = Vec::new();
    for &size in &sizes {
        for &rec in records.iter().filter(|&&r| r <= size) {
            let tag = format!("{}-{}", short(size), short(rec));
            let mut write = Workload::base(&format!("iozone-write-{tag}"), Op::SeqWrite, rec, size);
            write.sync = Sync::FsyncEnd;
            let mut rewrite = write.clone();
            rewrite.id = format!("iozone-rewrite-{tag}");
            rewrite.op = Op::Rewrite;
            let mut read = Workload::base(&format!("iozone-read-{tag}"), Op::SeqRead, rec, size);
            read.cache = CacheWant::Cold;
            let mut reread = read.clone();
            reread.id = format!("iozone-reread-{tag}");
            reread.cache = CacheWant::Warm;
            let mut rr = Workload::base(&format!("iozone-randread-{tag}"), Op::RandRead, rec, size);
            rr.ops = (size / rec).clamp(1, 4096);
            let mut rw =
                Workload::base(&format!("iozone-randwrite-{tag}"), Op::RandWrite, rec, size);
            rw.ops = (size / rec).clamp(1, 4096);
            rw.sync = Sync::FsyncEnd;
            for w in [write, rewrite, read, reread, rr, rw] {
                out.push(w.labelled());
            }
        }
    }
    out
}

fn short(b: u64) -> String {
    crate::units::tmpfs_size_option(b)
}
