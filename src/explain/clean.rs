//! What the next `systemd-tmpfiles --clean` would delete under a path, as
//! tmpfiles decides it: the age rules that cover it, `x`/`X` exclusions, the
//! newest of the chosen timestamps against the age, no mount crossed.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sys::Sysroot;
use crate::sys::procfd::{self, Scan};
use crate::sys::tmpfiles::{self, Age, Rule};

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

/// At most this many entries are walked per rule: an answer, not a hang.
const WALK_LIMIT: usize = 500_000;

fn is_under(p: &str, dir: &str) -> bool {
    p == dir || (p.starts_with(dir) && (dir == "/" || p.as_bytes().get(dir.len()) == Some(&b'/')))
}

/// The rules that concern `path`: age rules on it, above it or below it, and
/// the exclusions among those places.
pub fn applicable<'a>(rules: &'a [Rule], path: &str) -> Vec<&'a Rule> {
    let mut seen_clean: Vec<&str> = Vec::new();
    rules
        .iter()
        .filter(|r| {
            let related = is_under(path, &r.path)
                || is_under(&r.path, path)
                || tmpfiles::glob_match(&r.path, path);
            if !related || !(r.cleans() || r.is_exclusion() || r.removes_at_boot()) {
                return false;
            }
            // For one path, the first rule read wins (systemd warns about the rest).
            if r.cleans() || r.removes_at_boot() {
                if seen_clean.contains(&r.path.as_str()) {
                    return false;
                }
                seen_clean.push(&r.path);
            }
            true
        })
        .collect()
}

pub fn rule_out(r: &Rule) -> RuleOut {
    RuleOut {
        kind: r.kind.to_string(),
        path: r.path.clone(),
        age_s: r.age.as_ref().map(|a| a.seconds),
        age: r.age_field.clone(),
        age_by: r
            .age
            .as_ref()
            .map(|a| a.by.names().into_iter().map(String::from).collect()),
        removes_at_boot: r.removes_at_boot(),
        source: r.source.clone(),
        line: r.line,
    }
}

/// Seconds since the newest of the timestamps `age` looks at.
fn age_of(md: &std::fs::Metadata, age: &Age, now: i64) -> i64 {
    let by = &age.by;
    let (a, c, m) = if md.is_dir() {
        (by.dir_atime, by.dir_ctime, by.dir_mtime)
    } else {
        (by.file_atime, by.file_ctime, by.file_mtime)
    };
    let newest = [(a, md.atime()), (c, md.ctime()), (m, md.mtime())]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, t)| t)
        .max()
        .unwrap_or(i64::MIN / 2);
    now - newest
}

/// The rule that removes `path` (or, for a directory, its contents) at
/// every boot: a `D` on it or above it, an `R`/`r` on it or above it.
pub fn removed_at_boot<'a>(rules: &[&'a Rule], path: &str) -> Option<&'a Rule> {
    rules.iter().copied().find(|r| {
        r.removes_at_boot() && (is_under(path, &r.path) || tmpfiles::glob_match(&r.path, path))
    })
}

