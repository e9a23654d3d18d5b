//! Command-line definitions (clap derive). Each command's arguments live next to
//! the code that implements it; this file only lists the commands.

pub(crate) mod advise;
pub(crate) mod bench;
pub(crate) mod docs;
pub(crate) mod explain;
pub(crate) mod fleet;
mod manpage;
pub(crate) mod mounts;
mod output;
pub(crate) mod persist;
pub(crate) mod status;
pub(crate) mod top;
mod values;
pub(crate) mod workspace;

use std::path::PathBuf;

use crate::render::color::ColorChoice;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "tmpfsctl",
    version = env!("TMPFSCTL_LONG_VERSION"),
    disable_help_subcommand = true,
    about = "Measure, size and manage tmpfs (RAM-backed filesystems) honestly",
    long_about = "tmpfsctl answers the usual tmpfs questions with measurements that do not lie \
(no dd-from-/dev/zero timing the page cache, no one-off du snapshots), then acts on the answer.\n\n\
Start with `tmpfsctl status` to see what is RAM-backed here.",
    after_help = "Examples:\n  tmpfsctl status                # what is RAM-backed here, and how full\n  \
tmpfsctl advise                # what to change, measured on this machine\n  \
tmpfsctl bench --quick         # this machine's tmpfs against its disk\n\n\
Exit codes: 0 ok, 1 the command ran and reports a problem you asked about, 2 error.\n\
Sizes accept 512M, 2G (binary units, like tmpfs) and 50% (of RAM)."
)]
pub struct Cli {
    /// When to use colour: auto (on a terminal, unless NO_COLOR is set), always, never
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub(crate) color: ColorChoice,

    /// Read /proc and /etc under DIR instead of / (fixtures, a mounted image)
    #[arg(long, global = true, value_name = "DIR", env = "TMPFSCTL_SYSROOT")]
    pub(crate) sysroot: Option<PathBuf>,

    #[command(subcommand)]
    pub(crate) command: Command,
}

// `defer`: a command's arguments are defined only when it is the one
// invoked (or when the whole tree is built, as help, man pages and
// completions do): defining all of them cost a third of a millisecond on
// every start, a tenth of a whole `tmpfsctl run -- true`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum Command {
    /// What is RAM-backed here, how full, and what it costs in RAM
    Status(status::StatusArgs),
    /// tmpfs vs disk, side by side, per operation, with the memory ceiling
    Bench(bench::BenchArgs),
    /// One snapshot of this host's /tmp usage and memory (for `fleet analyze`)
    Collect(fleet::CollectArgs),
    /// Fleet-wide analysis: would /tmp fit in tmpfs across many hosts?
    Fleet(fleet::FleetArgs),
    /// Show how DIR would be put on tmpfs (changes nothing)
    Plan(mounts::PlanArgs),
    /// Put DIR on tmpfs without hiding its files, live and across reboots
    Apply(mounts::ApplyArgs),
    /// Undo `apply`: optionally copy data back, unmount, restore config
    Revert(mounts::RevertArgs),
    /// Run a command with a private, size-capped RAM scratch dir as TMPDIR
    Run(workspace::RunArgs),
    /// Start $SHELL in a private, size-capped RAM scratch dir
    Shell(workspace::ShellArgs),
    /// Tell me what to do with tmpfs on this machine
    Advise(advise::AdviseArgs),
    /// Where RAM-backed storage goes: per mount, owner, directory, process, cgroup
    Top(top::TopArgs),
    /// Why a write at PATH fails or would fail, and what tmpfiles will delete there
    Explain(explain::ExplainArgs),
    /// Keep a directory in RAM with a crash-safe copy on disk
    Persist(persist::PersistArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions(docs::CompletionsArgs),
    /// Print the man page (roff), or a command's page: `tmpfsctl man apply`
    Man(docs::ManArgs),
    /// Print the help of tmpfsctl or of a command: `tmpfsctl help apply`
    Help(docs::HelpArgs),
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }

    /// Every option and argument a user can see says what it is for.
    #[test]
    fn every_argument_of_every_command_has_a_description() {
        use clap::CommandFactory;
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let builtin = matches!(a.get_id().as_str(), "help" | "version");
                let said = a
                    .get_help()
                    .or(a.get_long_help())
                    .is_some_and(|h| !h.to_string().trim().is_empty());
                if !a.is_hide_set() && !builtin && !said {
                    missing.push(format!("{path} {}", a.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        let mut cmd = super::Cli::command();
        cmd.build();
        walk(&cmd, "tmpfsctl", &mut missing);
        assert!(
            missing.is_empty(),
            "arguments without a description: {missing:#?}"
        );
    }

    /// Only the command line knows clap: below it every entry point takes a
    /// plain request, so another command, a test or an API can call it.
    #[test]
    fn no_clap_below_the_command_line() {
        fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    if !p.ends_with("cli") {
                        walk(&p, found);
                    }
                } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("main.rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for (i, l) in text.lines().enumerate() {
                        if l.contains("clap::") || l.trim_start().starts_with("use clap") {
                            found.push(format!("{}:{}: {}", p.display(), i + 1, l.trim()));
                        }
                    }
                }
            }
        }
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        walk(&src, &mut found);
        assert!(found.is_empty(), "clap used below src/cli: {found:#?}");
    }
}
