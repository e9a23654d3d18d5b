//! The command line as a whole: version, help, errors, completions, man pages,
//! colour.

use std::process::Command;

use crate::common::{bin, tmpfsctl};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let o = tmpfsctl(&["--version"]);
    assert!(o.status.success());
    let v = stdout(&o);
    assert!(
        v.starts_with(&format!("tmpfsctl {}", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    // Built from a git checkout (as CI and developers do): "(abc1234 2026-11-24)".
    let head = Command::new("git")
        .args(["rev-parse", "--short=7", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    match head {
        Ok(h) if h.status.success() => {
            let c = String::from_utf8_lossy(&h.stdout).trim().to_string();
            assert!(v.contains(&format!("({c} ")), "{v} lacks commit {c}");
        }
        _ => crate::skip_part!("commit check: not built from a git checkout"),
    }
}

#[test]
fn help_works_as_a_command_and_with_help() {
    for args in [
        &["help"][..],
        &["help", "--help"],
        &["help", "apply"],
        &["help", "fleet", "analyze"],
    ] {
        let o = tmpfsctl(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).contains("Usage:"), "{args:?}");
    }
    let o = tmpfsctl(&["help", "apply"]);
    assert!(stdout(&o).contains("tmpfsctl apply"), "{}", stdout(&o));
    let o = tmpfsctl(&["help", "nosuch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nosuch"));
}

#[test]
fn clap_errors_share_the_tools_error_style_and_exit_2() {
    for args in [
        &["nosuch"][..],
        &["status", "--bogus"],
        &["completions", "tcsh"],
    ] {
        let o = tmpfsctl(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        assert!(e.starts_with("tmpfsctl: error: "), "{args:?}: {e}");
        assert!(e.contains("--help"), "{args:?}: says what to try: {e}");
    }
}

#[test]
fn completion_scripts_for_every_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _tmpfsctl"),
        ("zsh", "#compdef tmpfsctl"),
        ("fish", "complete -c tmpfsctl"),
        ("elvish", "tmpfsctl"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let o = tmpfsctl(&["completions", shell]);
        assert!(o.status.success(), "{shell}");
        let s = stdout(&o);
        assert!(s.contains(marker), "{shell}: {}", &s[..s.len().min(200)]);
        assert!(s.contains("revert"), "{shell}: lists subcommands");
    }
    // The bash script is valid bash and completes subcommands.
    let o = tmpfsctl(&["completions", "bash"]);
    let script = stdout(&o);
    let probe = format!(
        "{script}\nCOMP_WORDS=(tmpfsctl re); COMP_CWORD=1; _tmpfsctl tmpfsctl re tmpfsctl; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    let r = Command::new("bash").arg("-c").arg(probe).output().unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(stdout(&r).lines().any(|l| l == "revert"), "{}", stdout(&r));
}

#[test]
fn man_pages_render_with_man() {
    let o = tmpfsctl(&["man"]);
    assert!(o.status.success());
    let page = stdout(&o);
    assert!(page.contains(".TH tmpfsctl 1"), "{}", &page[..200]);
    assert!(page.contains("advise"));
    let o = tmpfsctl(&["man", "apply"]);
    assert!(stdout(&o).contains(".TH tmpfsctl-apply 1"));
    assert!(stdout(&o).contains("\\-\\-size"));
    let d = tempfile::tempdir().unwrap();
    let o = tmpfsctl(&["man", "--all", "--dir", d.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for p in ["tmpfsctl.1", "tmpfsctl-apply.1", "tmpfsctl-fleet-analyze.1"] {
        assert!(d.path().join(p).is_file(), "{p}");
    }
    // groff (when installed) formats the page without warnings.
    if let Ok(g) = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(d.path().join("tmpfsctl-apply.1"))
        .output()
    {
        assert!(g.status.success() && g.stderr.is_empty(), "{}", stderr(&g));
    }
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    // Piped: no escape codes, also with NO_COLOR unset.
    let o = bin()
        .args(["status", "--nosuch-flag-for-error"])
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(!stderr(&o).contains('\x1b'));
    // A runtime error with --color always: the prefix is coloured.
    let o = bin()
        .args(["--color", "always", "man", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("\x1b["), "{:?}", stderr(&o));
    let o = bin()
        .args(["--color", "never", "man", "nosuch"])
        .output()
        .unwrap();
    assert!(!stderr(&o).contains('\x1b'));
}

#[test]
fn json_means_the_json_document_on_stdout_on_every_command_that_reports() {
    // collect: one JSON line, the same as its default format.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_str().unwrap();
    let o = tmpfsctl(&["collect", "--path", p, "--host", "h", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["host"], "h");
    assert_eq!(stdout(&o).lines().count(), 1);
    let o = tmpfsctl(&["collect", "--path", p, "--json", "--format", "kirkland"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // Every other reporting command accepts --json as a plain flag.
    for cmd in [
        &["status"][..],
        &["bench"],
        &["fleet", "analyze"],
        &["plan"],
        &["apply"],
        &["revert"],
        &["advise"],
        &["top"],
        &["explain"],
        &["persist", "status"],
    ] {
        let mut a = cmd.to_vec();
        a.push("--help");
        let h = stdout(&tmpfsctl(&a));
        assert!(
            h.lines().any(|l| l.trim_start().starts_with("--json ")
                || l.trim() == "--json"
                || l.trim_start().starts_with("--json  ")),
            "{cmd:?} --help has no plain --json flag:\n{h}"
        );
    }
}

#[test]
fn an_output_named_dev_stdout_reaches_the_file_the_shell_opened() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("snap.json");
    let f = std::fs::File::create(&out).unwrap();
    let o = bin()
        .args(["collect", "--path"])
        .arg(d.path())
        .args(["--host", "h", "-o", "/dev/stdout"])
        .stdout(f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["host"], "h");
    // /dev/stdout is still the kernel's link, not a file left by a rename.
    assert!(
        std::fs::symlink_metadata("/dev/stdout")
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
