//! The commonest tmpfs incident, as a user meets it: a full mount whose
//! biggest file sits in its root, a hand-made mount with no fstab line, a
//! deleted file still held open. `top` and `explain` must name the file,
//! and every fix they print must work when pasted.

use std::path::Path;
use std::process::Command;

use crate::common::{TestMount, json, tmpfsctl};
use crate::require_root;
use crate::top::hold_open;

fn write(path: &Path, bytes: usize) {
    std::fs::write(path, vec![0x5au8; bytes]).unwrap();
}

/// 64 MiB tmpfs, 62 MiB `big` in its root, 2 MiB in `cache/`.
fn full_mount() -> TestMount {
    let m = TestMount::new("tmpfs", "incident", "size=64m");
    write(&m.path.join("big"), 62 << 20);
    std::fs::create_dir(m.path.join("cache")).unwrap();
    // As much of 2 MiB as fits: the mount is then full.
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=64k", "count=32", "status=none"])
        .arg(format!("of={}", m.path.join("cache/c").display()))
        .stderr(std::process::Stdio::null())
        .status();
    m
}

#[test]
fn a_big_file_in_the_mount_root_is_named_first() {
    require_root!();
    let m = full_mount();
    let big = m.path.join("big");
    let big = big.to_str().unwrap();

    let v = json(&tmpfsctl(&["top", "--json", m.path.to_str().unwrap()]));
    let files = v["mounts"][0]["largest_files"]
        .as_array()
        .unwrap_or_else(|| panic!("no largest_files in top --json: {v:#}"));
    assert_eq!(files[0]["path"], big, "{files:?}");
    assert_eq!(files[0]["bytes"].as_u64(), Some(62 << 20));
    assert_eq!(files[0]["owner"], "root");
    assert!(files[0]["mtime"].as_i64().unwrap() > 1_600_000_000);
    assert!(files[0]["open_by"].is_array());
    assert!(
        files[1]["path"].as_str().unwrap().ends_with("/cache/c"),
        "{files:?}"
    );
    let text =
        String::from_utf8_lossy(&tmpfsctl(&["top", "--once", m.path.to_str().unwrap()]).stdout)
            .into_owned();
    let at = text
        .find("largest files")
        .unwrap_or_else(|| panic!("{text}"));
    let pos = |what: &str| {
        text[at..]
            .find(what)
            .unwrap_or_else(|| panic!("{what} missing from the largest files: {text}"))
    };
    assert!(pos(big) < pos("cache/c"), "{text}");

    let out = tmpfsctl(&["explain", "--json", m.path.join("new").to_str().unwrap()]);
    let v = json(&out);
    assert_eq!(v["largest_files"][0]["path"], big, "{v:#}");
    let fix = v["causes"][0]["fix"].as_str().unwrap();
    let consumers = &fix[fix
        .find("Biggest consumers:")
        .unwrap_or_else(|| panic!("{fix}"))..];
    assert!(
        consumers["Biggest consumers: ".len()..].starts_with(big),
        "the big file first: {consumers}"
    );
}

/// The commands in backquotes of a fix that change something (remount,
/// truncate): what a user would paste.
fn commands(fix: &str) -> Vec<String> {
    fix.split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.starts_with("mount ") || c.starts_with(": >"))
        .map(str::to_string)
        .collect()
}

fn explain_kinds(path: &Path) -> (Vec<String>, serde_json::Value) {
    let v = json(&tmpfsctl(&["explain", "--json", path.to_str().unwrap()]));
    let k = v["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["binds"] == true)
        .map(|c| c["kind"].as_str().unwrap().to_string())
        .collect();
    (k, v)
}

fn paste(cmd: &str) {
    let out = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(
        out.status.success(),
        "the printed fix `{cmd}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_printed_fixes_work_on_a_hand_made_tmpfs() {
    require_root!();
    // Bytes: no fstab line, no unit; the fix is a remount, which works.
    let m = full_mount();
    let (k, v) = explain_kinds(&m.path);
    assert_eq!(k, vec!["bytes_full"], "{v:#}");
    let fix = v["causes"][0]["fix"].as_str().unwrap();
    let cmds = commands(fix);
    assert!(!cmds.is_empty(), "no command to paste in: {fix}");
    assert!(
        !fix.contains("tmpfsctl apply"),
        "apply refuses a hand-made mount: {fix}"
    );
    for c in &cmds {
        paste(c);
    }
    let (k, v) = explain_kinds(&m.path);
    assert!(k.is_empty(), "still binds after the fix: {v:#}");

    // Inodes.
    let m = TestMount::new("tmpfs", "inodes", "size=8m,nr_inodes=32");
    let made = (0..100)
        .take_while(|i| std::fs::write(m.path.join(format!("f{i}")), b"x").is_ok())
        .count();
    assert!(made < 32);
    let (k, v) = explain_kinds(&m.path);
    assert_eq!(k, vec!["inodes_full"], "{v:#}");
    for c in commands(v["causes"][0]["fix"].as_str().unwrap()) {
        paste(&c);
    }
    let (k, v) = explain_kinds(&m.path);
    assert!(k.is_empty(), "still binds after the fix: {v:#}");
    assert!(std::fs::write(m.path.join("one-more"), b"x").is_ok());
}

#[test]
fn a_deleted_file_held_open_is_freed_by_the_printed_fix() {
    require_root!();
    let m = TestMount::new("tmpfs", "deleted", "size=8m");
    let gone = m.path.join("gone.log");
    write(&gone, 8 << 20);
    let holder = hold_open(&gone);
    std::fs::remove_file(&gone).unwrap();
    let pid = holder.0.id();

    // top names the holder and the no-restart fix.
    let text =
        String::from_utf8_lossy(&tmpfsctl(&["top", "--once", m.path.to_str().unwrap()]).stdout)
            .into_owned();
    let line = text
        .lines()
        .find(|l| l.contains("deleted, still open"))
        .unwrap_or_else(|| panic!("{text}"));
    let top_fix = commands(line);
    assert_eq!(top_fix, vec![format!(": > /proc/{pid}/fd/0")], "{line}");
    assert!(line.contains(&format!("restart pid {pid}")), "{line}");

    let (k, v) = explain_kinds(&m.path);
    assert_eq!(k, vec!["bytes_full"], "{v:#}");
    let fix = v["causes"][0]["fix"].as_str().unwrap();
    let truncate: Vec<String> = commands(fix)
        .into_iter()
        .filter(|c| c.starts_with(": >"))
        .collect();
    assert_eq!(truncate, top_fix, "{fix}");
    assert!(fix.contains(&format!("restart pid {pid}")), "{fix}");
    paste(&truncate[0]);
    let (k, v) = explain_kinds(&m.path);
    assert!(k.is_empty(), "still full after the truncate: {v:#}");
    // The holder did not have to go.
    assert!(Path::new(&format!("/proc/{pid}")).exists());
}
