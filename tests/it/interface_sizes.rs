//! Sizes the commands agree on: `apply --resize` changes only the size (and
//! its undo resizes back), a size above RAM + swap or of zero is refused
//! the same way by plan, apply, run and persist enable, and advise never
//! recommends an apply that plan refuses.

use std::process::{Command, Output};

use crate::common::{TestMount, findmnt_options as options, json, s, stderr, tmpfsctl};
use crate::interface::paste;

fn scratch() -> tempfile::TempDir {
    crate::common::scratch("ifa")
}

fn undo_of(o: &Output) -> Option<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("Undo with: ").map(str::to_string))
}

#[test]
fn resize_changes_only_the_live_size_and_its_undo_resizes_back() {
    crate::require_root!();
    let m = TestMount::tmpfs("nosuid,nodev,size=32M");
    std::fs::write(m.path.join("f"), b"kept").unwrap();
    let fstab = m.dir.path().join("fstab");
    std::fs::write(&fstab, "# scratch fstab\n").unwrap();
    let out = tmpfsctl(&[
        "apply",
        s(&m.path),
        "--resize",
        "48M",
        "--fstab",
        s(&fstab),
        "--yes",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let now = options(&m.path);
    assert!(now.contains("size=49152k"), "{now}");
    assert!(now.contains("nosuid") && now.contains("nodev"), "{now}");
    assert!(
        !now.contains("nr_inodes") && !now.contains("mode="),
        "a resize added options: {now}"
    );
    assert_eq!(
        std::fs::read_to_string(&fstab).unwrap(),
        "# scratch fstab\n",
        "a resize of a tmpfs with no fstab line wrote one"
    );
    let undo = undo_of(&out).expect("apply --resize prints its undo");
    assert!(!undo.contains("revert"), "{undo}");
    let back = paste(&format!("{undo} --yes"));
    assert_eq!(back.status.code(), Some(0), "{undo}: {}", stderr(&back));
    let now = options(&m.path);
    assert!(now.contains("size=32768k"), "{undo} left {now:?}");
    assert_eq!(std::fs::read(m.path.join("f")).unwrap(), b"kept");
    assert_eq!(
        std::fs::read_to_string(&fstab).unwrap(),
        "# scratch fstab\n"
    );
}

#[test]
fn resize_sets_the_size_in_an_existing_fstab_line_and_a_share_stays_a_share() {
    crate::require_root!();
    let m = TestMount::tmpfs("nosuid,size=1%");
    let fstab = m.dir.path().join("fstab");
    let line = |size: &str| {
        format!(
            "tmpfs {} tmpfs nosuid,size={size},mode=1777 0 0",
            s(&m.path)
        )
    };
    std::fs::write(&fstab, format!("# keep me\n{}\n", line("1%"))).unwrap();
    let out = tmpfsctl(&[
        "apply",
        s(&m.path),
        "--resize",
        "2%",
        "--fstab",
        s(&fstab),
        "--yes",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&fstab).unwrap(),
        format!("# keep me\n{}\n", line("2%"))
    );
    let undo = undo_of(&out).unwrap();
    assert!(undo.contains("--resize 1%"), "{undo}");
    let back = paste(&format!("{undo} --yes"));
    assert_eq!(back.status.code(), Some(0), "{undo}: {}", stderr(&back));
    assert_eq!(
        std::fs::read_to_string(&fstab).unwrap(),
        format!("# keep me\n{}\n", line("1%"))
    );
    assert!(!options(&m.path).is_empty(), "the undo unmounted");
}

#[test]
fn resize_sets_the_size_in_the_drop_in_of_a_unit_that_mounts_dir() {
    crate::require_root!();
    let m = TestMount::tmpfs("mode=1777,nosuid,nodev,size=1%");
    let units = m.dir.path().join("units");
    std::fs::create_dir_all(units.join("local-fs.target.wants")).unwrap();
    let esc = Command::new("systemd-escape")
        .args(["--path", "--suffix=mount"])
        .arg(&m.path)
        .output()
        .unwrap();
    let unit = String::from_utf8(esc.stdout).unwrap().trim().to_string();
    std::fs::write(
        units.join(&unit),
        format!(
            "[Mount]\nWhat=tmpfs\nWhere={}\nType=tmpfs\nOptions=mode=1777,nosuid,nodev,size=1%%\n\
             [Install]\nWantedBy=local-fs.target\n",
            s(&m.path)
        ),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        format!("../{unit}"),
        units.join("local-fs.target.wants").join(&unit),
    )
    .unwrap();
    let fstab = m.dir.path().join("fstab");
    std::fs::write(&fstab, "").unwrap();
    let out = tmpfsctl(&[
        "apply",
        s(&m.path),
        "--resize",
        "2%",
        "--fstab",
        s(&fstab),
        "--unit-dir",
        s(&units),
        "--yes",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dropin = std::fs::read_to_string(units.join(format!("{unit}.d/override.conf"))).unwrap();
    assert!(
        dropin.contains("Options=mode=1777,nosuid,nodev,size=2%%\n"),
        "{dropin}"
    );
    assert_eq!(std::fs::read_to_string(&fstab).unwrap(), "");
}

#[test]
fn resize_refuses_other_options_it_cannot_change_live() {
    crate::require_root!();
    let m = TestMount::tmpfs("nosuid,nodev,size=8M");
    let out = tmpfsctl(&["apply", s(&m.path), "--resize", "16M", "--noexec", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--noexec") && err.contains("only the size"),
        "{err}"
    );
    assert!(options(&m.path).contains("size=8192k"));
}

/// A size above RAM + swap: exit 2 with the input and the fix named.
fn assert_refused_as_too_big(what: &str, o: &Output) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{what}: {err}");
    assert!(
        err.contains("999T") && err.contains("RAM + swap") && err.contains("--force"),
        "{what}: {err}"
    );
}

#[test]
fn plan_refuses_a_size_above_ram_and_swap_unless_forced() {
    let t = scratch();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, "").unwrap();
    let base = ["plan", s(&dir), "--fstab", s(&fstab), "--json"];
    let o = tmpfsctl(&[&base[..], &["--size", "999T"]].concat());
    assert_refused_as_too_big("plan", &o);
    assert!(o.stdout.is_empty(), "a refused plan printed one");
    let forced = tmpfsctl(&[&base[..], &["--size", "999T", "--force"]].concat());
    assert!(
        matches!(forced.status.code(), Some(0 | 1)),
        "{}",
        stderr(&forced)
    );
    let p = json(&forced);
    assert!(
        p["warnings"].to_string().contains("size_exceeds_memory"),
        "{p}"
    );
    assert!(
        p["apply_command"].as_str().unwrap().contains("--force"),
        "{}",
        p["apply_command"]
    );
}

#[test]
fn apply_run_and_persist_enable_refuse_a_size_above_ram_and_swap() {
    let t = scratch();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("f"), b"x").unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, "").unwrap();
    let run = tmpfsctl(&["run", "--size", "999T", "--", "true"]);
    assert_refused_as_too_big("run", &run);
    crate::require_root!();
    let apply = tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--size",
        "999T",
        "--yes",
    ]);
    let mounted = options(&dir);
    if !mounted.is_empty() {
        let _ = Command::new("umount").arg(&dir).status();
    }
    assert_refused_as_too_big("apply", &apply);
    assert!(mounted.is_empty(), "apply mounted {mounted}");
    assert_eq!(std::fs::read_to_string(&fstab).unwrap(), "");
    let store = t.path().join("store");
    let enable = crate::common::bin()
        .env("TMPFSCTL_PERSIST_REGISTRY", t.path().join("registry.json"))
        .args([
            "persist",
            "enable",
            s(&dir),
            "--store",
            s(&store),
            "--size",
            "999T",
            "--boot",
            "none",
            "--yes",
        ])
        .output()
        .unwrap();
    let mounted = options(&dir);
    if !mounted.is_empty() {
        let _ = Command::new("umount").arg(&dir).status();
    }
    assert_refused_as_too_big("persist enable", &enable);
    assert!(mounted.is_empty(), "persist enable mounted {mounted}");
    assert!(!store.exists(), "a refused enable wrote a store");
}

