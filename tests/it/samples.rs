//! Every output sample in README.md and docs/*.md is real output of the
//! command it shows, checked here against a fresh run of that command.
//!
//! A sample is a fenced block right below a marker line
//! `<!-- sample: SETTINGS -->`; each `$ ` line in it is a command (run with
//! `sh -c`, `sudo ` dropped, the built tmpfsctl first on PATH) and the lines
//! up to the next `$ ` line are its output (stdout and stderr as one stream).
//! SETTINGS, separated by `; `:
//! * `repo` runs the commands in the repository (for a fixture under
//!   tests/fixtures, named with `--sysroot` in the command itself); else
//!   they run in a fresh scratch directory, made in `in=DIR` (default /tmp);
//! * `dir=PATH` names that scratch directory PATH: PATH in a command is the
//!   scratch directory, and the scratch directory in the output is PATH;
//! * `setup=FILE` runs the shell script FILE first, in the scratch directory
//!   with `$D` naming it (its output is not compared);
//! * `ns` runs setup and commands in a private mount namespace (what they
//!   mount vanishes with it);
//! * `append=ARGS` appends ARGS to each command that has no shell operator,
//!   and `shrink=OLD=>NEW` replaces OLD in each command: options that only
//!   shrink a measurement (its figures are masked anyway);
//! * `nobody` runs setup and commands as uid and gid 65534, no other groups;
//! * `prometheus=URL` starts a Prometheus loaded with the fleet tests'
//!   week of history (tests/it/fleet/prometheus.rs), whose URL stands for URL;
//! * a setup may start processes the sample needs and write their PIDs to
//!   the file `$PIDS`: they are killed after the commands.
//! * `measured` compares a measurement's shape, not its verdicts: see [`shape`].
//!
//! How output and sample are compared ([`mask`], then [`glob_lines`]):
//! * every figure, a digit run with its decimal point and thousands
//!   separators and a size, count or time unit right after it (`1.13 GiB`,
//!   `3.09M`, `801.72 ms`), and every commit id (7 or more hex digits, one
//!   a digit), becomes `…`, in both;
//! * runs of blanks become one blank, a rule of 3 or more `-` or `─` becomes
//!   `---`, and lines are trimmed: column widths follow the figures;
//! * in the sample, a `…` stands for any text within a line and a line `...`
//!   for any number of lines (what differs between machines: another
//!   machine's mounts, cgroups, kernel).
//!
//! A fenced block with neither a `sample` nor a `not-a-sample: REASON` marker
//! fails [`no_output_block_is_left_unmarked`] unless it is code (`sh`, `rust`,
//! `ini`, ...); a `not-a-sample` block may not show a `$ tmpfsctl` command.

use std::path::{Path, PathBuf};
use std::process::Command;

const DOCS: &[&str] = &[
    "README.md",
    "docs/architecture.md",
    "docs/bench.md",
    "docs/fleet.md",
    "docs/metrics.md",
    "docs/mounts.md",
    "docs/persist.md",
    "docs/run.md",
    "docs/top.md",
];

/// Fenced blocks in these languages are code or configuration, not output.
const CODE: &[&str] = &["sh", "rust", "ini", "toml", "yaml", "json", "python"];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Debug)]
enum Marker {
    None,
    Sample(String),
    NotASample(String),
}

#[derive(Debug)]
struct Block {
    file: &'static str,
    /// 1-based line of the opening fence.
    line: usize,
    lang: String,
    marker: Marker,
    body: Vec<String>,
}

fn blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for file in DOCS {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let Some(lang) = lines[i].strip_prefix("```") else {
                i += 1;
                continue;
            };
            let start = i;
            let marker = start
                .checked_sub(1)
                .map(|p| lines[p].trim())
                .and_then(|l| l.strip_prefix("<!--")?.strip_suffix("-->"))
                .map(str::trim)
                .map_or(Marker::None, |m| {
                    if let Some(s) = m.strip_prefix("sample:") {
                        Marker::Sample(s.trim().to_string())
                    } else if let Some(s) = m.strip_prefix("not-a-sample:") {
                        Marker::NotASample(s.trim().to_string())
                    } else {
                        Marker::None
                    }
                });
            i += 1;
            let mut body = Vec::new();
            while i < lines.len() && !lines[i].starts_with("```") {
                body.push(lines[i].to_string());
                i += 1;
            }
            i += 1;
            out.push(Block {
                file,
                line: start + 1,
                lang: lang.trim().to_string(),
                marker,
                body,
            });
        }
    }
    out
}

