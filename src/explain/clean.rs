//! What systemd-tmpfiles will do to a path: the lines that concern it,
//! which of them systemd reads (a same-named file in an earlier directory
//! hides a later one; a later line that conflicts with an earlier one for
//! the same path is dropped), what the next timer's `--clean` deletes there
//! (`age.rs`), what the boot's `--remove` deletes, and the directory flocks
//! that keep a clean away.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::age::{self, Clean};
use crate::sys::procfd::{self, Scan};
use crate::sys::tmpfiles::{self, Config, Rule, glob_match, is_under};
use crate::sys::{Sysroot, proc};

#[derive(Debug, Clone, Serialize)]
pub struct RuleOut {
    #[serde(rename = "type")]
    pub kind: String,
    pub path: String,
    /// Null for an exclusion (`x`, `X`) or a rule without age.
    pub age_s: Option<u64>,
    /// The age as written in the rule ("10d", "am:10d"); null without one.
    pub age: Option<String>,
    /// The timestamps the age is judged by ("atime", "mtime", "dir atime"...).
    pub age_by: Option<Vec<String>>,
    /// `D`, `R`, `r`: what it covers is removed at every boot
    /// (`systemd-tmpfiles --remove` in systemd-tmpfiles-setup.service).
    pub removes_at_boot: bool,
    /// `!`: read at boot only; the timer's clean ignores it.
    pub boot_only: bool,
    /// Why systemd does not use this line (null when it does): a same-named
    /// file hides its file, or an earlier line for the path conflicts.
    pub ignored: Option<String>,
    pub source: String,
    pub line: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct OpenBy {
    pub pid: u32,
    pub comm: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cleaned {
    pub path: String,
    /// Seconds since the newest timestamp the rule looks at.
    pub age_s: u64,
    pub bytes: u64,
    /// The rule's age: older than this is deleted.
    pub rule_age_s: u64,
    /// Processes holding it open right now (they keep the data; the name goes).
    pub open_by: Vec<OpenBy>,
}

/// A directory whose contents the clean skips while a process holds a
/// BSD flock on it (tmpfiles.d(5)).
#[derive(Debug, Clone, Serialize)]
pub struct FlockHeld {
    pub path: String,
    pub pid: u32,
    pub comm: String,
}

/// Everything tmpfiles does to one path.
pub struct Answer {
    pub rules: Vec<RuleOut>,
    pub cleaned: Vec<Cleaned>,
    pub removed_at_boot_by: Option<String>,
    pub flock_protected: Vec<FlockHeld>,
}

/// The answer for `here` from the `*.conf` files in `dirs`.
pub fn answer(root: &Sysroot, dirs: &[PathBuf], here: &str, scan: &Scan, now_ns: i128) -> Answer {
    let (rules, _) = tmpfiles::load(root, dirs);
    // The timer runs `systemd-tmpfiles --clean`; the boot runs
    // `--create --remove --boot --exclude-prefix=/dev`.
    let timer = Config::new(&rules, false);
    let boot = Config::new(&rules, true);
    let c = Clean::new(root, &timer, here, now_ns).run();
    let cleaned = c
        .doomed
        .iter()
        .map(|d| Cleaned {
            path: d.path.clone(),
            age_s: d.age_s,
            bytes: d.bytes,
            rule_age_s: d.rule_age_s,
            open_by: procfd::holders(root, scan, d.dev, d.ino)
                .into_iter()
                .map(|(pid, comm)| OpenBy { pid, comm })
                .collect(),
        })
        .collect();
    let flock_protected = c
        .locked
        .iter()
        .map(|l| FlockHeld {
            path: l.path.clone(),
            pid: l.pid,
            comm: proc::name_or_unknown(root, l.pid),
        })
        .collect();
    let mut out: Vec<RuleOut> = Vec::new();
    for r in rules.iter().filter(|r| concerns(r, here)) {
        let cfg = if r.boot_only { &boot } else { &timer };
        let ignored = cfg
            .dropped
            .iter()
            .find(|(d, _)| d == r)
            .map(|(_, won)| format!("a conflicting line for the same path comes first: {won}"));
        // An X shows the age it takes from the directory rule around it.
        let used = cfg
            .globs
            .iter()
            .chain(&cfg.items)
            .find(|u| *u == r || (u.kind == 'X' && u.source == r.source && u.line == r.line));
        out.push(rule_out(used.unwrap_or(r), ignored));
    }
    for (r, winner) in tmpfiles::overridden(root, dirs)
        .into_iter()
        .filter(|(r, _)| concerns(r, here))
    {
        let why = format!(
            "its file is hidden by {}, which has the same name",
            winner.display()
        );
        out.push(rule_out(&r, Some(why)));
    }
    Answer {
        rules: out,
        cleaned,
        removed_at_boot_by: removed_at_boot(root, &boot, here).map(Rule::describe),
        flock_protected,
    }
}

/// A line matters to `path` when it cleans, excludes or removes at boot
/// something on the way to `path`, `path` itself or below it.
fn concerns(r: &Rule, path: &str) -> bool {
    if !(r.cleans() || r.is_exclusion() || r.removes_at_boot()) {
        return false;
    }
    is_under(&r.path, path)
        || Path::new(path).ancestors().any(|a| {
            let a = a.to_string_lossy();
            r.path == a || glob_match(&r.path, &a)
        })
}

pub fn rule_out(r: &Rule, ignored: Option<String>) -> RuleOut {
    RuleOut {
        kind: r.kind.to_string(),
        path: r.path.clone(),
        age_s: r.age.as_ref().map(|a| a.seconds),
        age: r.age_field.clone(),
        age_by: r
            .age
            .as_ref()
            .map(|a| a.by.names().into_iter().map(String::from).collect()),
        removes_at_boot: r.removes_at_boot() && !is_under(&r.path, "/dev"),
        boot_only: r.boot_only,
        ignored,
        source: r.source.clone(),
        line: r.line,
    }
}

/// The line whose `--remove` at boot deletes `path` (a directory under `D`:
/// its contents). `D` empties its directory and `R` removes what its glob
/// matches, neither entering another mount; `r` removes a file or an empty
/// directory only (a full one stays: rmdir fails). `x`/`X` protect nothing.
pub fn removed_at_boot<'c>(root: &Sysroot, cfg: &'c Config, path: &str) -> Option<&'c Rule> {
    if is_under(path, "/dev") {
        return None;
    }
    let ancestors: Vec<String> = Path::new(path)
        .ancestors()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let d = cfg
        .items
        .iter()
        .filter(|r| r.kind == 'D')
        .find(|r| is_under(path, &r.path) && !mount_between(root, &r.path, path));
    let big_r = || {
        cfg.globs.iter().filter(|r| r.kind == 'R').find(|r| {
            ancestors
                .iter()
                .any(|a| glob_match(&r.path, a) && !mount_between(root, a, path))
        })
    };
    let small_r = || {
        cfg.globs
            .iter()
            .filter(|r| r.kind == 'r')
            .find(|r| glob_match(&r.path, path) && removable(root, path))
    };
    d.or_else(big_r).or_else(small_r)
}

