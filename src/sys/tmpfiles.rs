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

/// Which timestamps make an entry "used" (tmpfiles.d's age-by letters:
/// lower case for files, upper case for directories).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AgeBy {
    pub file_atime: bool,
    pub file_btime: bool,
    pub file_ctime: bool,
    pub file_mtime: bool,
    pub dir_atime: bool,
    pub dir_btime: bool,
    pub dir_ctime: bool,
    pub dir_mtime: bool,
}

impl AgeBy {
    const FILE_DEFAULT: (bool, bool, bool, bool) = (true, true, true, true);
    /// ctime is left out for directories: cleaning one changes its ctime.
    const DIR_DEFAULT: (bool, bool, bool, bool) = (true, true, false, true);

    fn new(file: (bool, bool, bool, bool), dir: (bool, bool, bool, bool)) -> AgeBy {
        AgeBy {
            file_atime: file.0,
            file_btime: file.1,
            file_ctime: file.2,
            file_mtime: file.3,
            dir_atime: dir.0,
            dir_btime: dir.1,
            dir_ctime: dir.2,
            dir_mtime: dir.3,
        }
    }

    /// The letters before the `:` of an age. As systemd 252 reads them, a
    /// side (files or directories) with no letter of its own keeps its
    /// default: `m:1d` ages files by mtime and directories by atime, btime
    /// and mtime.
    pub fn parse(letters: &str) -> Result<AgeBy, char> {
        let (mut f, mut d) = ([false; 4], [false; 4]);
        for c in letters.chars().filter(|c| !c.is_whitespace()) {
            let at = "abcm"
                .find(c.to_ascii_lowercase())
                .filter(|_| c.is_ascii_alphabetic())
                .ok_or(c)?;
            if c.is_ascii_lowercase() {
                f[at] = true;
            } else {
                d[at] = true;
            }
        }
        if letters.trim().is_empty() {
            return Err(':');
        }
        let side = |v: [bool; 4], def| {
            if v.iter().any(|x| *x) {
                (v[0], v[1], v[2], v[3])
            } else {
                def
            }
        };
        Ok(AgeBy::new(
            side(f, Self::FILE_DEFAULT),
            side(d, Self::DIR_DEFAULT),
        ))
    }

    /// The timestamps by name, files first, then directories ("atime",
    /// "mtime", "dir atime", ...), in systemd's a, b, c, m order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.file_atime, "atime"),
            (self.file_btime, "btime"),
            (self.file_ctime, "ctime"),
            (self.file_mtime, "mtime"),
            (self.dir_atime, "dir atime"),
            (self.dir_btime, "dir btime"),
            (self.dir_ctime, "dir ctime"),
            (self.dir_mtime, "dir mtime"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect()
    }

    /// The chosen flags for a file or a directory: (atime, btime, ctime, mtime).
    pub fn for_kind(&self, dir: bool) -> (bool, bool, bool, bool) {
        if dir {
            (
                self.dir_atime,
                self.dir_btime,
                self.dir_ctime,
                self.dir_mtime,
            )
        } else {
            (
                self.file_atime,
                self.file_btime,
                self.file_ctime,
                self.file_mtime,
            )
        }
    }
}

impl Default for AgeBy {
    /// systemd's default: every timestamp, except ctime for directories.
    fn default() -> Self {
        AgeBy::new(Self::FILE_DEFAULT, Self::DIR_DEFAULT)
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
    /// `!`: only read with `--boot` (systemd-tmpfiles-setup.service at
    /// boot), never by the timer's `--clean`.
    pub boot_only: bool,
    /// Mode, user, group and argument as written: two lines for one path
    /// that both own it conflict unless these and the age are the same.
    pub setup: String,
    /// The file and line it came from.
    pub source: String,
    pub line: usize,
}

impl Rule {
    /// Types whose age field cleans a directory's contents (`X` gets its
    /// age from the directory rule above it, see [`Config::new`]).
    pub fn cleans(&self) -> bool {
        self.age.is_some()
            && matches!(
                self.kind,
                'd' | 'D' | 'e' | 'v' | 'q' | 'Q' | 'C' | 'x' | 'X'
            )
    }