fn shows_a_tmpfsctl_command(body: &[String]) -> bool {
    body.iter().any(|l| {
        let l = l.strip_prefix("$ ").map(|c| c.trim_start_matches("sudo "));
        l.is_some_and(|c| c.starts_with("tmpfsctl") || c.contains("| tmpfsctl"))
    })
}

#[test]
fn no_output_block_is_left_unmarked() {
    let mut bad = Vec::new();
    for b in blocks() {
        let at = format!("{}:{}", b.file, b.line);
        match &b.marker {
            Marker::Sample(_) => {}
            Marker::NotASample(why) if why.is_empty() => {
                bad.push(format!("{at}: `not-a-sample:` without a reason"));
            }
            Marker::NotASample(_) if shows_a_tmpfsctl_command(&b.body) => {
                bad.push(format!(
                    "{at}: shows a `$ tmpfsctl` command, so it is a sample: mark it `<!-- sample: ... -->`"
                ));
            }
            Marker::NotASample(_) => {}
            Marker::None if CODE.contains(&b.lang.as_str()) => {
                if shows_a_tmpfsctl_command(&b.body) {
                    bad.push(format!("{at}: a `{}` block shows command output", b.lang));
                }
            }
            Marker::None => bad.push(format!(
                "{at}: a ```{} block with no marker: put `<!-- sample: ... -->` (checked by tests/it/samples.rs) or `<!-- not-a-sample: why -->` on the line above",
                b.lang
            )),
        }
    }
    assert!(bad.is_empty(), "unmarked blocks:\n{}", bad.join("\n"));
}

/// Size, count and time units that belong to the figure before them.
const UNITS: &[&str] = &[
    "KiB", "MiB", "GiB", "TiB", "B", "kB", "MB", "GB", "k", "K", "M", "G", "ms", "µs", "us", "ns",
    "s", "min", "h", "d",
];

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The unit (and the blank before it) at the start of `rest`, if any.
fn unit_len(rest: &str) -> usize {
    let (skip, r) = match rest.strip_prefix(' ') {
        Some(r) => (1, r),
        None => (0, rest),
    };
    for u in UNITS {
        if let Some(after) = r.strip_prefix(u)
            && !after.chars().next().is_some_and(is_word)
        {
            return skip + u.len();
        }
    }
    0
}

/// One line with its figures masked as `…`, blanks collapsed, rules shortened.
fn mask(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        let hex = rest
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(rest.len());
        let word_start = !out.chars().last().is_some_and(is_word);
        if word_start
            && hex >= 7
            && rest[..hex].contains(|c: char| c.is_ascii_digit())
            && !rest[hex..].starts_with(is_word)
        {
            out.push('…');
            rest = &rest[hex..];
        } else if c.is_ascii_digit() {
            let mut n = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
                .unwrap_or(rest.len());
            // A sentence's full stop or comma is not part of the figure.
            while rest[..n].ends_with(['.', ',']) {
                n -= 1;
            }
            n += unit_len(&rest[n..]);
            out.push('…');
            rest = &rest[n..];
        } else if c.is_whitespace() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
            rest = rest.trim_start();
        } else if c == '-' || c == '─' {
            let n = rest
                .find(|c: char| c != '-' && c != '─')
                .unwrap_or(rest.len());
            if rest[..n].chars().count() >= 3 {
                out.push_str("---");
            } else {
                out.push_str(&rest[..n]);
            }
            rest = &rest[n..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.trim().to_string()
}

/// Whether `text` matches `pattern`, in which `…` stands for any text.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('…').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut at = first.len();
    let end = text.len() - last.len();
    for p in &parts[1..parts.len() - 1] {
        match text[at..end].find(p) {
            Some(i) => at += i + p.len(),
            None => return false,
        }
    }
    true
}

/// Whether the output lines match the sample's, a sample line `...` standing
/// for any number of lines.
fn glob_lines(want: &[String], got: &[String]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((w, rest)) if w == "..." => (0..=got.len()).any(|k| glob_lines(rest, &got[k..])),
        Some((w, rest)) => got.first().is_some_and(|g| glob(w, g)) && glob_lines(rest, &got[1..]),
    }
}

