//! The one way a test skips. Shared by the integration tests (tests/it),
//! the boot tests (tests/boot) and the library's unit tests, so a skip reads
//! the same everywhere: `SKIP <test>: <reason>`.
//!
//! libtest hides the stderr of a passing test, so a skip that only printed
//! would pass unseen. Two things make it seen:
//! * where `CI` is set, a skip fails the test, unless its reason starts with
//!   a line of tests/skip-allow.txt (each line says why it is allowed);
//! * where `TMPFSCTL_SKIP_LOG` names a file, every skip appends its line
//!   there (`.ci/run` counts them at the end of its log).
#![allow(dead_code)]

use std::io::Write;

const ALLOW: &str = include_str!("../skip-allow.txt");

/// The allow-list entry (reason prefix, why) that `reason` falls under.
fn allowed(reason: &str) -> Option<(&'static str, &'static str)> {
    ALLOW
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(" -- "))
        .map(|(r, why)| (r.trim(), why.trim()))
        .find(|(r, _)| reason.starts_with(r))
}

fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Record that the running test skips (all or part of itself) for `reason`.
/// Panics under CI unless the reason is allow-listed. `module` names the test
/// where libtest runs it on an unnamed thread.
pub fn skip(module: &str, reason: &str) {
    let thread = std::thread::current();
    let test = match thread.name() {
        Some(n) if n != "main" => n.to_string(),
        _ => module.to_string(),
    };
    let line = format!("SKIP {test}: {reason}");
    let allow = allowed(reason);
    let verdict = match (in_ci(), allow) {
        (false, _) => String::new(),
        (true, Some((_, why))) => format!(" [allowed in CI: {why}]"),
        (true, None) => " [FAILED: a skip is a failure in CI]".to_string(),
    };
    eprintln!("{line}{verdict}");
    if let Some(log) = std::env::var_os("TMPFSCTL_SKIP_LOG") {
        // One write with O_APPEND: lines from parallel tests do not interleave.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)
        {
            let _ = f.write_all(format!("{line}{verdict}\n").as_bytes());
        }
    }
    if in_ci() && allow.is_none() {
        panic!(
            "{line}\nA skip is a failure where CI is set: install what the test needs \
             (scripts/setup), or add the reason to tests/skip-allow.txt with why."
        );
    }
}

/// Skip the rest of the running test: say why (see [`skip`]) and return.
#[macro_export]
macro_rules! skip {
    ($($why:tt)+) => {{
        $crate::skip::skip(module_path!(), &format!($($why)+));
        return;
    }};
}

/// Skip a part of the running test (it goes on): say why, see [`skip`].
#[macro_export]
macro_rules! skip_part {
    ($($why:tt)+) => {
        $crate::skip::skip(module_path!(), &format!($($why)+))
    };
}
