use super::*;

fn mount(
    mp: &str,
    fstype: &str,
    size: Option<u64>,
    used: u64,
    it: Option<u64>,
    iu: u64,
    dev: &str,
) -> MountReport {
    MountReport {
        mountpoint: mp.into(),
        fstype: fstype.into(),
        source: fstype.into(),
        size_bytes: size,
        used_bytes: Some(used),
        avail_bytes: size.map(|s| s - used),
        use_percent: size.and_then(|s| percent(used, s)),
        inodes_total: it,
        inodes_used: Some(iu),
        inodes_use_percent: it.and_then(|t| percent(iu, t)),
        usage_source: UsageSource::Statfs,
        huge: None,
        noswap: false,
        quota: vec![],
        options: vec![],
        key_options: vec![],
        device: dev.into(),
        bind: false,
        hidden_below_entries: None,
    }
}

fn mem(total: u64, avail: u64, swap: u64) -> MemInfo {
    MemInfo {
        mem_total_bytes: total,
        mem_available_bytes: avail,
        swap_total_bytes: swap,
        swap_free_bytes: swap,
        ..Default::default()
    }
}

fn codes(w: &[Warning]) -> Vec<&str> {
    w.iter().map(|w| w.code.as_str()).collect()
}

const G: u64 = 1 << 30;

#[test]
fn healthy_machine_has_no_warnings() {
    let ms = vec![mount(
        "/tmp",
        "tmpfs",
        Some(4 * G),
        G,
        Some(1000),
        10,
        "0:1",
    )];
    let m = memory_report(&ms, &mem(16 * G, 12 * G, 0));
    assert!(warnings(&ms, &[], &m, &[]).is_empty());
}

#[test]
fn ramfs_overcommit_and_fullness_warn() {
    let ms = vec![
        mount("/mnt/ram", "ramfs", None, 0, None, 1, "0:2"),
        mount(
            "/a",
            "tmpfs",
            Some(10 * G),
            95 * G / 10,
            Some(100),
            1,
            "0:3",
        ),
        mount("/b", "tmpfs", Some(10 * G), 0, Some(100), 95, "0:4"),
        // A bind mount of /b: same superblock, must not count twice.
        mount("/b2", "tmpfs", Some(10 * G), 0, Some(100), 95, "0:4"),
    ];
    let m = memory_report(&ms, &mem(16 * G, 8 * G, 2 * G));
    assert_eq!(m.tmpfs_limits_bytes, 20 * G);
    let w = warnings(&ms, &[], &m, &[]);
    let c = codes(&w);
    assert!(c.contains(&"ramfs_unlimited"), "{c:?}");
    assert!(c.contains(&"tmpfs_overcommit"), "{c:?}");
    assert!(c.contains(&"tmpfs_nearly_full"), "{c:?}");
    assert!(c.contains(&"tmpfs_inodes_nearly_full"), "{c:?}");
    // Each warning says what to do.
    assert!(w.iter().all(|w| w.message.contains('`')), "{w:?}");
}

#[test]
fn limits_within_ram_plus_swap_do_not_warn() {
    let ms = vec![mount("/a", "tmpfs", Some(10 * G), 0, None, 1, "0:3")];
    let m = memory_report(&ms, &mem(8 * G, 8 * G, 2 * G));
    assert!(!codes(&warnings(&ms, &[], &m, &[])).contains(&"tmpfs_overcommit"));
    let m = memory_report(&ms, &mem(8 * G, 8 * G, G));
    assert!(codes(&warnings(&ms, &[], &m, &[])).contains(&"tmpfs_overcommit"));
}

fn tmp_path(fstype: &str, used: u64) -> PathReport {
    PathReport {
        path: "/tmp".into(),
        resolved: "/tmp".into(),
        mountpoint: "/".into(),
        fstype: fstype.into(),
        ram_backed: sys::is_ram_backed(fstype),
        used_bytes: Some(used),
        inodes: Some(1),
        usage_source: UsageSource::Walk,
        unreadable_dirs: 0,
        fstab: None,
        systemd_unit: "tmp.mount".into(),
        systemd_state: systemd::UnitState::Absent,
        systemd_dropins: vec![],
    }
}

#[test]
fn tmp_on_disk_hint_only_when_ram_is_ample() {
    let m = memory_report(&[], &mem(16 * G, 12 * G, 0));
    assert!(
        codes(&warnings(&[], &[tmp_path("ext4", 100 << 20)], &m, &[])).contains(&"tmp_on_disk")
    );
    assert!(
        !codes(&warnings(&[], &[tmp_path("tmpfs", 100 << 20)], &m, &[])).contains(&"tmp_on_disk")
    );
    assert!(!codes(&warnings(&[], &[tmp_path("ext4", 4 * G)], &m, &[])).contains(&"tmp_on_disk"));
    let small = memory_report(&[], &mem(G, G / 2, 0));
    assert!(
        !codes(&warnings(&[], &[tmp_path("ext4", 1 << 20)], &small, &[])).contains(&"tmp_on_disk")
    );
}

