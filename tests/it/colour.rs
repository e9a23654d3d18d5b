//! Colour: one meaning, one colour, on every command (warnings yellow, a
//! full mount red, a nearly full one yellow, persist states green, yellow,
//! red); none with `--color never`, with NO_COLOR, or when piped.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{TestMount, bin, tmpfsctl};
use crate::require_root;

const YELLOW: &str = "\x1b[33m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A --sysroot whose only tmpfs has huge=always: status warns about it on
/// any machine, root or not.
fn sysroot_with_a_warning() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::create_dir_all(r.join("proc/self")).unwrap();
    std::fs::create_dir_all(r.join("etc")).unwrap();
    std::fs::write(
        r.join("proc/self/mountinfo"),
        b"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n\
          2 1 0:20 / /mnt/colour rw - tmpfs tmpfs rw,size=1024k,huge=always\n",
    )
    .unwrap();
    std::fs::write(
        r.join("proc/meminfo"),
        b"MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\n",
    )
    .unwrap();
    std::fs::write(r.join("etc/fstab"), b"").unwrap();
    t
}

/// `tmpfsctl ARGS` on a pseudo-terminal (util-linux `script`), with the
/// escape codes it wrote; `None` when `script` is missing.
fn on_pty(args: &[&str], no_color: Option<&str>) -> Option<String> {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let cmd: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_tmpfsctl"))
        .chain(args.iter().copied())
        .map(quote)
        .collect();
    let mut c = Command::new("script");
    c.args(["-q", "-e", "-c", &cmd.join(" "), "/dev/null"])
        .env("TERM", "xterm");
    match no_color {
        Some(v) => c.env("NO_COLOR", v),
        None => c.env_remove("NO_COLOR"),
    };
    let o = c.output().ok()?;
    Some(stdout(&o))
}

#[test]
fn status_warnings_are_yellow_when_colour_is_on_and_plain_otherwise() {
    let t = sysroot_with_a_warning();
    let root = t.path().to_str().unwrap();
    let args = ["--sysroot", root, "--color", "always", "status"];
    let o = tmpfsctl(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(text.contains(&format!("{YELLOW}Warnings")), "{text:?}");
    assert!(
        text.contains(&format!("{YELLOW}[tmpfs_huge_always]")),
        "{text:?}"
    );

    let never = stdout(&tmpfsctl(&[
        "--sysroot",
        root,
        "--color",
        "never",
        "status",
    ]));
    assert!(never.contains("[tmpfs_huge_always]"), "{never}");
    assert!(!never.contains('\x1b'), "{never:?}");
    // NO_COLOR does not overrule an explicit --color always (as ripgrep),
    // but it does the default.
    let forced = bin().args(args).env("NO_COLOR", "1").output().unwrap();
    assert!(stdout(&forced).contains(YELLOW));

    let auto = ["--sysroot", root, "status"];
    let Some(tty) = on_pty(&auto, None) else {
        crate::skip!("the terminal half: util-linux `script` is not installed");
    };
    assert!(
        tty.contains(&format!("{YELLOW}[tmpfs_huge_always]")),
        "{tty:?}"
    );
    let tty = on_pty(&auto, Some("1")).unwrap();
    assert!(tty.contains("[tmpfs_huge_always]"), "{tty:?}");
    assert!(!tty.contains('\x1b'), "NO_COLOR on a terminal: {tty:?}");
    let tty = on_pty(&["--color", "never", "--sysroot", root, "status"], None).unwrap();
    assert!(
        !tty.contains('\x1b'),
        "--color never on a terminal: {tty:?}"
    );
}

fn row<'a>(text: &'a str, mp: &Path) -> &'a str {
    let p = mp.to_str().unwrap();
    text.lines()
        .find(|l| l.contains(p))
        .unwrap_or_else(|| panic!("no row for {p}:\n{text}"))
}

#[test]
fn status_shows_a_full_mount_red_and_a_nearly_full_one_yellow() {
    require_root!();
    let full = TestMount::tmpfs("size=1M");
    // Until ENOSPC: 100% used, whatever the page size.
    let _ = std::fs::write(full.path.join("fill"), vec![1u8; 2 << 20]);
    let nearly = TestMount::tmpfs("size=1M");
    std::fs::write(nearly.path.join("fill"), vec![1u8; 960 << 10]).unwrap();
    let roomy = TestMount::tmpfs("size=1M");
    let text = stdout(&tmpfsctl(&["--color", "always", "status"]));
    let r = row(&text, &full.path);
    assert!(r.contains(&format!("{RED}100%")), "{r:?}");
    let r = row(&text, &nearly.path);
    assert!(r.contains(&format!("{YELLOW}94%")), "{r:?}");
    let r = row(&text, &roomy.path);
    assert!(!r.contains('\x1b'), "{r:?}");
    let text = stdout(&tmpfsctl(&["--color", "never", "status"]));
    assert!(!text.contains('\x1b'), "{text:?}");
}

