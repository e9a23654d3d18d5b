//! `top` on a real terminal (tmux, 80 and 120 columns): `--once` and
//! `explain` wrap their prose at words within the width; the refreshing view
//! is one screenful redrawn in place (its title still on top after several
//! refreshes, nothing wider or taller than the window), its keys change the
//! order, and the terminal is given back on `q` and on Ctrl-C (exit 130).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{TestMount, tmpfsctl};
use crate::require_root;
use crate::terminal::{Tmux, bare, on_terminal, problems, tmux_available, tokens, vocabulary};

/// Two scratch mounts: `big` holds one 12 MiB file in its root, `many` is
/// out of inodes (a long "fix" line to wrap). By bytes `big` comes first,
/// by inodes `many`.
fn mounts() -> (TestMount, TestMount) {
    let big = TestMount::new("tmpfs", "big", "size=64m");
    std::fs::write(big.path.join("big.o"), vec![1u8; 12 << 20]).unwrap();
    let many = TestMount::new("tmpfs", "many", "size=16m,nr_inodes=300");
    std::fs::create_dir(many.path.join("cache")).unwrap();
    for i in 0..290 {
        std::fs::write(many.path.join(format!("cache/f{i}")), b"x").unwrap();
    }
    (big, many)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Words cut in two where a line ends: the end of one line and the start
/// of the next make a word of the piped output (run just before and just
/// after, which is never wrapped) that one of the halves is not.
fn cut_words(pane: &str, piped: &str) -> Vec<String> {
    let vocab = vocabulary(piped);
    let lines: Vec<&str> = pane.lines().collect();
    let mut bad = Vec::new();
    for pair in lines.windows(2) {
        let (Some((_, a)), Some((_, b))) = (
            tokens(pair[0]).last().copied(),
            tokens(pair[1]).first().copied(),
        ) else {
            continue;
        };
        let joined = format!("{a}{b}");
        let whole = |w: &str| vocab.contains(bare(w));
        if whole(&joined) && !(whole(a) && whole(b)) {
            bad.push(format!("{joined:?} cut: {:?} / {:?}", pair[0], pair[1]));
        }
    }
    bad
}

fn piped(args: &[&str]) -> String {
    let o = tmpfsctl(args);
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn top_once_and_explain_wrap_prose_at_words() {
    require_root!();
    if !tmux_available() {
        crate::skip!("tmux is not installed");
    }
    let (big, many) = mounts();
    let explain_path = many.path.join("cache");
    let cases: [(&str, Vec<&str>); 2] = [
        (
            "top-once",
            vec!["top", "--once", s(&big.path), s(&many.path)],
        ),
        ("explain", vec!["explain", s(&explain_path)]),
    ];
    for (name, args) in &cases {
        for width in [80u16, 120] {
            let before = piped(args);
            let (pane, _) = on_terminal(name, width, args);
            // A process that exits mid-scan is counted unreadable (the /proc
            // reader's call): its words may appear in one run only.
            let reference = format!(
                "{before}\n{}\nunknown deleted-but-open: unknown, processes unreadable — run as root to see them",
                piped(args)
            );
            let mut bad = problems(&pane, &reference, usize::from(width));
            bad.extend(cut_words(&pane, &reference));
            assert!(
                bad.is_empty(),
                "tmpfsctl {args:?} on a {width}-column terminal:\n{}\n--- pane ---\n{pane}",
                bad.join("\n")
            );
            if *name == "top-once" {
                // The mount column is not squeezed by columns with nothing in them.
                for m in [&big.path, &many.path] {
                    assert!(
                        pane.lines().any(|l| l.trim_start().starts_with(s(m))),
                        "{} not whole on one line at {width} columns:\n{pane}",
                        m.display()
                    );
                }
                assert!(
                    !pane.contains("full in"),
                    "an empty column is shown:\n{pane}"
                );
            }
        }
    }
}

/// The refreshing view in a `width`×`height` tmux window, killed on drop.
struct Live {
    tmux: Tmux,
    width: usize,
    height: usize,
}

impl Live {
    fn start(name: &str, width: u16, height: u16, args: &[&str]) -> Live {
        // Unique per test: tests run in parallel in one process.
        let socket = format!(
            "tmpfsctl-it-top-{name}-{width}x{height}-{}",
            std::process::id()
        );
        let tmux = Tmux { socket };
        let bin = env!("CARGO_BIN_EXE_tmpfsctl");
        // tmpfsctl dies of the SIGINT it re-raises after cleaning up, and a
        // shell whose child died of SIGINT stops its script unless it traps
        // the signal: the trap lets the exit status (130) and the terminal's
        // settings be read after.
        let script = format!(
            "trap true INT; {bin} top -d 0.3 {}; echo \"@@exit $?\"; stty -a; exec sleep 3600",
            args.join(" ")
        );
        let st = Command::new("tmux")
            .args(["-L", &tmux.socket, "new-session", "-d", "-x"])
            .arg(width.to_string())
            .arg("-y")
            .arg(height.to_string())
            .args(["bash", "-c", &script])
            .status()
            .expect("run tmux");
        assert!(st.success(), "tmux new-session failed");
        Live {
            tmux,
            width: usize::from(width),
            height: usize::from(height),
        }
    }

    /// What the window shows now (no scroll-back).
    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.tmux.socket, "capture-pane", "-p"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, k: &str) {
        let st = Command::new("tmux")
            .args(["-L", &self.tmux.socket, "send-keys", k])
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// The screen once `pred` holds on it (or a failure showing it).
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let sc = self.screen();
            if pred(&sc) {
                return sc;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "waited for {what}; screen:\n{sc}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// One frame checked: the title on the first row, nothing wider than
    /// the window, the mounts table right under it.
    fn check_frame(&self, sc: &str, table: bool) {
        let lines: Vec<&str> = sc.lines().collect();
        assert!(
            lines.first().is_some_and(|l| l.starts_with("tmpfsctl top")),
            "title not on the first row of a {}x{} window:\n{sc}",
            self.width,
            self.height
        );
        assert!(lines.len() <= self.height, "{sc}");
        for l in &lines {
            assert!(
                l.trim_end().chars().count() <= self.width,
                "wider than {}: {l:?}\n{sc}",
                self.width
            );
        }
        assert!(
            !table
                || lines
                    .iter()
                    .take(4)
                    .any(|l| l.trim_start().starts_with("mount")),
            "the mounts table is not under the title:\n{sc}"
        );
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.tmux.socket, "kill-server"])
            .output();
    }
}

/// Row of `m` in the mounts table.
fn row_of(sc: &str, m: &Path) -> usize {
    sc.lines()
        .position(|l| l.trim_start().starts_with(s(m)))
        .unwrap_or_else(|| panic!("{} not in the table:\n{sc}", m.display()))
}

#[test]
fn live_view_is_one_frame_that_fits_and_keys_sort_it() {
    require_root!();
    if !tmux_available() {
        crate::skip!("tmux is not installed");
    }
    let (big, many) = mounts();
    for (w, h) in [(80u16, 24u16), (80, 50), (120, 50)] {
        let live = Live::start("keys", w, h, &[s(&big.path), s(&many.path)]);
        live.wait_for("the first frame", |sc| sc.contains("sorted by bytes"));
        // Several refreshes later the title is still the first row.
        std::thread::sleep(Duration::from_millis(1500));
        let sc = live.screen();
        live.check_frame(&sc, true);
        assert!(row_of(&sc, &big.path) < row_of(&sc, &many.path), "{sc}");
        live.keys("i");
        let sc = live.wait_for("the order by inodes", |sc| sc.contains("sorted by inodes"));
        live.check_frame(&sc, true);
        assert!(
            row_of(&sc, &many.path) < row_of(&sc, &big.path),
            "by inodes, the inode-full mount comes first:\n{sc}"
        );
        // `f` shows one mount alone.
        live.keys("f");
        let sc = live.wait_for("one mount", |sc| sc.contains("sorted by inodes, mount "));
        live.check_frame(&sc, true);
        live.keys("?");
        let sc = live.wait_for("the help", |sc| sc.contains("this help"));
        live.check_frame(&sc, false);
        live.keys("x");
        live.keys("q");
        let sc = live.wait_for("the exit and stty", |sc| {
            sc.contains("@@exit") && sc.contains("icanon")
        });
        assert!(sc.contains("@@exit 0"), "{sc}");
        assert!(
            sc.contains(" icanon") && sc.contains(" echo"),
            "terminal not restored:\n{sc}"
        );
    }
}

#[test]
fn ctrl_c_leaves_the_live_view_with_130_and_the_terminal_restored() {
    require_root!();
    if !tmux_available() {
        crate::skip!("tmux is not installed");
    }
    let (big, _many) = mounts();
    let live = Live::start("ctrl-c", 80, 24, &[s(&big.path)]);
    live.wait_for("the first frame", |sc| sc.contains("sorted by bytes"));
    live.keys("C-c");
    let sc = live.wait_for("the exit and stty", |sc| {
        sc.contains("@@exit") && sc.contains("icanon")
    });
    assert!(sc.contains("@@exit 130"), "{sc}");
    assert!(
        sc.contains(" icanon") && sc.contains(" echo"),
        "terminal not restored:\n{sc}"
    );
    // The view drew on the alternate screen: the shell's screen is back.
    assert!(!sc.contains("sorted by bytes"), "{sc}");
}
