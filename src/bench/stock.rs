//! Data files handed from one workload to the next on the same target.
//!
//! The default suite writes a 512 MiB file of random data for both cold
//! reads right after the sequential writes wrote one; each write cost about
//! 1.5 s on this project's virtio disk (fsync included). A workload that
//! leaves complete files behind puts them in the stock, the next cold-read
//! workload needing files of that size takes them (see
//! `Workload::takes_stock` for why only cold reads), and anything else found
//! there is deleted first, so the stock never holds more than one
//! workload's files (the free-space check counts the largest workload, not
//! a sum).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

/// The stock of one target's scratch directory.
pub struct Stock {
    dir: PathBuf,
}

impl Stock {
    pub fn in_scratch(scratch: &Path) -> Stock {
        Stock {
            dir: scratch.join(".stock"),
        }
    }

    fn entries(&self) -> Result<Vec<(PathBuf, u64)>> {
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", self.dir.display())),
        };
        let mut out = Vec::new();
        for e in rd {
            let e = e.with_context(|| format!("reading {}", self.dir.display()))?;
            // symlink_metadata: only regular files count, a symlink is never followed.
            let m = std::fs::symlink_metadata(e.path())?;
            out.push((e.path(), if m.is_file() { m.len() } else { u64::MAX }));
        }
        out.sort();
        Ok(out)
    }

    /// Delete every stocked file that is not exactly `keep_bytes` long
    /// (`None`: delete all), before a workload writes its own.
    pub fn trim(&self, keep_bytes: Option<u64>) -> Result<()> {
        for (p, len) in self.entries()? {
            if Some(len) != keep_bytes {
                std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
            }
        }
        Ok(())
    }

    /// Move a stocked file of exactly `bytes` to `to`; false if there is none.
    pub fn take(&self, bytes: u64, to: &Path) -> Result<bool> {
        let Some((p, _)) = self.entries()?.into_iter().find(|(_, len)| *len == bytes) else {
            return Ok(false);
        };
        std::fs::rename(&p, to)
            .with_context(|| format!("moving {} to {}", p.display(), to.display()))?;
        Ok(true)
    }

    /// Stock `files` if each is a regular file of exactly `bytes` (a file cut
    /// short is useless to the next workload), replacing whatever was there.
    pub fn put(&self, files: &[PathBuf], bytes: u64) -> Result<()> {
        self.trim(None)?;
        let complete = files
            .iter()
            .all(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.len() == bytes));
        if !complete || files.is_empty() {
            return Ok(());
        }
        match std::fs::create_dir(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_context(|| format!("creating {}", self.dir.display())),
        }
        for (i, p) in files.iter().enumerate() {
            let to = self.dir.join(format!("{bytes}-{i}"));
            std::fs::rename(p, &to)
                .with_context(|| format!("moving {} to {}", p.display(), to.display()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(p: &Path, len: usize) -> PathBuf {
        std::fs::write(p, vec![7u8; len]).unwrap();
        p.to_path_buf()
    }

    #[test]
    fn files_pass_to_the_next_workload_of_the_same_size_only() {
        let d = tempfile::tempdir().unwrap();
        let s = Stock::in_scratch(d.path());
        // Nothing stocked yet.
        assert!(!s.take(10, &d.path().join("x")).unwrap());
        s.trim(Some(10)).unwrap();
        let a = file(&d.path().join("a"), 10);
        let b = file(&d.path().join("b"), 10);
        s.put(&[a.clone(), b.clone()], 10).unwrap();
        assert!(!a.exists() && !b.exists());
        // A different size finds nothing; the same size takes both, then none.
        assert!(!s.take(11, &d.path().join("y")).unwrap());
        let t1 = d.path().join("t1");
        let t2 = d.path().join("t2");
        assert!(s.take(10, &t1).unwrap());
        assert!(s.take(10, &t2).unwrap());
        assert!(!s.take(10, &d.path().join("t3")).unwrap());
        assert_eq!(std::fs::read(&t1).unwrap(), vec![7u8; 10]);
        // A set with one short file is not stocked (and stays where it was).
        let short = file(&d.path().join("short"), 3);
        s.put(&[t1.clone(), short.clone()], 10).unwrap();
        assert!(t1.exists() && short.exists());
        assert!(!s.take(10, &d.path().join("t4")).unwrap());
        // trim keeps only the asked size; put replaces what was stocked.
        s.put(std::slice::from_ref(&t2), 10).unwrap();
        s.trim(Some(99)).unwrap();
        assert!(!s.take(10, &d.path().join("t5")).unwrap());
        s.put(std::slice::from_ref(&t1), 10).unwrap();
        s.put(&[file(&d.path().join("c"), 4)], 4).unwrap();
        assert!(!s.take(10, &d.path().join("t6")).unwrap());
        assert!(s.take(4, &d.path().join("t7")).unwrap());
    }

    #[test]
    fn a_symlink_in_the_stock_is_removed_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let victim = file(&d.path().join("victim"), 10);
        let s = Stock::in_scratch(d.path());
        std::fs::create_dir(d.path().join(".stock")).unwrap();
        std::os::unix::fs::symlink(&victim, d.path().join(".stock/10-0")).unwrap();
        assert!(!s.take(10, &d.path().join("t")).unwrap());
        s.trim(Some(10)).unwrap();
        assert!(victim.exists());
        assert!(!d.path().join(".stock/10-0").exists());
    }
}
