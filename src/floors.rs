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

/// The modules each public module shows: what `main.rs` (`cli`, `run`),
/// `fuzz/` (the `sys` parsers) and `tests/` (`fleet::collect`) reach. All
/// else is `pub(crate)`, so the compiler names what nothing uses.
const PUBLIC: &[(&str, &[&str])] = &[
    ("lib.rs", &["cli", "fleet", "sys"]),
    ("cli/mod.rs", &[]),
    ("fleet/mod.rs", &["collect"]),
    ("sys/mod.rs", &["fstab", "meminfo", "mountinfo"]),
];

#[test]
fn the_library_shows_only_what_main_fuzz_and_tests_use() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for (file, want) in PUBLIC {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        let shown: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
            .collect();
        assert_eq!(
            &shown, want,
            "src/{file}: a module made pub hides dead code from the compiler; make it pub(crate), or name it here if fuzz/ or tests/ use it"
        );
    }
}

/// Where `text` names an item by a path three deep or more in code
/// (`crate::a::b::c`), outside `use` lines: each as its byte offset.
fn inline_paths(text: &str) -> Vec<usize> {
    let ident = |s: &str| {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .count()
    };
    let mut out = Vec::new();
    let mut in_use = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .any(|p| t.starts_with(p))
        {
            in_use = true;
        }
        if !in_use {
            for (at, _) in line.match_indices("crate::") {
                if line[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$')
                {
                    continue;
                }
                let (mut rest, mut depth) = (&line[at + "crate".len()..], 0);
                while let Some(r) = rest.strip_prefix("::") {
                    let n = ident(r);
                    if n == 0 {
                        break;
                    }
                    depth += 1;
                    rest = &r[n..];
                }
                if depth >= 3 {
                    out.push(offset + at);
                }
            }
        }
        if in_use && line.contains(';') {
            in_use = false;
        }
        offset += line.len();
    }
    out
}

#[test]
fn items_deep_in_the_crate_are_named_by_use_lines() {
    assert_eq!(inline_paths("let x = crate::sys::proc::name(r, p);"), [8]);
    assert!(inline_paths("let x = crate::term::safe(s);").is_empty());
    assert!(inline_paths("use crate::sys::proc::{\n    crate::a::b::c,\n};").is_empty());
    assert!(inline_paths("$crate::a::b::c!()").is_empty());
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("floors.rs")) {
        let text = std::fs::read_to_string(f).unwrap();
        let code: String = text
            .lines()
            .map(|l| match l.find("//") {
                Some(c) => format!("{}{}\n", &l[..c], " ".repeat(l.len() - c)),
                None => format!("{l}\n"),
            })
            .collect();
        for at in inline_paths(&code) {
            let line = code[..at].matches('\n').count();
            let shown = text.lines().nth(line).unwrap_or("").trim();
            found.push(format!("{}:{}: {shown}", f.display(), line + 1));
        }
    }
    assert!(
        found.is_empty(),
        "name these by a use line at the top of the file (or of its test module): {found:#?}"
    );
}