/// A measurement's shape: its verdicts and warnings follow the run, so a
/// table row (cells apart by two or more blanks) keeps only its first cell
/// and how many cells it has, a header row (above a rule) stays whole, and
/// `warning:` and `why:` lines (what this run's figures call for) go. Headings, footers and row labels still have to match.
fn shape(lines: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let t = t.strip_prefix("tmpfsctl: ").unwrap_or(t);
        if t.starts_with("warning:") || t.starts_with("why:") {
            continue;
        }
        let cells: Vec<&str> = l
            .trim()
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let header = lines.get(i + 1).is_some_and(|n| mask(n).starts_with("---"));
        if cells.len() > 1 && !header {
            out.push(format!("{} [{} cells]", cells[0], cells.len()));
        } else {
            out.push(l.clone());
        }
    }
    out
}

struct Settings {
    in_repo: bool,
    under: PathBuf,
    shrink: Option<(String, String)>,
    dir: Option<String>,
    setup: Option<PathBuf>,
    ns: bool,
    append: Option<String>,
    measured: bool,
    prometheus: Option<String>,
    nobody: bool,
}

fn settings(s: &str) -> Settings {
    let mut set = Settings {
        in_repo: false,
        under: std::env::temp_dir(),
        shrink: None,
        dir: None,
        setup: None,
        ns: false,
        append: None,
        measured: false,
        prometheus: None,
        nobody: false,
    };
    for item in s.split("; ").map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once('=') {
            Some(("in", v)) => set.under = PathBuf::from(v),
            Some(("shrink", v)) => {
                let (a, b) = v.split_once("=>").unwrap();
                set.shrink = Some((a.to_string(), b.to_string()));
            }
            Some(("dir", v)) => set.dir = Some(v.to_string()),
            Some(("setup", v)) => set.setup = Some(repo().join(v)),
            Some(("prometheus", v)) => set.prometheus = Some(v.to_string()),
            Some(("append", v)) => set.append = Some(v.to_string()),
            None if item == "ns" => set.ns = true,
            None if item == "repo" => set.in_repo = true,
            None if item == "nobody" => set.nobody = true,
            None if item == "measured" => set.measured = true,
            _ => panic!("unknown sample setting {item:?} in {s:?}"),
        }
    }
    set
}

/// The sample's commands, each with the output lines shown below it.
fn commands(body: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for l in body {
        if let Some(c) = l.strip_prefix("$ ") {
            out.push((c.trim_start_matches("sudo ").to_string(), Vec::new()));
        } else if let Some(last) = out.last_mut() {
            last.1.push(l.clone());
        } else {
            panic!("a sample starts with output, not a `$ ` command: {l:?}");
        }
    }
    out
}

const SEP: &str = "@@tmpfsctl-sample-command@@";

/// The built binary, copied where no sample's mounts can hide it (a
/// checkout may sit below /tmp, which a setup may mount over).
fn bin_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::Builder::new()
            .prefix("tmpfsctl-samples-")
            .tempdir_in(if crate::common::is_root() {
                "/var/lib"
            } else {
                "/var/tmp"
            })
            .unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_tmpfsctl"), d.path().join("tmpfsctl")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        d
    })
    .path()
}