#[test]
fn key_options_pick_what_matters() {
    let (m, _) = sys::mountinfo::parse(
        b"30 25 0:26 / /tmp rw,nosuid,nodev,relatime - tmpfs tmpfs rw,size=1048576k,nr_inodes=1000,mode=1777,huge=within_size,noswap,inode64\n",
    );
    assert_eq!(
        key_options(&m[0].all_options()),
        vec![
            "nosuid",
            "nodev",
            "size=1048576k",
            "nr_inodes=1000",
            "mode=1777",
            "huge=within_size",
            "noswap"
        ]
    );
}

#[test]
fn sysroot_fixture_reports_without_statfs() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::create_dir_all(r.join("proc/self")).unwrap();
    std::fs::create_dir_all(r.join("etc")).unwrap();
    std::fs::create_dir_all(r.join("tmp/sub")).unwrap();
    std::fs::write(r.join("tmp/sub/f"), vec![1u8; 10_000]).unwrap();
    std::fs::write(
        r.join("proc/self/mountinfo"),
        b"25 1 253:1 / / rw,relatime - ext4 /dev/vda1 rw\n\
30 25 0:26 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw,size=2G,nr_inodes=1m\n\
31 25 0:27 / /mnt/r\\040x rw - ramfs ramfs rw\n\
bogus line\n",
    )
    .unwrap();
    std::fs::write(
        r.join("proc/meminfo"),
        b"MemTotal: 4194304 kB\nMemAvailable: 2097152 kB\n",
    )
    .unwrap();
    std::fs::write(
        r.join("etc/fstab"),
        b"tmpfs /tmp tmpfs nosuid,nodev,size=2G 0 0\n",
    )
    .unwrap();
    let ctx = Context {
        sysroot: Sysroot::new(r),
    };
    let rep = gather(
        &ctx,
        &StatusQuery {
            paths: vec![],
            all: false,
            du: true,
        },
    )
    .unwrap();
    assert_eq!(rep.mounts.len(), 2);
    assert_eq!(rep.mounts[0].size_bytes, Some(2 * G));
    assert_eq!(rep.mounts[0].inodes_total, Some(1 << 20));
    assert_eq!(rep.mounts[0].used_bytes, None);
    assert_eq!(rep.mounts[1].mountpoint, "/mnt/r x");
    assert_eq!(rep.mounts[1].size_bytes, None);
    let tmp = rep.paths.iter().find(|p| p.path == "/tmp").unwrap();
    assert!(tmp.ram_backed);
    assert_eq!(tmp.mountpoint, "/tmp");
    assert!(tmp.used_bytes.unwrap() >= 10_000);
    assert_eq!(tmp.inodes, Some(3));
    assert_eq!(
        tmp.fstab.as_ref().unwrap().options,
        vec!["nosuid", "nodev", "size=2G"]
    );
    let c = codes(&rep.warnings);
    assert!(c.contains(&"ramfs_unlimited"), "{c:?}");
    assert!(c.contains(&"parse_skipped"), "{c:?}");
    // The rendering names every mount and every warning.
    let text = render::text(&rep);
    assert!(
        text.contains("/mnt/r x") && text.contains("unlimited") && text.contains("ramfs_unlimited")
    );
}

#[test]
fn missing_explicit_path_is_an_error_naming_it() {
    let ctx = Context {
        sysroot: Sysroot::live(),
    };
    let e = gather(
        &ctx,
        &StatusQuery {
            paths: vec!["/no/such/dir-xyz".into()],
            all: false,
            du: false,
        },
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("/no/such/dir-xyz"), "{e:#}");
}

#[test]
fn stacked_mounts_show_the_last_one_where_it_was_mounted() {
    let (ms, w) = sys::mountinfo::parse(
        b"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n\
2 1 0:20 / /a rw - tmpfs first rw\n\
3 1 0:21 / /b rw - tmpfs b rw\n\
4 2 0:22 / /a/ rw - tmpfs second rw\n\
5 1 0:23 / /c rw - tmpfs c rw\n\
6 1 0:24 / /b rw - ramfs b2 rw\n",
    );
    assert!(w.is_empty());
    let v: Vec<(&str, &str)> = visible(&ms)
        .iter()
        .map(|m| (m.mount_point.to_str().unwrap(), m.source.as_str()))
        .collect();
    assert_eq!(
        v,
        [
            ("/", "/dev/sda1"),
            ("/a/", "second"),
            ("/c", "c"),
            ("/b", "b2")
        ]
    );
}

