use super::*;
use crate::sys::{fstab, mountinfo};

const GIB: u64 = 1 << 30;

fn facts(dir: &str, used: u64, inodes: u64) -> Facts {
    Facts {
        dir: dir.into(),
        dir_fstype: "ext4".into(),
        dir_mode: 0o41777,
        dir_uid: 0,
        dir_gid: 0,
        used_bytes: used,
        inodes,
        mem: MemInfo {
            mem_total_bytes: 8 * GIB,
            swap_total_bytes: 2 * GIB,
            ..Default::default()
        },
        other_tmpfs_limits_bytes: GIB,
        current: None,
        fstab_path: "/etc/fstab".into(),
        fstab_entry: None,
        unit: UnitInfo {
            name: "tmp.mount".into(),
            state: UnitState::Absent,
            fragment: None,
            dropins: vec![],
            options: None,
        },
        unit_dir: "/etc/systemd/system".into(),
        busy: vec![],
        nested_mounts: vec![],
        package_files: vec![],
        package_files_total: 0,
        kernel_release: "6.18.0".into(),
        tmpfs_quota: Support::Yes,
    }
}

#[test]
fn no_swap_defaults_to_a_quarter_of_ram() {
    let mut f = facts("/tmp", 100 * MIB, 100);
    f.mem.swap_total_bytes = 0;
    let p = plan(&f, &Request::default()).unwrap();
    assert_eq!(p.size_option.as_deref(), Some("25%"));
    assert_eq!(p.size_bytes, Some(2 * GIB));
    f.mem.swap_total_bytes = GIB;
    assert_eq!(
        plan(&f, &Request::default())
            .unwrap()
            .size_option
            .as_deref(),
        Some("50%")
    );
}

fn tmpfs_now(size: u64, inodes: u64) -> CurrentMount {
    CurrentMount {
        fstype: "tmpfs".into(),
        size_bytes: Some(size),
        nr_inodes: Some(inodes),
        mode: 0o1777,
        uid: 0,
        gid: 0,
        nosuid: true,
        nodev: true,
        noexec: false,
        noswap: false,
        huge: None,
        options: vec!["rw".into(), "nosuid".into(), "nodev".into()],
    }
}

fn codes(p: &Plan) -> Vec<&str> {
    p.warnings.iter().map(|w| w.code.as_str()).collect()
}

#[test]
fn size_and_inode_rules() {
    // (used bytes, inodes, requested size, want size option, want nr_inodes)
    let cases: &[(u64, u64, Option<Size>, &str, u64)] = &[
        (10 << 20, 100, None, "50%", 1 << 20),
        // 5 GiB used: half of 8 GiB RAM is too small, so usage + 50%.
        (5 * GIB, 100, None, "8G", 1 << 20),
        (
            10 << 20,
            3_000_000,
            None,
            "50%",
            4_500_000u64.div_ceil(1024) * 1024,
        ),
        (10 << 20, 100, Some(Size::Bytes(2 * GIB)), "2G", 1 << 20),
        (
            10 << 20,
            100,
            Some(Size::PercentOfRam(25.0)),
            "25%",
            1 << 20,
        ),
    ];
    for (used, inodes, size, want_size, want_inodes) in cases {
        let req = Request {
            size: *size,
            ..Default::default()
        };
        let p = plan(&facts("/tmp", *used, *inodes), &req).unwrap();
        assert_eq!(
            p.size_option.as_deref(),
            Some(*want_size),
            "used {used} size {size:?}"
        );
        assert_eq!(p.nr_inodes, Some(*want_inodes), "inodes {inodes}");
        assert!(p.size_bytes.unwrap() >= *used);
    }
}