/// Run one sample; the mismatch, if any, as a message, and the real output
/// of each command.
fn check(b: &Block, s: &str) -> (Result<(), String>, Vec<Vec<String>>) {
    let set = settings(s);
    let scratch = tempfile::Builder::new()
        .prefix("sample-")
        .tempdir_in(&set.under)
        .unwrap();
    let d = scratch.path().to_str().unwrap().to_string();
    let pids = tempfile::NamedTempFile::new_in(bin_dir()).unwrap();
    let cmds = commands(&b.body);
    let mut subst: Vec<(String, String)> = Vec::new();
    if let Some(dir) = &set.dir {
        subst.push((dir.clone(), d.clone()));
    }
    let _prom = set.prometheus.as_ref().map(|shown| {
        let (data, srv, url) = crate::fleet::prometheus::backfilled_prometheus()
            .expect("Prometheus for a sample (Debian package prometheus)");
        subst.push((shown.clone(), url));
        (data, srv)
    });
    // `sep` keeps `$?`, so a sample may show `$ echo $?` after a command.
    let mut script = format!("exec 2>&1\nsep() {{ r=$?; echo {SEP}; return $r; }}\n");
    if let Some(setup) = &set.setup {
        script += &format!(
            "sh -e {} >/dev/null 2>&1 || {{ echo setup failed; sh -ex {0}; exit 99; }}\n",
            setup.display()
        );
    }
    for (c, _) in &cmds {
        let mut c = c.clone();
        for (shown, real) in &subst {
            c = c.replace(shown.as_str(), real);
        }
        if let Some((a, b)) = &set.shrink {
            c = c.replace(a.as_str(), b);
        }
        if let Some(a) = &set.append
            && !c.contains([';', '|', '>', '&'])
        {
            c = match c.split_once(" #") {
                Some((cmd, comment)) => format!("{cmd} {a} #{comment}"),
                None => format!("{c} {a}"),
            };
        }
        script += &format!("sep\n{c}\n");
    }
    script += "kill $(cat \"$PIDS\") 2>/dev/null; true\n";
    let mut argv: Vec<&str> = Vec::new();
    if set.ns {
        argv.extend(["unshare", "--mount", "--propagation", "private"]);
    }
    if set.nobody {
        use std::os::unix::fs::PermissionsExt;
        let open = std::fs::Permissions::from_mode(0o777);
        std::fs::set_permissions(&d, open.clone()).unwrap();
        std::fs::set_permissions(pids.path(), open).unwrap();
        argv.extend([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]);
    }
    argv.extend(["sh", "-c", &script]);
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..]);
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.current_dir(if set.in_repo { repo() } else { Path::new(&d) })
        .env("PATH", path)
        .env("D", &d)
        .env("PIDS", pids.path())
        .env_remove("COLUMNS")
        .env_remove("CLICOLOR_FORCE")
        .env("NO_COLOR", "1");
    let o = cmd.output().unwrap();
    let mut text = String::from_utf8_lossy(&o.stdout).to_string();
    for (shown, real) in &subst {
        text = text.replace(real.as_str(), shown);
    }
    let mut got: Vec<Vec<String>> = text
        .split(&format!("{SEP}\n"))
        .map(|part| part.lines().map(str::to_string).collect())
        .collect();
    let before = got.remove(0);
    if !before.is_empty() {
        return (Err(format!("setup printed: {}", before.join("\n"))), got);
    }
    let mut errs = Vec::new();
    for ((c, want), got) in cmds.iter().zip(got.iter()) {
        let (want, got) = if set.measured {
            (shape(want), shape(got))
        } else {
            (want.clone(), got.clone())
        };
        let m = |v: &[String]| -> Vec<String> {
            v.iter()
                .map(|l| mask(l))
                .filter(|l| !l.is_empty())
                .collect()
        };
        let (mw, mg) = (m(&want), m(&got));
        if !glob_lines(&mw, &mg) {
            let first = mw
                .iter()
                .zip(mg.iter())
                .position(|(w, g)| w != "..." && !glob(w, g))
                .unwrap_or(mw.len().min(mg.len()));
            errs.push(format!(
                "$ {c}\n  first difference at output line {} (masked):\n  sample: {:?}\n  real:   {:?}\n--- the real output:\n{}\n---",
                first + 1,
                mw.get(first),
                mg.get(first),
                got.join("\n")
            ));
        }
    }
    if got.len() != cmds.len() {
        errs.push(format!(
            "ran {} of {} commands:\n{text}",
            got.len(),
            cmds.len()
        ));
    }
    let r = if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n"))
    };
    (r, got)
}

/// With `TMPFSCTL_SAMPLES_WRITE=1`, a sample without `...` lines is
/// rewritten with the real output (for a person to review in the diff);
/// not a `measured` one, whose figures come from a shrunk run.
fn rewrite(b: &Block, s: &str, got: &[Vec<String>]) {
    if b.body.iter().any(|l| l.trim() == "...") || settings(s).measured {
        return;
    }
    let path = repo().join(b.file);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut body = Vec::new();
    for ((c, _), out) in commands(&b.body).iter().zip(got) {
        let shown = b
            .body
            .iter()
            .find(|l| {
                l.strip_prefix("$ ")
                    .is_some_and(|x| x.ends_with(c.as_str()))
            })
            .unwrap();
        body.push(shown.clone());
        body.extend(out.iter().map(|l| l.trim_end().to_string()));
    }
    let end = b.line + b.body.len();
    let mut new: Vec<String> = lines[..b.line].iter().map(|l| l.to_string()).collect();
    new.extend(body);
    new.extend(lines[end..].iter().map(|l| l.to_string()));
    std::fs::write(&path, new.join("\n") + "\n").unwrap();
}

