//! `top` says what it could not see (an unprivileged run), colours and
//! details a mount out of inodes like one out of bytes, and says where a
//! PATH on disk lives.

use std::path::Path;
use std::process::Command;

use crate::common::{TestMount, json, tmpfsctl};
use crate::require_root;
use crate::top::hold_open;

/// tmpfsctl as uid/gid 65534 (nobody), from a copy it may execute.
fn as_nobody(args: &[&str]) -> std::process::Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_tmpfsctl"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn an_unprivileged_run_says_what_it_could_not_see() {
    require_root!();
    let m = TestMount::tmpfs("size=16m,mode=1777");
    // The test's temp dir must let nobody reach the mount.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = m.path.join("secret");
    std::fs::create_dir(&secret).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(secret.join("s"), vec![1u8; 1 << 20]).unwrap();
    let gone = m.path.join("gone");
    std::fs::write(&gone, vec![2u8; 2 << 20]).unwrap();
    let _holder = hold_open(&gone);
    std::fs::remove_file(&gone).unwrap();
    let mp = m.path.to_str().unwrap();

    let out = as_nobody(&["top", "--once", mp]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = text.lines().find(|l| l.contains(mp)).unwrap();
    assert!(row.contains("unknown"), "deleted column: {row}");
    assert!(!row.contains(" 0 B "), "never 0 B when blind: {row}");
    assert!(
        text.contains("deleted-but-open: unknown,")
            && text.contains("processes unreadable — run as root"),
        "{text}"
    );
    assert!(text.contains(&format!("{mp}/secret: unreadable")), "{text}");

    let v = json(&as_nobody(&["top", "--json", mp]));
    let j = &v["mounts"][0];
    assert_eq!(j["deleted_open_known"], false, "{j:#}");
    assert!(v["unreadable_processes"].as_u64().unwrap() > 0);
    let d = j["by_dir"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"].as_str().unwrap().ends_with("/secret"))
        .unwrap();
    assert_eq!(d["unreadable"], true, "{d}");
    // top and status agree on the mount's figure, and say where it is from.
    let s = json(&as_nobody(&["status", "--json", mp]));
    let sm = s["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["mountpoint"] == mp)
        .unwrap();
    assert_eq!(sm["used_bytes"], j["used_bytes"]);
    assert_eq!(sm["usage_source"], "statfs");
    assert_eq!(j["usage_source"], "statfs");
    let sp = s["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"] == mp)
        .unwrap();
    assert_eq!(sp["used_bytes"], j["used_bytes"], "{sp:#}");

    // As root the same mount is seen whole.
    let v = json(&tmpfsctl(&["top", "--json", mp]));
    assert_eq!(v["mounts"][0]["deleted_open_known"], true);
    assert_eq!(v["mounts"][0]["deleted_open_bytes"].as_u64(), Some(2 << 20));
}

#[test]
fn an_inode_exhausted_mount_is_red_and_detailed() {
    require_root!();
    let m = TestMount::tmpfs("size=64m,nr_inodes=100");
    std::fs::create_dir(m.path.join("many")).unwrap();
    let made = (0..200)
        .take_while(|i| std::fs::write(m.path.join(format!("many/f{i}")), b"").is_ok())
        .count();
    assert!(made < 100);
    let mp = m.path.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tmpfsctl"))
        .args(["--color", "always", "top", "--once", mp])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let row = text.lines().find(|l| l.contains(mp)).unwrap();
    let inodes_cell = row.find("100 / 100").unwrap_or_else(|| panic!("{row}"));
    assert!(
        row[..inodes_cell].ends_with('m'),
        "inodes cell not coloured: {row:?}"
    );
    let plain = String::from_utf8_lossy(&tmpfsctl(&["top", "--once", mp]).stdout).into_owned();
    let line = plain
        .lines()
        .find(|l| l.contains("inodes 100% used"))
        .unwrap_or_else(|| panic!("no inode detail:\n{plain}"));
    assert!(
        line.contains(&format!("mount -o remount,nr_inodes=200 {mp}")),
        "{line}"
    );
    assert!(
        plain.contains(&format!("largest dirs: {mp}/many")),
        "{plain}"
    );
}

#[test]
fn a_path_on_disk_says_where_it_lives_and_exits_1() {
    let fstype_of = |p: &Path| {
        String::from_utf8_lossy(
            &Command::new("findmnt")
                .args(["-no", "FSTYPE", "-T"])
                .arg(p)
                .output()
                .unwrap()
                .stdout,
        )
        .trim()
        .to_string()
    };
    // The build tree first; a checkout on tmpfs has /var/tmp or / on disk.
    let on_disk = [env!("CARGO_TARGET_TMPDIR"), "/var/tmp", "/"]
        .into_iter()
        .map(Path::new)
        .map(|p| (p, fstype_of(p)))
        .find(|(_, f)| f != "tmpfs" && f != "ramfs" && !f.is_empty());
    let Some((here, fstype)) = on_disk else {
        crate::skip!("the build tree, /var/tmp and / are all in RAM here");
    };
    let out = tmpfsctl(&["top", "--once", here.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("{} is on {fstype}", here.display())) && text.contains("not RAM"),
        "{text}"
    );
    assert!(!text.contains("No tmpfs or ramfs mount"), "{text}");
    let v = json(&tmpfsctl(&["top", "--json", here.to_str().unwrap()]));
    assert_eq!(v["paths_not_ram_backed"][0]["fstype"], fstype.as_str());
}
