//! `tmpfsctl top` on real mounts, processes, memfds, SysV segments and cgroups.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::common::{TestMount, df_bytes, df_inodes, json, tmpfsctl};
use crate::require_root;

/// A child process killed and reaped on drop, however the test ends.
pub struct Held(pub Child);

impl Drop for Held {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sleep` holding `file` open as its stdin.
pub fn hold_open(file: &Path) -> Held {
    let f = std::fs::File::open(file).unwrap();
    Held(Command::new("sleep").arg("120").stdin(f).spawn().unwrap())
}

pub fn write_as(uid: u32, path: &Path, kib: usize) {
    let st = Command::new("setpriv")
        .args([
            &format!("--reuid={uid}"),
            &format!("--regid={uid}"),
            "--clear-groups",
            "dd",
            "if=/dev/urandom",
            "bs=1024",
            &format!("count={kib}"),
            "status=none",
        ])
        .arg(format!("of={}", path.display()))
        .status()
        .unwrap();
    assert!(st.success(), "setpriv dd as {uid} to {}", path.display());
}

fn mount_of<'a>(v: &'a serde_json::Value, mp: &Path) -> &'a serde_json::Value {
    v["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountpoint"] == mp.to_str().unwrap())
        .unwrap_or_else(|| panic!("{} not in {v:#}", mp.display()))
}

#[test]
fn two_owners_a_deleted_open_file_and_its_holder() {
    require_root!();
    let m = TestMount::tmpfs("size=64m,nr_inodes=1000,mode=1777");
    let theirs = m.path.join("u4242");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(4242), Some(4242)).unwrap();
    write_as(4242, &theirs.join("data"), 2048);
    write_as(0, &m.path.join("rootfile"), 3072);
    let doomed = m.path.join("deleted-but-open");
    write_as(0, &doomed, 5120);
    let child = hold_open(&doomed);
    std::fs::remove_file(&doomed).unwrap();

    let out = tmpfsctl(&["top", "--json", m.path.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["schema_version"], 3);
    assert_eq!(
        v["mounts"].as_array().unwrap().len(),
        1,
        "only the asked mount"
    );
    let mj = mount_of(&v, &m.path);
    let (size, used, _) = df_bytes(&m.path);
    let (itotal, iused) = df_inodes(&m.path);
    assert_eq!(mj["size_bytes"], size);
    assert_eq!(mj["used_bytes"], used);
    assert_eq!(mj["inodes_total"], itotal);
    assert_eq!(mj["inodes_used"], iused);

    let owner = |uid: u64| {
        mj["by_owner"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["uid"] == uid)
            .unwrap_or_else(|| panic!("uid {uid} missing: {mj:#}"))
            .clone()
    };
    let theirs_o = owner(4242);
    assert_eq!(theirs_o["bytes"], 2048 * 1024);
    assert_eq!(theirs_o["inodes"], 2, "their directory and their file");
    let root_o = owner(0);
    assert!(root_o["bytes"].as_u64().unwrap() >= 3072 * 1024);
    assert_eq!(root_o["user"], "root");
    // The deleted file is invisible to a walk: not in by_owner.
    assert!(root_o["bytes"].as_u64().unwrap() < (3072 + 5120) * 1024);

    let d = mj["by_dir"].as_array().unwrap();
    assert_eq!(d[0]["path"], theirs.to_str().unwrap());
    assert_eq!(d[0]["bytes"].as_u64().unwrap(), 2048 * 1024);

    let pid = child.0.id() as u64;
    let del = mj["deleted_open"].as_array().unwrap();
    let hit = del
        .iter()
        .find(|x| x["pid"] == pid)
        .unwrap_or_else(|| panic!("child {pid} not in deleted_open: {mj:#}"));
    assert_eq!(hit["bytes"], 5120 * 1024);
    assert_eq!(hit["fd"], 0);
    assert_eq!(hit["comm"], "sleep");
    assert_eq!(hit["path"], doomed.to_str().unwrap());
    assert_eq!(mj["deleted_open_bytes"], 5120 * 1024);
    let holder = mj["open_by"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["pid"] == pid)
        .unwrap();
    assert_eq!(holder["files"], 1);
    assert_eq!(mj["growth_bytes_per_s"], serde_json::Value::Null);
    assert_eq!(mj["time_to_full_s"], serde_json::Value::Null);
    // df's used = what the walk sees + the deleted-but-open bytes.
    assert_eq!(
        mj["visible_bytes"].as_u64().unwrap() + 5120 * 1024,
        used,
        "{mj:#}"
    );

    let text = tmpfsctl(&["top", "--once", m.path.to_str().unwrap()]);
    let s = String::from_utf8_lossy(&text.stdout);
    assert!(s.contains(&format!("by pid {pid} (sleep) fd 0")), "{s}");
    assert!(s.contains("5.00 MiB"), "{s}");
}

#[test]
fn memfd_and_sysv_segments_are_attributed() {
    require_root!();
    use std::io::Write;
    let fd =
        rustix::fs::memfd_create("tmpfsctl-it-memfd", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    let mut f = std::fs::File::from(fd);
    f.write_all(&vec![3u8; 1 << 20]).unwrap();
    let out = Command::new("ipcmk").args(["-M", "1048576"]).output();
    let shm_id: Option<u64> = out.ok().and_then(|o| {
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .last()?
            .parse()
            .ok()
    });
    let out = tmpfsctl(&["top", "--json"]);
    if let Some(id) = shm_id {
        let _ = Command::new("ipcrm").args(["-m", &id.to_string()]).status();
    }
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    let me = std::process::id() as u64;
    let mine = v["memfd"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["pid"] == me)
        .unwrap_or_else(|| panic!("our memfd missing: {:#}", v["memfd"]));
    assert_eq!(mine["bytes"], 1 << 20);
    assert!(
        mine["names"]
            .as_array()
            .unwrap()
            .contains(&"tmpfsctl-it-memfd".into())
    );
    if let Some(id) = shm_id {
        let seg = v["sysv_shm"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("segment {id} missing: {:#}", v["sysv_shm"]));
        assert_eq!(seg["bytes"], 1 << 20);
        assert_eq!(seg["attached"], 0);
        assert_eq!(seg["owner"], "root");
    } else {
        crate::skip_part!("sysv part: ipcmk not available");
    }
    let shmem = v["shmem_bytes"].as_u64().unwrap();
    let acc = v["accounted_bytes"].as_u64().unwrap();
    assert!(acc >= 1 << 20);
    assert_eq!(
        v["unattributed_bytes"].as_u64().unwrap(),
        shmem.saturating_sub(acc)
    );
    drop(f);
}

/// A memory cgroup (v1 or v2, whichever has the memory controller live),
/// removed on drop.
pub struct TestCgroup {
    pub dir: PathBuf,
    /// Path inside the hierarchy ("/tmpfsctl-it-...").
    pub rel: String,
    pub version: u8,
}

impl TestCgroup {
    pub fn new(limit: u64) -> Option<TestCgroup> {
        let name = format!("tmpfsctl-it-{}-{}", std::process::id(), rand_suffix());
        let v1 = Path::new("/sys/fs/cgroup/memory");
        let (base, version, knob) = if v1.join("memory.limit_in_bytes").exists() {
            (v1.to_path_buf(), 1, "memory.limit_in_bytes")
        } else {
            let v2 = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
                .into_iter()
                .map(PathBuf::from)
                .find(|p| {
                    std::fs::read_to_string(p.join("cgroup.subtree_control"))
                        .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"))
                })?;
            (v2, 2, "memory.max")
        };
        let dir = base.join(&name);
        std::fs::create_dir(&dir).ok()?;
        let cg = TestCgroup {
            dir,
            rel: format!("/{name}"),
            version,
        };
        std::fs::write(cg.dir.join(knob), limit.to_string()).unwrap();
        Some(cg)
    }

    /// [`TestCgroup::new`], saying on stderr why there is none: the caller
    /// then skips.
    pub fn or_skip(limit: u64) -> Option<TestCgroup> {
        let cg = TestCgroup::new(limit);
        if cg.is_none() {
            crate::skip_part!("no memory cgroup hierarchy can be written here");
        }
        cg
    }

    /// Run `sh -c script` inside the cgroup and wait for it.
    pub fn run(&self, script: &str) {
        let procs = self.dir.join("cgroup.procs");
        let st = Command::new("sh")
            .arg("-c")
            .arg(format!("echo $$ > '{}' && {script}", procs.display()))
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "{script}");
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
}

#[test]
fn a_cgroup_charged_with_tmpfs_pages_is_listed() {
    require_root!();
    let m = TestMount::tmpfs("size=128m");
    let Some(cg) = TestCgroup::or_skip(64 << 20) else {
        return;
    };
    let file = m.path.join("charged");
    cg.run(&format!(
        "dd if=/dev/zero of='{}' bs=1M count=40 status=none",
        file.display()
    ));
    let out = tmpfsctl(&["top", "--json", m.path.to_str().unwrap()]);
    let v = json(&out);
    let c = v["cgroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == cg.rel.as_str())
        .unwrap_or_else(|| panic!("{} missing: {:#}", cg.rel, v["cgroups"]));
    let shmem = c["shmem_bytes"].as_u64().unwrap();
    assert!(shmem >= 40 << 20, "{c:#}");
    assert_eq!(c["memory_limit_bytes"], 64 << 20);
    assert!(c["memory_current_bytes"].as_u64().unwrap() >= 40 << 20);
    assert_eq!(c["cgroup_version"], cg.version);
    // The pages leave the charge only when the file goes.
    std::fs::remove_file(&file).unwrap();
    let v = json(&tmpfsctl(&["top", "--json", m.path.to_str().unwrap()]));
    assert!(
        !v["cgroups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["path"] == cg.rel.as_str()),
        "{:#}",
        v["cgroups"]
    );
}

/// A /proc + /sys capture of a host whose memory controller is on the
/// other cgroup version than this machine's: v2 here.
pub fn v2_fixture() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let id = "e".repeat(64);
    let pod =
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_4444_5555.slice";
    let ctr = format!("{pod}/cri-containerd-{id}.scope");
    let files: Vec<(String, String)> = vec![
        (
            "proc/self/mountinfo".into(),
            "1 0 0:40 / / rw - tmpfs tmpfs rw,size=1024k\n\
             41 1 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
                .into(),
        ),
        (
            "proc/meminfo".into(),
            "MemTotal: 8000000 kB\nMemAvailable: 4000000 kB\nShmem: 90000 kB\n".into(),
        ),
        ("proc/4242/cgroup".into(), format!("0::{ctr}\n")),
        (
            "sys/fs/cgroup/unified/cgroup.controllers".into(),
            "cpu memory pids\n".into(),
        ),
        (
            "sys/fs/cgroup/unified/memory.stat".into(),
            "shmem 99999999\n".into(),
        ),
        (
            format!("sys/fs/cgroup/unified{pod}/memory.stat"),
            "anon 1\nshmem 62914560\n".into(),
        ),
        (
            format!("sys/fs/cgroup/unified{pod}/memory.max"),
            "max\n".into(),
        ),
        (
            format!("sys/fs/cgroup/unified{pod}/memory.current"),
            "67000000\n".into(),
        ),
        (
            format!("sys/fs/cgroup/unified{ctr}/memory.stat"),
            "shmem 62914560\n".into(),
        ),
        (
            format!("sys/fs/cgroup/unified{ctr}/memory.max"),
            "67108864\n".into(),
        ),
        (
            format!("sys/fs/cgroup/unified{ctr}/memory.current"),
            "66000000\n".into(),
        ),
        (
            "sys/fs/cgroup/unified/system.slice/idle.service/memory.stat".into(),
            "shmem 0\n".into(),
        ),
        ("tmp/.keep".into(), String::new()),
    ];
    for (p, t) in files {
        let f = d.path().join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, t).unwrap();
    }
    d
}

#[test]
fn cgroup_v2_fixture_names_pod_and_container() {
    let d = v2_fixture();
    let out = tmpfsctl(&["--sysroot", d.path().to_str().unwrap(), "top", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    let cgs = v["cgroups"].as_array().unwrap();
    assert_eq!(
        cgs.len(),
        2,
        "root and shmem-free cgroups left out: {cgs:#?}"
    );
    let ctr = cgs
        .iter()
        .find(|c| c["memory_limit_bytes"] == 67108864)
        .unwrap();
    assert_eq!(ctr["shmem_bytes"], 62914560);
    assert_eq!(ctr["cgroup_version"], 2);
    assert_eq!(ctr["pod"], "0a1b2c3d-4444-5555");
    assert_eq!(ctr["container"], "e".repeat(64));
    assert_eq!(ctr["memory_current_bytes"], 66000000);
    let pod = cgs.iter().find(|c| c["container"].is_null()).unwrap();
    assert_eq!(
        pod["memory_limit_bytes"],
        serde_json::Value::Null,
        "max = no limit"
    );
    assert_eq!(v["shmem_bytes"], 90000 * 1024);
}

#[test]
fn hostile_names_are_escaped_in_the_table_and_exact_in_json() {
    require_root!();
    let m = TestMount::tmpfs("size=8m");
    let evil = m.path.join("a\x1b]0;pwned\x07dir");
    std::fs::create_dir(&evil).unwrap();
    std::fs::write(evil.join("f"), vec![1u8; 100_000]).unwrap();
    let out = tmpfsctl(&[
        "top",
        "--once",
        "--color",
        "never",
        m.path.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(!out.stdout.contains(&0x1b), "raw escape in human output");
    assert!(String::from_utf8_lossy(&out.stdout).contains("a\\x1b]0;pwned\\x07dir"));
    let v = json(&tmpfsctl(&["top", "--json", m.path.to_str().unwrap()]));
    assert_eq!(
        mount_of(&v, &m.path)["by_dir"][0]["path"],
        evil.to_str().unwrap()
    );
}

#[test]
fn bad_arguments_exit_2_before_measuring() {
    let out = tmpfsctl(&["top", "--once", "/no/such/place"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/place"));
    let out = tmpfsctl(&["top", "-d", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("0.1 to 3600"));
}

#[test]
fn refreshing_view_quits_on_q_and_restores_the_terminal() {
    require_root!();
    if Command::new("script").arg("--version").output().is_err() {
        crate::skip!("script(1) not available for a pseudo-terminal");
    }
    // `script` gives top a terminal; q arrives on its stdin after the first frame.
    let bin = env!("CARGO_BIN_EXE_tmpfsctl");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "(sleep 1; printf q) | script -qfec '{bin} top -d 0.2 --color never; stty -a' /dev/null"
        ))
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("q quits"), "{s}");
    assert!(s.contains("\x1b[?25h"), "cursor shown again");
    assert!(
        s.contains(" icanon") && s.contains(" echo"),
        "terminal restored: {s}"
    );
}
