//! `tmpfsctl explain` on real full mounts, a real disk, a real cgroup and
//! real tmpfiles rules.

use std::path::Path;
use std::process::Command;

use crate::common::{TestMount, json, tmpfsctl};
use crate::require_root;
use crate::top::{TestCgroup, hold_open, v2_fixture};

fn explain(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut a = vec!["explain", "--json"];
    a.extend_from_slice(args);
    let out = tmpfsctl(&a);
    (out.status.code(), json(&out))
}

fn kinds(v: &serde_json::Value) -> Vec<String> {
    v["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap().to_string())
        .collect()
}

/// Write 4 KiB files into `dir` until the filesystem refuses; returns how many.
fn fill_inodes(dir: &Path) -> usize {
    (0..100_000)
        .take_while(|i| std::fs::write(dir.join(format!("f{i}")), b"x").is_ok())
        .count()
}

#[test]
fn a_fresh_tmpfs_is_ok_with_its_headroom() {
    require_root!();
    let m = TestMount::tmpfs("size=16m,nr_inodes=1000");
    let (code, v) = explain(&[m.path.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(kinds(&v), vec!["ok"]);
    assert_eq!(v["binds"], false);
    assert!(
        v["causes"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("16.0 MiB")
    );
    assert_eq!(v["ram_backed"], true);
}

#[test]
fn byte_full_tmpfs_binds_with_the_resize_fix_and_consumers() {
    require_root!();
    let m = TestMount::tmpfs("size=2m");
    // A quarter of the data is a deleted file a child still holds.
    let gone = m.path.join("gone.log");
    std::fs::write(&gone, vec![0u8; 512 << 10]).unwrap();
    let holder = hold_open(&gone);
    std::fs::remove_file(&gone).unwrap();
    std::fs::create_dir(m.path.join("big")).unwrap();
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=64k", "status=none"])
        .arg(format!("of={}", m.path.join("big/fill").display()))
        .stderr(std::process::Stdio::null())
        .status();
    // A new file in a directory that exists: PATH need not exist yet.
    let target = m.path.join("new-file");
    let (code, v) = explain(&[target.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(kinds(&v)[0], "bytes_full");
    let c = &v["causes"][0];
    assert_eq!(c["binds"], true);
    let fix = c["fix"].as_str().unwrap();
    assert!(
        fix.contains(&format!("mount -o remount,size=4M {}", m.path.display())),
        "{fix}"
    );
    assert!(fix.contains("/big"), "names the biggest directory: {fix}");
    assert!(
        fix.contains(&format!("by pid {}", holder.0.id())),
        "names the holder: {fix}"
    );
    assert_eq!(v["avail_bytes"], 0);
}

#[test]
fn inode_exhausted_tmpfs_says_inodes_not_bytes() {
    require_root!();
    let m = TestMount::tmpfs("size=64m,nr_inodes=64");
    let made = fill_inodes(&m.path);
    assert!(made > 0 && made < 64, "{made}");
    let (code, v) = explain(&[m.path.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(kinds(&v), vec!["inodes_full"]);
    let d = v["causes"][0]["detail"].as_str().unwrap();
    assert!(d.contains("of its 64 inodes"), "{d}");
    assert!(
        v["causes"][0]["fix"]
            .as_str()
            .unwrap()
            .contains("nr_inodes=128")
    );
    assert_eq!(v["inodes_free"], 0);
}

#[test]
fn read_only_tmpfs_binds_first() {
    require_root!();
    let m = TestMount::tmpfs("size=4m,ro");
    let (code, v) = explain(&[m.path.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert_eq!(kinds(&v), vec!["read_only"]);
    assert!(
        v["causes"][0]["fix"]
            .as_str()
            .unwrap()
            .contains("remount,rw")
    );
}

#[test]
fn a_full_disk_is_named_as_the_disk_not_ram() {
    require_root!();
    let has_mkfs = Command::new("mkfs.ext4").arg("-V").output().is_ok();
    let dir = tempfile::tempdir().unwrap();
    if !has_mkfs {
        crate::skip_part!("full-disk part: no mkfs.ext4; checking / instead");
        let (code, v) = explain(&["/"]);
        assert_eq!(kinds(&v)[0], "not_ram_backed");
        assert!(code == Some(0) || code == Some(1));
        return;
    }
    let img = dir.path().join("disk.img");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    std::fs::File::create(&img)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let ok = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-m", "0"])
        .arg(&img)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    if !Command::new("mount")
        .args(["-o", "loop"])
        .arg(&img)
        .arg(&mnt)
        .status()
        .unwrap()
        .success()
    {
        crate::skip!("loop devices unavailable");
    }
    struct Umount<'a>(&'a Path);
    impl Drop for Umount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(self.0).status();
        }
    }
    let _guard = Umount(&mnt);
    let (code, v) = explain(&[mnt.to_str().unwrap()]);
    assert_eq!(
        (code, kinds(&v)),
        (Some(0), vec!["not_ram_backed".into(), "ok".into()])
    );
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=1M", "status=none"])
        .arg(format!("of={}", mnt.join("fill").display()))
        .stderr(std::process::Stdio::null())
        .status();
    let (code, v) = explain(&[mnt.join("more").to_str().unwrap()]);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(kinds(&v), vec!["not_ram_backed"]);
    assert_eq!(v["fstype"], "ext4");
    let d = v["causes"][0]["detail"].as_str().unwrap();
    assert!(
        d.contains("a disk, not RAM") && d.contains("that disk that is full"),
        "{d}"
    );
}

#[test]
fn a_cgroup_near_its_limit_with_shmem_binds() {
    require_root!();
    let m = TestMount::tmpfs("size=256m");
    let Some(cg) = TestCgroup::or_skip(64 << 20) else {
        return;
    };
    let file = m.path.join("charged");
    cg.run(&format!(
        "dd if=/dev/zero of='{}' bs=1M count=60 status=none",
        file.display()
    ));
    let (code, v) = explain(&[m.path.to_str().unwrap(), "--cgroup", &cg.rel]);
    let (calm_code, calm) = explain(&[m.path.to_str().unwrap()]);
    std::fs::remove_file(&file).unwrap();
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(kinds(&v)[0], "cgroup_memory");
    let d = v["causes"][0]["detail"].as_str().unwrap();
    assert!(
        d.contains(&cg.rel) && d.contains("64.0 MiB") && d.contains("OOM"),
        "{d}"
    );
    assert!(v["cgroups"][0]["shmem_bytes"].as_u64().unwrap() >= 60 << 20);
    // The caller's own cgroup is not the one charged.
    assert!(
        !kinds(&calm).contains(&"cgroup_memory".to_string()),
        "{calm:#}"
    );
    assert_eq!(calm_code, Some(0));
}

#[test]
fn cgroup_v2_fixture_by_pid_binds() {
    let d = v2_fixture();
    let root = d.path().to_str().unwrap();
    let out = tmpfsctl(&[
        "--sysroot",
        root,
        "explain",
        "--json",
        "/tmp",
        "--pid",
        "4242",
    ]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v:#}");
    assert_eq!(kinds(&v), vec!["cgroup_memory"]);
    assert_eq!(v["cgroups"][0]["cgroup_version"], 2);
    assert!(
        v["causes"][0]["fix"]
            .as_str()
            .unwrap()
            .contains("memory.max")
    );
}

#[test]
fn tmpfiles_rule_lists_the_old_file_and_who_holds_it() {
    require_root!();
    let m = TestMount::tmpfs("size=8m");
    let mp = m.path.to_str().unwrap();
    for f in ["old.lock", "new.txt", "keep-me/old-too", "sub/old.sock"] {
        let p = m.path.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"data").unwrap();
    }
    for f in ["old.lock", "keep-me/old-too", "sub/old.sock"] {
        let ok = Command::new("touch")
            .args(["-a", "-m", "-d", "15 days ago"])
            .arg(m.path.join(f))
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    let holder = hold_open(&m.path.join("old.lock"));
    let rules = tempfile::tempdir().unwrap();
    std::fs::write(
        rules.path().join("test.conf"),
        // touch can set atime and mtime, never ctime: age by those two, as a
        // rule with "am:" does (the default also looks at ctime, see below).
        format!("# test\nD {mp} 1777 root root am:10d\nx {mp}/keep-*\n"),
    )
    .unwrap();
    // The same name in a lower-priority directory is hidden.
    let lower = tempfile::tempdir().unwrap();
    std::fs::write(
        lower.path().join("test.conf"),
        format!("D {mp} 1777 root root 1s\n"),
    )
    .unwrap();
    let (code, v) = explain(&[
        mp,
        "--tmpfiles-dir",
        rules.path().to_str().unwrap(),
        "--tmpfiles-dir",
        lower.path().to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{v:#}");
    let r = v["tmpfiles_rules"].as_array().unwrap();
    // The hidden file's line is shown too, saying which file hides it.
    assert_eq!(r.len(), 3, "{r:#?}");
    assert_eq!(r[0]["age_s"], 864_000);
    assert!(r[0]["ignored"].is_null() && r[1]["ignored"].is_null());
    let hidden = r[2]["ignored"].as_str().unwrap();
    assert!(
        r[2]["age"] == "1s" && hidden.contains(rules.path().join("test.conf").to_str().unwrap()),
        "{r:#?}"
    );
    let gone: Vec<&str> = v["will_be_cleaned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    let old = format!("{mp}/old.lock");
    let sock = format!("{mp}/sub/old.sock");
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(
        gone.contains(&old.as_str()) && gone.contains(&sock.as_str()),
        "{gone:?}"
    );
    let entry = v["will_be_cleaned"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == old.as_str())
        .unwrap();
    assert!(entry["age_s"].as_u64().unwrap() >= 14 * 86_400);
    let pid = holder.0.id() as u64;
    assert_eq!(entry["open_by"][0]["pid"], pid, "{entry:#}");
    assert_eq!(entry["open_by"][0]["comm"], "sleep");

    // By default tmpfiles also looks at ctime, which touch just made recent:
    // then nothing is old enough, as systemd-tmpfiles would decide too.
    std::fs::write(
        rules.path().join("test.conf"),
        format!("D {mp} 1777 root root 10d\n"),
    )
    .unwrap();
    let (_, v) = explain(&[mp, "--tmpfiles-dir", rules.path().to_str().unwrap()]);
    assert_eq!(v["tmpfiles_rules"].as_array().unwrap().len(), 1);
    assert_eq!(v["will_be_cleaned"], serde_json::json!([]));
}

#[test]
fn bad_inputs_exit_2_naming_them() {
    let out = tmpfsctl(&["explain", "/no/such/dir/file"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/dir/file"));
    let out = tmpfsctl(&["explain", "/tmp", "--pid", "4000000000"]);
    assert_eq!(out.status.code(), Some(2));
    let out = tmpfsctl(&["explain", "/tmp", "--pid", "3999999"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pid 3999999"));
    let out = tmpfsctl(&["explain", "/tmp", "--cgroup", "/tmpfsctl-no-such-cgroup"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tmpfsctl-no-such-cgroup"));
    let out = tmpfsctl(&["explain", "/tmp", "--tmpfiles-dir", "/no/such/rules"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_size_limit_beyond_the_ram_left_is_memory_pressure() {
    require_root!();
    let mem = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb = |k: &str| -> u64 {
        mem.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap()
            .parse()
            .unwrap()
    };
    // tmpfs accepts a size larger than RAM: that is the promise explain must flag.
    let promise_kib = (kb("MemTotal:") + kb("SwapTotal:")) * 2;
    let m = TestMount::tmpfs(&format!("size={promise_kib}k"));
    let (code, v) = explain(&[m.path.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(kinds(&v), vec!["memory_pressure"]);
    let c = &v["causes"][0];
    assert!(c["detail"].as_str().unwrap().contains("MemAvailable"));
    assert!(
        c["fix"]
            .as_str()
            .unwrap()
            .contains("mount -o remount,size=")
    );
}

#[test]
fn the_predicted_clean_is_what_systemd_tmpfiles_deletes() {
    require_root!();
    if Command::new("systemd-tmpfiles")
        .arg("--version")
        .output()
        .is_err()
    {
        crate::skip!("systemd-tmpfiles not installed");
    }
    let m = TestMount::tmpfs("size=8m");
    let mp = m.path.to_str().unwrap();
    let all = [
        "a.old",
        "b.new",
        "keep-x/c.old",
        "d/e.old",
        "d/f.new",
        "X-only.old",
    ];
    for f in all {
        let p = m.path.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"data").unwrap();
        if f.ends_with(".old") {
            let ok = Command::new("touch")
                .args(["-a", "-m", "-d", "30 days ago"])
                .arg(&p)
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
    }
    let rules = tempfile::tempdir().unwrap();
    let conf = rules.path().join("t.conf");
    std::fs::write(
        &conf,
        format!("d {mp} 1777 root root am:7d\nx {mp}/keep-*\nX {mp}/X-only.old\n"),
    )
    .unwrap();
    let (_, v) = explain(&[mp, "--tmpfiles-dir", rules.path().to_str().unwrap()]);
    let mut predicted: Vec<String> = v["will_be_cleaned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect();
    predicted.sort();
    assert_eq!(
        predicted,
        vec![format!("{mp}/a.old"), format!("{mp}/d/e.old")]
    );
    let out = Command::new("systemd-tmpfiles")
        .arg("--clean")
        .arg(&conf)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut deleted: Vec<String> = all
        .iter()
        .map(|f| m.path.join(f))
        .filter(|p| !p.exists())
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    deleted.sort();
    assert_eq!(
        deleted, predicted,
        "explain's prediction vs systemd-tmpfiles --clean"
    );
}
