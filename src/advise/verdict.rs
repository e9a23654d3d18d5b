//! The verdict of `advise`, as a pure function of what was measured, so every
//! rule is tested table-driven without a machine.

use crate::bench::{self, QUICK_NOTE};
use crate::sys::resolve;
use crate::units::fmt_bytes;
use serde::Serialize;

/// A ratio's 95% interval (low, high).
pub type Interval = (f64, f64);

/// What advise knows when it decides.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// DIR's filesystem type now.
    pub fstype: String,
    /// DIR's data in bytes: the peak from history where known, else now.
    pub used_bytes: u64,
    pub used_is_peak: bool,
    pub inodes: u64,
    /// Current tmpfs size limit when DIR is on tmpfs (None: unlimited or not tmpfs).
    pub current_limit_bytes: Option<u64>,
    /// Size the planner recommends for a tmpfs holding DIR.
    pub recommended_bytes: u64,
    /// The same as the planner writes it in `size=` (`25%`, `2G`).
    pub recommended_option: String,
    /// tmpfs's default inode limit for that size, or the planned nr_inodes.
    pub recommended_inodes: u64,
    pub mem_total_bytes: u64,
    pub mem_available_bytes: u64,
    pub swap_total_bytes: u64,
    pub swap_free_bytes: u64,
    /// tmpfs speed-up over DIR's filesystem per measured operation (name,
    /// ratio, and its 95% interval when the ratio is uncertain); empty when
    /// nothing was measured.
    pub speedups: Vec<(String, f64, Option<Interval>)>,
    /// The measurement was a `--quick` smoke test: its figures are not meaningful.
    pub quick: bool,
    /// Something mounts DIR at boot (an fstab line or an enabled mount unit).
    pub persistent: bool,
    /// The user said DIR holds secrets (`--secrets`): they must not reach swap.
    pub secrets: bool,
    /// The tmpfs at DIR has `noswap` now.
    pub noswap_now: bool,
    /// The tmpfs at DIR has a `huge=` policy now (absent: never).
    pub huge_now: Option<String>,
    /// `huge=within_size` measured against `huge=never`, when it was.
    pub huge_measured: Option<super::HugeAdvice>,
}

/// noswap is advised only when the user said DIR holds secrets, there is
/// swap for them to reach, and the tmpfs does not have it already.
pub fn noswap_recommended(f: &Facts) -> bool {
    f.secrets && f.swap_total_bytes > 0 && !f.noswap_now
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// DIR is on disk and should move to tmpfs.
    Move,
    /// DIR is RAM-backed but its limit should change (or ramfs should become tmpfs).
    Resize,
    /// DIR is already on a well-sized tmpfs.
    NothingToChange,
    /// DIR is on a well-sized tmpfs that nothing mounts at boot: gone after a reboot.
    Persist,
    /// DIR should stay on disk (it would not fit, or it is unsafe).
    KeepOnDisk,
    /// DIR could move but the disk is about as fast for these operations.
    NotWorthIt,
}