#[test]
fn an_apply_killed_part_way_is_named_until_it_is_run_again() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::create_dir_all(r.join("proc/self")).unwrap();
    std::fs::create_dir_all(r.join("etc")).unwrap();
    std::fs::create_dir_all(r.join("run/tmpfsctl-journal")).unwrap();
    std::fs::write(
        r.join("proc/self/mountinfo"),
        b"25 1 253:1 / / rw,relatime - ext4 /dev/vda1 rw\n",
    )
    .unwrap();
    std::fs::write(r.join("proc/meminfo"), b"MemTotal: 4194304 kB\n").unwrap();
    std::fs::write(r.join("etc/fstab"), b"").unwrap();
    // The note a killed `apply /srv/cache` leaves; pid 4242 has no /proc entry
    // in the fixture, so the run is over.
    std::fs::write(
        r.join("run/tmpfsctl-journal/srv-cache.json"),
        br#"{"op":"apply","dir":"/srv/cache","pid":4242,"pid_start":777,"started_unix_s":1,"fstab":"/etc/fstab"}"#,
    )
    .unwrap();
    let ctx = Context {
        sysroot: Sysroot::new(r),
    };
    let rep = gather(&ctx, &StatusQuery::default()).unwrap();
    let w: Vec<&Warning> = rep
        .warnings
        .iter()
        .filter(|w| w.code == "interrupted_run")
        .collect();
    assert_eq!(w.len(), 1, "{:?}", rep.warnings);
    assert!(
        w[0].message.contains("tmpfsctl apply /srv/cache") && w[0].message.contains("4242"),
        "{}",
        w[0].message
    );
    // Pid 4242 given to another process (started at another tick): the
    // run is still over.
    std::fs::create_dir_all(r.join("proc/4242")).unwrap();
    let stat = |start: u64| {
        format!("4242 (tmpfsctl) S 1 4242 4242 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {start} 0 0\n")
    };
    std::fs::write(r.join("proc/4242/stat"), stat(778)).unwrap();
    let rep = gather(&ctx, &StatusQuery::default()).unwrap();
    assert!(rep.warnings.iter().any(|w| w.code == "interrupted_run"));
    // While that process still runs, it is not interrupted.
    std::fs::write(r.join("proc/4242/stat"), stat(777)).unwrap();
    let rep = gather(&ctx, &StatusQuery::default()).unwrap();
    assert!(!rep.warnings.iter().any(|w| w.code == "interrupted_run"));
}

#[test]
fn huge_always_warns_and_full_mounts_point_at_top_and_explain() {
    let mut huge = mount("/scratch", "tmpfs", Some(16 << 20), 0, None, 1, "0:5");
    huge.huge = Some("always".into());
    let mut within = mount("/w", "tmpfs", Some(16 << 20), 0, None, 1, "0:6");
    within.huge = Some("within_size".into());
    let full = mount("/full", "tmpfs", Some(100 << 20), 95 << 20, None, 1, "0:7");
    let ms = vec![huge, within, full];
    let m = memory_report(&ms, &mem(16 * G, 12 * G, 0));
    let w = warnings(&ms, &[], &m, &[]);
    let huge_w: Vec<&Warning> = w.iter().filter(|w| w.code == "tmpfs_huge_always").collect();
    assert_eq!(huge_w.len(), 1, "{w:?}");
    assert!(huge_w[0].message.contains("/scratch"));
    assert!(huge_w[0].message.contains("huge=within_size"));
    let full_w = w.iter().find(|w| w.code == "tmpfs_nearly_full").unwrap();
    assert!(
        full_w.message.contains("`tmpfsctl top /full`"),
        "{full_w:?}"
    );
    assert!(
        full_w.message.contains("`tmpfsctl explain PATH`"),
        "{full_w:?}"
    );
}

#[test]
fn ramfs_data_is_in_the_hold_total_and_said_where_it_is_counted() {
    let mut ram = mount("/mnt/ram", "ramfs", None, 50 << 20, None, 2, "0:9");
    ram.usage_source = UsageSource::Walk;
    let ms = vec![
        ram,
        mount("/t", "tmpfs", Some(G), 10 << 20, None, 3, "0:10"),
    ];
    let m = memory_report(&ms, &mem(16 * G, 12 * G, 0));
    assert_eq!(m.ram_fs_used_bytes, 60 << 20);
    assert_eq!(m.ramfs_used_bytes, 50 << 20);
    assert_eq!(m.tmpfs_limits_bytes, G);
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("Unevictable") && n.contains("walking")),
        "{:?}",
        m.notes
    );
    let none = memory_report(&ms[1..], &mem(16 * G, 12 * G, 0));
    assert!(!none.notes.iter().any(|n| n.contains("ramfs")));
}

#[test]
fn quota_and_noswap_options_are_picked_out() {
    assert!(is_quota("usrquota"));
    assert!(is_quota("usrquota_block_hardlimit=10m"));
    assert!(is_quota("grpquota_inode_hardlimit=100"));
    assert!(!is_quota("nosuid"));
    assert_eq!(
        key_options(&["rw".into(), "usrquota".into(), "noswap".into()]),
        vec!["usrquota", "noswap"]
    );
}