/// Every marked sample matches a fresh run of its commands (see the module
/// comment for the rule). Samples run side by side, each in its own scratch
/// directory.
#[test]
fn every_sample_in_the_readme_and_docs_is_real_output() {
    crate::require_root!();
    let all: Vec<Block> = blocks();
    let samples: Vec<(&Block, &str)> = all
        .iter()
        .filter_map(|b| match &b.marker {
            Marker::Sample(s) => Some((b, s.as_str())),
            _ => None,
        })
        .collect();
    assert!(!samples.is_empty());
    let only = std::env::var("TMPFSCTL_SAMPLE").ok();
    let fails: Vec<String> = std::thread::scope(|sc| {
        let hs: Vec<_> = samples
            .iter()
            .filter(|(b, _)| {
                only.as_ref()
                    .is_none_or(|o| format!("{}:{}", b.file, b.line).contains(o.as_str()))
            })
            .map(|&(b, s)| sc.spawn(move || (b, check(b, s))))
            .collect();
        let done: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        if std::env::var_os("TMPFSCTL_SAMPLES_WRITE").is_some() {
            // Bottom up, so the line numbers of the others still hold.
            let mut by_place: Vec<_> = done.iter().collect();
            by_place.sort_by_key(|(b, _)| std::cmp::Reverse((b.file, b.line)));
            for (b, (_, got)) in by_place {
                let s = samples
                    .iter()
                    .find(|(x, _)| std::ptr::eq(*x, *b))
                    .unwrap()
                    .1;
                rewrite(b, s, got);
            }
        }
        done.into_iter()
            .filter_map(|(b, (r, _))| r.err().map(|e| format!("{}:{}: {e}", b.file, b.line)))
            .collect()
    });
    assert!(
        fails.is_empty(),
        "{} sample(s) no longer match the real output; update the doc (or the marker):\n\n{}",
        fails.len(),
        fails.join("\n\n")
    );
}

#[test]
fn the_masking_rule() {
    assert_eq!(
        mask("  /dev/shm   tmpfs   23.5 GiB   0 B    0%     4 / 3.09M"),
        "/dev/shm tmpfs … … …% … / …"
    );
    assert_eq!(mask(" ──────── ---- --"), "--- --- --");
    assert_eq!(
        mask("in 0.021 s, 5 runs; 2 files."),
        "in …, … runs; … files."
    );
    assert_eq!(
        mask("tmpfsctl 0.2.0 (dbd0c87 2026-11-25)"),
        "tmpfsctl … (… …-…-…)"
    );
    assert!(glob("peak … of …, … inode", "peak … of … cap, … inode"));
    assert!(!glob("… dirs", "… directories"));
    let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(glob_lines(
        &l(&["a", "...", "d"]),
        &l(&["a", "b", "c", "d"])
    ));
    assert!(!glob_lines(&l(&["a", "...", "d"]), &l(&["a", "b", "c"])));
}

/// The README's account of `status --json` names its schema version and
/// every field the document has (objects' fields and list items' fields).
#[test]
fn the_readme_names_every_field_of_status_json() {
    let out = crate::common::tmpfsctl(&[
        "--sysroot",
        repo().join("tests/fixtures/samples/vm").to_str().unwrap(),
        "status",
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = r
        .find("`--json` prints the same as a document with")
        .unwrap();
    let para = &r[start..start + r[start..].find("\n\n").unwrap()];
    let v = doc["schema_version"].as_u64().unwrap();
    assert!(
        para.contains(&format!("`schema_version: {v}`")),
        "README's status JSON paragraph does not say schema_version {v}:\n{para}"
    );
    fn fields(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    out.push(format!("{at}{k}"));
                    // zram's `mm` holds the kernel's mm_stat, named there.
                    if k != "mm" {
                        fields(v, &format!("{at}{k}."), out);
                    }
                }
            }
            serde_json::Value::Array(a) => {
                if let Some(first) = a.first() {
                    fields(first, at, out);
                }
            }
            _ => {}
        }
    }
    let mut all = Vec::new();
    fields(&doc, "", &mut all);
    // The sysroot has no zram device: take a device's fields from the code's
    // own serialisation of one on this machine, if it has any.
    let live = crate::common::tmpfsctl(&["status", "--json"]);
    if let Ok(l) = serde_json::from_slice::<serde_json::Value>(&live.stdout) {
        fields(&l["zram"], "zram.", &mut all);
    }
    let missing: Vec<&String> = all
        .iter()
        .filter(|f| {
            let name = f.rsplit('.').next().unwrap();
            // `name`, `name[]` (a list) or `name: value`.
            !["`", "[]`", ": "]
                .iter()
                .any(|end| para.contains(&format!("`{name}{end}")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "README's status JSON paragraph lacks {missing:?}:\n{para}"
    );
}
