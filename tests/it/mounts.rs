//! Integration tests for `plan`, `apply`, `revert`: real tmpfs mounts on
//! directories under a fresh temp root (never the machine's /tmp mount,
//! /etc/fstab or systemd directories: every run passes --fstab/--unit-dir).

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::hash::Hasher;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{
    findmnt_fstype, findmnt_options, is_root, json, s, scratch, stderr, tmpfsctl, xattrs,
};
use crate::require_root;

mod boot_files;
mod data;
mod deep;
mod interrupt;
mod races;
mod refusals;

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        stderr(o)
    );
}

/// `apply DIR --fstab FSTAB --size SIZE --yes --json`, which must succeed; its JSON.
fn apply_json(dir: &Path, fstab: &Path, size: &str) -> serde_json::Value {
    let out = tmpfsctl(&[
        "apply",
        s(dir),
        "--fstab",
        s(fstab),
        "--size",
        size,
        "--yes",
        "--json",
    ]);
    ok(&out);
    json(&out)
}

/// `apply DIR --boot none --size SIZE --yes`: a live tmpfs over DIR and no
/// boot entry, which must succeed.
pub(crate) fn apply_live(dir: &Path, size: &str) {
    ok(&tmpfsctl(&[
        "apply",
        s(dir),
        "--boot",
        "none",
        "--size",
        size,
        "--yes",
    ]));
}

/// Unmounts whatever is still at `path` when a test fails half way, and
/// what an apply or revert of it stopped part way left: the staging mount
/// its progress note names, and the note.
pub(crate) struct Cleanup(pub(crate) PathBuf);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let notes = progress_notes(&self.0);
        for (note, stage) in &notes {
            if let Some(stage) = stage {
                unmount_all(stage);
                let _ = std::fs::remove_dir(stage);
            }
            let _ = std::fs::remove_file(note);
        }
        unmount_all(&self.0);
    }
}

/// Lazily unmount every mount stacked at `p`.
fn unmount_all(p: &Path) {
    while findmnt_fstype(p).is_some() {
        if !Command::new("umount")
            .arg("-l")
            .arg(p)
            .status()
            .is_ok_and(|s| s.success())
        {
            break;
        }
    }
}

/// The progress notes (under /run/tmpfsctl-journal) of runs on `dir`, each
/// with the staging mount it names, if any.
pub(crate) fn progress_notes(dir: &Path) -> Vec<(PathBuf, Option<PathBuf>)> {
    let Ok(rd) = std::fs::read_dir("/run/tmpfsctl-journal") else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.path().extension() == Some(OsStr::new("json")))
        .filter_map(|e| {
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
            (v["dir"].as_str() == Some(s(dir))).then(|| {
                let stage = v["stage"].as_str().map(PathBuf::from);
                (e.path(), stage)
            })
        })
        .collect()
}

/// No mount of ours under `root` is left (tests clean up after failures too).
fn mounts_under(root: &Path) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(str::to_string))
        .filter(|m| Path::new(m).starts_with(root))
        .collect()
}

#[path = "mounts_options.rs"]
mod options;

#[path = "mounts_crash.rs"]
mod crash;
