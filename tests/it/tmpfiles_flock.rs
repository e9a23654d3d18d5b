//! A BSD flock on a directory keeps systemd-tmpfiles' clean out of it
//! (tmpfiles.d(5)): explain says so while the lock is held, and the real
//! `systemd-tmpfiles --clean` agrees, before and after the holder is gone.

use std::process::{Child, Command};

use crate::tmpfiles_real::{Scratch, clean_matches, explain, have_systemd_tmpfiles};

/// `flock --no-fork DIR sleep 600`: the sleep itself holds the lock, so
/// killing it (by its PID) lets the lock go.
struct Holder(Child);

impl Holder {
    fn lock(dir: &str) -> Option<Holder> {
        let child = Command::new("flock")
            .args(["--no-fork", dir, "sleep", "600"])
            .spawn()
            .ok()?;
        let h = Holder(child);
        // Wait (not a timing assertion) until the kernel lists the lock.
        let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(dir).unwrap());
        let want = format!(" {} ", h.0.id());
        for _ in 0..500 {
            let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
            if locks.lines().any(|l| {
                l.contains("FLOCK") && l.contains(&want) && l.contains(&format!(":{ino} "))
            }) {
                return Some(h);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("flock {dir} took no lock");
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_flocked_directory_is_left_alone_while_the_lock_is_held() {
    if !have_systemd_tmpfiles() {
        return;
    }
    let has_flock = Command::new("flock").arg("--version").output().is_ok();
    if !has_flock {
        crate::skip!("flock(1) is not installed");
    }
    let mut s = Scratch::new();
    for f in ["l/held/old", "l/held/deeper/old", "l/free/old", "top/old"] {
        s.make(f);
        s.age(f, "-m", "3 days ago");
    }
    let conf = s.conf(
        "lock.conf",
        &format!("d {} - - - m:1d\nd {} - - - m:1d\n", s.p("l"), s.p("top")),
    );
    let dir = conf.parent().unwrap().to_path_buf();
    let held = s.p("l/held");
    let h = Holder::lock(&held).unwrap();
    // systemd 252 locks each directory below the rule's before entering
    // it, not the rule's own directory: a lock on `top` protects nothing.
    let h_top = Holder::lock(&s.p("top")).unwrap();

    let v = explain(&[&dir], &s.p("l/held/old"));
    let p = v["flock_protected"].as_array().unwrap();
    assert_eq!(p.len(), 1, "{v:#}");
    assert_eq!(p[0]["path"], held.as_str());
    assert_eq!(p[0]["pid"], h.0.id());
    assert_eq!(v["will_be_cleaned"], serde_json::json!([]), "{v:#}");
    let text = String::from_utf8_lossy(
        &crate::common::tmpfsctl(&[
            "explain",
            "--tmpfiles-dir",
            dir.to_str().unwrap(),
            &s.p("l/held/old"),
        ])
        .stdout,
    )
    .into_owned();
    assert!(text.contains("holds a flock on it"), "{text}");
    let top = explain(&[&dir], &s.p("top"));
    assert_eq!(top["flock_protected"], serde_json::json!([]), "{top:#}");

    let said = clean_matches(&s, &conf);
    assert!(
        said.contains(&s.p("l/free/old")) && said.contains(&s.p("top/old")),
        "{said:#?}"
    );
    assert!(!said.iter().any(|p| p.starts_with(&held)), "{said:#?}");

    // The holder gone, the lock goes, and so do the old files.
    drop(h);
    drop(h_top);
    let v = explain(&[&dir], &s.p("l/held/old"));
    assert_eq!(v["flock_protected"], serde_json::json!([]), "{v:#}");
    let said = clean_matches(&s, &conf);
    assert!(
        said.contains(&s.p("l/held/old")) && said.contains(&s.p("l/held/deeper/old")),
        "{said:#?}"
    );
}
