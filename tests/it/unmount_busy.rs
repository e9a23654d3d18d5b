//! One busy message for every command that unmounts: a real process holds a
//! real tmpfs, and `persist disable` (which detaches on purpose) and
//! `revert` (which refuses) both name it in the same words; once it is gone the
//! unmount goes through.

use std::path::Path;
use std::process::{Child, Command, Output};

use crate::common::{bin, findmnt_fstype, s, stderr, tmpfsctl};
use crate::mounts::{Cleanup, apply_live};
use crate::require_root;

/// A `sleep` whose cwd is inside a mount; killed (by its pid) and reaped on
/// drop, also when an assertion failed first.
struct Holder(Child);

impl Holder {
    fn in_dir(dir: &Path) -> Holder {
        Holder(
            Command::new("sleep")
                .arg("600")
                .current_dir(dir)
                .spawn()
                .expect("spawn sleep"),
        )
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// `e` names this holder, and in the words every command uses.
    fn named_in(&self, e: &str) {
        assert!(
            e.contains(&self.pid().to_string()),
            "the holder (pid {}) is not named:\n{e}",
            self.pid()
        );
        let line = format!("held by pid {} sleep (cwd)", self.pid());
        assert!(e.contains(&line), "want {line:?} in:\n{e}");
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fresh directory on disk (persist refuses a store on a tmpfs), named
/// for these tests.
fn fresh_root() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tmpfsctl-it-umount-")
        .tempdir_in("/var/tmp")
        .unwrap()
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        stderr(o)
    )
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", show(o));
}

#[test]
fn persist_disable_and_revert_name_the_same_holder() {
    require_root!();
    let root = fresh_root();
    let no_fstab = root.path().join("no-fstab");

    // `persist disable`: its data is on disk first, then the tmpfs is
    // detached on purpose; who still holds it is named the same way.
    let persisted = root.path().join("umount persisted");
    std::fs::create_dir(&persisted).unwrap();
    std::fs::write(persisted.join("kept"), b"data").unwrap();
    let _m2 = Cleanup(persisted.clone());
    let registry = root.path().join("registry.json");
    let persist = |args: &[&str]| {
        bin()
            .env("TMPFSCTL_PERSIST_REGISTRY", &registry)
            .args(args)
            .output()
            .unwrap()
    };
    let store = root.path().join("store");
    ok(&persist(&[
        "persist",
        "enable",
        s(&persisted),
        "--store",
        s(&store),
        "--size",
        "16M",
        "--boot",
        "none",
        "--yes",
    ]));
    assert_eq!(findmnt_fstype(&persisted).as_deref(), Some("tmpfs"));
    let h2 = Holder::in_dir(&persisted);
    let out = persist(&["persist", "disable", s(&persisted), "--yes", "--json"]);
    ok(&out);
    let e = stderr(&out);
    h2.named_in(&e);
    let j = crate::common::json(&out);
    assert!(
        j.to_string().contains(&format!("\"pid\":{}", h2.pid())),
        "the JSON report names the holder too: {j}"
    );
    assert_eq!(findmnt_fstype(&persisted), None);
    assert_eq!(std::fs::read(persisted.join("kept")).unwrap(), b"data");
    drop(h2);

    // `revert` of an applied mount: a checked unmount, refused while busy.
    let applied = root.path().join("umount applied");
    std::fs::create_dir(&applied).unwrap();
    let _m1 = Cleanup(applied.clone());
    apply_live(&applied, "8M");
    let h1 = Holder::in_dir(&applied);
    let revert = || tmpfsctl(&["revert", s(&applied), "--fstab", s(&no_fstab), "--yes"]);
    let out = revert();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    h1.named_in(&e);
    assert!(
        e.contains("`fuser -vm '") && e.contains("--lazy"),
        "a command safe to paste and the other way out:\n{e}"
    );
    assert_eq!(findmnt_fstype(&applied).as_deref(), Some("tmpfs"));

    // Holder gone: the same revert goes through.
    drop(h1);
    let out = revert();
    ok(&out);
    assert_eq!(findmnt_fstype(&applied), None, "{}", show(&out));
}

/// A process that keeps the mount busy only through a mapping (here the
/// program it runs, copied onto the tmpfs; its cwd is `/` and it has no fd
/// there): the kernel refuses the unmount, and the refusal names it.
#[test]
fn revert_names_a_holder_that_only_maps_a_file() {
    require_root!();
    let root = fresh_root();
    let no_fstab = root.path().join("no-fstab");
    let dir = root.path().join("umount mapped");
    std::fs::create_dir(&dir).unwrap();
    let _m = Cleanup(dir.clone());
    apply_live(&dir, "16M");
    let exe = dir.join("sleep");
    std::fs::copy("/bin/sleep", &exe).unwrap();
    // Another test thread forking while the copy was open for writing makes
    // exec fail with ETXTBSY for a moment.
    let mut tries = 0;
    let child = loop {
        match Command::new(&exe).arg("600").current_dir("/").spawn() {
            Ok(c) => break c,
            Err(e) if e.raw_os_error() == Some(26) && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("spawn {}: {e}", exe.display()),
        }
    };
    let h = Holder(child);
    let revert = || {
        tmpfsctl(&[
            "revert",
            s(&dir),
            "--fstab",
            s(&no_fstab),
            "--discard",
            "--yes",
        ])
    };
    let out = revert();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        e.contains(&h.pid().to_string()),
        "the holder (pid {}) is not named:\n{e}",
        h.pid()
    );
    let line = format!("held by pid {} sleep (map: {})", h.pid(), exe.display());
    assert!(e.contains(&line), "want {line:?} in:\n{e}");
    assert_eq!(findmnt_fstype(&dir).as_deref(), Some("tmpfs"));
    drop(h);
    let out = revert();
    ok(&out);
    assert_eq!(findmnt_fstype(&dir), None, "{}", show(&out));
}