#[test]
fn persist_status_states_are_coloured_and_headers_lowercase() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    let store = d.path().join("store");
    let reg = d.path().join("registry.json");
    let run = |colour: &str, no_color: bool| {
        let mut c = bin();
        c.env("TMPFSCTL_PERSIST_REGISTRY", &reg).args([
            "--color",
            colour,
            "persist",
            "status",
            dir.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ]);
        if no_color {
            c.env("NO_COLOR", "1");
        }
        stdout(&c.output().unwrap())
    };
    // Not mounted: nothing is being saved, red.
    let text = run("always", false);
    assert!(text.contains(&format!("{RED}NOT_MOUNTED")), "{text:?}");
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("dir") && header.contains("last sync") && header.contains("state"),
        "{header}"
    );
    assert_eq!(header, header.to_lowercase(), "one header style: lowercase");
    for plain in [run("never", false), run("auto", true)] {
        assert!(plain.contains("NOT_MOUNTED"), "{plain}");
        assert!(!plain.contains('\x1b'), "{plain:?}");
    }
}

#[test]
fn persist_status_ok_is_green_and_stale_yellow() {
    require_root!();
    let d = tempfile::Builder::new()
        .prefix("tmpfsctl-it-colour-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let dir = d.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    let (dir_s, store) = (dir.to_str().unwrap(), d.path().join("store"));
    let reg = d.path().join("registry.json");
    let run = |args: &[&str]| {
        bin()
            .env("TMPFSCTL_PERSIST_REGISTRY", &reg)
            .args(args)
            .output()
            .unwrap()
    };
    let _unmount = Unmount(dir.clone());
    let o = run(&[
        "persist",
        "enable",
        dir_s,
        "--store",
        store.to_str().unwrap(),
        "--size",
        "16M",
        "--boot",
        "none",
        "--yes",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&run(&["--color", "always", "persist", "status", dir_s]));
    assert!(text.contains(&format!("{GREEN}ok")), "{text:?}");
    std::thread::sleep(std::time::Duration::from_millis(3100));
    let text = stdout(&run(&[
        "--color",
        "always",
        "persist",
        "status",
        dir_s,
        "--interval",
        "1s",
    ]));
    assert!(text.contains(&format!("{YELLOW}STALE")), "{text:?}");
}

/// Lazily unmounts everything on a path when dropped.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        for _ in 0..4 {
            let ok = Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                break;
            }
        }
    }
}

fn snapshots() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("hosts.txt");
    // Two hosts (figures in KiB): one whose /tmp is 13 times its RAM, so no
    // share of RAM reaches the 99% target.
    std::fs::write(
        &f,
        "h1\t4\t4000000\t3000000\t1000000\t0\t0\t0\t0\t0\t0\t1\n\
         h2\t105906176\t8000000\t7000000\t1000000\t0\t0\t0\t0\t0\t0\t2\n",
    )
    .unwrap();
    (d, f)
}

#[test]
fn fleet_analyze_says_target_not_reached_in_red_and_warns_in_yellow() {
    let (_d, f) = snapshots();
    let f = f.to_str().unwrap();
    let o = tmpfsctl(&["--color", "always", "fleet", "analyze", f]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = stdout(&o);
    assert!(
        text.contains(&format!("{RED}TARGET NOT REACHED")),
        "{text:?}"
    );
    assert!(text.contains(&format!("{YELLOW}Warnings")), "{text:?}");
    assert!(text.contains(&format!("{YELLOW}warning: ")), "{text:?}");
    let never = stdout(&tmpfsctl(&["--color", "never", "fleet", "analyze", f]));
    assert!(never.contains("TARGET NOT REACHED"), "{never}");
    assert!(!never.contains('\x1b'), "{never:?}");
    let no_color = bin()
        .args(["fleet", "analyze", f])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!stdout(&no_color).contains('\x1b'));
    // Markdown never carries escape codes, even when asked for colour.
    let md = stdout(&tmpfsctl(&[
        "--color",
        "always",
        "fleet",
        "analyze",
        f,
        "--markdown",
    ]));
    assert!(
        md.contains("TARGET NOT REACHED") && !md.contains('\x1b'),
        "{md:?}"
    );
}
