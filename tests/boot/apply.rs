//! `apply` and `revert` across reboots: the fstab line under systemd-nspawn,
//! and the genuine Debian 13 tmp.mount under QEMU.

use crate::guest;

#[test]
fn apply_via_fstab_survives_reboot_and_revert_keep_data_keeps_every_file() {
    crate::require_guest!(false);
    let _one = guest::one_at_a_time();
    let script = format!(
        r#"{tree}
A=/mnt/app
case $n in
1)
  mkdir -p $A/sub; echo one > $A/a; echo two > $A/sub/b
  tmpfsctl apply $A --size 64M --boot fstab --yes > $O/apply.txt 2>&1 || say "apply failed"
  grep -F " $A " /etc/fstab > $O/fstab-line
  reboot_now ;;
2)
  findmnt -no FSTYPE,OPTIONS $A > $O/mount-2
  echo three > $A/c; mkdir -p $A/d; echo four > $A/d/e
  tree $A > $O/tree-2
  tmpfsctl revert $A --keep-data --yes > $O/revert.txt 2>&1 || say "revert failed"
  reboot_now ;;
*)
  findmnt -no FSTYPE $A > $O/mount-3
  tree $A > $O/tree-3
  power_off ;;
esac
"#,
        tree = crate::TREE
    );
    let run = guest::nspawn("apply", &script, 4);
    let ctx = run.context();
    let mount = run.read("mount-2");
    assert!(
        mount.starts_with("tmpfs") && mount.contains("size=65536k"),
        "after apply and a reboot DIR is not the planned tmpfs: {mount:?}\napply said:\n{}\n{ctx}",
        run.read("apply.txt")
    );
    assert_eq!(
        run.read("mount-3").trim(),
        "",
        "still mounted after revert\n{ctx}"
    );
    let after = run.read("tree-3");
    for line in run.read("tree-2").lines() {
        assert!(
            after.lines().any(|l| l == line),
            "revert --keep-data lost {line}:\n{after}\n{}\n{ctx}",
            run.read("revert.txt")
        );
    }
    assert!(after.contains("./d/e"), "no tree after revert\n{ctx}");
}

/// The `size=` of mount options as the kernel shows it (KiB).
fn size_kib(opts: &str) -> Option<u64> {
    let v = opts
        .trim()
        .split(',')
        .find_map(|o| o.strip_prefix("size="))?;
    v.strip_suffix('k')?.parse().ok()
}

#[test]
fn tmp_mount_is_named_resized_by_a_drop_in_and_reverted() {
    crate::require_guest!(true);
    let _one = guest::one_at_a_time();
    let script = r#"
case $n in
1)
  grep MemTotal /proc/meminfo | tr -s ' ' | cut -d' ' -f2 > $O/memtotal
  findmnt -no OPTIONS /tmp > $O/opts-1
  stat -f -c %b:%S /tmp > $O/size-1
  systemctl show -P FragmentPath tmp.mount > $O/fragment
  tmpfsctl status > $O/status.txt 2>&1
  tmpfsctl advise > $O/advise.txt 2>&1
  tmpfsctl plan /tmp --size 30% > $O/plan.txt 2>&1
  # /tmp already is a tmpfs (tmp.mount): a new size is --resize.
  tmpfsctl apply /tmp --resize 30% --yes > $O/apply.txt 2>&1 || say "apply failed"
  ls /etc/systemd/system/tmp.mount.d/ > $O/dropins 2>&1
  reboot_now ;;
2)
  findmnt -no OPTIONS /tmp > $O/opts-2
  tmpfsctl revert /tmp --discard --yes > $O/revert.txt 2>&1 || say "revert failed"
  ls /etc/systemd/system/tmp.mount.d/ > $O/dropins-after-revert 2>&1
  reboot_now ;;
*)
  findmnt -no OPTIONS /tmp > $O/opts-3
  stat -f -c %b:%S /tmp > $O/size-3
  # What mounted /tmp this boot, should it not be back to the default.
  systemctl cat tmp.mount > $O/unit-3 2>&1
  journalctl -b -u tmp.mount --no-pager > $O/journal-3 2>&1
  power_off ;;
esac
"#;
    let run = guest::qemu("tmpmount", script, 1);
    let ctx = run.context();
    assert!(
        run.read("fragment").contains("tmp.mount"),
        "no genuine tmp.mount in the guest\n{ctx}"
    );
    for f in ["status.txt", "advise.txt"] {
        assert!(
            run.read(f).contains("tmp.mount"),
            "{f} does not name tmp.mount as what manages /tmp:\n{}",
            run.read(f)
        );
    }
    assert!(
        !run.read("dropins").trim().is_empty(),
        "apply wrote no tmp.mount drop-in:\n{}\n{ctx}",
        run.read("apply.txt")
    );
    // 30% of the guest's RAM, as the kernel rounds it (to pages).
    let mem: u64 = run.read("memtotal").trim().parse().unwrap_or(0);
    let want = mem * 30 / 100;
    let got = size_kib(&run.read("opts-2")).unwrap_or(0);
    assert!(
        got.abs_diff(want) <= want / 100 + 8,
        "after apply and a reboot /tmp has {:?}, not size={want}k (30%)\n{}\n{ctx}",
        run.read("opts-2"),
        run.read("apply.txt")
    );
    // The kernel shows size= only when it differs from its default (half of
    // RAM as it stands when the options are printed), so tmp.mount's own
    // size=50% may or may not appear depending on how much memory the kernel
    // freed after the mount: compare the options without size= and the size
    // statfs reports.
    let why = format!(
        "after revert and a reboot /tmp is not back to the default\n{}\n\
         drop-ins after revert: {}\ntmp.mount on that boot:\n{}\n{}\n{ctx}",
        run.read("revert.txt"),
        run.read("dropins-after-revert"),
        run.read("unit-3"),
        run.read("journal-3")
    );
    assert_eq!(
        without_size(&run.read("opts-3")),
        without_size(&run.read("opts-1")),
        "{why}"
    );
    let (first, last) = (
        statfs_bytes(&run.read("size-1")),
        statfs_bytes(&run.read("size-3")),
    );
    assert!(
        first > 0 && first.abs_diff(last) <= first / 100,
        "/tmp holds {last} bytes after revert, {first} at first boot\n{why}"
    );
}

/// A mount's options with `size=` left out.
fn without_size(opts: &str) -> String {
    let kept: Vec<&str> = opts
        .trim()
        .split(',')
        .filter(|o| !o.starts_with("size="))
        .collect();
    kept.join(",")
}

/// `stat -f -c %b:%S` (blocks, block size) as bytes; 0 when unreadable.
fn statfs_bytes(s: &str) -> u64 {
    let mut it = s.trim().split(':').map(|v| v.parse::<u64>().unwrap_or(0));
    it.next().unwrap_or(0) * it.next().unwrap_or(0)
}
