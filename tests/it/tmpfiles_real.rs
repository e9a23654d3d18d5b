//! explain's account of what systemd-tmpfiles deletes, held against the real
//! thing: a scratch tree with files of chosen ages and a scratch set of
//! rules; explain is asked first, then `systemd-tmpfiles --clean` (the
//! timer) or `--remove --boot` (the boot) runs on the same tree, and what
//! went must be exactly what explain named.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{json, tmpfsctl};

pub struct Scratch {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    /// Every path made, deepest last.
    pub made: Vec<PathBuf>,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let root = dir.path().to_path_buf();
        Scratch {
            _dir: dir,
            root,
            made: Vec::new(),
        }
    }

    pub fn p(&self, rel: &str) -> String {
        self.root.join(rel).to_str().unwrap().to_string()
    }

    /// A file (or, ending in '/', a directory) and its parents.
    pub fn make(&mut self, rel: &str) {
        let p = self.root.join(rel.trim_end_matches('/'));
        for a in p.ancestors().take_while(|a| *a != self.root) {
            if !self.made.iter().any(|m| m == a) && a != p {
                self.made.push(a.to_path_buf());
            }
        }
        if rel.ends_with('/') {
            std::fs::create_dir_all(&p).unwrap();
        } else {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"data").unwrap();
        }
        self.made.push(p);
    }

    /// Set a timestamp: `which` is "-a" (atime) or "-m" (mtime). A file's
    /// ctime and birth time cannot be set: they stay at "now".
    pub fn age(&self, rel: &str, which: &str, when: &str) {
        let ok = Command::new("touch")
            .args(["-h", which, "-d", when])
            .arg(self.root.join(rel.trim_end_matches('/')))
            .status()
            .unwrap()
            .success();
        assert!(ok, "touch {rel}");
    }

    pub fn conf(&self, name: &str, text: &str) -> PathBuf {
        let d = self.root.join("conf");
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join(name);
        std::fs::write(&f, text).unwrap();
        f
    }

    /// What of the made paths exists now (stat only: no directory is read,
    /// so no access time moves).
    pub fn existing(&self) -> BTreeSet<String> {
        self.made
            .iter()
            .filter(|p| p.symlink_metadata().is_ok())
            .map(|p| p.to_str().unwrap().to_string())
            .collect()
    }
}

pub fn explain(dirs: &[&Path], path: &str) -> serde_json::Value {
    let mut args = vec!["explain".to_string(), "--json".into()];
    for d in dirs {
        args.push("--tmpfiles-dir".into());
        args.push(d.to_str().unwrap().into());
    }
    args.push(path.into());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    json(&tmpfsctl(&a))
}

pub fn cleaned(v: &serde_json::Value) -> BTreeSet<String> {
    v["will_be_cleaned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

pub fn have_systemd_tmpfiles() -> bool {
    let ok = Command::new("systemd-tmpfiles")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        crate::skip_part!(
            "systemd-tmpfiles is not installed; nothing real to hold explain against"
        );
    }
    ok
}

/// Run it on one config file; its stderr.
pub fn systemd_tmpfiles(args: &[&str], conf: &Path, may_fail: bool) -> String {
    let out = Command::new("systemd-tmpfiles")
        .args(args)
        .arg(conf)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        may_fail || out.status.success(),
        "systemd-tmpfiles {args:?}: {err}"
    );
    err
}

/// Ask explain about the scratch root, run the real clean, and check that
/// what went is exactly what explain named. Returns what explain named.
pub fn clean_matches(s: &Scratch, conf: &Path) -> BTreeSet<String> {
    let v = explain(&[conf.parent().unwrap()], s.root.to_str().unwrap());
    let said = cleaned(&v);
    let before = s.existing();
    systemd_tmpfiles(&["--clean"], conf, false);
    let after = s.existing();
    let gone: BTreeSet<String> = before.difference(&after).cloned().collect();
    assert_eq!(
        said, gone,
        "explain named {said:#?}\nsystemd-tmpfiles --clean deleted {gone:#?}"
    );
    said
}