#[test]
fn refuses_limits_below_usage() {
    let f = facts("/tmp", GIB, 5000);
    let e = plan(
        &f,
        &Request {
            size: Some(Size::Bytes(512 << 20)),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.0.contains("below what /tmp holds now"), "{e}");
    assert!(e.0.contains("--size"), "{e}");
    let e = plan(
        &f,
        &Request {
            inodes: Some(100),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.0.contains("--inodes 100"), "{e}");
    // Just above usage: allowed but tight.
    let p = plan(
        &f,
        &Request {
            size: Some(Size::Bytes(GIB + (1 << 20))),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(codes(&p).contains(&"size_tight"), "{:?}", p.warnings);
}

#[test]
fn tmp_gets_sticky_mode_nosuid_nodev() {
    let p = plan(&facts("/tmp", 0, 1), &Request::default()).unwrap();
    assert_eq!(
        p.mount_options,
        "nosuid,nodev,size=50%,nr_inodes=1048576,mode=1777"
    );
    assert_eq!(
        p.persist.content,
        "tmpfs /tmp tmpfs nosuid,nodev,size=50%,nr_inodes=1048576,mode=1777 0 0"
    );
    assert_eq!(p.persist.action, PersistAction::Append);
    assert!(p.blockers.is_empty());
    let mut f = facts("/tmp", 0, 1);
    f.dir_mode = 0o40755;
    let p = plan(&f, &Request::default()).unwrap();
    assert!(p.mount_options.contains("mode=1777"));
    assert!(codes(&p).contains(&"tmp_mode"));
    // Other directories keep their mode and owner.
    let mut f = facts("/srv/cache dir", 0, 1);
    f.dir_mode = 0o40750;
    f.dir_uid = 1000;
    f.dir_gid = 100;
    let p = plan(
        &f,
        &Request {
            noexec: true,
            noswap: true,
            huge: Some(Huge::WithinSize),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        p.mount_options,
        "nosuid,nodev,noexec,size=50%,nr_inodes=1048576,mode=750,uid=1000,gid=100,huge=within_size,noswap"
    );
    assert!(
        p.persist
            .content
            .starts_with("tmpfs /srv/cache\\040dir tmpfs "),
        "{}",
        p.persist.content
    );
}

#[test]
fn overcommit_and_ramfs_warn() {
    let mut f = facts("/tmp", 0, 1);
    f.mem.shmem_bytes = 7 * GIB; // 4 GiB (50%) > 10 GiB RAM + swap - 7 GiB held
    let p = plan(&f, &Request::default()).unwrap();
    assert!(codes(&p).contains(&"tmpfs_overcommit"), "{:?}", p.warnings);
    let f = facts("/tmp", 0, 1);
    assert!(!codes(&plan(&f, &Request::default()).unwrap()).contains(&"tmpfs_overcommit"));
    // Other limits adding up past RAM + swap (a stock systemd machine) are
    // no risk by themselves: only what is left for this one matters.
    let mut f = facts("/tmp", 0, 1);
    f.other_tmpfs_limits_bytes = 20 * GIB;
    f.mem.mem_available_bytes = 6 * GIB;
    assert!(!codes(&plan(&f, &Request::default()).unwrap()).contains(&"tmpfs_overcommit"));
    // Little memory left for processes: the same 4 GiB is a risk.
    f.mem.mem_available_bytes = 3 * GIB;
    let p = plan(&f, &Request::default()).unwrap();
    let w = p.warnings.iter().find(|w| w.code == "tmpfs_overcommit");
    assert!(
        w.is_some_and(|w| w.message.contains("3.00 GiB")),
        "{:?}",
        p.warnings
    );
    let p = plan(
        &f,
        &Request {
            ramfs: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(codes(&p).contains(&"ramfs_requested"));
    assert!(!p.blockers.is_empty());
    assert_eq!(p.size_option, None);
    assert!(p.persist.content.starts_with("ramfs /tmp ramfs "));
    // Does not fit at all.
    let p = plan(&facts("/tmp", 20 * GIB, 1), &Request::default()).unwrap();
    assert!(
        p.blockers.iter().any(|b| b.contains("does not fit")),
        "{:?}",
        p.blockers
    );
}

#[test]
fn existing_mounts_and_idempotence() {
    let mut f = facts("/tmp", 10 << 20, 100);
    f.dir_fstype = "tmpfs".into();
    f.current = Some(tmpfs_now(GIB, 1 << 20));
    let p = plan(&f, &Request::default()).unwrap();
    assert_eq!(p.mount_state, MountState::Same);
    assert_eq!(p.size_option.as_deref(), Some("1G"));
    let p = plan(
        &f,
        &Request {
            size: Some(Size::Bytes(2 * GIB)),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(p.mount_state, MountState::SizeDiffers);
    assert!(p.blockers.is_empty());
    let p = plan(
        &f,
        &Request {
            noexec: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(p.mount_state, MountState::Conflict);
    assert!(
        p.blockers[0].contains("--resize") && p.blockers[0].contains("revert"),
        "{:?}",
        p.blockers
    );
    let mut other = tmpfs_now(GIB, 1);
    other.fstype = "ext4".into();
    f.current = Some(other);
    let p = plan(&f, &Request::default()).unwrap();
    assert_eq!(p.mount_state, MountState::Conflict);
    // The fstab line already there is left alone.
    let mut f = facts("/tmp", 0, 1);
    f.fstab_entry = fstab::parse_line(
        b"tmpfs /tmp tmpfs nosuid,nodev,size=50%,nr_inodes=1048576,mode=1777 0 0",
    )
    .unwrap();
    assert_eq!(
        plan(&f, &Request::default()).unwrap().persist.action,
        PersistAction::Unchanged
    );
    f.fstab_entry = fstab::parse_line(b"/dev/sdb1 /tmp ext4 defaults 0 2").unwrap();
    let p = plan(&f, &Request::default()).unwrap();
    assert_eq!(p.persist.action, PersistAction::Replace);
    assert_eq!(p.persist.via, Boot::Fstab);
}

#[test]
fn systemd_managed_tmp_gets_a_dropin() {
    let mut f = facts("/tmp", 0, 1);
    f.unit.state = UnitState::Enabled;
    f.unit.fragment = Some("/usr/lib/systemd/system/tmp.mount".into());
    let p = plan(&f, &Request::default()).unwrap();
    assert_eq!(p.persist.via, Boot::Systemd);
    assert_eq!(
        p.persist.path,
        "/etc/systemd/system/tmp.mount.d/override.conf"
    );
    for l in [
        "What=tmpfs",
        "Where=/tmp",
        "Type=tmpfs",
        // `%%`: systemd reads `%` as a specifier (its own tmp.mount writes `size=50%%`).
        "Options=nosuid,nodev,size=50%%,nr_inodes=1048576,mode=1777",
    ] {
        assert!(
            p.persist.content.lines().any(|x| x == l),
            "{l} in {}",
            p.persist.content
        );
    }
    assert!(p.blockers.is_empty());
    f.unit.state = UnitState::Masked;
    let p = plan(
        &f,
        &Request {
            boot: Some(Boot::Systemd),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(p.blockers.iter().any(|b| b.contains("masked")));
    // fstab wins when asked.
    f.unit.state = UnitState::Enabled;
    let p = plan(
        &f,
        &Request {
            boot: Some(Boot::Fstab),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(p.persist.via, Boot::Fstab);
}

#[test]
fn busy_and_nested_mounts() {
    let mut f = facts("/tmp", 0, 1);
    f.busy = vec![ProcUse {
        pid: 42,
        comm: "vim".into(),
        uses: vec!["cwd".into()],
    }];
    f.nested_mounts = vec!["/tmp/x".into()];
    let p = plan(&f, &Request::default()).unwrap();
    assert!(
        p.warnings
            .iter()
            .any(|w| w.code == "busy" && w.message.contains("42 (vim)"))
    );
    assert!(p.blockers.iter().any(|b| b.contains("/tmp/x")));
}

#[test]
fn fstab_escapes_odd_paths() {
    use std::os::unix::ffi::OsStrExt;
    let p = Path::new(std::ffi::OsStr::from_bytes(b"/a b\tc\nd\\e\xff"));
    let e = fstab_escape(p);
    assert_eq!(e, "/a\\040b\\011c\\012d\\134e\\377");
    assert_eq!(mountinfo::unescape(e.as_bytes()), p.as_os_str().as_bytes());
}

#[test]
fn package_files_block_unless_allowed_and_follow_ups_carry_the_options() {
    let mut f = facts("/opt/data", 1 << 20, 10);
    f.package_files = vec!["/opt/data/app.conf".into()];
    f.package_files_total = 7;
    let p = plan(&f, &Request::default()).unwrap();
    assert!(
        p.blockers
            .iter()
            .any(|b| b.contains("7 file(s) installed by packages")
                && b.contains("/opt/data/app.conf")
                && b.contains("--allow-package-files")),
        "{:?}",
        p.blockers
    );
    let req = Request {
        allow_package_files: true,
        ..Default::default()
    };
    assert!(plan(&f, &req).unwrap().blockers.is_empty());

    let mut f = facts("/opt/data", 1 << 20, 10);
    f.current = Some(tmpfs_now(64 << 20, 1 << 20));
    let req = Request {
        size: Some(Size::Bytes(256 << 20)),
        follow_up: " --fstab /x/fstab".into(),
        ..Default::default()
    };
    let p = plan(&f, &req).unwrap();
    assert!(
        p.steps
            .iter()
            .any(|s| s.contains("--resize 256M --fstab /x/fstab`")),
        "{:?}",
        p.steps
    );
}

#[test]
fn quotas_become_kernel_options_where_the_kernel_has_them() {
    let f = facts("/tmp", 100 * MIB, 100);
    let req = Request {
        user_quota: Some(Size::Bytes(GIB)),
        group_quota: Some(Size::Bytes(2 * GIB)),
        ..Request::default()
    };
    let p = plan(&f, &req).unwrap();
    for o in [
        "usrquota",
        "usrquota_block_hardlimit=1G",
        "grpquota",
        "grpquota_block_hardlimit=2G",
    ] {
        assert!(
            p.mount_options.split(',').any(|x| x == o),
            "{o} missing from {}",
            p.mount_options
        );
    }
    // A share of RAM is no amount per user.
    let pct = Request {
        user_quota: Some(Size::PercentOfRam(10.0)),
        ..Request::default()
    };
    assert!(plan(&f, &pct).unwrap_err().0.contains("not a share of RAM"));
}

#[test]
fn quotas_are_refused_naming_the_kernel_when_it_lacks_them() {
    let req = Request {
        group_quota: Some(Size::Bytes(GIB)),
        ..Request::default()
    };
    let mut f = facts("/tmp", 100 * MIB, 100);
    f.tmpfs_quota = Support::No("Linux 6.18.0 has no tmpfs quotas".into());
    let e = plan(&f, &req).unwrap_err().0;
    assert!(e.contains("--group-quota") && e.contains("6.18.0"), "{e}");
    // Not probed: a release before 6.6 is enough to know.
    f.tmpfs_quota = Support::Unknown("not root".into());
    f.kernel_release = "6.1.0-18-amd64".into();
    let e = plan(&f, &req).unwrap_err().0;
    assert!(e.contains("6.1.0-18-amd64") && e.contains("6.6"), "{e}");
    // Not probed on a new enough kernel: planned, with a warning.
    f.kernel_release = "6.6.3".into();
    let p = plan(&f, &req).unwrap();
    assert!(codes(&p).contains(&"quota_unchecked"));
    // Without a quota asked for, the kernel's lack of them does not matter.
    f.tmpfs_quota = Support::No("none".into());
    assert!(plan(&f, &Request::default()).is_ok());
}

#[test]
fn ramfs_plan_lists_no_tmpfs_steps() {
    let f = facts("/srv/cache", 100 * MIB, 100);
    let req = Request {
        ramfs: true,
        follow_up: " --fstab /x/fstab".into(),
        ..Request::default()
    };
    let p = plan(&f, &req).unwrap();
    assert!(
        p.steps
            .iter()
            .all(|s| !s.contains("tmpfs") || s.contains("tmpfsctl")),
        "{:?}",
        p.steps
    );
    assert!(!p.steps.iter().any(|s| s.contains("is the new tmpfs")));
    assert!(
        p.steps.iter().any(|s| s.contains("no size limit")
            && s.contains("tmpfsctl plan /srv/cache --fstab /x/fstab")),
        "{:?}",
        p.steps
    );
}
