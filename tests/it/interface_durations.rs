//! Durations and sizes the commands agree on: every option that takes a
//! duration reads the one grammar (`30s`, `10min`, `1h30m`, `0.5s`, `500ms`,
//! a number alone as seconds) while the arguments are parsed, so a bad one
//! exits 2 naming the input and how to write it before anything runs; bench's
//! sizes likewise.

use crate::common::{stderr, tmpfsctl};

/// Ran past argument parsing: whatever failed, it was not this value.
fn accepted(args: &[&str], value: &str) {
    let o = tmpfsctl(args);
    let e = stderr(&o);
    assert!(
        !e.contains("invalid value"),
        "{args:?}: {value:?} was refused: {e}"
    );
}

/// Refused while parsing: exit 2, naming the option, the value and the fix.
fn refused(args: &[&str], option: &str, value: &str, fix: &str) {
    let o = tmpfsctl(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert!(
        e.contains(option) && e.contains(value) && e.contains(fix),
        "{args:?}: the error should name {option}, {value:?} and {fix:?}: {e}"
    );
    assert!(o.stdout.is_empty(), "{args:?} printed {:?}", o.stdout);
}

#[test]
fn forms_one_command_took_are_taken_by_every_duration_option() {
    // persist counted whole units only; fleet wanted a unit on every number;
    // top took seconds only.
    accepted(
        &[
            "persist",
            "status",
            "/no/such/dir/ifd",
            "--interval",
            "1.5m",
        ],
        "1.5m",
    );
    accepted(
        &[
            "persist",
            "status",
            "/no/such/dir/ifd",
            "--interval",
            "1h 30m",
        ],
        "1h 30m",
    );
    accepted(
        &[
            "fleet",
            "analyze",
            "--prometheus",
            "http://127.0.0.1:1",
            "--window",
            "90",
            "--timeout",
            "2",
        ],
        "90",
    );
    let o = tmpfsctl(&["top", "--json", "-d", "500ms"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_bad_duration_exits_2_naming_it_before_anything_runs() {
    let fix = "1h30m";
    refused(
        &["persist", "status", "--interval", "soon"],
        "--interval",
        "soon",
        fix,
    );
    refused(
        &["persist", "status", "--interval", "1h30"],
        "--interval",
        "1h30",
        fix,
    );
    refused(
        &["persist", "status", "--interval", "0.5s"],
        "--interval",
        "0.5s",
        "whole number of seconds",
    );
    refused(
        &["persist", "status", "--interval", "0min"],
        "--interval",
        "0min",
        "positive",
    );
    refused(
        &["fleet", "analyze", "--window", "3x", "/no/such/file"],
        "--window",
        "3x",
        "unknown unit",
    );
    refused(&["top", "-d", "0", "--once"], "--delay", "0", "0.1 to 3600");
    refused(&["top", "-d", "fast", "--once"], "--delay", "fast", fix);
    // bench read these after deciding what to run (--compare never looked
    // at them) and advise only with --prometheus: a typo went unnoticed.
    for opt in ["--min-time", "--max-time"] {
        refused(
            &[
                "bench",
                opt,
                "soon",
                "--compare",
                "/no/a.json",
                "/no/b.json",
            ],
            opt,
            "soon",
            fix,
        );
    }
    refused(
        &["advise", "--no-bench", "--window", "bogus", "/tmp"],
        "--window",
        "bogus",
        fix,
    );
}

#[test]
fn bench_sizes_are_read_by_the_one_size_grammar_while_parsing() {
    for opt in ["--size", "--ceiling-size"] {
        refused(
            &["bench", opt, "50%", "--compare", "/no/a.json", "/no/b.json"],
            opt,
            "50%",
            "give bytes, e.g. 2G",
        );
        refused(
            &["bench", opt, "12X", "--compare", "/no/a.json", "/no/b.json"],
            opt,
            "12X",
            "512M",
        );
    }
}