#[test]
fn age_by_letters_decide_as_systemd_tmpfiles_does() {
    if !have_systemd_tmpfiles() {
        return;
    }
    let mut s = Scratch::new();
    for f in [
        "m/old",
        "m/new",
        "m/old-atime-only",
        "m/.hidden-old",
        "m/sub/old",
        "a/old-atime",
        "a/old-mtime",
        "def/old",
        "tilde/old",
        "tilde/d/old",
        "dm/olddir/",
        "da/olddir/",
        "da/newdir/",
    ] {
        s.make(f);
    }
    let three = "3 days ago";
    for f in [
        "m/old",
        "m/.hidden-old",
        "m/sub/old",
        "a/old-mtime",
        "tilde/old",
        "tilde/d/old",
    ] {
        s.age(f, "-m", three);
    }
    for f in ["m/old-atime-only", "a/old-atime"] {
        s.age(f, "-a", three);
    }
    for f in ["def/old", "m/sub/", "dm/olddir/", "da/olddir/"] {
        s.age(f, "-m", three);
        s.age(f, "-a", three);
    }
    let conf = s.conf(
        "age.conf",
        &format!(
            "d {} - - - m:1d\nd {} - - - a:1d\nd {} - - - 1d\nd {} - - - ~m:1d\nd {} - - - M:1d\nd {} - - - A:1d\n",
            s.p("m"),
            s.p("a"),
            s.p("def"),
            s.p("tilde"),
            s.p("dm"),
            s.p("da"),
        ),
    );
    let said = clean_matches(&s, &conf);
    for f in [
        "m/old",
        "m/.hidden-old",
        "m/sub/old",
        "a/old-atime",
        "tilde/d/old",
        "dm/olddir",
        "da/olddir",
    ] {
        assert!(
            said.contains(&s.p(f)),
            "{f} is old by its letters: {said:#?}"
        );
    }
    for f in [
        "m/new",
        "m/old-atime-only",
        "a/old-mtime",
        "def/old",
        "tilde/old",
        "m/sub",
        "da/newdir",
    ] {
        assert!(
            !said.contains(&s.p(f)),
            "{f} is young by its letters: {said:#?}"
        );
    }
    // The letters are shown as systemd reads them: without upper-case
    // letters, directories keep the default (atime, btime, mtime).
    let v = explain(&[conf.parent().unwrap()], &s.p("m"));
    let rule = &v["tmpfiles_rules"][0];
    assert_eq!(rule["age"], "m:1d");
    assert_eq!(
        rule["age_by"],
        serde_json::json!(["mtime", "dir atime", "dir btime", "dir mtime"])
    );
}

#[test]
fn x_and_big_x_and_lines_of_their_own_exclude_as_systemd_tmpfiles_does() {
    if !have_systemd_tmpfiles() {
        return;
    }
    let mut s = Scratch::new();
    let old = [
        "ex/old",
        "ex/keepme",
        "ex/keepdir/old",
        "ex/shallow/old",
        "ex/dots/plain-old",
        "ex/dots/.dot-old",
        "ex/own/old",
        "ex/file-rule",
        "boot/old",
    ];
    for f in old {
        s.make(f);
    }
    for f in old {
        s.age(f, "-m", "3 days ago");
    }
    let conf = s.conf(
        "ex.conf",
        &format!(
            "d {ex} - - - m:1d\nx {ex}/keep*\nX {ex}/shallow\nx {ex}/dots/*\nd {ex}/own - - - m:30d\nf {ex}/file-rule\nd! {boot} - - - m:1d\n",
            ex = s.p("ex"),
            boot = s.p("boot"),
        ),
    );
    let said = clean_matches(&s, &conf);
    // x keeps a path and all below; X keeps the directory, and its contents
    // are aged with the age around it but by the default timestamps (a
    // file's ctime is now); a wildcard leaves a leading dot alone; a line of
    // its own takes a path out of the clean above it; a `!` line is not
    // read by the timer's clean.
    for f in ["ex/old", "ex/dots/.dot-old"] {
        assert!(said.contains(&s.p(f)), "{f}: {said:#?}");
    }
    for f in [
        "ex/keepme",
        "ex/keepdir/old",
        "ex/shallow/old",
        "ex/dots/plain-old",
        "ex/own/old",
        "ex/file-rule",
        "boot/old",
    ] {
        assert!(!said.contains(&s.p(f)), "{f}: {said:#?}");
    }
}