    /// Types that `systemd-tmpfiles --remove` acts on, which
    /// systemd-tmpfiles-setup.service runs at every boot: `D` empties the
    /// directory, `R` removes the path and all below, `r` a file or an empty
    /// directory. `x`/`X` do not protect from it (systemd 252 removes with
    /// rm_rf, which knows nothing of them).
    pub fn removes_at_boot(&self) -> bool {
        matches!(self.kind, 'D' | 'R' | 'r')
    }

    pub fn is_exclusion(&self) -> bool {
        matches!(self.kind, 'x' | 'X')
    }

    /// Types whose path is a glob (the rest name one path literally).
    pub fn is_glob_type(&self) -> bool {
        matches!(
            self.kind,
            'w' | 'x' | 'X' | 'r' | 'R' | 'e' | 'm' | 'z' | 'Z' | 't' | 'T' | 'a' | 'A' | 'h' | 'H'
        )
    }

    /// Types that own their path: two of them for one path must agree.
    fn takes_ownership(&self) -> bool {
        matches!(
            self.kind,
            'f' | 'F'
                | 'd'
                | 'e'
                | 'D'
                | 'v'
                | 'q'
                | 'Q'
                | 'p'
                | 'L'
                | 'c'
                | 'b'
                | 'C'
                | 'w'
                | 'x'
                | 'X'
                | 'r'
                | 'R'
        )
    }

    fn compatible(&self, o: &Rule) -> bool {
        !(self.takes_ownership() && o.takes_ownership())
            || (self.setup == o.setup && self.age == o.age)
    }

    /// `TYPE PATH (FILE:LINE)`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} ({}:{})",
            self.kind, self.path, self.source, self.line
        )
    }
}

/// The rules one run of systemd-tmpfiles acts on, as it keeps them: the
/// literal paths and the globs apart, a later line for a path that
/// conflicts with an earlier one dropped ("Duplicate line"), and each `X`
/// given the age of the directory rule it sits in.
#[derive(Debug, Default)]
pub struct Config {
    pub items: Vec<Rule>,
    pub globs: Vec<Rule>,
    /// Lines dropped, with the line that won.
    pub dropped: Vec<(Rule, String)>,
}

impl Config {
    /// `boot`: whether `!` lines count (they do at boot, not for the timer).
    pub fn new(rules: &[Rule], boot: bool) -> Config {
        let mut c = Config::default();
        for r in rules.iter().filter(|r| boot || !r.boot_only) {
            let h = if r.is_glob_type() {
                &mut c.globs
            } else {
                &mut c.items
            };
            match h.iter().find(|e| e.path == r.path && !e.compatible(r)) {
                Some(e) => c.dropped.push((r.clone(), e.describe())),
                None => h.push(r.clone()),
            }
        }
        // An X line cleans what is below it with the age of the directory
        // rule around it (its own letters and "~" stay).
        let dirs: Vec<Rule> = c
            .items
            .iter()
            .filter(|j| matches!(j.kind, 'd' | 'D' | 'v' | 'q' | 'Q'))
            .cloned()
            .collect();
        for x in c.globs.iter_mut().filter(|x| x.kind == 'X') {
            let mut cand: Option<&Rule> = None;
            for j in &dirs {
                if j.path == x.path {
                    cand = Some(j);
                    break;
                }
                let better = match cand {
                    Some(c) => is_under(&j.path, &c.path) && glob_match(&x.path, &j.path),
                    None => is_under(&x.path, &j.path),
                };
                if better {
                    cand = Some(j);
                }
            }
            if let Some(a) = cand.and_then(|c| c.age.as_ref()) {
                let own = x.age.clone();
                x.age = Some(Age {
                    seconds: a.seconds,
                    below_top_only: own.as_ref().is_some_and(|o| o.below_top_only),
                    by: own.map(|o| o.by).unwrap_or_default(),
                });
            }
        }
        c
    }

