//! `run -- CMD` starts CMD the way execvp does: a file without `#!` runs
//! through /bin/sh (execve's ENOEXEC), found by path or through $PATH; a
//! command that is not there exits 127, one that cannot be executed 126, and
//! either says so naming the command, with nothing raw on the terminal.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use crate::common::{bin, scratch, stderr, stdout};

/// An executable shell script with no `#!` line: only /bin/sh can run it.
fn no_shebang(dir: &Path, name: &str) {
    let f = dir.join(name);
    std::fs::write(&f, "echo \"ran $1 $2 as $0\"\nexit 7\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn run_in(dir: &Path, path: Option<&str>, cmd: &[&str]) -> Output {
    let mut c = bin();
    c.current_dir(dir).args(["run", "--quiet", "--"]).args(cmd);
    if let Some(p) = path {
        c.env("PATH", p);
    }
    c.output().unwrap()
}

#[test]
fn a_script_without_shebang_runs_through_sh_by_path_and_through_path() {
    let d = scratch("run-noshebang");
    no_shebang(d.path(), "tidy-noshebang");
    let o = run_in(d.path(), None, &["./tidy-noshebang", "a", "b c"]);
    assert_eq!(
        o.status.code(),
        Some(7),
        "exit 7 passes through: {}",
        stderr(&o)
    );
    assert_eq!(
        stdout(&o),
        "ran a b c as ./tidy-noshebang\n",
        "{}",
        stderr(&o)
    );

    // Through $PATH, as execvp does: sh gets the path it was found at.
    let path = format!("{}:{}", d.path().display(), std::env::var("PATH").unwrap());
    let elsewhere = scratch("run-noshebang-cwd");
    let o = run_in(elsewhere.path(), Some(&path), &["tidy-noshebang", "x", "y"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let found = d.path().join("tidy-noshebang");
    assert_eq!(
        stdout(&o),
        format!("ran x y as {}\n", found.display()),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_missing_command_exits_127_naming_it() {
    let d = scratch("run-noshebang");
    let o = run_in(d.path(), None, &["tidy-no-such-command", "arg"]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("cannot run tidy-no-such-command:") && e.contains("$PATH"),
        "{e}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn a_file_that_is_not_executable_exits_126_saying_how_to_fix_it() {
    let d = scratch("run-noshebang");
    let f = d.path().join("plain.sh");
    std::fs::write(&f, "echo should not run\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = run_in(d.path(), None, &["./plain.sh"]);
    assert_eq!(o.status.code(), Some(126), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("cannot run ./plain.sh:") && e.contains("chmod +x"),
        "{e}"
    );
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
}

#[test]
fn a_command_name_reaches_the_terminal_escaped() {
    let d = scratch("run-noshebang");
    let o = run_in(d.path(), None, &["tidy-\x1b[31mred"]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert!(!o.stderr.contains(&0x1b), "raw escape: {:?}", stderr(&o));
    assert!(stderr(&o).contains("cannot run tidy-"), "{}", stderr(&o));
}
