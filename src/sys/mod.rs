//! The ground floor, the one way to the machine. It reads: parsers over the
//! text of /proc, /sys and /etc files (pure, fixture-tested, fuzzed where the
//! text is hostile) and readers that fetch that text relative to a
//! [`Sysroot`], so tests and `--sysroot DIR` can point them at fixtures or a
//! mounted image. It acts, on the live machine only ([`Sysroot::live`]):
//! mounting and unmounting, atomic writes, copying and removing trees,
//! zram devices, signals. It imports nothing above it.

pub(crate) mod atomic;
pub(crate) mod boot;
pub(crate) mod cgroup;
pub(crate) mod copy;
pub(crate) mod deep;
pub(crate) mod descriptor;
pub(crate) mod du;
pub(crate) mod fs;
pub mod fstab;
pub(crate) mod hidden;
pub(crate) mod journal;
pub(crate) mod knockout;
pub mod meminfo;
pub mod mountinfo;
pub(crate) mod outdir;
pub(crate) mod passwd;
pub(crate) mod proc;
pub(crate) mod procfd;
pub(crate) mod resolve;
pub(crate) mod signals;
pub(crate) mod statfs;
pub(crate) mod systemd;
pub(crate) mod sysvshm;
pub(crate) mod tmpfiles;
pub(crate) mod tmpfs;
pub(crate) mod unmount;
pub(crate) mod zram;
pub(crate) mod zram_estimate;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub use meminfo::MemInfo;
pub use mountinfo::MountInfo;

/// A line a parser skipped, and why. Parsers never panic on hostile input: they
/// skip what they cannot read and say so.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ParseWarning {
    /// 1-based line number in the source file.
    pub line: usize,
    pub reason: String,
}

/// Filesystem types whose data lives in RAM (page cache / shmem) with no backing store.
pub fn is_ram_backed(fstype: &str) -> bool {
    matches!(fstype, "tmpfs" | "ramfs" | "hugetlbfs" | "devtmpfs")
}

/// Where the machine's files are read from: `/` normally, a fixture tree in
/// tests or `--sysroot DIR`. Code that reads the system takes the command's
/// (`ctx.sysroot`); code that acts on this machine (mounts, signals, its own
/// processes) says so with [`Sysroot::live`].
#[derive(Debug, Clone)]
pub struct Sysroot {
    root: PathBuf,
}

impl Sysroot {
    /// This machine, as it runs now.
    pub fn live() -> Self {
        Sysroot {
            root: PathBuf::from("/"),
        }
    }

    pub fn new(root: impl Into<PathBuf>) -> Self {
        Sysroot { root: root.into() }
    }