    /// A line of its own names `path` (literally or by a glob): the clean
    /// of a directory above leaves it, and all below it, alone.
    pub fn has_own_line(&self, path: &str) -> bool {
        self.items.iter().any(|i| i.path == path)
            || self.globs.iter().any(|g| glob_match(&g.path, path))
    }
}

/// `p` is `dir` or below it.
pub fn is_under(p: &str, dir: &str) -> bool {
    p == dir || (p.starts_with(dir) && (dir == "/" || p.as_bytes().get(dir.len()) == Some(&b'/')))
}

/// A systemd time span ("10d", "1h30min", "2w", "30" = seconds).
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

/// The age field: "-" for none, else `[~][age-by:]SPAN` (systemd strips
/// the `~` before it looks for the letters).
pub fn parse_age(field: &str) -> Result<Option<Age>, String> {
    if field == "-" || field.is_empty() {
        return Ok(None);
    }
    let (below_top_only, rest) = match field.strip_prefix('~') {
        Some(s) => (true, s),
        None => (false, field),
    };
    let (by, span) = match rest.split_once(':') {
        Some((letters, span)) => (
            AgeBy::parse(letters)
                .map_err(|c| format!("unknown age-by letter {c:?} in {field:?}"))?,
            span,
        ),
        None => (AgeBy::default(), rest),
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
        let setup = f
            .iter()
            .skip(2)
            .enumerate()
            .filter(|(n, _)| *n != 3)
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        rules.push(Rule {
            kind,
            path: simplify(path),
            age,
            age_field: f.get(5).filter(|a| *a != "-").cloned(),
            boot_only: ty.contains('!'),
            setup,
            source: source.to_string(),
            line: i + 1,
        });
    }
    (rules, warnings)
}

/// A path as systemd keeps it: no doubled or trailing slashes, no `.`.
fn simplify(p: &str) -> String {
    let parts: Vec<&str> = p
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

/// The `*.conf` files that apply, by name (override rule applied), in the
/// order systemd reads them: sorted by file name.
pub fn config_files(root: &Sysroot, dirs: &[PathBuf]) -> Vec<PathBuf> {
    by_name(root, dirs).0
}

/// The winning file of each name, sorted by name, and the files a file of
/// the same name in an earlier directory hides (hidden, winner).
fn by_name(root: &Sysroot, dirs: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, PathBuf)>) {
    let mut by_name: BTreeMap<std::ffi::OsString, PathBuf> = BTreeMap::new();
    let mut hidden = Vec::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(root.path(d)) else {
            continue;
        };
        let mut names: Vec<_> = rd.flatten().collect();
        names.sort_by_key(|e| e.file_name());
        for e in names {
            let name = e.file_name();
            if Path::new(&name).extension().is_some_and(|x| x == "conf") {
                match by_name.get(&name) {
                    Some(w) => hidden.push((e.path(), w.clone())),
                    None => {
                        by_name.insert(name, e.path());
                    }
                }
            }
        }
    }
    (by_name.into_values().collect(), hidden)
}

