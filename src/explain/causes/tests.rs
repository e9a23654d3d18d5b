use super::*;
use crate::sys::mountinfo;

fn mount(line: &str) -> MountInfo {
    mountinfo::parse_line(line.as_bytes()).unwrap()
}

fn stats(size: u64, avail: u64, itotal: u64, ifree: u64) -> FsStats {
    FsStats {
        block_size: 4096,
        size_bytes: size,
        used_bytes: size - avail,
        avail_bytes: avail,
        inodes_total: itotal,
        inodes_used: itotal - ifree,
        inodes_free: ifree,
    }
}

fn kinds(
    m: &MountInfo,
    s: Option<&FsStats>,
    cg: &[CgroupCheck],
    ro: bool,
    mem_avail: u64,
) -> Vec<(String, bool)> {
    let mem = MemInfo {
        mem_total_bytes: 8 << 30,
        mem_available_bytes: mem_avail,
        ..Default::default()
    };
    let scan = Scan::default();
    let i = Inputs {
        path: Path::new("/t/x"),
        mount: m,
        stats: s,
        mem: &mem,
        cgroups: cg,
        read_only: ro,
        scan: &scan,
        writer_uid: 0,
        root: &Sysroot::new("/nonexistent"),
        walk: None,
        largest: &[],
    };
    classify(&i)
        .into_iter()
        .map(|c| (c.kind.name().to_string(), c.binds))
        .collect()
}

#[test]
fn each_limit_is_named_and_ok_only_when_none_binds() {
    let t = mount("2 1 0:40 / /t rw - tmpfs tmpfs rw,size=1024k");
    let big = 4 << 30;
    let k = |s: FsStats, ro| kinds(&t, Some(&s), &[], ro, big);
    assert_eq!(
        k(stats(1 << 20, 0, 100, 50), false),
        vec![("bytes_full".into(), true)]
    );
    assert_eq!(
        k(stats(1 << 20, 1 << 19, 100, 0), false),
        vec![("inodes_full".into(), true)]
    );
    assert_eq!(
        k(stats(1 << 20, 1 << 19, 100, 50), false),
        vec![("ok".into(), false)]
    );
    assert_eq!(
        k(stats(1 << 20, 1 << 19, 100, 50), true)[0],
        ("read_only".into(), true)
    );
    // A limit bigger than the RAM left.
    let p = kinds(
        &t,
        Some(&stats(8 << 30, 8 << 30, 100, 50)),
        &[],
        false,
        1 << 30,
    );
    assert_eq!(p, vec![("memory_pressure".into(), true)]);
    let cg = CgroupCheck {
        path: "/job".into(),
        cgroup_version: 2,
        shmem_bytes: 50 << 20,
        memory_limit_bytes: Some(64 << 20),
        memory_current_bytes: Some(62 << 20),
        holds: Default::default(),
    };
    let c = kinds(
        &t,
        Some(&stats(1 << 30, 1 << 29, 100, 50)),
        std::slice::from_ref(&cg),
        false,
        big,
    );
    assert_eq!(c, vec![("cgroup_memory".into(), true)]);
    let calm = CgroupCheck {
        memory_current_bytes: Some(10 << 20),
        ..cg
    };
    let c = kinds(
        &t,
        Some(&stats(1 << 30, 1 << 29, 100, 50)),
        &[calm],
        false,
        big,
    );
    assert_eq!(c, vec![("ok".into(), false)]);
}

#[test]
fn json_names_stay_and_causes_come_in_the_enums_order() {
    let names: Vec<String> = CauseKind::ALL
        .iter()
        .map(|k| serde_json::to_string(k).unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "\"read_only\"",
            "\"not_ram_backed\"",
            "\"bytes_full\"",
            "\"inodes_full\"",
            "\"quota\"",
            "\"cgroup_memory\"",
            "\"memory_pressure\"",
            "\"ok\""
        ]
    );
    // Everything binds at once: read-only, full in bytes and inodes, a
    // cgroup at its limit, a size past the RAM left.
    let t = mount("2 1 0:40 / /t ro - tmpfs tmpfs ro,size=8g");
    let cg = CgroupCheck {
        path: "/job".into(),
        cgroup_version: 2,
        shmem_bytes: 50 << 20,
        memory_limit_bytes: Some(64 << 20),
        memory_current_bytes: Some(63 << 20),
        holds: Default::default(),
    };
    let all = kinds(&t, Some(&stats(8 << 30, 1000, 100, 0)), &[cg], true, 0);
    let got: Vec<&str> = all.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        got,
        [
            "read_only",
            "bytes_full",
            "inodes_full",
            "cgroup_memory",
            "memory_pressure"
        ]
    );
    let help = help_list();
    let mut last = 0;
    for k in CauseKind::ALL.iter().filter(|k| **k != CauseKind::Ok) {
        let at = help.find(k.name()).unwrap();
        assert!(at >= last, "{help}");
        last = at;
    }
}

#[test]
fn a_disk_says_so_and_binds_only_when_full() {
    let d = mount("1 0 253:1 / / rw - ext4 /dev/vda1 rw");
    let roomy = kinds(
        &d,
        Some(&stats(1 << 30, 1 << 29, 100, 50)),
        &[],
        false,
        1 << 30,
    );
    assert_eq!(
        roomy,
        vec![("not_ram_backed".into(), false), ("ok".into(), false)]
    );
    let full = kinds(&d, Some(&stats(1 << 30, 0, 100, 50)), &[], false, 1 << 30);
    assert_eq!(full, vec![("not_ram_backed".into(), true)]);
}

/// A deleted file a process still holds is named with that process's
/// name on the system explained: under --sysroot the fixture's /proc,
/// never the live one's (this test's own pid is alive here, with
/// another name).
#[test]
fn a_holder_is_named_from_the_explained_system() {
    let d = tempfile::tempdir().unwrap();
    let pid = std::process::id();
    std::fs::create_dir_all(d.path().join(format!("proc/{pid}"))).unwrap();
    std::fs::write(
        d.path().join(format!("proc/{pid}/comm")),
        "fixture-holder\n",
    )
    .unwrap();
    let m = mount("2 1 0:40 / /t rw - tmpfs tmpfs rw,size=1024k");
    let mem = MemInfo {
        mem_total_bytes: 8 << 30,
        mem_available_bytes: 4 << 30,
        ..Default::default()
    };
    let scan = Scan {
        processes: vec![procfd::Process {
            pid,
            files: vec![procfd::OpenFile {
                fd: 7,
                path: "/t/gone".into(),
                deleted: true,
                memfd: None,
                dev: procfd::dev_of(0, 40),
                ino: 9,
                bytes: 1 << 20,
            }],
        }],
        unreadable: 0,
    };
    let full = stats(1 << 20, 0, 100, 50);
    let i = Inputs {
        path: Path::new("/t/x"),
        mount: &m,
        stats: Some(&full),
        mem: &mem,
        cgroups: &[],
        read_only: false,
        scan: &scan,
        writer_uid: 0,
        root: &Sysroot::new(d.path()),
        walk: None,
        largest: &[],
    };
    let fix: String = classify(&i).into_iter().map(|c| c.fix).collect();
    assert!(
        fix.contains(&format!("pid {pid} (fixture-holder) fd 7")),
        "{fix}"
    );
}
