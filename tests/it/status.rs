//! Integration tests for `status`: real tmpfs/ramfs mounts compared with df.

use std::path::Path;

use crate::common::{TestMount, df_bytes, df_inodes, json, tmpfsctl};
use crate::require_root;

fn mount_json<'a>(v: &'a serde_json::Value, mp: &Path) -> &'a serde_json::Value {
    v["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountpoint"] == mp.to_str().unwrap())
        .unwrap_or_else(|| panic!("{} not in status --json", mp.display()))
}

fn path_json<'a>(v: &'a serde_json::Value, p: &Path) -> &'a serde_json::Value {
    v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"] == p.to_str().unwrap())
        .unwrap_or_else(|| panic!("{} not in paths", p.display()))
}

fn codes(v: &serde_json::Value) -> Vec<String> {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap().to_string())
        .collect()
}

const PAGE: i64 = 4096;

fn close(a: &serde_json::Value, b: u64, what: &str) {
    let a = a
        .as_u64()
        .unwrap_or_else(|| panic!("{what} is not a number: {a}"));
    assert!(
        (a as i64 - b as i64).abs() <= PAGE,
        "{what}: status {a} vs df {b}"
    );
}

#[test]
fn tmpfs_figures_agree_with_df() {
    require_root!();
    let m = TestMount::tmpfs("size=16M,nr_inodes=1000,mode=1770,nosuid,nodev");
    std::fs::write(m.path.join("data"), vec![0x5a; 8 << 20]).unwrap();
    for i in 0..10 {
        std::fs::write(m.path.join(format!("f{i}")), b"x").unwrap();
    }
    let out = tmpfsctl(&["status", "--json", m.path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["schema_version"], 4);
    let j = mount_json(&v, &m.path);
    assert_eq!(j["fstype"], "tmpfs");
    let (size, used, avail) = df_bytes(&m.path);
    assert_eq!(size, 16 << 20);
    close(&j["size_bytes"], size, "size_bytes");
    close(&j["used_bytes"], used, "used_bytes");
    close(&j["avail_bytes"], avail, "avail_bytes");
    assert!(j["used_bytes"].as_u64().unwrap() >= 8 << 20);
    let (itotal, iused) = df_inodes(&m.path);
    assert_eq!(j["inodes_total"].as_u64(), Some(itotal));
    assert_eq!(j["inodes_used"].as_u64(), Some(iused));
    let opts: Vec<&str> = j["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert!(
        opts.contains(&"nosuid") && opts.contains(&"nodev") && opts.contains(&"mode=1770"),
        "{opts:?}"
    );

    // The PATH is its own mount: its data comes from statfs (as df), and
    // agrees with `du -s -x -B1` to a page.
    let p = path_json(&v, &m.path);
    assert_eq!(p["usage_source"], "statfs");
    assert_eq!(p["ram_backed"], true);
    assert_eq!(p["fstype"], "tmpfs");
    assert_eq!(p["mountpoint"], m.path.to_str().unwrap());
    let du = std::process::Command::new("du")
        .args(["-s", "-x", "-B1"])
        .arg(&m.path)
        .output()
        .unwrap();
    let du: u64 = String::from_utf8_lossy(&du.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    close(&p["used_bytes"], du, "path used_bytes");
    for k in [
        "mem_total_bytes",
        "mem_available_bytes",
        "shmem_bytes",
        "swap_total_bytes",
        "swap_free_bytes",
    ] {
        assert!(v["memory"][k].is_u64(), "memory.{k} missing");
    }
}

#[test]
fn mount_point_with_a_space_and_a_nested_mount() {
    require_root!();
    let m = TestMount::new("tmpfs", "my ram disk", "size=4M");
    std::fs::write(m.path.join("a"), vec![1u8; 100_000]).unwrap();
    // A mount inside must not be counted in the outer path's data (du -x).
    let inner = m.path.join("inner");
    std::fs::create_dir(&inner).unwrap();
    assert!(
        std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4M", "tmpfs"])
            .arg(&inner)
            .status()
            .unwrap()
            .success()
    );
    std::fs::write(inner.join("big"), vec![2u8; 2 << 20]).unwrap();
    let out = tmpfsctl(&["status", "--json", m.path.to_str().unwrap()]);
    let v = json(&out);
    let j = mount_json(&v, &m.path);
    assert_eq!(j["size_bytes"].as_u64(), Some(4 << 20));
    let p = path_json(&v, &m.path);
    let used = p["used_bytes"].as_u64().unwrap();
    assert!(
        (100_000..1 << 20).contains(&used),
        "nested mount counted: {used}"
    );
    // Human output names it too.
    let text = tmpfsctl(&["status", m.path.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("my ram disk"));
    let _ = std::process::Command::new("umount").arg(&inner).status();
}

#[test]
fn ramfs_triggers_its_warning() {
    require_root!();
    let m = TestMount::new("ramfs", "ram", "mode=700");
    let v = json(&tmpfsctl(&["status", "--json"]));
    let j = mount_json(&v, &m.path);
    assert_eq!(j["fstype"], "ramfs");
    assert!(j["size_bytes"].is_null());
    assert!(j["inodes_total"].is_null());
    assert!(codes(&v).contains(&"ramfs_unlimited".to_string()));
    let msg = v["warnings"].as_array().unwrap().iter().find(|w| {
        w["code"] == "ramfs_unlimited"
            && w["message"]
                .as_str()
                .unwrap()
                .contains(m.path.to_str().unwrap())
    });
    assert!(msg.is_some(), "warning does not name {}", m.path.display());
}

#[test]
fn overcommitted_mounts_trigger_their_warning() {
    require_root!();
    let v = json(&tmpfsctl(&["status", "--json"]));
    let ceiling = v["memory"]["mem_total_bytes"].as_u64().unwrap()
        + v["memory"]["swap_total_bytes"].as_u64().unwrap();
    // Two mounts each as large as RAM + swap: together certainly over-committed.
    let size = format!("size={}k", ceiling / 1024);
    let _a = TestMount::tmpfs(&size);
    let _b = TestMount::tmpfs(&size);
    let v = json(&tmpfsctl(&["status", "--json"]));
    assert!(v["memory"]["tmpfs_limits_bytes"].as_u64().unwrap() > ceiling);
    assert!(
        codes(&v).contains(&"tmpfs_overcommit".to_string()),
        "{:?}",
        codes(&v)
    );
}

#[test]
fn nearly_full_tmpfs_warns_in_bytes_and_inodes() {
    require_root!();
    let m = TestMount::tmpfs("size=1M,nr_inodes=20");
    std::fs::write(m.path.join("fill"), vec![3u8; 960 << 10]).unwrap();
    for i in 0..18 {
        std::fs::write(m.path.join(format!("i{i}")), b"").unwrap();
    }
    let v = json(&tmpfsctl(&["status", "--json"]));
    let c = codes(&v);
    let mine = |code: &str| {
        v["warnings"].as_array().unwrap().iter().any(|w| {
            w["code"] == code
                && w["message"]
                    .as_str()
                    .unwrap()
                    .contains(m.path.to_str().unwrap())
        })
    };
    assert!(mine("tmpfs_nearly_full"), "{c:?}");
    assert!(mine("tmpfs_inodes_nearly_full"), "{c:?}");
}

#[test]
fn bad_paths_exit_2_naming_them() {
    let out = tmpfsctl(&["status", "/definitely/not/here"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/definitely/not/here"), "{err}");
    assert!(out.stdout.is_empty(), "nothing half-written on stdout");
}

#[test]
fn unreadable_proc_file_is_named() {
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(t.path().join("proc/self")).unwrap();
    let out = tmpfsctl(&["--sysroot", t.path().to_str().unwrap(), "status"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("proc/self/mountinfo"), "{err}");
    let out = tmpfsctl(&["--sysroot", "/no/such/root", "status"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/root"));
}

#[test]
fn unreadable_path_as_non_root_is_an_error() {
    require_root!();
    // Root reads everything; drop to nobody for an unreadable directory
    // (read only when asked to count it: --du).
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("secret");
    std::fs::create_dir(&d).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_tmpfsctl"),
            "status",
            "--du",
        ])
        .arg(&d)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("secret"));
}

/// A --sysroot with the given mountinfo, a small meminfo and an empty fstab.
fn fixture(mountinfo: &[u8]) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::create_dir_all(r.join("proc/self")).unwrap();
    std::fs::create_dir_all(r.join("etc")).unwrap();
    std::fs::write(r.join("proc/self/mountinfo"), mountinfo).unwrap();
    std::fs::write(
        r.join("proc/meminfo"),
        b"MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\n",
    )
    .unwrap();
    std::fs::write(r.join("etc/fstab"), b"").unwrap();
    t
}

#[test]
fn mount_names_with_control_characters_are_shown_escaped() {
    // The kernel escapes a newline in mountinfo (\012) but not ESC.
    let t = fixture(
        b"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n\
2 1 0:20 / /mnt/a\\012b\x1b]0;pwned\x07 rw - tmpfs src\x1b[2J rw,size=1024k\n",
    );
    let root = t.path().to_str().unwrap();
    let out = tmpfsctl(&["--sysroot", root, "status"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    assert!(!text.contains("/mnt/a\nb"), "{text:?}");
    assert!(text.contains("/mnt/a\\nb\\x1b]0;pwned\\x07"), "{text}");
    // JSON keeps the exact name.
    let v = json(&tmpfsctl(&["--sysroot", root, "status", "--json"]));
    let mps: Vec<&str> = v["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mountpoint"].as_str().unwrap())
        .collect();
    assert_eq!(mps, ["/mnt/a\nb\x1b]0;pwned\x07"]);
}

#[test]
fn forty_thousand_mounts_are_all_reported_once() {
    // Hosts with many containers have tens of thousands of mounts; every
    // visible one is listed once, in mountinfo order, the stacked ones hidden.
    let n = 40_000;
    let mut mi = b"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n".to_vec();
    for i in 0..n {
        mi.extend_from_slice(
            format!(
                "{} 1 0:{} / /run/c/{i}/shm rw,nosuid - tmpfs shm rw,size=64k\n",
                i + 10,
                i + 10
            )
            .as_bytes(),
        );
    }
    // Every 1000th point gets a second mount on top: that one is visible.
    for i in (0..n).step_by(1000) {
        mi.extend_from_slice(
            format!(
                "{} 1 0:9 / /run/c/{i}/shm rw - ramfs top{i} rw\n",
                n + i + 10
            )
            .as_bytes(),
        );
    }
    let t = fixture(&mi);
    let v = json(&tmpfsctl(&[
        "--sysroot",
        t.path().to_str().unwrap(),
        "status",
        "--json",
    ]));
    let ms = v["mounts"].as_array().unwrap();
    assert_eq!(ms.len(), n);
    assert_eq!(ms[0]["mountpoint"], "/run/c/1/shm");
    assert_eq!(ms[n - 40]["mountpoint"], "/run/c/0/shm");
    assert_eq!(ms[n - 40]["source"], "top0");
    assert_eq!(ms[n - 1]["source"], "top39000");
    let ramfs = ms.iter().filter(|m| m["fstype"] == "ramfs").count();
    assert_eq!(ramfs, 40);
    assert_eq!(
        v["memory"]["tmpfs_limits_bytes"],
        (n as u64 - 40) * 64 * 1024
    );
}

#[test]
fn a_relative_sysroot_works_like_an_absolute_one() {
    let t = fixture(
        b"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n2 1 0:20 / /tmp rw - tmpfs tmpfs rw,size=1024k\n",
    );
    std::fs::create_dir_all(t.path().join("tmp")).unwrap();
    let name = t.path().file_name().unwrap().to_str().unwrap();
    let out = crate::common::bin()
        .current_dir(t.path().parent().unwrap())
        .args(["--sysroot", name, "status", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let tmp = &v["paths"][0];
    assert_eq!(
        (tmp["path"].as_str(), tmp["mountpoint"].as_str()),
        (Some("/tmp"), Some("/tmp"))
    );
}

fn row_of<'a>(text: &'a str, mp: &Path) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().next() == mp.to_str())
        .unwrap_or_else(|| panic!("no row for {} in:\n{text}", mp.display()))
}

#[test]
fn ramfs_usage_comes_from_a_walk_and_counts_in_the_total() {
    require_root!();
    let m = TestMount::new("ramfs", "ram", "mode=700");
    std::fs::write(m.path.join("data"), vec![0xa5; 50 << 20]).unwrap();
    let v = json(&tmpfsctl(&["status", "--json"]));
    assert_eq!(v["schema_version"], 4);
    let j = mount_json(&v, &m.path);
    close(&j["used_bytes"], 50 << 20, "ramfs used_bytes");
    assert_eq!(j["usage_source"], "walk");
    assert_eq!(j["inodes_used"], 2, "the root directory and one file");
    let mem = &v["memory"];
    assert!(
        mem["ramfs_used_bytes"].as_u64().unwrap() >= 50 << 20,
        "{mem}"
    );
    assert!(
        mem["ram_fs_used_bytes"].as_u64().unwrap() >= mem["ramfs_used_bytes"].as_u64().unwrap(),
        "{mem}"
    );
    assert!(
        mem["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("Unevictable")),
        "{mem}"
    );
    // statfs-backed mounts say so.
    let tmp = TestMount::tmpfs("size=4M");
    let v = json(&tmpfsctl(&["status", "--json"]));
    assert_eq!(mount_json(&v, &tmp.path)["usage_source"], "statfs");

    let out = tmpfsctl(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        row_of(&text, &m.path).contains("50.0 MiB*"),
        "ramfs row should show the walked 50 MiB:\n{text}"
    );
    assert!(text.contains("* counted by walking the files"), "{text}");
    let hold = text
        .lines()
        .find(|l| l.contains("tmpfs/ramfs hold"))
        .unwrap();
    assert!(hold.contains("of it in ramfs"), "{hold}");
}

#[test]
fn tmpfs_options_are_shown_and_huge_always_warns() {
    require_root!();
    let m = TestMount::tmpfs("huge=always,noswap,size=16M");
    let plain = TestMount::tmpfs("size=16M");
    let v = json(&tmpfsctl(&["status", "--json"]));
    let j = mount_json(&v, &m.path);
    assert_eq!(j["huge"], "always");
    assert_eq!(j["noswap"], true);
    assert_eq!(j["quota"], serde_json::json!([]));
    let p = mount_json(&v, &plain.path);
    assert!(p["huge"].is_null() || p["huge"] == "never", "{p}");
    assert_eq!(p["noswap"], false);
    let named: Vec<&serde_json::Value> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| {
            w["code"] == "tmpfs_huge_always"
                && w["message"]
                    .as_str()
                    .unwrap()
                    .contains(m.path.to_str().unwrap())
        })
        .collect();
    assert_eq!(named.len(), 1, "{}", v["warnings"]);
    assert!(
        !v["warnings"].as_array().unwrap().iter().any(|w| {
            w["code"] == "tmpfs_huge_always"
                && w["message"]
                    .as_str()
                    .unwrap()
                    .contains(plain.path.to_str().unwrap())
        }),
        "only huge=always warns"
    );
    let out = tmpfsctl(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let row = row_of(&text, &m.path);
    assert!(
        row.contains("huge=always") && row.contains("noswap"),
        "{row}"
    );
}

#[test]
fn a_nearly_full_tmpfs_points_at_top_and_explain() {
    require_root!();
    let m = TestMount::tmpfs("size=1M");
    std::fs::write(m.path.join("fill"), vec![1u8; 960 << 10]).unwrap();
    let v = json(&tmpfsctl(&["status", "--json"]));
    let j = mount_json(&v, &m.path);
    assert!(j["use_percent"].as_f64().unwrap() > 90.0, "{j}");
    let w = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| {
            w["code"] == "tmpfs_nearly_full"
                && w["message"]
                    .as_str()
                    .unwrap()
                    .contains(m.path.to_str().unwrap())
        })
        .unwrap_or_else(|| panic!("no tmpfs_nearly_full for the full mount: {}", v["warnings"]));
    let msg = w["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("`tmpfsctl top {}`", m.path.display())),
        "{msg}"
    );
    assert!(msg.contains("`tmpfsctl explain PATH`"), "{msg}");
}