#[test]
fn boot_removal_is_what_systemd_tmpfiles_remove_deletes() {
    if !have_systemd_tmpfiles() {
        return;
    }
    let mut s = Scratch::new();
    for f in [
        "D/a",
        "D/keep",
        "D/sub/b",
        "Dboot/c",
        "R-one/x",
        "R-two/y",
        "r-file",
        "r-full/inner",
        "r-empty/",
        "plain/z",
    ] {
        s.make(f);
    }
    let conf = s.conf(
        "boot.conf",
        &format!(
            "D {D} - - - -\nx {D}/keep\nD! {Db} - - - -\nR {root}/R-*\nr {root}/r-file\nr {root}/r-full\nr {root}/r-empty\n",
            D = s.p("D"),
            Db = s.p("Dboot"),
            root = s.root.display(),
        ),
    );
    let dir = conf.parent().unwrap().to_path_buf();
    let asked: Vec<(String, bool)> = s
        .made
        .iter()
        .map(|p| p.to_str().unwrap().to_string())
        .map(|p| {
            let v = explain(&[&dir], &p);
            (p, v["will_be_removed_at_boot"].as_bool().unwrap())
        })
        .collect();
    // As systemd-tmpfiles-setup.service runs it. `r` on a full directory
    // fails (rmdir: not empty), and says so.
    let err = systemd_tmpfiles(&["--remove", "--boot"], &conf, true);
    assert!(err.contains("r-full"), "{err}");
    for (p, said) in &asked {
        let gone = Path::new(p).symlink_metadata().is_err();
        if *p == s.p("D") || *p == s.p("Dboot") {
            // D empties its directory and keeps it.
            assert!(*said && !gone, "{p}");
            assert_eq!(std::fs::read_dir(p).unwrap().count(), 0, "{p} emptied");
            continue;
        }
        assert_eq!(
            *said, gone,
            "{p}: explain said removed at boot: {said}; gone after --remove: {gone}"
        );
    }
    let said = |rel: &str| asked.iter().find(|(p, _)| *p == s.p(rel)).unwrap().1;
    assert!(said("D/keep"), "x does not protect from D at boot");
    assert!(
        !said("r-full") && !said("r-full/inner"),
        "r leaves a full directory"
    );
    assert!(said("r-empty") && said("r-file") && said("R-two/y"));
    assert!(!said("plain/z"));
}

/// Run `systemd-tmpfiles --clean` with its own configuration directories
/// replaced by `etc` and `usr` (in a private mount namespace), so that its
/// choice between same-named files is the real one.
fn clean_with_dirs(s: &Scratch, etc: &Path, usr: &Path) -> bool {
    let empty = s.root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let mut script = format!(
        "set -e; mount --bind '{}' /etc/tmpfiles.d; mount --bind '{}' /usr/lib/tmpfiles.d; ",
        etc.display(),
        usr.display(),
    );
    // The other two directories, where they exist, hold nothing here.
    for d in ["/run/tmpfiles.d", "/usr/local/lib/tmpfiles.d"] {
        if Path::new(d).is_dir() {
            script.push_str(&format!("mount --bind '{}' {d}; ", empty.display()));
        }
    }
    script.push_str("exec systemd-tmpfiles --clean");
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output();
    match out {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("unshare failed") || err.contains("Operation not permitted"),
                "{err}"
            );
            crate::skip_part!("the real half: no private mount namespace here: {err}");
            false
        }
        Err(e) => {
            crate::skip_part!("the real half: unshare: {e}");
            false
        }
    }
}

