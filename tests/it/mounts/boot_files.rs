//! What `apply` writes for boot and `revert` takes back: fstab lines (round trip
//! on a real distribution's fstab) and systemd drop-ins.

use super::*;

/// Debian 12's installer output, with aligned columns, comments and a
/// commented-out line.
const DEBIAN_FSTAB: &[u8] = include_bytes!("../../fixtures/debian.fstab");

#[test]
fn fstab_round_trips_and_second_apply_adds_nothing() {
    require_root!();
    let t = scratch("mounts");
    let dir = t.path().join("scratch");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, DEBIAN_FSTAB).unwrap();
    let _c = Cleanup(dir.clone());
    let out = tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--size",
        "16M",
        "--yes",
        "--json",
    ]);
    ok(&out);
    let line = json(&out)["plan"]["persist"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        line.starts_with(&format!(
            "tmpfs {} tmpfs nosuid,nodev,size=16M,",
            dir.display()
        )),
        "{line}"
    );
    let after = std::fs::read(&fstab).unwrap();
    assert_eq!(after, [DEBIAN_FSTAB, line.as_bytes(), b"\n"].concat());
    assert_eq!(
        std::fs::read(format!("{}.tmpfsctl.bak", fstab.display())).unwrap(),
        DEBIAN_FSTAB
    );
    let v = Command::new("findmnt")
        .arg("--verify")
        .arg("--tab-file")
        .arg(&fstab)
        .arg("--target")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        v.status.success(),
        "findmnt --verify: {}",
        String::from_utf8_lossy(&v.stdout)
    );

    // Same apply again: no second line, nothing mounted twice.
    let r = apply_json(&dir, &fstab, "16M");
    assert_eq!(r["mounted"], false);
    assert_eq!(r["persist"]["edit"], "unchanged");
    assert_eq!(std::fs::read(&fstab).unwrap(), after);
    let stacked = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.split(' ').nth(4) == Some(s(&dir)))
        .count();
    assert_eq!(stacked, 1);
    // Without --size it keeps the current size (idempotent).
    ok(&tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--yes",
    ]));
    assert_eq!(std::fs::read(&fstab).unwrap(), after);

    // Resize: live and in fstab; never below usage.
    std::fs::write(dir.join("three-mib"), vec![1u8; 3 << 20]).unwrap();
    let out = tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--resize",
        "2M",
        "--yes",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("below"), "{}", stderr(&out));
    ok(&tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--resize",
        "32M",
        "--yes",
    ]));
    assert!(
        findmnt_options(&dir).contains("size=32768k"),
        "{}",
        findmnt_options(&dir)
    );
    assert!(
        findmnt_options(&dir).contains("nosuid"),
        "resize must keep flags: {}",
        findmnt_options(&dir)
    );
    let resized = String::from_utf8(std::fs::read(&fstab).unwrap()).unwrap();
    assert_eq!(resized.matches(&format!(" {} ", dir.display())).count(), 1);
    assert!(resized.contains("size=32M"), "{resized}");

    ok(&tmpfsctl(&[
        "revert",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--discard",
        "--yes",
    ]));
    assert_eq!(std::fs::read(&fstab).unwrap(), DEBIAN_FSTAB);
    assert!(!PathBuf::from(format!("{}.tmpfsctl.bak", fstab.display())).exists());
    assert_eq!(findmnt_fstype(&dir), None);
}

#[test]
fn systemd_dropin_is_written_verified_and_removed() {
    require_root!();
    let t = scratch("mounts");
    let dir = t.path().join("unitdir");
    std::fs::create_dir(&dir).unwrap();
    let units = t.path().join("units");
    std::fs::create_dir_all(units.join("local-fs.target.wants")).unwrap();
    let name = String::from_utf8(
        Command::new("systemd-escape")
            .args(["-p", "--suffix=mount"])
            .arg(&dir)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    std::fs::write(
        units.join(&name),
        format!("[Unit]\nDescription=test\n[Mount]\nWhat=tmpfs\nWhere={}\nType=tmpfs\nOptions=mode=1777\n", dir.display()),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        format!("../{name}"),
        units.join("local-fs.target.wants").join(&name),
    )
    .unwrap();
    let fstab = t.path().join("fstab");
    let _c = Cleanup(dir.clone());
    // Auto: the unit is enabled, so systemd is chosen.
    let out = tmpfsctl(&[
        "plan",
        s(&dir),
        "--unit-dir",
        s(&units),
        "--fstab",
        s(&fstab),
        "--json",
    ]);
    let p = json(&out);
    assert_eq!(p["persist"]["via"], "systemd", "{p}");
    ok(&tmpfsctl(&[
        "apply",
        s(&dir),
        "--unit-dir",
        s(&units),
        "--fstab",
        s(&fstab),
        "--size",
        "8M",
        "--yes",
    ]));
    let dropin = units.join(format!("{name}.d/override.conf"));
    let text = std::fs::read_to_string(&dropin).unwrap();
    assert!(text.contains("\nOptions=nosuid,nodev,size=8M,"), "{text}");
    assert!(
        text.contains(&format!("\nWhere={}\n", dir.display())),
        "{text}"
    );
    assert!(
        !fstab.exists(),
        "fstab untouched when persisting via systemd"
    );
    let v = Command::new("systemd-analyze")
        .arg("verify")
        .arg(units.join(&name))
        .output()
        .unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    ok(&tmpfsctl(&[
        "revert",
        s(&dir),
        "--unit-dir",
        s(&units),
        "--fstab",
        s(&fstab),
        "--yes",
    ]));
    assert!(!dropin.exists());
    assert!(!units.join(format!("{name}.d")).exists());
    assert_eq!(findmnt_fstype(&dir), None);
}

/// DIR already mounted as asked, only its fstab line left to write: apply
/// still asks first, so without --yes and no terminal to ask on it writes
/// nothing.
#[test]
fn an_apply_left_only_an_fstab_line_to_write_still_asks_first() {
    require_root!();
    let t = scratch("mounts");
    let dir = t.path().join("scratch");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, DEBIAN_FSTAB).unwrap();
    let _c = Cleanup(dir.clone());
    apply_live(&dir, "16M");
    let out = tmpfsctl(&["apply", s(&dir), "--fstab", s(&fstab), "--size", "16M"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pass --yes"),
        "{out:?}"
    );
    assert_eq!(std::fs::read(&fstab).unwrap(), DEBIAN_FSTAB);
    // Asked with --yes, the line is what it adds.
    let out = tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--size",
        "16M",
        "--yes",
        "--json",
    ]);
    ok(&out);
    assert_eq!(json(&out)["mounted"], false, "{out:?}");
    assert_ne!(std::fs::read(&fstab).unwrap(), DEBIAN_FSTAB);
}
