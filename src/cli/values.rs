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

#[cfg(test)]
mod tests {
    //! A value's name on the command line, in the library (`name()`, the
    //! kernel's spelling) and in JSON (serde) is one name: a user copies it
    //! from one to the other. ColorChoice is neither serialized nor named
    //! anywhere but here, so it has nothing to agree with.
    use super::*;

    fn cli<T: ValueEnum>(v: &T) -> PossibleValue {
        v.to_possible_value().expect("every value is offered")
    }

    fn serde_name<T: serde::Serialize>(v: &T) -> String {
        match serde_json::to_value(v).unwrap() {
            serde_json::Value::String(s) => s,
            other => panic!("not a plain name: {other}"),
        }
    }

    /// The command-line name reads back as the same value and equals `want`.
    fn same<T: ValueEnum + PartialEq + std::fmt::Debug>(v: T, want: &str) {
        let name = cli(&v).get_name().to_string();
        assert_eq!(name, want, "{v:?}");
        assert_eq!(T::from_str(&name, false).unwrap(), v, "{v:?}");
    }

    #[test]
    fn boot_names_agree() {
        for &b in Boot::ALL {
            same(b, b.name());
            assert_eq!(serde_name(&b), b.name(), "{b:?}");
        }
    }

    /// `within_size` is the kernel's and JSON's spelling; the command line
    /// offers `within-size` like every other flag value and takes the
    /// kernel's too.
    #[test]
    fn huge_names_agree() {
        for &h in Huge::ALL {
            assert_eq!(serde_name(&h), h.as_str(), "{h:?}");
            let v = cli(&h);
            assert!(
                v.matches(h.as_str(), false),
                "{h:?}: `{}` not accepted",
                h.as_str()
            );
            assert_eq!(Huge::from_str(h.as_str(), false).unwrap(), h);
            same(h, &h.as_str().replace('_', "-"));
        }
    }

    #[test]
    fn fs_kind_op_and_preset_names_are_their_json_names() {
        for &k in FsKind::ALL {
            same(k, &serde_name(&k));
        }
        for &o in Op::ALL {
            same(o, &serde_name(&o));
            let back: Op = serde_json::from_value(serde_json::json!(cli(&o).get_name())).unwrap();
            assert_eq!(back, o, "a saved report reads back");
        }
        for &p in Preset::ALL {
            same(p, &serde_name(&p));
            let back: Preset =
                serde_json::from_value(serde_json::json!(cli(&p).get_name())).unwrap();
            assert_eq!(back, p, "a saved report reads back");
        }
    }
}