#[test]
fn resize_above_ram_and_swap_is_refused_unless_forced() {
    crate::require_root!();
    let m = TestMount::tmpfs("nosuid,nodev,size=8M");
    let o = tmpfsctl(&["apply", s(&m.path), "--resize", "999T", "--yes"]);
    assert_refused_as_too_big("apply --resize", &o);
    assert!(options(&m.path).contains("size=8192k"));
}

#[test]
fn zero_percent_is_explained_like_zero() {
    let t = scratch();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    for cmd in [
        vec!["plan", s(&dir), "--size"],
        vec!["run", "--size"],
        vec!["persist", "enable", s(&dir), "--boot", "none", "--size"],
    ] {
        for size in ["0", "0%"] {
            let mut a = cmd.clone();
            a.push(size);
            if a[0] == "run" {
                a.extend(["--", "true"]);
            }
            let o = crate::common::bin()
                .env("TMPFSCTL_PERSIST_REGISTRY", t.path().join("registry.json"))
                .args(&a)
                .output()
                .unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
            assert!(
                err.contains("\"no limit\"") && err.contains(&format!("{size:?}")),
                "{a:?}: {err}"
            );
        }
    }
}

#[test]
fn advise_shows_plans_refusal_instead_of_an_apply_that_fails() {
    crate::require_root!();
    let m = TestMount::tmpfs("nosuid,nodev,size=512M,nr_inodes=100000");
    let inner = m.path.join("inner");
    std::fs::create_dir(&inner).unwrap();
    let _inner = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1M", "tmpfs"])
        .arg(&inner)
        .status()
        .unwrap();
    let adv = tmpfsctl(&["advise", "--no-bench", "--json", s(&m.path)]);
    let text = tmpfsctl(&["advise", "--no-bench", s(&m.path)]);
    let plan = tmpfsctl(&["plan", "--json", s(&m.path)]);
    let _ = Command::new("umount").arg(&inner).status();
    let v = json(&adv);
    let p = json(&plan);
    assert_eq!(plan.status.code(), Some(1), "plan refuses: {p}");
    let c = &v["commands"];
    assert!(
        !c["act"].to_string().contains("tmpfsctl apply"),
        "advise recommends an apply that plan refuses: {c}"
    );
    assert_eq!(c["refused"], p["blockers"], "{c}");
    assert!(c["refused"].to_string().contains("inner"), "{c}");
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(
        shown.contains("Apply would refuse") && shown.contains("unmount them first"),
        "{shown}"
    );
    assert!(!shown.contains("sudo tmpfsctl apply"), "{shown}");
}