#[test]
fn the_file_that_wins_is_the_one_systemd_tmpfiles_reads() {
    if !have_systemd_tmpfiles() {
        return;
    }
    if !Path::new("/etc/tmpfiles.d").is_dir() || !Path::new("/usr/lib/tmpfiles.d").is_dir() {
        crate::skip!("no /etc/tmpfiles.d or /usr/lib/tmpfiles.d to stand in for");
    }
    let mut s = Scratch::new();
    for f in ["o/old", "o2/old"] {
        s.make(f);
        s.age(f, "-m", "3 days ago");
    }
    let (etc, usr) = (s.root.join("etc"), s.root.join("usr"));
    for d in [&etc, &usr] {
        std::fs::create_dir_all(d).unwrap();
    }
    // same.conf: /etc's hides /usr/lib's. a.conf sorts before b.conf, so
    // its line for o2 comes first and b.conf's conflicting one is dropped.
    let w = |d: &Path, n: &str, t: String| std::fs::write(d.join(n), t).unwrap();
    w(&etc, "same.conf", format!("d {} - - - m:1d\n", s.p("o")));
    w(&usr, "same.conf", format!("d {} - - - m:30d\n", s.p("o")));
    w(&usr, "a.conf", format!("d {} - - - m:30d\n", s.p("o2")));
    w(&etc, "b.conf", format!("d {} - - - m:1d\n", s.p("o2")));

    let v = explain(&[&etc, &usr], s.root.to_str().unwrap());
    let said = cleaned(&v);
    assert_eq!(said, BTreeSet::from([s.p("o/old")]), "{v:#}");
    let o = explain(&[&etc, &usr], &s.p("o/old"));
    let rules = o["tmpfiles_rules"].as_array().unwrap();
    let hidden = rules.iter().find(|r| r["age"] == "m:30d").unwrap();
    assert!(
        hidden["ignored"]
            .as_str()
            .unwrap()
            .contains("etc/same.conf"),
        "{o:#}"
    );
    let o2 = explain(&[&etc, &usr], &s.p("o2/old"));
    let dropped = o2["tmpfiles_rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["age"] == "m:1d")
        .unwrap();
    assert!(
        dropped["ignored"].as_str().unwrap().contains("a.conf"),
        "{o2:#}"
    );

    let before = s.existing();
    if !clean_with_dirs(&s, &etc, &usr) {
        return;
    }
    let gone: BTreeSet<String> = before.difference(&s.existing()).cloned().collect();
    assert_eq!(said, gone);
}

/// On a tmpfs explain also walks the mount (largest files, consumers): that
/// walk must not touch a directory's access time either, or asking would
/// keep systemd-tmpfiles from removing an old directory it ages by atime.
#[test]
fn asking_about_a_tmpfs_does_not_make_its_directories_look_used() {
    crate::require_root!();
    if !have_systemd_tmpfiles() {
        return;
    }
    let m = crate::common::TestMount::tmpfs("size=8m");
    let mp = m.path.to_str().unwrap();
    let old_dir = m.path.join("job/olddir");
    std::fs::create_dir_all(&old_dir).unwrap();
    for d in [&old_dir, &m.path.join("job")] {
        let ok = Command::new("touch")
            .args(["-a", "-m", "-d", "3 days ago"])
            .arg(d)
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    let atime = |p: &Path| std::os::unix::fs::MetadataExt::atime(&p.metadata().unwrap());
    let before = atime(&old_dir);
    let conf_dir = tempfile::tempdir().unwrap();
    let conf = conf_dir.path().join("job.conf");
    std::fs::write(&conf, format!("d {mp}/job - - - A:1d\n")).unwrap();

    let v = explain(&[conf_dir.path()], mp);
    assert_eq!(
        atime(&old_dir),
        before,
        "explain changed the atime of {old_dir:?}"
    );
    let said = cleaned(&v);
    assert_eq!(
        said,
        BTreeSet::from([old_dir.to_str().unwrap().to_string()]),
        "{v:#}"
    );
    systemd_tmpfiles(&["--clean"], &conf, false);
    assert!(
        !old_dir.exists(),
        "systemd-tmpfiles --clean removed it, as explain said"
    );
}
