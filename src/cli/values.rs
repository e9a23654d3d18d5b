//! The names and help the command line gives the library's choices (the
//! enums a flag takes). The enums live with the code that uses them and know
//! nothing of clap; only this file does.

use clap::ValueEnum;
use clap::builder::PossibleValue;

use crate::bench::{Op, Preset};
use crate::mounts::plan::{Boot, FsKind, Huge};
use crate::render::color::ColorChoice;

fn named(name: &'static str, help: &'static str) -> PossibleValue {
    PossibleValue::new(name).help(help)
}

impl ValueEnum for Boot {
    fn value_variants<'a>() -> &'a [Self] {
        Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Boot::Fstab => named("fstab", "A line in /etc/fstab (persist: plus its units)"),
            Boot::Systemd => named(
                "systemd",
                "A drop-in for DIR's systemd mount unit, tmp.mount for /tmp (persist: its own units)",
            ),
            Boot::None => named(
                "none",
                "Nothing: the live mount only, gone after the next reboot",
            ),
        })
    }
}

impl ValueEnum for Huge {
    fn value_variants<'a>() -> &'a [Self] {
        Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Huge::Never => PossibleValue::new("never"),
            Huge::Always => PossibleValue::new("always"),
            Huge::WithinSize => named(
                "within-size",
                "Also accepted as the kernel spells it: within_size",
            )
            .alias("within_size"),
            Huge::Advise => PossibleValue::new("advise"),
        })
    }
}

impl ValueEnum for FsKind {
    fn value_variants<'a>() -> &'a [Self] {
        Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            FsKind::Tmpfs => PossibleValue::new("tmpfs"),
            FsKind::Ramfs => named(
                "ramfs",
                "No size limit, never swapped: accepted by `plan` only to explain why not",
            ),
        })
    }
}

impl ValueEnum for Op {
    fn value_variants<'a>() -> &'a [Self] {
        Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Op::SeqWrite => named(
                "seq-write",
                "Write `size` bytes in `bs` blocks into fresh file(s)",
            ),
            Op::Rewrite => named(
                "rewrite",
                "Overwrite an existing file front to back (iozone \"rewrite\")",
            ),
            Op::SeqRead => named("seq-read", "Read file(s) front to back in `bs` blocks"),
            Op::RandRead => named("rand-read", "`bs`-sized reads at random aligned offsets"),
            Op::RandWrite => named(
                "rand-write",
                "`bs`-sized writes at random aligned offsets into an existing file",
            ),
            Op::SmallFiles => named(
                "small-files",
                "Create files of `bs` bytes each (the Kirkland survey's `dd oflag=dsync` loop, without a fork per file)",
            ),
            Op::Metadata => named(
                "metadata",
                "Create, stat and unlink empty files; each syscall is one op",
            ),
        })
    }
}

impl ValueEnum for Preset {
    fn value_variants<'a>() -> &'a [Self] {
        Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Preset::Default => named(
                "default",
                "The default suite: streaming, random, small files, metadata",
            ),
            Preset::TempFile => named(
                "temp-file",
                "What temp files see: seq write + fsync, random 4 KiB read, small files + fsync, metadata",
            ),
            Preset::Dd => named(
                "dd",
                "dd with 1 MiB blocks: buffered vs conv=fsync vs oflag=dsync (why buffered dd lets a disk \"win\")",
            ),
            Preset::Sysbench => named(
                "sysbench",
                "sysbench fileio: 128 files, 16 KiB blocks, fsync every 100 writes; seqwr, seqrd cold and warm",
            ),
            Preset::Iozone => named(
                "iozone",
                "iozone -a style matrix: file sizes x record sizes for write/rewrite/read/reread/randread/randwrite",
            ),
            Preset::Smallfiles => named(
                "smallfiles",
                "Small files: create 1 KiB and 64 KiB files, with and without fsync, plus metadata",
            ),
            Preset::Crystal => named(
                "crystal",
                "CrystalDiskMark: SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1 (read and write)",
            ),
        })
    }
}

impl ValueEnum for ColorChoice {
    fn value_variants<'a>() -> &'a [Self] {
        Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(match self {
            ColorChoice::Auto => "auto",
            ColorChoice::Always => "always",
            ColorChoice::Never => "never",
        }))
    }
}
