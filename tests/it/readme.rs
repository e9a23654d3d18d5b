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
