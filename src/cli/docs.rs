//! `tmpfsctl completions`, `tmpfsctl man` and `tmpfsctl help`: generated from
//! the clap definition itself, so they can never disagree with the parser.

use std::io::Write;

use anyhow::{Result, bail};
use clap::CommandFactory;

use super::Cli;
use crate::command::ExitCode;
use crate::sys::atomic::AtomicWrite;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
tmpfsctl completions bash > /etc/bash_completion.d/tmpfsctl\n  \
tmpfsctl completions zsh > /usr/local/share/zsh/site-functions/_tmpfsctl\n  \
tmpfsctl completions fish > ~/.config/fish/completions/tmpfsctl.fish\n\n\
scripts/setup installs the bash, zsh and fish scripts and the man pages when run as root.")]
pub struct CompletionsArgs {
    /// The shell to write a completion script for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
tmpfsctl man | man -l -            # read the main page now\n  \
tmpfsctl man apply | man -l -      # the page for one command (tmpfsctl-apply(1))\n  \
tmpfsctl man --all --dir /usr/local/share/man/man1   # install every page")]
pub struct ManArgs {
    /// A command whose page to print (e.g. apply, or `fleet analyze`); default the main page
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write tmpfsctl.1 and a tmpfsctl-COMMAND.1 page for every command
    #[arg(long, requires = "dir")]
    pub all: bool,
    /// Where --all writes the pages
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct HelpArgs {
    /// The command to explain (e.g. apply, or `fleet analyze`); default the overview
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub fn completions(a: &CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(a.shell, &mut cmd, "tmpfsctl", &mut out);
    out.flush()?;
    Ok(ExitCode::Ok)
}

/// The clap command for `path` (e.g. ["fleet", "analyze"]), named the way man
/// pages name subcommands: `tmpfsctl-fleet-analyze`.
fn find(path: &[String]) -> Result<clap::Command> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut name = String::from("tmpfsctl");
    for p in path {
        let Some(sub) = cmd.find_subcommand(p) else {
            let known: Vec<String> = cmd
                .get_subcommands()
                .map(|s| s.get_name().to_string())
                .collect();
            bail!(
                "{}: no such command under `{}`; try one of: {}",
                crate::term::safe(p),
                name.replace('-', " "),
                known.join(", ")
            );
        };
        name = format!("{name}-{}", sub.get_name());
        cmd = sub
            .clone()
            .name(name.clone())
            .version(env!("TMPFSCTL_LONG_VERSION"));
    }
    Ok(cmd)
}

fn render_man(path: &[String]) -> Result<Vec<u8>> {
    super::manpage::render(find(path)?, path)
}

pub fn man(a: &ManArgs) -> Result<ExitCode> {
    if a.all {
        let dir = a.dir.as_deref().unwrap_or(std::path::Path::new("."));
        if !dir.is_dir() {
            bail!(
                "--dir {}: not a directory; create it first (e.g. mkdir -p {})",
                crate::term::safe_path(dir),
                crate::term::safe_path(dir)
            );
        }
        let mut paths = vec![Vec::new()];
        let mut root = Cli::command();
        root.build();
        collect_paths(&root, &mut Vec::new(), &mut paths);
        for p in &paths {
            let file = dir.join(format!("{}.1", find(p)?.get_name()));
            AtomicWrite::report("--dir").write(&file, &render_man(p)?)?;
            println!("{}", crate::term::safe_path(&file));
        }
        return Ok(ExitCode::Ok);
    }
    let page = render_man(&a.command)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&page)?;
    out.flush()?;
    Ok(ExitCode::Ok)
}

/// Every subcommand path below `cmd`, depth first, skipping `help`.
fn collect_paths(cmd: &clap::Command, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        prefix.push(sub.get_name().to_string());
        out.push(prefix.clone());
        collect_paths(sub, prefix, out);
        prefix.pop();
    }
}

pub fn help(a: &HelpArgs) -> Result<ExitCode> {
    let mut cmd = find(&a.command)?;
    let shown = std::iter::once("tmpfsctl".to_string())
        .chain(a.command.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    cmd = cmd.bin_name(shown);
    cmd.print_long_help()?;
    Ok(ExitCode::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn man_pages_exist_for_every_command() {
        let mut paths = Vec::new();
        let mut root = Cli::command();
        root.build();
        collect_paths(&root, &mut Vec::new(), &mut paths);
        assert!(paths.iter().any(|p| p.len() > 1), "{paths:?}");
        assert!(paths.iter().any(|p| p == &["apply".to_string()]));
        for p in paths {
            let page = String::from_utf8(render_man(&p).unwrap()).unwrap();
            let name = format!("tmpfsctl\\-{}", p.join("\\-"));
            assert!(
                page.contains(&name),
                "{p:?}: {}",
                &page[..200.min(page.len())]
            );
            assert!(page.contains(".SH"), "{p:?}");
            // man-pages(7): every page shows how it is used, and its
            // synopsis names each option's value, not the option alone.
            assert!(page.contains(".SH EXAMPLES"), "{p:?} has no EXAMPLES");
            let synopsis = page
                .split(".SH SYNOPSIS")
                .nth(1)
                .and_then(|s| s.split(".SH").next())
                .unwrap_or_else(|| panic!("{p:?} has no SYNOPSIS"));
            if p == ["run".to_string()] {
                assert!(synopsis.contains("\\-\\-size SIZE]"), "{synopsis}");
                assert!(synopsis.contains("\\-\\-keep[=DIR]]"), "{synopsis}");
            }
        }
        let top = String::from_utf8(render_man(&[]).unwrap()).unwrap();
        assert!(top.contains(".SH EXAMPLES"), "tmpfsctl(1) has no EXAMPLES");
        let run = String::from_utf8(render_man(&["run".to_string()]).unwrap()).unwrap();
        assert!(
            run.contains("/run/tmpfsctl (root)"),
            "run's FILES names where the tmpfs is mounted"
        );
        let e = find(&["nosuch".into()]).unwrap_err().to_string();
        assert!(e.contains("nosuch") && e.contains("apply"), "{e}");
    }
}
