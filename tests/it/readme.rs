//! The README says what the tool does: the same run time as `advise --help`,
//! explain's checks in the tool's order, a version line of a real build.

use std::path::Path;
use std::process::Command;

use crate::common::tmpfsctl;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

fn help(args: &[&str]) -> String {
    String::from_utf8(tmpfsctl(args).stdout).unwrap()
}

/// The text between `from` and the next `to` after it.
fn between<'a>(s: &'a str, from: &str, to: &str) -> &'a str {
    let i = s
        .find(from)
        .unwrap_or_else(|| panic!("README lacks {from:?}"));
    let rest = &s[i..];
    &rest[..rest.find(to).unwrap_or(rest.len())]
}

#[test]
fn advise_run_time_is_the_same_in_the_readme_and_the_help() {
    let h = help(&["advise", "--help"]);
    // "# about /tmp: ~30 s as root, ~15 s otherwise"
    let line = h
        .lines()
        .find(|l| l.trim_start().starts_with("tmpfsctl advise ") && l.contains(" s as root"))
        .unwrap_or_else(|| panic!("advise --help states no run time:\n{h}"));
    let figures: Vec<&str> = line
        .split('~')
        .skip(1)
        .map(|p| p.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(figures.len(), 2, "{line}");
    let r = readme();
    let quick_start = between(&r, "## Quick start", "Real output");
    let flat = quick_start.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("about {} s as root", figures[0])),
        "{flat}"
    );
    assert!(
        flat.contains(&format!("about {} s otherwise", figures[1])),
        "{flat}"
    );
}

#[test]
fn the_advise_sample_has_the_rows_advise_prints() {
    let r = readme();
    let sample = between(&r, "$ tmpfsctl advise\n", "```");
    for row in ["memory ceiling: memcpy", "STREAM Triad", "Verdict:", "Undo"] {
        assert!(sample.contains(row), "README's advise sample lacks {row:?}");
    }
}

#[test]
fn explain_checks_are_listed_in_the_tools_order() {
    let h = help(&["explain", "--help"]);
    let order: Vec<&str> = between(&h, "in the order they bind:", ";")
        .trim_start_matches("in the order they bind:")
        .trim_end_matches(';')
        .split(',')
        .map(str::trim)
        .collect();
    assert!(order.len() >= 5, "{order:?}");
    let r = readme();
    let para = between(&r, "`explain PATH` answers", "Exit 0 when");
    let mut last = 0;
    for code in &order {
        let at = para
            .find(&format!("`{code}`"))
            .unwrap_or_else(|| panic!("README's explain paragraph lacks `{code}`"));
        assert!(
            at > last,
            "README lists `{code}` out of the tool's order {order:?}"
        );
        last = at;
    }
}

#[test]
fn the_version_shown_is_of_a_real_commit() {
    let r = readme();
    let line = between(&r, "$ tmpfsctl --version\n", "\n$");
    let v = line.lines().nth(1).unwrap();
    let want = format!("tmpfsctl {} (", env!("CARGO_PKG_VERSION"));
    assert!(v.starts_with(&want), "{v:?}");
    let inner = v[want.len()..].trim_end_matches(')');
    let (commit, date) = inner.split_once(' ').unwrap();
    let git = |args: &[&str]| {
        Command::new("git")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if git(&["rev-parse", "--git-dir"]).is_none() {
        crate::skip!("readme: not a git checkout, so commit {commit} cannot be looked up");
    }
    let got = git(&["log", "-1", "--format=%cs", &format!("{commit}^{{commit}}")]);
    assert_eq!(
        got.as_deref(),
        Some(date),
        "README's version names commit {commit} of {date}: not in this repository's history"
    );
}

/// The README's first command sets up and then runs `tmpfsctl` from PATH,
/// with advise's exit status said right there; `scripts/setup` puts the
/// binary on PATH through `scripts/install-bin`, which takes the binary
/// from wherever cargo put it (here a CARGO_TARGET_DIR outside the tree)
/// and leaves a root-owned mode 755 file renamed into place.
#[test]
fn the_first_command_leaves_a_working_tmpfsctl_on_path() {
    crate::require_root!();
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let r = readme();
    let block = between(&r, "# Run the main job", "\n```");
    let first = block
        .lines()
        .find(|l| !l.starts_with('#'))
        .unwrap_or_else(|| panic!("{block}"));
    assert_eq!(first, "./scripts/setup && tmpfsctl advise", "{block}");
    let flat = block.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("advise exits 0 when nothing should change, 1 when it recommends a change"),
        "{block}"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let setup = std::fs::read_to_string(root.join("scripts/setup")).unwrap();
    assert!(
        setup.lines().any(|l| l
            .trim_start()
            .starts_with("\"$(dirname \"$0\")/install-bin\" /usr/local/bin")),
        "scripts/setup does not install the binary"
    );
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("elsewhere");
    std::fs::create_dir_all(target.join("release")).unwrap();
    let fake = target.join("release/tmpfsctl");
    let script = "#!/bin/sh\necho tmpfsctl from the other target dir\n";
    std::fs::write(&fake, script).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o700)).unwrap();
    let dest = t.path().join("bin");
    let o = Command::new(root.join("scripts/install-bin"))
        .arg(&dest)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let put = dest.join("tmpfsctl");
    assert_eq!(std::fs::read_to_string(&put).unwrap(), script);
    let m = std::fs::metadata(&put).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o7777), (0, 0o755));
    let names: Vec<_> = std::fs::read_dir(&dest).unwrap().collect();
    assert_eq!(names.len(), 1, "a temporary file was left: {names:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("tmpfsctl from the other target dir"));
}
