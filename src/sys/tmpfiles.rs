//! tmpfiles.d(5) rules: which files systemd-tmpfiles will age out, and which
//! it must leave (`x`, `X`). Only what cleaning needs is read: type, path, age.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{ParseWarning, Sysroot};

/// systemd's search path, highest priority first: a file name in an earlier
/// directory hides the same name in later ones.
pub const DIRS: [&str; 4] = [
    "/etc/tmpfiles.d",
    "/run/tmpfiles.d",
    "/usr/local/lib/tmpfiles.d",
    "/usr/lib/tmpfiles.d",
];

/// Which timestamps make an entry "used" (tmpfiles.d's age-by letters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AgeBy {
    pub file_atime: bool,
    pub file_ctime: bool,
    pub file_mtime: bool,
    pub dir_atime: bool,
    pub dir_ctime: bool,
    pub dir_mtime: bool,
}

impl Default for AgeBy {
    /// systemd's default: every timestamp, except ctime for directories
    /// (cleaning a directory changes its ctime).
    fn default() -> Self {
        AgeBy {
            file_atime: true,
            file_ctime: true,
            file_mtime: true,
            dir_atime: true,
            dir_ctime: false,
            dir_mtime: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Age {
    pub seconds: u64,
    /// "~": only entries below the top level of the directory are aged.
    pub below_top_only: bool,
    pub by: AgeBy,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// The type letter ('d', 'D', 'x', ...), modifiers ('!', '-', '=', ...) removed.
    pub kind: char,
    pub path: String,
    pub age: Option<Age>,
    /// The age field as written ("am:10d", "~1w"), for showing it back.
    pub age_field: Option<String>,
    /// The file and line it came from.
    pub source: String,
    pub line: usize,
}

impl Rule {
    /// Types whose age field cleans the directory's contents.
    pub fn cleans(&self) -> bool {
        self.age.is_some() && matches!(self.kind, 'd' | 'D' | 'e' | 'v' | 'q' | 'Q' | 'C')
    }

    /// Types that `systemd-tmpfiles --remove` acts on, which
    /// systemd-tmpfiles-setup.service runs at every boot: `D` empties the
    /// directory, `R` and `r` remove the path. `x`/`X` do not protect from
    /// it (checked with systemd 252's --remove).
    pub fn removes_at_boot(&self) -> bool {
        matches!(self.kind, 'D' | 'R' | 'r')
    }

    pub fn is_exclusion(&self) -> bool {
        matches!(self.kind, 'x' | 'X')
    }
}

/// A systemd time span ("10d", "1h30min", "2w", "30" = seconds).
impl AgeBy {
    /// The timestamps by name, as systemd's letters say: files first, then
    /// directories ("atime", "mtime", "dir atime").
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.file_atime, "atime"),
            (self.file_ctime, "ctime"),
            (self.file_mtime, "mtime"),
            (self.dir_atime, "dir atime"),
            (self.dir_ctime, "dir ctime"),
            (self.dir_mtime, "dir mtime"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect()
    }
}

pub fn parse_span(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        rest = rest.trim_start();
        let n_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if n_end == 0 {
            return None;
        }
        let n: f64 = rest[..n_end].parse().ok()?;
        rest = rest[n_end..].trim_start();
        let u_end = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = &rest[..u_end];
        rest = &rest[u_end..];
        let mult = match unit {
            "" | "s" | "sec" | "second" | "seconds" => 1.0,
            "us" | "usec" | "µs" => 1e-6,
            "ms" | "msec" => 1e-3,
            "m" | "min" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            "w" | "week" | "weeks" => 604_800.0,
            "M" | "month" | "months" => 2_629_800.0,
            "y" | "year" | "years" => 31_557_600.0,
            _ => return None,
        };
        total += n * mult;
    }
    Some(total as u64)
}

/// The age field: "-" for none, else `[age-by:][~]SPAN`.
pub fn parse_age(field: &str) -> Result<Option<Age>, String> {
    if field == "-" || field.is_empty() {
        return Ok(None);
    }
    let (by, span) = match field.split_once(':') {
        Some((letters, span)) => {
            let mut by = AgeBy {
                file_atime: false,
                file_ctime: false,
                file_mtime: false,
                dir_atime: false,
                dir_ctime: false,
                dir_mtime: false,
            };
            for c in letters.chars() {
                match c {
                    'a' => by.file_atime = true,
                    'c' => by.file_ctime = true,
                    'm' => by.file_mtime = true,
                    'A' => by.dir_atime = true,
                    'C' => by.dir_ctime = true,
                    'M' => by.dir_mtime = true,
                    // Birth time is never later than the others: it cannot
                    // make an entry younger, so it changes no decision here.
                    'b' | 'B' => {}
                    _ => return Err(format!("unknown age-by letter {c:?} in {field:?}")),
                }
            }
            (by, span)
        }
        None => (AgeBy::default(), field),
    };
    let (below_top_only, span) = match span.strip_prefix('~') {
        Some(s) => (true, s),
        None => (false, span),
    };
    let seconds = parse_span(span).ok_or_else(|| format!("bad age {field:?}"))?;
    Ok(Some(Age {
        seconds,
        below_top_only,
        by,
    }))
}

/// Split a line into fields, honouring double quotes (paths may hold spaces).
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            '\\' if quoted => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// Parse one file's text. Lines that cannot be read are skipped with a warning.
pub fn parse(text: &str, source: &str) -> (Vec<Rule>, Vec<ParseWarning>) {
    let (mut rules, mut warnings) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let f = fields(t);
        let mut warn = |reason: String| {
            warnings.push(ParseWarning {
                line: i + 1,
                reason: format!("{source}: {reason}"),
            })
        };
        let (Some(ty), Some(path)) = (f.first(), f.get(1)) else {
            warn("a rule needs at least a type and a path".into());
            continue;
        };
        let Some(kind) = ty.chars().next().filter(|c| c.is_ascii_alphabetic()) else {
            warn(format!("bad type {ty:?}"));
            continue;
        };
        // Specifiers (%t, %h...) depend on the user and the boot: such a rule
        // cannot be matched against a path here, so it is skipped, not guessed.
        if !path.starts_with('/') || path.contains('%') {
            continue;
        }
        let age = match f.get(5).map(|a| parse_age(a)).transpose() {
            Ok(a) => a.flatten(),
            Err(e) => {
                warn(e);
                continue;
            }
        };
        rules.push(Rule {
            kind,
            path: path.trim_end_matches('/').to_string().replace("//", "/"),
            age,
            age_field: f.get(5).filter(|a| *a != "-").cloned(),
            source: source.to_string(),
            line: i + 1,
        });
    }
    (rules, warnings)
}