/// Entries under `limit_to` the age rules would delete now.
pub fn will_be_cleaned(
    root: &Sysroot,
    rules: &[&Rule],
    limit_to: &str,
    scan: &Scan,
    now: i64,
) -> Vec<Cleaned> {
    let excl: Vec<&Rule> = rules.iter().copied().filter(|r| r.is_exclusion()).collect();
    let mut out = Vec::new();
    for r in rules.iter().filter(|r| r.cleans()) {
        let Some(age) = &r.age else { continue };
        let top = PathBuf::from(&r.path);
        let Ok(top_md) = std::fs::symlink_metadata(root.path(&top)) else {
            continue;
        };
        if !top_md.is_dir() {
            continue;
        }
        let dev = top_md.dev();
        let mut stack: Vec<(PathBuf, usize)> = vec![(top.clone(), 0)];
        let mut walked = 0usize;
        while let Some((dir, depth)) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(root.path(&dir)) else {
                continue;
            };
            for e in rd.flatten() {
                walked += 1;
                if walked > WALK_LIMIT {
                    break;
                }
                let p = dir.join(e.file_name());
                let ps = p.to_string_lossy();
                // Only what lies on the way to, or under, the asked path.
                if !is_under(&ps, limit_to) && !is_under(limit_to, &ps) {
                    continue;
                }
                if excl
                    .iter()
                    .any(|x| x.kind == 'x' && excluded_x(&x.path, &p, &top))
                {
                    continue;
                }
                let Ok(md) = e.path().symlink_metadata() else {
                    continue;
                };
                if md.dev() != dev {
                    continue; // tmpfiles does not cross into other mounts
                }
                let skip_self = excl
                    .iter()
                    .any(|x| x.kind == 'X' && tmpfiles::glob_match(&x.path, &ps));
                if md.is_dir() {
                    stack.push((p, depth + 1));
                    continue;
                }
                if skip_self || (age.below_top_only && depth == 0) || !is_under(&ps, limit_to) {
                    continue;
                }
                let a = age_of(&md, age, now);
                if a > age.seconds as i64 {
                    let open_by = procfd::holders(root, scan, md.dev(), md.ino())
                        .into_iter()
                        .map(|(pid, comm)| OpenBy { pid, comm })
                        .collect();
                    out.push(Cleaned {
                        path: ps.into_owned(),
                        age_s: a as u64,
                        bytes: md.blocks() * 512,
                        rule_age_s: age.seconds,
                        open_by,
                    });
                }
            }
        }
    }
    out.sort_by(|a, b| b.age_s.cmp(&a.age_s).then_with(|| a.path.cmp(&b.path)));
    out.dedup_by(|a, b| a.path == b.path);
    out
}

/// `x PATTERN` protects what it matches and everything below.
fn excluded_x(pattern: &str, p: &Path, top: &Path) -> bool {
    p.ancestors()
        .take_while(|a| a.starts_with(top) && *a != top)
        .any(|a| tmpfiles::glob_match(pattern, &a.to_string_lossy()))
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

    fn rule(kind: char, path: &str, age: Option<&str>) -> Rule {
        Rule {
            kind,
            path: path.into(),
            age: age.and_then(|a| tmpfiles::parse_age(a).unwrap()),
            age_field: age.map(String::from),
            source: "t".into(),
            line: 1,
        }
    }

    #[test]
    fn old_files_go_new_and_excluded_ones_stay() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().to_string_lossy().into_owned();
        for f in ["old", "new", "keep/old2", "sub/old3"] {
            let p = t.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"x").unwrap();
        }
        let status = |f: &str, when: &str| {
            let ok = std::process::Command::new("touch")
                .args(["-h", "-d", when])
                .arg(t.path().join(f))
                .status()
                .unwrap()
                .success();
            assert!(ok);
        };
        for f in ["old", "keep/old2", "sub/old3"] {
            status(f, "20 days ago");
        }
        let rules = vec![
            rule('D', &base, Some("am:10d")),
            rule('x', &format!("{base}/kee?"), None),
        ];
        let refs: Vec<&Rule> = applicable(&rules, &base);
        assert_eq!(refs.len(), 2);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let got = will_be_cleaned(&Sysroot::default(), &refs, &base, &Scan::default(), now);
        let names: Vec<&str> = got.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.iter().any(|n| n.ends_with("/old")));
        assert!(names.iter().any(|n| n.ends_with("/sub/old3")));
        assert!(got.iter().all(|c| c.age_s > 19 * 86_400));
        // Asked about a subdirectory: only what is under it.
        let sub = format!("{base}/sub");
        let got = will_be_cleaned(&Sysroot::default(), &refs, &sub, &Scan::default(), now);
        assert_eq!(got.len(), 1);
    }
}
