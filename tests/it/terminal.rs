//! Output on a real terminal: each command runs in a detached tmux session
//! 80 and 120 columns wide and what the pane shows is checked: no line wider
//! than the terminal (checked on lines joined back where the terminal
//! wrapped them), no number on one line and its unit on the next, no word
//! cut in two (every word shown is a word of the same command's piped
//! output, which is never wrapped, or a piece of a path or option list cut
//! after `/` or `,`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::{is_root, tmpfsctl};
use crate::require_root;

const UNITS: &[&str] = &[
    "B", "KiB", "MiB", "GiB", "TiB", "%", "ns", "µs", "us", "ms", "s", "x", "×", "IOPS",
];

pub(crate) fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A tmux server of our own (its own socket), killed when dropped.
pub(crate) struct Tmux {
    pub(crate) socket: String,
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
        // tmux leaves its socket (and lock) file behind after kill-server.
        let base = std::env::var_os("TMUX_TMPDIR").map_or_else(|| "/tmp".into(), PathBuf::from);
        let dir = base.join(format!("tmux-{}", rustix::process::geteuid().as_raw()));
        let _ = std::fs::remove_file(dir.join(&self.socket));
        let _ = std::fs::remove_file(dir.join(format!("{}.lock", self.socket)));
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Run tmpfsctl with `args` in a `width`-column terminal; the pane's text
/// (wrapped lines joined, so an over-long line shows whole) and the exit
/// status.
pub(crate) fn on_terminal(name: &str, width: u16, args: &[&str]) -> (String, i32) {
    let socket = format!("tmpfsctl-it-{name}-{width}-{}", std::process::id());
    let tmux = Tmux { socket };
    let bin = env!("CARGO_BIN_EXE_tmpfsctl");
    let cmd: Vec<String> = std::iter::once(bin)
        .chain(args.iter().copied())
        .map(quote)
        .collect();
    // The shell stays after the command so the pane can be read at leisure.
    let script = format!("{}; echo \"@@exit $?\"; exec sleep 3600", cmd.join(" "));
    let st = Command::new("tmux")
        .args(["-L", &tmux.socket, "new-session", "-d", "-x"])
        .arg(width.to_string())
        .args(["-y", "50", "sh", "-c", &script])
        .status()
        .expect("run tmux");
    assert!(st.success(), "tmux new-session failed");
    let _ = Command::new("tmux")
        .args([
            "-L",
            &tmux.socket,
            "set-option",
            "-g",
            "history-limit",
            "20000",
        ])
        .output();
    let start = Instant::now();
    loop {
        let out = Command::new("tmux")
            .args(["-L", &tmux.socket, "capture-pane", "-p", "-J", "-S", "-"])
            .output()
            .expect("tmux capture-pane");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some(pos) = text.find("@@exit ") {
            let code = text[pos + 7..]
                .split_whitespace()
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or(-1);
            return (text[..pos].to_string(), code);
        }
        assert!(
            start.elapsed() < Duration::from_secs(900),
            "tmpfsctl {args:?} did not finish in the terminal; pane so far:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The pieces a word may be cut into: after each `/` or `,`.
fn segments(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in word.char_indices() {
        if (c == '/' || c == ',') && i > start {
            out.push(&word[start..i + 1]);
            start = i + 1;
        }
    }
    if start < word.len() {
        out.push(&word[start..]);
    }
    out
}

/// Every whole word of `piped`, and every run of its pieces (a path may be
/// shown as "/tmp/x/" on one line and "name" on the next).
pub(crate) fn vocabulary(piped: &str) -> HashSet<String> {
    // Words only the terminal layouts use: a shell line continuation, the
    // heading above a command moved onto lines of its own, and status's
    // "no limit" (piped: "unlimited").
    let mut v: HashSet<String> = ["\\", "this", "command", "no", "limit"]
        .iter()
        .map(|w| w.to_string())
        .collect();
    for w in piped.split_whitespace().map(bare) {
        let seg = segments(w);
        for i in 0..seg.len() {
            for j in i..seg.len() {
                v.insert(seg[i..=j].concat());
            }
        }
    }
    v
}

/// A word without the quotes and punctuation around it.
pub(crate) fn bare(w: &str) -> &str {
    w.trim_matches(|c: char| "`'\"()[]:;".contains(c))
}

/// Tokens of `line` with their starting column.
pub(crate) fn tokens(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    for (col, (i, c)) in line.char_indices().enumerate() {
        if c.is_whitespace() {
            if let Some((b, sc)) = start.take() {
                out.push((sc, &line[b..i]));
            }
        } else if start.is_none() {
            start = Some((i, col));
        }
    }
    if let Some((b, sc)) = start {
        out.push((sc, &line[b..]));
    }
    out
}

/// What is wrong with `pane` as shown on a `width`-column terminal, given the
/// same command's piped output.
pub(crate) fn problems(pane: &str, piped: &str, width: usize) -> Vec<String> {
    let mut bad = Vec::new();
    let lines: Vec<&str> = pane.lines().map(str::trim_end).collect();
    for l in &lines {
        let n = l.chars().count();
        // An fstab line cannot be continued on the next line: it stays
        // whole so it can be pasted, like a URL in a man page.
        let fstab = l.trim_start().starts_with("tmpfs /");
        if n > width && !fstab {
            bad.push(format!("{n} columns wide: {l:?}"));
        }
    }
    for pair in lines.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let below: Vec<(usize, &str)> = tokens(b);
        for (col, t) in tokens(a) {
            if !t.ends_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            // A number ending a cell line, its unit starting the cell's
            // next line (same column), or a number ending a line of prose
            // and its unit starting the next.
            let last = tokens(a).last().map(|x| x.0) == Some(col);
            // A unit that follows its own number on the line below is not
            // split, whatever column it happens to share with this one.
            let split = below.iter().enumerate().any(|(k, (c2, u))| {
                let own_number = k > 0 && below[k - 1].1.ends_with(|c: char| c.is_ascii_digit());
                UNITS.contains(u)
                    && !own_number
                    && (*c2 == col || (last && Some(*c2) == below.first().map(|x| x.0)))
            });
            if split {
                bad.push(format!("number split from its unit: {a:?} / {b:?}"));
            }
        }
    }
    // Words in table cells (from a header rule to the next blank line) are
    // wrapped by tmpfsctl; prose is checked by its width alone, as its
    // wording can differ from run to run (bench's warnings).
    let vocab = vocabulary(piped);
    let mut in_table = false;
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            in_table = false;
            continue;
        }
        if lines
            .get(i + 1)
            .is_some_and(|n| n.trim_start().starts_with('─'))
        {
            in_table = true;
        }
        if !in_table {
            continue;
        }
        for (_, t) in tokens(l) {
            // Units come with figures that differ between the two runs (a
            // latency may be "991 ns" in one and "1.02 µs" in the other, a
            // rate "971 MiB/s" in one and "1.05 GiB/s" in the other).
            let b = bare(t);
            let unit = ["ns", "µs", "ms", "s", "B", "KiB", "MiB", "GiB", "TiB"]
                .contains(&b.strip_suffix("/s").unwrap_or(b));
            // So does a ratio's verdict: "2.1× faster" in one run may be
            // "same within the interval" or "bimodal: A or B" in the other.
            let verdict = [
                "faster", "slower", "same", "within", "the", "interval", "bimodal", "bimodal:",
                "or",
            ]
            .contains(&b);
            let skip = unit
                || verdict
                || t.chars()
                    .any(|c| c.is_ascii_digit() || c == '─' || c == '-' && t.len() == 1);
            if !skip && !bare(t).is_empty() && !vocab.contains(bare(t)) {
                bad.push(format!(
                    "word not in the piped output (cut?): {t:?} in {l:?}"
                ));
            }
        }
    }
    bad
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Run `args` piped (the reference) and in tmux at 80 and 120 columns;
/// `between` runs after each terminal run (to undo what it changed).
fn check(name: &str, args: &[&str], piped: &Output, mut between: impl FnMut()) {
    let reference = format!(
        "{}\n{}",
        stdout(piped),
        String::from_utf8_lossy(&piped.stderr)
    );
    for width in [80u16, 120] {
        let (pane, code) = on_terminal(name, width, args);
        between();
        assert_eq!(
            Some(code),
            piped.status.code(),
            "tmpfsctl {args:?} exited {code} on a {width}-column terminal, {:?} piped:\n{pane}",
            piped.status.code()
        );
        let bad = problems(&pane, &reference, usize::from(width));
        assert!(
            bad.is_empty(),
            "tmpfsctl {args:?} on a {width}-column terminal:\n{}\n--- pane ---\n{pane}",
            bad.join("\n")
        );
    }
}

macro_rules! require_tmux {
    () => {
        if !tmux_available() {
            crate::skip!("tmux is not installed");
        }
    };
}

/// A scratch directory with a few files and its own fstab and unit
/// directory, so plan/apply/revert never touch the machine's.
struct Scratch {
    root: tempfile::TempDir,
    dir: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        // A short path, as /tmp or /srv/cache would be: an fstab line
        // cannot be wrapped, and a long temporary name would not fit 80
        // columns where the real one does.
        let root = tempfile::Builder::new()
            .prefix("tmpfsctl-it-term-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let dir = tempfile::Builder::new()
            .prefix("t")
            .rand_bytes(3)
            .tempdir_in("/tmp")
            .unwrap()
            .keep();
        std::fs::write(dir.join("a.txt"), vec![b'a'; 100 << 10]).unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/b.bin"), vec![7u8; 1 << 20]).unwrap();
        std::fs::write(root.path().join("fstab"), "").unwrap();
        std::fs::create_dir(root.path().join("units")).unwrap();
        Scratch { root, dir }
    }

    fn s(p: &Path) -> &str {
        p.to_str().unwrap()
    }

    fn opts(&self) -> Vec<String> {
        vec![
            "--fstab".into(),
            Self::s(&self.root.path().join("fstab")).into(),
            "--unit-dir".into(),
            Self::s(&self.root.path().join("units")).into(),
            "--size".into(),
            "16M".into(),
        ]
    }

    fn revert(&self) {
        let mut a: Vec<String> = vec!["revert".into(), Self::s(&self.dir).into()];
        a.extend(self.opts().into_iter().take(4));
        a.extend(["--keep-data".into(), "--yes".into()]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = tmpfsctl(&a);
        assert!(
            out.status.success(),
            "revert failed: {}{}",
            stdout(&out),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Whatever a failed test left mounted goes before the directory.
        for _ in 0..4 {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).output();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn status_fits_the_terminal() {
    require_tmux!();
    // A ramfs and a tmpfs with options, so the table has every kind of row.
    let _mounts = is_root().then(|| {
        let ram = crate::common::TestMount::new("ramfs", "ram", "mode=700");
        std::fs::write(ram.path.join("f"), vec![1u8; 3 << 20]).unwrap();
        let huge = crate::common::TestMount::tmpfs("huge=always,size=16M");
        (ram, huge)
    });
    let piped = tmpfsctl(&["status"]);
    check("status", &["status"], &piped, || {});
}

#[test]
fn plan_fits_the_terminal() {
    require_tmux!();
    let sc = Scratch::new();
    let mut a: Vec<String> = vec!["plan".into(), Scratch::s(&sc.dir).into()];
    a.extend(sc.opts());
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let piped = tmpfsctl(&a);
    check("plan", &a, &piped, || {});
}

#[test]
fn apply_fits_the_terminal() {
    require_root!();
    require_tmux!();
    let sc = Scratch::new();
    let mut a: Vec<String> = vec!["apply".into(), Scratch::s(&sc.dir).into()];
    a.extend(sc.opts());
    a.push("--yes".into());
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let piped = tmpfsctl(&a);
    assert!(
        piped.status.success(),
        "apply failed: {}{}",
        stdout(&piped),
        String::from_utf8_lossy(&piped.stderr)
    );
    sc.revert();
    check("apply", &a, &piped, || sc.revert());
    // Nothing lost on the way: the files are back on disk.
    assert_eq!(
        std::fs::read(sc.dir.join("sub/b.bin")).unwrap().len(),
        1 << 20
    );
}

#[test]
fn fleet_analyze_fits_the_terminal() {
    require_tmux!();
    let generator = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/fleet-gen.py");
    let out = Command::new("python3")
        .arg(&generator)
        .args(["502", "--format", "kirkland", "--seed", "7"])
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        crate::skip!("python3 cannot run bench/fleet-gen.py");
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fleet.txt");
    std::fs::write(&file, &out.stdout).unwrap();
    let a = ["fleet", "analyze", file.to_str().unwrap()];
    let piped = tmpfsctl(&a);
    check("fleet", &a, &piped, || {});
}

#[test]
fn bench_quick_fits_the_terminal() {
    require_root!();
    require_tmux!();
    let a = ["bench", "--quick"];
    let piped = tmpfsctl(&a);
    check("bench", &a, &piped, || {});
}

#[test]
fn advise_fits_the_terminal() {
    require_tmux!();
    let sc = Scratch::new();
    let a = ["advise", Scratch::s(&sc.dir)];
    let piped = tmpfsctl(&a);
    check("advise", &a, &piped, || {});
}

#[test]
fn the_checks_catch_what_they_look_for() {
    let piped = "mount point  size\n/tmp/a-long-name/x  23.5 GiB unlimited\n";
    assert!(problems("/tmp/a-long-name/\nx\n23.5 GiB", piped, 80).is_empty());
    let cut = problems(" mount point  size\n ──────\n unlimit\n ed", piped, 80);
    assert!(cut.iter().any(|p| p.contains("unlimit")), "{cut:?}");
    let split = problems("  /tmp  23.5\n        GiB", piped, 80);
    assert!(split.iter().any(|p| p.contains("unit")), "{split:?}");
    let wide = problems(&"x".repeat(81), &"x".repeat(81), 80);
    assert!(wide.iter().any(|p| p.contains("81 columns")), "{wide:?}");
}
