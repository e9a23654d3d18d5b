//! `status` is as quick as findmnt: it counts a temp directory's data from
//! statfs where the directory is its own mount and walks only with --du;
//! and it warns when a tmpfs mount hides files on the disk below it.

use std::path::Path;
use std::process::Command;

use crate::common::{TestMount, json, tmpfsctl};
use crate::require_root;

fn path_entry(v: &serde_json::Value, p: &Path) -> serde_json::Value {
    v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"] == p.to_str().unwrap())
        .cloned()
        .unwrap_or_else(|| panic!("{} not in paths: {v:#}", p.display()))
}

fn du_bytes(p: &Path) -> u64 {
    let out = Command::new("du")
        .args(["-s", "-x", "-B1"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_directory_sharing_its_filesystem_is_walked_only_with_du() {
    // Under target/, never a mount point of its own.
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let d = tempfile::Builder::new()
        .prefix("status-usage-")
        .tempdir_in(base)
        .unwrap();
    for i in 0..200 {
        std::fs::write(d.path().join(format!("f{i}")), vec![7u8; 5000]).unwrap();
    }
    let v = json(&tmpfsctl(&["status", "--json", d.path().to_str().unwrap()]));
    let p = path_entry(&v, d.path());
    assert_eq!(p["usage_source"], "not_counted", "{p:#}");
    assert!(p["used_bytes"].is_null() && p["inodes"].is_null(), "{p:#}");
    let text = String::from_utf8_lossy(&tmpfsctl(&["status", d.path().to_str().unwrap()]).stdout)
        .into_owned();
    let row = text
        .lines()
        .find(|l| l.contains(d.path().to_str().unwrap()))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("not counted"), "{row}");

    let v = json(&tmpfsctl(&[
        "status",
        "--du",
        "--json",
        d.path().to_str().unwrap(),
    ]));
    let p = path_entry(&v, d.path());
    assert_eq!(p["usage_source"], "walk", "{p:#}");
    assert_eq!(p["used_bytes"].as_u64(), Some(du_bytes(d.path())));
    assert_eq!(p["inodes"].as_u64(), Some(201));
}

#[test]
fn a_directory_that_is_its_own_mount_is_counted_by_statfs() {
    require_root!();
    let m = TestMount::tmpfs("size=16m");
    std::fs::write(m.path.join("a"), vec![1u8; 3 << 20]).unwrap();
    let v = json(&tmpfsctl(&["status", "--json", m.path.to_str().unwrap()]));
    let p = path_entry(&v, &m.path);
    assert_eq!(p["usage_source"], "statfs", "{p:#}");
    assert_eq!(p["used_bytes"].as_u64(), Some(3 << 20));
    assert_eq!(p["inodes"].as_u64(), Some(2));
}

/// DIR on the filesystem below, with `n` files of 100 KiB, then a tmpfs
/// mounted over it.
fn covered_dir(n: usize) -> (tempfile::TempDir, TestMountOver) {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let t = tempfile::Builder::new()
        .prefix("hidden-below-")
        .tempdir_in(base)
        .unwrap();
    let dir = t.path().join("applied");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..n {
        std::fs::write(dir.join(format!("old{i}")), vec![3u8; 100 << 10]).unwrap();
    }
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs-ops-hidden"])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(st.success());
    (t, TestMountOver(dir))
}

struct TestMountOver(std::path::PathBuf);

impl Drop for TestMountOver {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn files_hidden_below_a_tmpfs_are_counted_and_warned_about() {
    require_root!();
    let (_t, over) = covered_dir(3);
    let dir = over.0.to_str().unwrap();
    assert_eq!(
        std::fs::read_dir(&over.0).unwrap().count(),
        0,
        "the mount hides them"
    );

    let v = json(&tmpfsctl(&["explain", "--json", dir]));
    let h = &v["hidden_below"];
    assert_eq!(h["files"].as_u64(), Some(3), "{v:#}");
    let bytes = h["bytes"].as_u64().unwrap();
    assert!((300 << 10..=320 << 10).contains(&bytes), "{bytes}");
    let text = String::from_utf8_lossy(&tmpfsctl(&["explain", dir]).stdout).into_owned();
    assert!(
        text.contains("3 files (300 KiB) are hidden below"),
        "{text}"
    );

    let v = json(&tmpfsctl(&["status", "--json"]));
    let w = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "tmpfs_hides_data" && w["message"].as_str().unwrap().contains(dir))
        .unwrap_or_else(|| panic!("no tmpfs_hides_data warning for {dir}: {:#}", v["warnings"]));
    assert!(w["message"].as_str().unwrap().contains("3 entries"), "{w}");
    // Nothing was mounted to look: the table is as it was.
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert_eq!(mounts.matches(dir).count(), 1, "{mounts}");

    // An empty directory below warns of nothing.
    let (_t2, empty) = covered_dir(0);
    let v = json(&tmpfsctl(&["status", "--json"]));
    let e = empty.0.to_str().unwrap();
    assert!(
        !v["warnings"].to_string().contains(e),
        "warned about an empty directory: {:#}",
        v["warnings"]
    );
    let v = json(&tmpfsctl(&["explain", "--json", e]));
    assert_eq!(v["hidden_below"]["files"].as_u64(), Some(0), "{v:#}");
}