/// A mount root strictly below `top`, on the way to `path` or `path` itself:
/// rm_rf does not enter it.
fn mount_between(root: &Sysroot, top: &str, path: &str) -> bool {
    Path::new(path)
        .ancestors()
        .map(|a| a.to_string_lossy().into_owned())
        .take_while(|a| a.as_str() != top && is_under(a, top))
        .any(|a| is_mount_root(root, &a))
}

fn is_mount_root(root: &Sysroot, p: &str) -> bool {
    use rustix::fs::{AtFlags, StatxAttributes, StatxFlags};
    rustix::fs::statx(
        rustix::fs::CWD,
        root.path(p),
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT,
        StatxFlags::BASIC_STATS,
    )
    .is_ok_and(|s| s.stx_attributes.contains(StatxAttributes::MOUNT_ROOT))
}

/// What `remove(3)` can delete: anything but a directory with entries.
fn removable(root: &Sysroot, path: &str) -> bool {
    let p = root.path(path);
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.is_dir() => age::names_noatime(root, path).is_empty(),
        Ok(_) => true,
        Err(_) => false,
    }
}

/// When systemd will next run the cleaning, when it can say.
pub fn next_clean(root: &Sysroot) -> Option<String> {
    if !root.is_live() || !Path::new("/run/systemd/system").exists() {
        return None;
    }
    let out = std::process::Command::new("systemctl")
        .args([
            "show",
            "systemd-tmpfiles-clean.timer",
            "--property=NextElapseUSecRealtime",
            "--value",
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !v.is_empty() && v != "n/a").then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_files_go_new_and_excluded_ones_stay() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().to_string_lossy().into_owned();
        for f in ["old", "new", "keep/old2", "sub/old3", ".dot"] {
            let p = t.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"x").unwrap();
        }
        for f in ["old", "keep/old2", "sub/old3", ".dot"] {
            let ok = std::process::Command::new("touch")
                .args(["-h", "-m", "-d", "20 days ago"])
                .arg(t.path().join(f))
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
        let conf = format!("d {base} - - - m:10d\nx {base}/kee?\n");
        let (rules, _) = tmpfiles::parse(&conf, "t.conf");
        let cfg = Config::new(&rules, false);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i128;
        let root = Sysroot::live();
        let got = Clean::new(&root, &cfg, &base, now).run();
        let mut names: Vec<&str> = got.doomed.iter().map(|c| c.path.as_str()).collect();
        names.sort();
        let want: Vec<String> = [".dot", "old", "sub/old3"]
            .iter()
            .map(|f| format!("{base}/{f}"))
            .collect();
        assert_eq!(names, want);
        assert!(got.doomed.iter().all(|c| c.age_s > 19 * 86_400));
        // Asked about a subdirectory: only what is under it.
        let sub = format!("{base}/sub");
        let got = Clean::new(&root, &cfg, &sub, now).run();
        assert_eq!(got.doomed.len(), 1);
    }
}
