//! Notes that explain a surprising figure rather than doubt it: why a disk
//! beats tmpfs at buffered writes, why all cores copy slower than one.

use super::ratio::fmt_ratio;
use super::report::target_name;
use super::report::{BenchReport, Warning};
use super::workload::{Op, Sync};

/// Why buffered writes to ext4 (or xfs, btrfs) can beat a tmpfs, and the fix.
pub const SMALL_PAGES_WHY: &str = "the disk filesystem caches a file in large folios (many KiB to 2 MiB per \
page-cache entry, one allocation and copy per chunk), while a tmpfs mounted with huge=never (the default) \
allocates, zeroes and copies 4 KiB pages one at a time; mount the tmpfs with huge=within_size (2 MiB pages \
for files big enough to fill them) and measure it: `tmpfsctl bench tmpfs:huge=within_size tmpfs:huge=never /var/tmp`";

/// Codes of the notes above: explanations, shown under the table as "why:".
pub const CODES: [&str; 1] = ["tmpfs_small_pages"];

/// Filesystems whose page cache uses large folios for regular files.
pub fn large_folios(fstype: &str) -> bool {
    matches!(fstype, "ext4" | "xfs" | "btrfs" | "bcachefs")
}

/// A tmpfs that stores file data in 4 KiB pages only.
fn small_pages(t: &super::report::TargetInfo) -> bool {
    t.fstype == "tmpfs" && matches!(t.huge.as_deref(), None | Some("never" | "deny"))
}

/// Every note for a finished report.
pub fn notes(r: &BenchReport) -> Vec<Warning> {
    let mut out = Vec::new();
    out.extend(small_pages_note(r));
    out.extend(all_cores_below_one(r));
    out
}

/// All cores copying slower than one: the "all cores" figure is then no
/// ceiling at all, and a reader must not take it for one.
fn all_cores_below_one(r: &BenchReport) -> Option<Warning> {
    let c = &r.ceiling;
    (c.all_core_copy_bytes_per_s < c.memcpy_bytes_per_s).then(|| Warning {
        code: "all_core_below_single".into(),
        message: format!(
            "memcpy on all {} cores ({}) ran below one thread ({}): the cores competed for a memory bandwidth one core already fills, or other programs (on a VM, other guests) held CPUs or bandwidth; the single-thread figure is the ceiling here",
            c.threads,
            crate::units::fmt_rate(c.all_core_copy_bytes_per_s),
            crate::units::fmt_rate(c.memcpy_bytes_per_s)
        ),
    })
}

/// Buffered sequential writes where a large-folio disk beat a small-page tmpfs.
fn small_pages_note(r: &BenchReport) -> Option<Warning> {
    let mut beaten = Vec::new();
    for w in r
        .workloads
        .iter()
        .filter(|w| w.op == Op::SeqWrite && w.sync == Sync::None && !w.direct)
    {
        for ram in r.targets.iter().filter(|t| small_pages(t)) {
            for disk in r.targets.iter().filter(|t| large_folios(&t.fstype)) {
                let (Some(a), Some(b)) = (r.result(&w.id, &ram.path), r.result(&w.id, &disk.path))
                else {
                    continue;
                };
                // The ratio column's figure where it compares these two (paired
                // runs), so the note never contradicts the table; else the medians.
                let ratio = r
                    .ratios
                    .iter()
                    .find(|x| {
                        x.workload == w.id
                            && x.numerator_target == ram.path
                            && x.denominator_target == disk.path
                    })
                    .map_or(a.median / b.median, |x| x.ratio);
                if ratio < 1.0 {
                    beaten.push(format!(
                        "{}: {} is {} than {}",
                        w.id,
                        target_name(r, &ram.path),
                        fmt_ratio(ratio),
                        disk.fstype
                    ));
                }
            }
        }
    }
    if beaten.is_empty() {
        return None;
    }
    Some(Warning {
        code: "tmpfs_small_pages".into(),
        message: format!(
            "buffered writes to the disk beat tmpfs here ({}): {SMALL_PAGES_WHY}",
            beaten.join("; ")
        ),
    })
}
