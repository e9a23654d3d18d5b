//! cgroups linked to what they hold: `top`'s cgroup rows and `explain`'s
//! cgroup fix name the files (and their mounts) that a cgroup's processes
//! hold open on tmpfs, on a real memory cgroup.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{TestMount, json, stdout, tmpfsctl};
use crate::require_root;
use crate::top::{Held, TestCgroup};

/// A shell in `cg` that writes `mib` MiB to `file` and then sleeps holding
/// it open on fd 0; returns once it holds it.
fn hold_in_cgroup(cg: &TestCgroup, file: &Path, mib: u32) -> Held {
    let script = format!(
        "echo $$ > '{}' && dd if=/dev/zero of=\"$1\" bs=1M count={mib} status=none && exec sleep 120 < \"$1\"",
        cg.dir.join("cgroup.procs").display()
    );
    let child = Command::new("sh")
        .args(["-c", &script, "sh"])
        .arg(file)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let held = Held(child);
    let fd0 = format!("/proc/{}/fd/0", held.0.id());
    for _ in 0..200 {
        if std::fs::read_link(&fd0).is_ok_and(|t| t == file) {
            return held;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the shell in {} never held {}", cg.rel, file.display());
}

#[test]
fn a_cgroup_row_and_explains_fix_name_the_file_its_process_holds() {
    require_root!();
    let m = TestMount::tmpfs("size=256m");
    let Some(cg) = TestCgroup::or_skip(64 << 20) else {
        return;
    };
    let mp = m.path.to_str().unwrap();
    // Written and closed: charged to the cgroup, held by nobody.
    cg.run(&format!(
        "dd if=/dev/zero of='{}' bs=1M count=8 status=none",
        m.path.join("closed").display()
    ));
    let file = m.path.join("held by job");
    let held = hold_in_cgroup(&cg, &file, 50);
    let pid = held.0.id();

    let v = json(&tmpfsctl(&["top", "--json", mp]));
    assert_eq!(v["schema_version"], 3);
    let row = v["cgroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == cg.rel.as_str())
        .unwrap_or_else(|| panic!("{} missing: {:#}", cg.rel, v["cgroups"]));
    assert_eq!(row["processes"], 1, "{row:#}");
    let f = &row["held_files"][0];
    assert_eq!(f["path"], file.to_str().unwrap(), "{row:#}");
    assert_eq!(f["mountpoint"], mp);
    assert!(f["bytes"].as_u64().unwrap() >= 50 << 20, "{f:#}");
    assert_eq!(f["held_by"][0]["pid"], pid);
    assert_eq!(f["held_by"][0]["fd"], 0);
    assert_eq!(f["held_by"][0]["comm"], "sleep");
    assert_eq!(row["held_mounts"][0]["mountpoint"], mp, "{row:#}");
    assert_eq!(
        row["held_mounts"][0]["files"], 1,
        "the closed file is held by no one"
    );

    let text = stdout(&tmpfsctl(&["top", "--once", mp]));
    let line = format!(
        "{} holds on {mp} (1 file, 50.0 MiB): {}",
        cg.rel,
        file.display()
    );
    assert!(text.contains(&line), "{line:?} not in\n{text}");
    assert!(
        text.contains(&format!("open by pid {pid} (sleep) fd 0")),
        "{text}"
    );
    assert!(
        text.contains(&format!("pid {pid} (sleep)")),
        "belongs to\n{text}"
    );

    let out = tmpfsctl(&["explain", "--json", mp, "--cgroup", &cg.rel]);
    let e = json(&out);
    assert_eq!(out.status.code(), Some(1), "{e:#}");
    assert_eq!(e["causes"][0]["kind"], "cgroup_memory", "{e:#}");
    let fix = e["causes"][0]["fix"].as_str().unwrap();
    let truncate = format!(": > /proc/{pid}/fd/0");
    for want in [
        file.to_str().unwrap(),
        &format!("on {mp}"),
        &format!("open by pid {pid} (sleep) fd 0"),
        &truncate,
        &format!("`rm '{}'`", file.display()),
        "8.00 MiB more of its shmem is in files its processes wrote and closed",
    ] {
        assert!(fix.contains(want), "{want:?} not in the fix: {fix}");
    }
    assert_eq!(
        e["cgroups"][0]["held_files"][0]["path"],
        file.to_str().unwrap()
    );

    // The fix works as printed: the cgroup no longer runs out.
    let st = Command::new("sh").args(["-c", &truncate]).status().unwrap();
    assert!(st.success(), "{truncate}");
    let (code, after) = {
        let o = tmpfsctl(&["explain", "--json", mp, "--cgroup", &cg.rel]);
        (o.status.code(), json(&o))
    };
    assert_eq!(code, Some(0), "{after:#}");
    assert!(
        !after["causes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["kind"] == "cgroup_memory" && c["binds"] == true),
        "{after:#}"
    );
    drop(held);
}

#[test]
fn explain_names_a_file_the_cgroup_only_maps() {
    require_root!();
    let m = TestMount::tmpfs("size=256m");
    let Some(cg) = TestCgroup::or_skip(64 << 20) else {
        return;
    };
    let mp = m.path.to_str().unwrap();
    let file = m.path.join("segment");
    // Like POSIX shared memory: written, mapped, its fd closed.
    let script = format!(
        "echo $$ > '{}' && exec python3 -c '\
import mmap, os, sys, time\n\
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n\
os.ftruncate(fd, 56 << 20)\n\
m = mmap.mmap(fd, 56 << 20)\n\
os.close(fd)\n\
for _ in range(56): m.write(b\"x\" * (1 << 20))\n\
print(\"ready\", flush=True)\n\
time.sleep(120)' \"$1\"",
        cg.dir.join("cgroup.procs").display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &script, "sh"])
        .arg(&file)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    let mut held = Held(child);
    // Not a skip: python3 is installed and the kernel maps files; a child
    // that never got ready (the cgroup's OOM killer) is this test failing.
    if ready.trim() != "ready" {
        panic!(
            "python3 never mapped the file in the 64 MiB cgroup: {:?}",
            held.0.wait()
        );
    }
    let pid = held.0.id();
    let out = tmpfsctl(&["explain", "--json", mp, "--cgroup", &cg.rel]);
    let e = json(&out);
    assert_eq!(e["causes"][0]["kind"], "cgroup_memory", "{e:#}");
    let fix = e["causes"][0]["fix"].as_str().unwrap();
    let want = format!(
        "{} (56.0 MiB on {mp}, mapped by pid {pid} (python3): `rm {}`",
        file.display(),
        file.display()
    );
    assert!(fix.contains(&want), "{want:?} not in the fix: {fix}");
    let f = &e["cgroups"][0]["held_files"][0];
    assert_eq!(f["held_by"][0]["fd"], serde_json::Value::Null, "{f:#}");
    drop(held);
}
