//! Every man page: sections in man-pages(7) order, examples from the help,
//! clean under `groff -ww` and `lexgrog`, and nothing past 80 columns or
//! printed over something else (the footer once read
//! "tmpfsctl-explain 0.2.0 (7e9925a 2026-11-2tmpfsctl-explain(1)").

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::tmpfsctl;

/// man-pages(7)'s order of the sections a section-1 page uses.
const ORDER: &[&str] = &[
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "OPTIONS",
    "COMMANDS",
    "EXIT STATUS",
    "ENVIRONMENT",
    "FILES",
    "EXAMPLES",
    "SEE ALSO",
];

const REQUIRED: &[&str] = &[
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "EXIT STATUS",
    "ENVIRONMENT",
    "FILES",
    "SEE ALSO",
];

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn pages(dir: &Path) -> Vec<PathBuf> {
    let o = tmpfsctl(&["man", "--all", "--dir", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    assert!(v.len() > 10, "{v:?}");
    v
}

/// The command words of a page: tmpfsctl-fleet-analyze.1 -> ["fleet", "analyze"].
fn words(page: &Path) -> Vec<String> {
    let stem = page.file_stem().unwrap().to_str().unwrap();
    stem.split('-').skip(1).map(str::to_string).collect()
}

fn sections(roff: &str) -> Vec<String> {
    roff.lines()
        .filter_map(|l| l.strip_prefix(".SH "))
        .map(|s| s.trim().trim_matches('"').to_string())
        .collect()
}

#[test]
fn every_page_has_the_usual_sections_in_the_usual_order() {
    let d = tempfile::tempdir().unwrap();
    for page in pages(d.path()) {
        let roff = std::fs::read_to_string(&page).unwrap();
        let got = sections(&roff);
        let name = page.display();
        for s in &got {
            assert!(ORDER.contains(&s.as_str()), "{name}: section {s} ({got:?})");
        }
        let idx: Vec<usize> = got
            .iter()
            .map(|s| ORDER.iter().position(|o| o == s).unwrap())
            .collect();
        assert!(idx.windows(2).all(|w| w[0] < w[1]), "{name}: {got:?}");
        for r in REQUIRED {
            assert!(got.iter().any(|s| s == r), "{name} lacks {r}: {got:?}");
        }
        // Examples from the help, when the help has any.
        let mut args: Vec<String> = words(&page);
        args.push("--help".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let help = String::from_utf8(tmpfsctl(&args).stdout).unwrap();
        if let Some(first) = help
            .split_once("Examples:\n")
            .and_then(|(_, e)| e.lines().next())
        {
            assert!(got.iter().any(|s| s == "EXAMPLES"), "{name}: {got:?}");
            let cmd = first.trim().split("  #").next().unwrap().trim();
            let word = cmd.split_whitespace().nth(1).unwrap();
            assert!(roff.contains(&word.replace('-', "\\-")), "{name}: {cmd}");
        }
        // The variables the code reads are documented on the main page.
        if words(&page).is_empty() {
            for v in [
                "NO_COLOR",
                "TMPFSCTL_SYSROOT",
                "TMPFSCTL_PERSIST_REGISTRY",
                "TMPFSCTL_ANON_SALT",
            ] {
                assert!(roff.contains(v), "{name} lacks {v}");
            }
        }
    }
}

#[test]
fn every_page_is_clean_for_groff_and_lexgrog() {
    if !have("groff") {
        crate::skip!("manpages: groff is not installed (apt-get install groff)");
    }
    let d = tempfile::tempdir().unwrap();
    for page in pages(d.path()) {
        let o = Command::new("groff")
            .args(["-ww", "-man", "-Tutf8"])
            .arg(&page)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", page.display());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.trim().is_empty(), "{}: {err}", page.display());
        if have("lexgrog") {
            let o = Command::new("lexgrog").arg(&page).output().unwrap();
            assert!(
                o.status.success(),
                "{}: {}",
                page.display(),
                String::from_utf8_lossy(&o.stdout)
            );
        }
    }
}

/// The page as a reader sees it at 80 columns: through man when there is
/// one (as `MANWIDTH=80 man -l PAGE`), else groff at man's line length.
fn at_80_columns(page: &Path) -> String {
    let o = if have("man") {
        Command::new("man")
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_FORMATTING", "")
            .arg("-l")
            .arg(page)
            .output()
            .unwrap()
    } else {
        Command::new("groff")
            .args(["-man", "-Tutf8", "-P-cbou", "-rLL=78n", "-rLT=78n"])
            .arg(page)
            .output()
            .unwrap()
    };
    assert!(o.status.success(), "{}", page.display());
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn no_page_runs_past_or_prints_over_80_columns() {
    if !have("groff") {
        crate::skip!("manpages: groff is not installed (apt-get install groff)");
    }
    let d = tempfile::tempdir().unwrap();
    for page in pages(d.path()) {
        let text = at_80_columns(&page);
        let name = page.file_stem().unwrap().to_str().unwrap().to_string();
        for l in text.lines() {
            assert!(
                l.chars().count() <= 80,
                "{name}: {} columns: {l}",
                l.chars().count()
            );
            assert!(!l.contains('\x08'), "{name}: overstrike in {l:?}");
        }
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let title = format!("{name}(1)");
        for (what, l) in [("header", lines[0]), ("footer", lines[lines.len() - 1])] {
            // Three fields, apart: nothing printed over another.
            let fields: Vec<&str> = l
                .split("  ")
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .collect();
            assert_eq!(fields.len(), 3, "{name} {what}: {l:?}");
            assert_eq!(fields[2], title, "{name} {what}: {l:?}");
        }
        let footer = lines[lines.len() - 1];
        assert!(
            footer.starts_with(&format!("tmpfsctl {}", env!("CARGO_PKG_VERSION"))),
            "{footer:?}"
        );
    }
}
