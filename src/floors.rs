//! The floors of the house, checked: every capability folder is a leaf (it
//! names no other capability; `advise` alone composes the others'
//! requests), and the modules below the capabilities name none of them.
//! `sys` stands on the ground floor and names nothing above it.
//! No source or test file is over 800 lines. `cargo test --lib floors` is
//! the command that checks it all.

use std::path::{Path, PathBuf};

/// One folder (or file) per command: each is a leaf.
const CAPABILITIES: &[&str] = &[
    "advise",
    "bench",
    "explain",
    "fleet",
    "mounts",
    "persist",
    "status",
    "top",
    "workspace",
];

/// Composes the other capabilities' requests, so it may name them.
const COMPOSER: &str = "advise";

/// Engines the capabilities share: they name no capability.
const ENGINES: &[&str] = &["attrib", "render", "command"];

/// What `sys` may name: itself, the modules with no `crate::` above them, and
/// the test-only skip helper its tests call.
const GROUND: &[&str] = &["sys", "units", "term", "variants", "test_support", "skip"];

/// The top-level modules a text names as `crate::a` or `crate::{a, b}`,
/// each with the byte offset where it is named.
fn named(text: &str) -> Vec<(usize, String)> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.push((at, ident(rest)));
            continue;
        };
        // A group: the first name of each of its top-level items.
        let (mut depth, mut item) = (0usize, String::new());
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push((at, ident(&std::mem::take(&mut item))));
                    continue;
                }
                _ => {}
            }
            item.push(c);
        }
        out.push((at, ident(&item)));
    }
    out.retain(|(_, n)| !n.is_empty());
    out
}

fn rust_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        for e in std::fs::read_dir(p).unwrap() {
            rust_files(&e.unwrap().path(), out);
        }
    } else if p.is_file() && p.extension().is_some_and(|x| x == "rs") {
        out.push(p.to_path_buf());
    }
}

/// Every `crate::` name in the module `module` (its folder or its file) that
/// `allowed` refuses, as "file:line: text".
fn breaches(module: &str, allowed: impl Fn(&str) -> bool) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join(module), &mut files);
    rust_files(&src.join(format!("{module}.rs")), &mut files);
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        // Comments blanked, lengths kept, so an offset still finds its line.
        let code: String = text
            .lines()
            .map(|l| match l.find("//") {
                Some(c) => format!("{}{}\n", &l[..c], " ".repeat(l.len() - c)),
                None => format!("{l}\n"),
            })
            .collect();
        for (at, n) in named(&code) {
            if !allowed(&n) {
                let line = code[..at].matches('\n').count();
                let shown = text.lines().nth(line).unwrap_or("").trim();
                found.push(format!("{}:{}: {n}: {shown}", f.display(), line + 1));
            }
        }
    }
    found
}

#[test]
fn names_are_read_from_paths_and_groups() {
    let names = |t: &str| -> Vec<String> { named(t).into_iter().map(|(_, n)| n).collect() };
    assert_eq!(names("use crate::sys::{self, du};"), ["sys"]);
    assert_eq!(
        names("use crate::{\n    sys::{a, b},\n    top,\n    units::x,\n};"),
        ["sys", "top", "units"]
    );
    assert_eq!(
        names("let x = crate::top::f(crate::status::g());"),
        ["top", "status"]
    );
    assert!(names("use super::x;").is_empty());
}

#[test]
fn every_capability_is_a_leaf() {
    let mut found = Vec::new();
    for &cap in CAPABILITIES.iter().filter(|&&c| c != COMPOSER) {
        found.extend(breaches(cap, |n| n == cap || !CAPABILITIES.contains(&n)));
    }
    assert!(
        found.is_empty(),
        "a capability names another (move what they share a floor down): {found:#?}"
    );
}

#[test]
fn engines_name_no_capability() {
    let mut found = Vec::new();
    for &engine in ENGINES {
        found.extend(breaches(engine, |n| !CAPABILITIES.contains(&n)));
    }
    assert!(
        found.is_empty(),
        "a shared engine names a capability above it: {found:#?}"
    );
}

#[test]
fn sys_names_nothing_above_it() {
    let found = breaches("sys", |n| GROUND.contains(&n));
    assert!(
        found.is_empty(),
        "src/sys names a module above it: {found:#?}"
    );
}

/// No source or test file grows past this: a longer one is split where its
/// parts are (as `explain/causes.rs` keeps its tests in `causes/tests.rs`).
const MAX_FILE_LINES: usize = 800;

#[test]
fn no_file_is_over_800_lines() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in ["src", "tests", "fuzz", "examples", "build.rs"] {
        rust_files(&here.join(d), &mut files);
    }
    assert!(files.len() > 100, "the walk found the sources");
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > MAX_FILE_LINES).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines (split them): {long:#?}"
    );
}