    /// True when reading the live machine (statfs and tree walks are meaningful).
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where a path given by the user really is on the inspected system: made
    /// absolute (against the current directory), symlinks resolved inside the
    /// sysroot, and named as that system names it (`/tmp`, not
    /// `FIXTURE/tmp`). The one resolver for commands that only *read* a path
    /// (status, top, explain, collect); commands that act on a directory open
    /// it once without following links instead (`sys::resolve`).
    pub fn resolve(&self, p: &Path) -> std::io::Result<PathBuf> {
        let abs = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir()?.join(p)
        };
        let canon = std::fs::canonicalize(self.path(&abs))?;
        if self.is_live() {
            return Ok(canon);
        }
        // `canon` is absolute: so must the root be to strip it (a relative
        // --sysroot would leave the path whole and look for it under itself).
        let base = std::fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone());
        Ok(Path::new("/").join(canon.strip_prefix(&base).unwrap_or(&canon)))
    }

    /// Map an absolute path on the inspected system to a path we can open.
    pub fn path(&self, abs: impl AsRef<Path>) -> PathBuf {
        let abs = abs.as_ref();
        let rel = abs.strip_prefix("/").unwrap_or(abs);
        self.root.join(rel)
    }

    /// Read a whole file, naming it in the error.
    pub fn read(&self, abs: &str) -> Result<Vec<u8>> {
        let p = self.path(abs);
        std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))
    }

    pub fn mountinfo(&self) -> Result<(Vec<MountInfo>, Vec<ParseWarning>)> {
        let text = self.read("/proc/self/mountinfo")?;
        Ok(mountinfo::parse(&text))
    }

    pub fn meminfo(&self) -> Result<(MemInfo, Vec<ParseWarning>)> {
        let text = self.read("/proc/meminfo")?;
        let (m, w) = meminfo::parse(&text);
        if m.mem_total_bytes == 0 {
            anyhow::bail!(
                "{} has no MemTotal line; is it a real /proc/meminfo?",
                self.path("/proc/meminfo").display()
            );
        }
        Ok((m, w))
    }

    /// The inspected system's host name as its files record it, for a sysroot
    /// (the live machine's is uname's nodename): `proc/sys/kernel/hostname` when
    /// a /proc capture holds one, else the first line of `etc/hostname` that is
    /// neither blank nor a `#` comment, trimmed. `None` when neither names one;
    /// an error only when a file exists but cannot be read.
    pub fn hostname_from_files(&self) -> Result<Option<String>> {
        let read = |abs: &str| -> Result<Option<String>> {
            let p = self.path(abs);
            match std::fs::read(&p) {
                Ok(t) => Ok(Some(String::from_utf8_lossy(&t).into_owned())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e).with_context(|| format!("cannot read {}", p.display())),
            }
        };
        // "(none)" is the kernel's name before anything set one: not a name.
        if let Some(t) = read("/proc/sys/kernel/hostname")? {
            let t = t.trim();
            if !t.is_empty() && t != "(none)" {
                return Ok(Some(t.to_string()));
            }
        }
        Ok(read("/etc/hostname")?.and_then(|t| {
            t.lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
        }))
    }

    /// /etc/fstab; a missing file is an empty table (containers often have none).
    pub fn fstab(&self) -> Result<fstab::Fstab> {
        let p = self.path("/etc/fstab");
        match std::fs::read(&p) {
            Ok(t) => Ok(fstab::Fstab::parse(&t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(fstab::Fstab::parse(b"")),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", p.display())),
        }
    }
}

/// A cheap, deterministic stand-in for the cargo-fuzz targets in fuzz/, run by
/// `cargo test`: mutated real-looking inputs must never make a parser panic.
#[cfg(test)]
mod fuzz_smoke {
    const SEEDS: &[&[u8]] = &[
        b"30 25 0:26 / /tmp rw,nosuid shared:12 - tmpfs tmpfs rw,size=8388608k\n25 1 253:1 / / rw - ext4 /dev/vda1 rw\n",
        b"MemTotal: 1000 kB\nMemAvailable: 10 kB\nSwapTotal: 0 kB\n",
        b"# c\nUUID=1 / ext4 defaults 0 1\ntmpfs /tmp\\040x tmpfs size=1G 0 0\n",
    ];

    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn parsers_survive_mutations() {
        let mut s = 0x9e3779b97f4a7c15u64;
        for round in 0..20_000 {
            let mut data = SEEDS[round % SEEDS.len()].to_vec();
            for _ in 0..(next(&mut s) % 8) {
                let pos = (next(&mut s) as usize) % (data.len() + 1);
                match next(&mut s) % 4 {
                    0 if pos < data.len() => data[pos] = next(&mut s) as u8,
                    1 if pos < data.len() => {
                        data.remove(pos);
                    }
                    2 => data.insert(pos, b"\\ -:\n9\xff"[(next(&mut s) % 7) as usize]),
                    _ => data.truncate(pos),
                }
            }
            let _ = super::mountinfo::parse(&data);
            let _ = super::meminfo::parse(&data);
            let f = super::fstab::Fstab::parse(&data);
            assert_eq!(f.to_bytes(), data);
        }
    }
}

#[cfg(test)]
mod hostname_tests {
    use super::Sysroot;

    fn root(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let f = d.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        }
        d
    }

    fn name(files: &[(&str, &str)]) -> Option<String> {
        let d = root(files);
        Sysroot::new(d.path()).hostname_from_files().unwrap()
    }

    #[test]
    fn proc_wins_over_etc_and_etc_skips_comments() {
        let both = [
            ("proc/sys/kernel/hostname", "from-proc\n"),
            ("etc/hostname", "from-etc\n"),
        ];
        assert_eq!(name(&both).as_deref(), Some("from-proc"));
        let etc = [(
            "etc/hostname",
            "# set by the installer\n\n  web-3.example  \nsecond\n",
        )];
        assert_eq!(name(&etc).as_deref(), Some("web-3.example"));
        let unset = [
            ("proc/sys/kernel/hostname", "(none)\n"),
            ("etc/hostname", "img\n"),
        ];
        assert_eq!(name(&unset).as_deref(), Some("img"));
        assert_eq!(name(&[("proc/sys/kernel/hostname", " \n")]), None);
        assert_eq!(name(&[("etc/hostname", "# only a comment\n")]), None);
        assert_eq!(name(&[]), None);
    }

    #[test]
    fn unreadable_file_is_an_error_naming_it() {
        // A directory where the file should be: reading fails with EISDIR, as root too.
        let d = root(&[]);
        std::fs::create_dir_all(d.path().join("etc/hostname")).unwrap();
        let e = Sysroot::new(d.path()).hostname_from_files().unwrap_err();
        assert!(format!("{e:#}").contains("etc/hostname"), "{e:#}");
    }
}

#[cfg(test)]
mod resolve_tests {
    use super::Sysroot;
    use std::path::Path;

    #[test]
    fn paths_resolve_inside_the_sysroot_and_are_named_as_it_names_them() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("var/tmp")).unwrap();
        let r = Sysroot::new(t.path());
        assert_eq!(
            r.resolve(Path::new("/var/tmp")).unwrap(),
            Path::new("/var/tmp")
        );
        assert!(r.resolve(Path::new("/nonexistent")).is_err());
        let live = Sysroot::live();
        assert_eq!(live.resolve(Path::new("/")).unwrap(), Path::new("/"));
    }
}
