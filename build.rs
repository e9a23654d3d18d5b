//! Records the git commit and its date for `tmpfsctl --version`, so a bug
//! report names the exact build. Outside a git checkout (a source tarball,
//! `cargo install` from a registry) the version stands alone.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let commit = git(&["rev-parse", "--short=7", "HEAD"]);
    let date = git(&["log", "-1", "--format=%cs"]);
    let version = env!("CARGO_PKG_VERSION");
    let long = match (commit, date) {
        (Some(c), Some(d)) => format!("{version} ({c} {d})"),
        (Some(c), None) => format!("{version} ({c})"),
        _ => version.to_string(),
    };
    println!("cargo:rustc-env=TMPFSCTL_LONG_VERSION={long}");
    // Rebuild when HEAD moves (a commit or a checkout), not on every build.
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={git_dir}/{r}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
