//! What persist's tmpfs and its tree removal guard against: the flags every
//! tmpfs tmpfsctl makes, a filesystem mounted inside DIR, and a name swapped
//! for a symlink while an entry's metadata is set.

use std::path::Path;

use super::{World, s};
use crate::require_root;

/// The per-mount flags of the mount exactly at `p`, from mountinfo.
fn mount_flags(p: &Path) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = s(p).replace(' ', "\\040");
    text.lines()
        .rfind(|l| l.split(' ').nth(4) == Some(want.as_str()))
        .map(|l| {
            let f = l.split(' ').nth(5).unwrap_or("");
            f.split(',').map(str::to_string).collect()
        })
        .unwrap_or_default()
}

#[test]
fn persist_tmpfs_is_nosuid_nodev() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    w.enable();
    let flags = mount_flags(&w.dir);
    assert!(
        flags.iter().any(|f| f == "nosuid") && flags.iter().any(|f| f == "nodev"),
        "persist's tmpfs on {} has flags {flags:?}",
        w.dir.display()
    );
    // Lost (a reboot), then restored: the new tmpfs has them too.
    let st = std::process::Command::new("umount")
        .arg(&w.dir)
        .status()
        .unwrap();
    assert!(st.success());
    w.ok(&["persist", "restore", s(&w.dir)]);
    let flags = mount_flags(&w.dir);
    assert!(
        flags.iter().any(|f| f == "nosuid") && flags.iter().any(|f| f == "nodev"),
        "restored tmpfs has flags {flags:?}"
    );
}