impl Kind {
    /// Exit code: 0 when nothing should change, 1 when a change is recommended.
    pub fn exit_code(self) -> crate::command::ExitCode {
        use crate::command::ExitCode;
        match self {
            Kind::Move | Kind::Resize | Kind::Persist => ExitCode::Problem,
            Kind::NothingToChange | Kind::KeepOnDisk | Kind::NotWorthIt => ExitCode::Ok,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub kind: Kind,
    /// One sentence for the top of the report.
    pub headline: String,
    pub reasons: Vec<String>,
    pub risks: Vec<String>,
    /// Size to apply, for Move and Resize.
    pub size_bytes: Option<u64>,
}

/// Below this tmpfs speed-up on every measured operation, moving is not worth it.
pub const WORTH_IT_SPEEDUP: f64 = 1.5;
/// A tmpfs is "too small" when its limit leaves less than this headroom over the usage.
pub const MIN_HEADROOM: f64 = 1.25;
/// Without swap, a tmpfs gets at most 1/this of the RAM (plan's default
/// share for /tmp without swap).
const NO_SWAP_SHARE: u64 = 4;
/// Below this much RAM, /tmp stays on disk: every MiB of it is needed for programs.
const SMALL_RAM_BYTES: u64 = 1 << 30;

pub fn decide(dir: &str, f: &Facts) -> Verdict {
    let which = if f.used_is_peak { "peak" } else { "current" };
    let (reasons, risks) = common_reasons_and_risks(dir, f, which);
    let (kind, headline, reason, size_bytes) = if f.fstype == "ramfs" {
        (
            Kind::Resize,
            format!(
                "already in RAM on ramfs; switch {dir} to tmpfs (size={})",
                f.recommended_option
            ),
            "ramfs has no size limit: a runaway writer can take all RAM".to_string(),
            Some(f.recommended_bytes),
        )
    } else if crate::sys::is_ram_backed(&f.fstype) {
        decide_ram_backed(dir, f, which)
    } else {
        decide_on_disk(dir, f)
    };
    let mut reasons = reasons;
    reasons.push(reason);
    let mut risks = risks;
    if kind == Kind::Move && !is_scratch(dir) {
        // Scratch dirs are meant to be emptied; anything else usually is not.
        risks.push(format!(
            "a reboot or power loss empties a tmpfs: if {dir} must survive one, \
             `tmpfsctl persist enable {dir}` keeps it in RAM with a crash-safe copy on disk"
        ));
    }
    Verdict {
        kind,
        headline,
        reasons,
        risks,
        size_bytes,
    }
}

/// Directories whose content is expected to vanish at a reboot (/var/tmp is
/// not one: the FHS says it survives reboots).
fn is_scratch(dir: &str) -> bool {
    matches!(dir.trim_end_matches('/'), "/tmp" | "/dev/shm" | "/run")
}

/// What is said whatever the verdict: usage, swap, inodes, measured speed-ups.
fn common_reasons_and_risks(dir: &str, f: &Facts, which: &str) -> (Vec<String>, Vec<String>) {
    let mut reasons = vec![format!(
        "{dir} holds {} ({which} usage) in {} {}",
        fmt_bytes(f.used_bytes),
        f.inodes,
        crate::units::noun(f.inodes, "inode", "inodes")
    )];
    let mut risks = Vec::new();
    if f.swap_total_bytes == 0 {
        risks.push(
            "no swap: tmpfs pages can never leave RAM; a full tmpfs pins its whole size in memory"
                .into(),
        );
    }
    if f.inodes as f64 * MIN_HEADROOM > f.recommended_inodes as f64 {
        risks.push(format!(
            "{} inodes in use is close to the tmpfs inode limit {}: set nr_inodes higher",
            f.inodes, f.recommended_inodes
        ));
    }
    if f.quick && !f.speedups.is_empty() {
        reasons.push(format!(
            "{}: the speeds below come from --quick; run without it to measure",
            QUICK_NOTE
        ));
    }
    for (op, r, interval) in &f.speedups {
        // An uncertain ratio is only honest together with how far it may move.
        let mut line = format!("{op}: tmpfs is {r:.1}x the speed of {}", f.fstype);
        if let Some((lo, hi)) = interval {
            line.push_str(&format!(" (uncertain: 95% interval {lo:.1}x..{hi:.1}x)"));
        }
        reasons.push(line);
    }
    // A disk beating tmpfs at writes needs its cause, or the figure misleads.
    if f.speedups
        .iter()
        .any(|(op, r, _)| op.starts_with("seq write") && *r < 1.0)
        && bench::large_folios(&f.fstype)
    {
        reasons.push(format!(
            "{} beat tmpfs at sequential writes: {}",
            f.fstype,
            bench::SMALL_PAGES_WHY
        ));
    }
    option_advice(dir, f, &mut reasons, &mut risks);
    (reasons, risks)
}

/// What the kernel's tmpfs options and the sibling commands offer here:
/// noswap only for secrets the user named, where there is swap; huge= as
/// measured (recommended only from a measurement, else only mentioned);
/// where to look when a RAM-backed DIR is nearly full.
fn option_advice(dir: &str, f: &Facts, reasons: &mut Vec<String>, risks: &mut Vec<String>) {
    let ram = crate::sys::is_ram_backed(&f.fstype);
    if noswap_recommended(f) {
        risks.push(format!(
            "{dir} holds secrets (--secrets) and this machine has swap: its pages can be written to the swap device. Mount it with noswap (Linux 6.4+): `sudo tmpfsctl apply {dir} --noswap`"
        ));
    } else if f.secrets && f.swap_total_bytes == 0 {
        reasons.push(format!(
            "{dir} holds secrets (--secrets); there is no swap, so they never leave RAM: noswap is not needed"
        ));
    }
    if let Some(h) = &f.huge_measured {
        reasons.push(if h.recommended {
            format!(
                "{}: use huge=within_size for {dir} (`tmpfsctl plan {dir} --huge within_size` shows the change)",
                h.reason
            )
        } else {
            h.reason.clone()
        });
    } else if (ram || !f.speedups.is_empty()) && f.huge_now.as_deref().is_none_or(|h| h == "never")
    {
        reasons.push(format!(
            "not measured: huge=within_size (2 MiB pages for large files) can speed up large sequential writes \
             (the default huge=never writes 4 KiB pages one at a time); measure a tmpfs mounted with it against \
             one without before using it (`tmpfsctl bench tmpfs:huge=within_size tmpfs:huge=never` measures both; \
             `tmpfsctl plan {dir} --huge within_size` shows the change)"
        ));
    }
    if ram
        && let Some(limit) = f.current_limit_bytes.filter(|&l| l > 0)
        && f.used_bytes as f64 >= limit as f64 * 0.9
    {
        risks.push(format!(
            "{dir} is {:.0}% full: see `tmpfsctl top {dir}` for what holds it; when writes fail with \
             \"No space left on device\", `tmpfsctl explain {dir}` says why",
            f.used_bytes as f64 * 100.0 / limit as f64
        ));
    }
}

/// The kind, headline, deciding reason and size to apply.
type Decision = (Kind, String, String, Option<u64>);

/// DIR is already on tmpfs (or another RAM filesystem): is its limit right?
fn decide_ram_backed(dir: &str, f: &Facts, which: &str) -> Decision {
    let used = f.used_bytes;
    let ceiling = f.mem_total_bytes.saturating_add(f.swap_total_bytes);
    // Why the current limit is wrong, if it is.
    let problem = match f.current_limit_bytes {
        None => Some("it has no size limit".to_string()),
        Some(limit) if (limit as f64) < used as f64 * MIN_HEADROOM => Some(format!(
            "its limit {} leaves less than {:.0}% headroom over {which} usage",
            fmt_bytes(limit),
            (MIN_HEADROOM - 1.0) * 100.0
        )),
        Some(limit) if limit > ceiling => Some(format!(
            "its limit {} is more than RAM + swap ({})",
            fmt_bytes(limit),
            fmt_bytes(ceiling)
        )),
        Some(_) => None,
    };
    match problem {
        Some(p) => (
            Kind::Resize,
            format!("already on tmpfs; resize {dir} to {}", f.recommended_option),
            p,
            Some(f.recommended_bytes),
        ),
        // Right-sized but live only: the next reboot puts DIR back on disk.
        None if !f.persistent => (
            Kind::Persist,
            format!(
                "{dir} is a well-sized tmpfs now, but nothing mounts it at boot: it is gone after a reboot; persist it"
            ),
            format!(
                "its limit {} fits the {which} usage with headroom, but no fstab line or enabled mount unit sets it up again",
                fmt_bytes(f.current_limit_bytes.unwrap_or(0))
            ),
            None,
        ),
        None => (
            Kind::NothingToChange,
            format!("{dir} is already on a well-sized tmpfs: nothing to change"),
            format!(
                "its limit {} fits the {which} usage with headroom",
                fmt_bytes(f.current_limit_bytes.unwrap_or(0))
            ),
            None,
        ),
    }
}

/// DIR is on disk: would it fit in RAM, and is tmpfs worth it?
fn decide_on_disk(dir: &str, f: &Facts) -> Decision {
    let used = f.used_bytes;
    let ram_swap_free = f.mem_available_bytes.saturating_add(f.swap_free_bytes);
    let size = f.recommended_bytes;
    let best = f
        .speedups
        .iter()
        .map(|(_, r, _)| *r)
        .fold(f64::NAN, f64::max);
    let reboot_deletes = resolve::outlives_reboot(std::path::Path::new(dir));
    if let Some(what) = reboot_deletes {
        (
            Kind::KeepOnDisk,
            format!(
                "keep {dir} on disk: it holds {what}, which a plain tmpfs would delete at every boot"
            ),
            format!(
                "{dir}'s contents must outlive a reboot; to have them in RAM with a durable copy on \
                 disk, synced on a timer and at shutdown, run `tmpfsctl persist enable {}`",
                crate::term::shell_word(dir)
            ),
            None,
        )
    } else if f.mem_total_bytes < SMALL_RAM_BYTES {
        (
            Kind::KeepOnDisk,
            format!(
                "keep {dir} on disk because RAM is small ({})",
                fmt_bytes(f.mem_total_bytes)
            ),
            format!(
                "this machine has only {} of RAM",
                fmt_bytes(f.mem_total_bytes)
            ),
            None,
        )
    } else if (used as f64 * MIN_HEADROOM) > ram_swap_free as f64 || used > f.mem_total_bytes / 2 {
        (
            Kind::KeepOnDisk,
            format!("keep {dir} on disk because its data would not fit in RAM"),
            format!(
                "{} with headroom does not fit comfortably in RAM ({} available + {} free swap, half of RAM is {})",
                fmt_bytes(used),
                fmt_bytes(f.mem_available_bytes),
                fmt_bytes(f.swap_free_bytes),
                fmt_bytes(f.mem_total_bytes / 2)
            ),
            None,
        )
    } else if f.swap_total_bytes == 0
        && used as f64 * MIN_HEADROOM > (f.mem_available_bytes / 2) as f64
    {
        (
            Kind::KeepOnDisk,
            format!("keep {dir} on disk because without swap its data would starve RAM"),
            format!(
                "without swap, {} with headroom would take more than half of the {} available",
                fmt_bytes(used),
                fmt_bytes(f.mem_available_bytes)
            ),
            None,
        )
    } else if f.swap_total_bytes == 0 && size > f.mem_total_bytes / NO_SWAP_SHARE {
        // Without swap a full tmpfs pins its whole size in RAM: no more than
        // the share a /tmp gets here (plan's default without swap).
        (
            Kind::KeepOnDisk,
            format!("keep {dir} on disk because without swap its data would starve RAM"),
            format!(
                "without swap, a tmpfs is given at most a quarter of the RAM ({}), and {} with \
                 headroom needs {}",
                fmt_bytes(f.mem_total_bytes / NO_SWAP_SHARE),
                fmt_bytes(used),
                fmt_bytes(size)
            ),
            None,
        )
    } else if !f.speedups.is_empty() && best < WORTH_IT_SPEEDUP {
        (
            Kind::NotWorthIt,
            format!("not worth it: the disk under {dir} is as fast for these operations"),
            format!("no measured operation is more than {WORTH_IT_SPEEDUP}x faster on tmpfs"),
            None,
        )
    } else {
        (
            Kind::Move,
            format!("move {dir} to tmpfs (size={})", f.recommended_option),
            format!(
                "a tmpfs of {} holds it with headroom and is {} of RAM",
                fmt_bytes(size),
                if f.mem_total_bytes > 0 {
                    format!("{:.0}%", size as f64 * 100.0 / f.mem_total_bytes as f64)
                } else {
                    "?".into()
                }
            ),
            Some(size),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1 << 20;
    const G: u64 = 1 << 30;

    fn base() -> Facts {
        Facts {
            fstype: "ext4".into(),
            used_bytes: 50 * M,
            used_is_peak: false,
            inodes: 200,
            current_limit_bytes: None,
            recommended_bytes: 4 * G,
            recommended_option: "4G".into(),
            recommended_inodes: 1 << 20,
            mem_total_bytes: 16 * G,
            mem_available_bytes: 12 * G,
            swap_total_bytes: 2 * G,
            swap_free_bytes: 2 * G,
            speedups: vec![
                ("seq write + fsync".into(), 6.0, None),
                ("4 KiB random read".into(), 20.0, None),
            ],
            quick: false,
            persistent: true,
            secrets: false,
            noswap_now: false,
            huge_now: None,
            huge_measured: None,
        }
    }

    #[test]
    fn noswap_only_for_secrets_where_there_is_swap() {
        let mut f = base();
        let said = |f: &Facts| {
            let v = decide("/tmp", f);
            v.risks.iter().any(|r| r.contains("--noswap"))
        };
        assert!(!said(&f), "never without --secrets");
        f.secrets = true;
        assert!(said(&f));
        f.swap_total_bytes = 0;
        f.swap_free_bytes = 0;
        assert!(!said(&f), "no swap: nothing to keep secrets from");
    }

    #[test]
    fn nearly_full_tmpfs_points_to_top_and_explain() {
        let mut f = base();
        f.fstype = "tmpfs".into();
        f.current_limit_bytes = Some(52 * M);
        let v = decide("/tmp", &f);
        assert!(
            v.risks
                .iter()
                .any(|r| r.contains("`tmpfsctl top /tmp`") && r.contains("`tmpfsctl explain /tmp`")),
            "{:?}",
            v.risks
        );
        f.current_limit_bytes = Some(8 * G);
        assert!(
            !decide("/tmp", &f)
                .risks
                .iter()
                .any(|r| r.contains("tmpfsctl top"))
        );
    }

    #[test]
    fn huge_is_mentioned_not_recommended() {
        let v = decide("/tmp", &base());
        let huge: Vec<&String> = v.reasons.iter().filter(|r| r.contains("huge=")).collect();
        assert_eq!(huge.len(), 1, "{:?}", v.reasons);
        assert!(huge[0].starts_with("not measured"), "{}", huge[0]);
    }

    #[test]
    fn huge_is_recommended_only_from_a_measurement_that_shows_it() {
        use crate::advise::huge::{HugeRow, decide as decide_huge};
        let mut f = base();
        let faster = HugeRow::new("seq-write-1m-fsync", "seq write", 6.0, Some((5.7, 6.3)));
        f.huge_measured = Some(decide_huge(vec![faster.clone()], false));
        let v = decide("/tmp", &f);
        let huge: Vec<&String> = v.reasons.iter().filter(|r| r.contains("huge=")).collect();
        assert_eq!(huge.len(), 1, "{:?}", v.reasons);
        assert!(
            huge[0].contains("6.00× (95% interval 5.70..6.30)"),
            "{}",
            huge[0]
        );
        assert!(
            huge[0].contains("use huge=within_size for /tmp"),
            "{}",
            huge[0]
        );
        // Overlapping intervals: the measurement is cited, nothing recommended.
        let same = HugeRow::new("seq-write-1m-fsync", "seq write", 1.4, Some((0.9, 1.8)));
        f.huge_measured = Some(decide_huge(vec![same], false));
        let v = decide("/tmp", &f);
        assert!(
            !v.reasons.iter().any(|r| r.contains("use huge=")),
            "{:?}",
            v.reasons
        );
        assert!(
            v.reasons.iter().any(|r| r.contains("keep huge=never")),
            "{:?}",
            v.reasons
        );
        // The same clear figures from --quick recommend nothing.
        f.huge_measured = Some(decide_huge(vec![faster], true));
        let v = decide("/tmp", &f);
        assert!(
            !v.reasons.iter().any(|r| r.contains("use huge=")),
            "{:?}",
            v.reasons
        );
    }

    #[test]
    fn noswap_needs_secrets_swap_and_no_noswap_yet() {
        let mut f = base();
        f.swap_total_bytes = 1 << 30;
        assert!(!noswap_recommended(&f), "never without --secrets");
        f.secrets = true;
        assert!(noswap_recommended(&f));
        f.noswap_now = true;
        assert!(!noswap_recommended(&f), "already has it");
        f.noswap_now = false;
        f.swap_total_bytes = 0;
        assert!(!noswap_recommended(&f), "no swap to keep secrets from");
    }

    #[test]
    fn verdict_table() {
        struct Case {
            name: &'static str,
            change: fn(&mut Facts),
            kind: Kind,
            needle: &'static str,
        }
        let cases = [
            Case {
                name: "typical disk /tmp",
                change: |_| {},
                kind: Kind::Move,
                needle: "move /tmp to tmpfs (size=4G)",
            },
            Case {
                name: "small RAM",
                change: |f| {
                    f.mem_total_bytes = 512 * M;
                    f.mem_available_bytes = 300 * M;
                },
                kind: Kind::KeepOnDisk,
                needle: "RAM is small",
            },
            Case {
                name: "huge /tmp",
                change: |f| f.used_bytes = 11 * G,
                kind: Kind::KeepOnDisk,
                needle: "would not fit",
            },
            Case {
                name: "no swap and big /tmp",
                change: |f| {
                    f.swap_total_bytes = 0;
                    f.swap_free_bytes = 0;
                    f.mem_available_bytes = 6 * G;
                    f.used_bytes = 3 * G;
                },
                kind: Kind::KeepOnDisk,
                needle: "without swap",
            },
            Case {
                name: "no swap, roomy RAM",
                change: |f| {
                    f.swap_total_bytes = 0;
                    f.swap_free_bytes = 0;
                },
                kind: Kind::Move,
                needle: "move",
            },
            Case {
                name: "no swap, more than a quarter of RAM needed",
                change: |f| {
                    f.swap_total_bytes = 0;
                    f.swap_free_bytes = 0;
                    f.mem_total_bytes = 24 * G;
                    f.mem_available_bytes = 23 * G;
                    f.used_bytes = 7 * G + 768 * M;
                    f.recommended_bytes = 12 * G;
                    f.recommended_option = "12G".into();
                },
                kind: Kind::KeepOnDisk,
                needle: "without swap",
            },
            Case {
                name: "disk as fast as RAM",
                change: |f| {
                    f.speedups = vec![
                        ("seq write + fsync".into(), 1.1, None),
                        ("4 KiB random read".into(), 1.3, None),
                    ]
                },
                kind: Kind::NotWorthIt,
                needle: "not worth it",
            },
            Case {
                name: "already tmpfs, fine",
                change: |f| {
                    f.fstype = "tmpfs".into();
                    f.current_limit_bytes = Some(8 * G);
                },
                kind: Kind::NothingToChange,
                needle: "nothing to change",
            },
            Case {
                name: "already tmpfs, fine, but live only",
                change: |f| {
                    f.fstype = "tmpfs".into();
                    f.current_limit_bytes = Some(8 * G);
                    f.persistent = false;
                },
                kind: Kind::Persist,
                needle: "gone after a reboot",
            },
            Case {
                name: "already tmpfs, too small",
                change: |f| {
                    f.fstype = "tmpfs".into();
                    f.current_limit_bytes = Some(55 * M);
                },
                kind: Kind::Resize,
                needle: "resize /tmp to 4G",
            },
            Case {
                name: "already tmpfs, bigger than RAM+swap",
                change: |f| {
                    f.fstype = "tmpfs".into();
                    f.current_limit_bytes = Some(64 * G);
                },
                kind: Kind::Resize,
                needle: "resize",
            },
            Case {
                name: "ramfs",
                change: |f| f.fstype = "ramfs".into(),
                kind: Kind::Resize,
                needle: "switch /tmp to tmpfs",
            },
        ];
        for c in cases {
            let mut f = base();
            (c.change)(&mut f);
            let v = decide("/tmp", &f);
            assert_eq!(v.kind, c.kind, "{}: {v:?}", c.name);
            assert!(v.headline.contains(c.needle), "{}: {}", c.name, v.headline);
            assert!(!v.reasons.is_empty(), "{}", c.name);
        }
    }

    #[test]
    fn directories_that_outlive_a_reboot_never_get_a_plain_tmpfs() {
        for dir in [
            "/var/tmp",
            "/var/log",
            "/var/cache/apt",
            "/srv/data",
            "/home/u",
        ] {
            let v = decide(dir, &base());
            assert_eq!(v.kind, Kind::KeepOnDisk, "{dir}: {v:?}");
            assert!(v.headline.contains("every boot"), "{dir}: {}", v.headline);
            assert!(
                v.reasons
                    .iter()
                    .any(|r| r.contains("tmpfsctl persist enable")),
                "{dir}: {:?}",
                v.reasons
            );
            assert_eq!(v.size_bytes, None);
        }
    }

    #[test]
    fn risks_name_swap_and_inodes() {
        let mut f = base();
        f.swap_total_bytes = 0;
        f.swap_free_bytes = 0;
        f.inodes = 1_000_000;
        let v = decide("/tmp", &f);
        assert!(
            v.risks.iter().any(|r| r.contains("no swap")),
            "{:?}",
            v.risks
        );
        assert!(
            v.risks.iter().any(|r| r.contains("nr_inodes")),
            "{:?}",
            v.risks
        );
    }

    #[test]
    fn exit_codes_follow_the_issue() {
        assert_eq!(Kind::Move.exit_code().code(), 1);
        assert_eq!(Kind::Resize.exit_code().code(), 1);
        assert_eq!(Kind::NothingToChange.exit_code().code(), 0);
        assert_eq!(Kind::KeepOnDisk.exit_code().code(), 0);
        assert_eq!(Kind::NotWorthIt.exit_code().code(), 0);
    }

    #[test]
    fn quick_and_uncertain_figures_are_never_cited_bare() {
        let mut f = base();
        f.quick = true;
        f.speedups = vec![("seq write + fsync".into(), 1.0, Some((0.4, 2.1)))];
        let v = decide("/tmp", &f);
        assert!(
            v.reasons.iter().any(|r| r.starts_with(QUICK_NOTE)),
            "{:?}",
            v.reasons
        );
        let cited: Vec<&String> = v.reasons.iter().filter(|r| r.contains("1.0x")).collect();
        assert_eq!(cited.len(), 1, "{:?}", v.reasons);
        assert!(cited[0].contains("95% interval 0.4x..2.1x"), "{cited:?}");
    }

    #[test]
    fn a_disk_beating_tmpfs_at_writes_is_explained() {
        let mut f = base();
        let why = |f: &Facts| {
            decide("/tmp", f)
                .reasons
                .into_iter()
                .find(|r| r.contains("beat tmpfs at sequential writes"))
        };
        assert_eq!(why(&f), None);
        f.speedups[0].1 = 0.55;
        let r = why(&f).unwrap();
        assert!(
            r.contains("large folios") && r.contains("4 KiB pages"),
            "{r}"
        );
    }
}