/// The `*.conf` files that apply, by name (override rule applied), in the
/// order systemd reads them: sorted by file name.
pub fn config_files(root: &Sysroot, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut by_name: BTreeMap<std::ffi::OsString, PathBuf> = BTreeMap::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(root.path(d)) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            if Path::new(&name).extension().is_some_and(|x| x == "conf") {
                by_name.entry(name).or_insert_with(|| e.path());
            }
        }
    }
    by_name.into_values().collect()
}

/// Every rule from `dirs` (DIRS normally), in systemd's order.
pub fn load(root: &Sysroot, dirs: &[PathBuf]) -> (Vec<Rule>, Vec<ParseWarning>) {
    let (mut rules, mut warnings) = (Vec::new(), Vec::new());
    for f in config_files(root, dirs) {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let (r, w) = parse(&text, &f.to_string_lossy());
        rules.extend(r);
        warnings.extend(w);
    }
    (rules, warnings)
}

/// Shell-style glob as tmpfiles uses for paths: `*`, `?` and `[...]`, none
/// of them matching '/'.
pub fn glob_match(pat: &str, s: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    // Iterative matcher with one backtrack point for the last '*'.
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '?' if t[ti] != '/' => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                '[' => {
                    if let Some((ok, len)) = class(&p[pi..], t[ti])
                        && ok
                    {
                        pi += len;
                        ti += 1;
                        continue;
                    }
                }
                c if c == t[ti] && c != '?' => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) if t[st] != '/' => {
                star = Some((sp, st + 1));
                pi = sp + 1;
                ti = st + 1;
            }
            _ => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// A `[...]` class at the start of `p`: (matches c, its length).
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let neg = matches!(p.get(i), Some('!' | '^'));
    if neg {
        i += 1;
    }
    let mut hit = false;
    let start = i;
    while i < p.len() && (p[i] != ']' || i == start) {
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|&e| e != ']') {
            hit |= p[i] <= c && c <= p[i + 2];
            i += 3;
        } else {
            hit |= p[i] == c;
            i += 1;
        }
    }
    (i < p.len()).then_some((hit != neg && c != '/', i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_ages() {
        assert_eq!(parse_span("10d"), Some(864_000));
        assert_eq!(parse_span("1h30min"), Some(5400));
        assert_eq!(parse_span("5m"), Some(300));
        assert_eq!(parse_span("30"), Some(30));
        assert_eq!(parse_span("2 w"), Some(1_209_600));
        assert_eq!(parse_span("x"), None);
        let a = parse_age("~1d").unwrap().unwrap();
        assert!(a.below_top_only);
        assert_eq!(a.seconds, 86_400);
        let b = parse_age("m:1h").unwrap().unwrap();
        assert!(b.by.file_mtime && !b.by.file_atime && !b.by.dir_mtime);
        assert_eq!(parse_age("-").unwrap(), None);
        assert!(parse_age("z:1d").is_err());
    }

    #[test]
    fn rules_parse_with_quotes_comments_and_skips() {
        let text = "# comment\n\nq /tmp 1777 root root 10d\nx /tmp/systemd-private-*\n\
                    D! \"/run/my dir\" 0755 - - 1h\nd %t/x - - - 1d\nbogus\nd /var/tmp - - - nope\n";
        let (r, w) = parse(text, "t.conf");
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!((r[0].kind, r[0].path.as_str()), ('q', "/tmp"));
        assert!(r[0].cleans());
        assert!(r[1].is_exclusion() && !r[1].cleans());
        assert_eq!(r[2].path, "/run/my dir");
        assert_eq!(r[2].kind, 'D');
        assert_eq!(w.len(), 2, "{w:?}");
    }

    #[test]
    fn globs_do_not_cross_slashes() {
        assert!(glob_match(
            "/tmp/systemd-private-*",
            "/tmp/systemd-private-abc"
        ));
        assert!(!glob_match("/tmp/*", "/tmp/a/b"));
        assert!(glob_match("/tmp/*/b", "/tmp/a/b"));
        assert!(glob_match("/tmp/?.lock", "/tmp/x.lock"));
        assert!(glob_match("/tmp/[a-c]x", "/tmp/bx"));
        assert!(!glob_match("/tmp/[!a-c]x", "/tmp/bx"));
        assert!(glob_match("/tmp/.X11-unix", "/tmp/.X11-unix"));
    }

    #[test]
    fn etc_hides_the_same_name_in_usr_lib() {
        let d = tempfile::tempdir().unwrap();
        for (p, t) in [
            ("etc/tmpfiles.d/tmp.conf", "q /tmp 1777 root root 1d\n"),
            ("usr/lib/tmpfiles.d/tmp.conf", "q /tmp 1777 root root 10d\n"),
            ("usr/lib/tmpfiles.d/a.conf", "x /tmp/keep\n"),
        ] {
            let f = d.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        }
        let dirs: Vec<PathBuf> = DIRS.iter().map(PathBuf::from).collect();
        let (r, _) = load(&Sysroot::new(d.path()), &dirs);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].kind, 'x', "a.conf sorts first");
        assert_eq!(r[1].age.as_ref().unwrap().seconds, 86_400);
    }
}