/// The rules of the files a same-named file in an earlier directory hides
/// (systemd never reads them), each with the file that hides it.
pub fn overridden(root: &Sysroot, dirs: &[PathBuf]) -> Vec<(Rule, PathBuf)> {
    let mut out = Vec::new();
    for (f, winner) in by_name(root, dirs).1 {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        out.extend(
            parse(&text, &f.to_string_lossy())
                .0
                .into_iter()
                .map(|r| (r, winner.clone())),
        );
    }
    out
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

/// Shell-style glob as tmpfiles matches paths (fnmatch with FNM_PATHNAME
/// and FNM_PERIOD, as glob(3) too): `*`, `?` and `[...]`, none of them
/// matching '/' or the '.' that starts a name (`/tmp/*` leaves `/tmp/.x`).
pub fn glob_match(pat: &str, s: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    // Iterative matcher with one backtrack point for the last '*'.
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    let leading_dot = |i: usize| t[i] == '.' && (i == 0 || t[i - 1] == '/');
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '?' if t[ti] != '/' && !leading_dot(ti) => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                '[' => {
                    if let Some((ok, len)) = class(&p[pi..], t[ti])
                        && ok
                        && !leading_dot(ti)
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
            Some((sp, st)) if t[st] != '/' && !leading_dot(st) => {
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
        let t = parse_age("~m:1d").unwrap().unwrap();
        assert!(t.below_top_only && !t.by.file_atime && t.by.file_mtime);
        assert!(parse_age("m:~1d").is_err(), "systemd takes ~ only in front");
        let a = parse_age("~1d").unwrap().unwrap();
        assert!(a.below_top_only);
        assert_eq!(a.seconds, 86_400);
        let b = parse_age("m:1h").unwrap().unwrap();
        assert!(b.by.file_mtime && !b.by.file_atime && !b.by.file_ctime);
        // No upper-case letter: directories keep systemd's default.
        assert_eq!(
            b.by.names(),
            ["mtime", "dir atime", "dir btime", "dir mtime"]
        );
        let c = parse_age("aM:1h").unwrap().unwrap();
        assert_eq!(c.by.names(), ["atime", "dir mtime"]);
        assert_eq!(
            parse_age("1h").unwrap().unwrap().by.names(),
            [
                "atime",
                "btime",
                "ctime",
                "mtime",
                "dir atime",
                "dir btime",
                "dir mtime"
            ]
        );
        assert_eq!(parse_age("-").unwrap(), None);
        assert!(parse_age("z:1d").is_err());
    }

    #[test]
    fn rules_parse_with_quotes_comments_and_skips() {
        let text = "# comment\n\nq /tmp/ 1777 root root 10d\nx /tmp/systemd-private-*\n\
                    D! \"/run/my dir\" 0755 - - 1h\nd %t/x - - - 1d\nbogus\nd /var/tmp - - - nope\n";
        let (r, w) = parse(text, "t.conf");
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!((r[0].kind, r[0].path.as_str()), ('q', "/tmp"));
        assert!(r[0].cleans());
        assert!(r[1].is_exclusion() && !r[1].cleans());
        assert_eq!(r[2].path, "/run/my dir");
        assert_eq!(r[2].kind, 'D');
        assert!(r[2].boot_only && !r[0].boot_only);
        assert_eq!(r[0].setup, "1777 root root");
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
        // FNM_PERIOD: a wildcard does not match the dot that starts a name.
        assert!(!glob_match("/tmp/*", "/tmp/.hidden"));
        assert!(!glob_match("/tmp/?x", "/tmp/.x"));
        assert!(glob_match("/tmp/.*", "/tmp/.hidden"));
        assert!(glob_match("/tmp/a*", "/tmp/a.b"));
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
        let hidden = overridden(&Sysroot::new(d.path()), &dirs);
        assert_eq!(hidden.len(), 1);
        assert!(hidden[0].1.ends_with("etc/tmpfiles.d/tmp.conf"));
        assert_eq!(hidden[0].0.age.as_ref().unwrap().seconds, 864_000);
    }

    #[test]
    fn a_conflicting_later_line_is_dropped_and_x_takes_the_age_around_it() {
        let text =
            "d /a 0755 - - m:1d\nd /a 0700 - - 5d\ne /a - - - 2d\nX /a/b*\nd! /boot - - - 1d\n";
        let (r, _) = parse(text, "t.conf");
        let c = Config::new(&r, false);
        assert_eq!(c.items.len(), 1, "the second d /a conflicts: {c:?}");
        assert_eq!(c.dropped.len(), 1);
        assert_eq!(c.globs.len(), 2, "e is a glob type and kept apart");
        let x = c.globs.iter().find(|g| g.kind == 'X').unwrap();
        let age = x.age.as_ref().unwrap();
        assert_eq!(age.seconds, 86_400);
        assert_eq!(age.by, AgeBy::default(), "the letters are not inherited");
        assert!(c.has_own_line("/a/bc") && !c.has_own_line("/a/c"));
        assert!(
            Config::new(&r, true)
                .items
                .iter()
                .any(|i| i.path == "/boot")
        );
    }
}
