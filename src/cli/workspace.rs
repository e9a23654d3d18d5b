//! `tmpfsctl run` and `tmpfsctl shell` arguments, turned into the plain
//! [`RunRequest`] the workspace library takes.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Context as _, Result};

use crate::command::{Format, Output};
use crate::units::{Size, parse_size};
use crate::workspace::{Keep, RunRequest, ScratchOptions};

// The prose is one line per paragraph (the `\` continuations join the
// source lines): clap wraps it to the terminal, so it never breaks at 95
// columns on a wide one nor runs ragged on a narrow one.
const AFTER_HELP_RUN: &str = "\
Examples:
  tmpfsctl run -- make -j8 test
  tmpfsctl run --size 2G --cd -- sh -c 'git clone ~/src/app . && cargo build'
  tmpfsctl run --json fd:3 -- ./job.sh 3>summary.json

The scratch: as root, a tmpfs in a private mount namespace (nobody else sees it, the \
kernel enforces --size, and it disappears with tmpfsctl, even a SIGKILLed one). CMD and \
everything it starts run in a cgroup of their own: what is still running when CMD exits (a \
daemon) is killed and named, and all of it dies if tmpfsctl is killed. Mounts CMD made \
inside the scratch are detached, never emptied; symlinks are removed, never followed. \
Unprivileged, the same inside a user namespace when the kernel allows it (setuid programs \
such as sudo do not work in there); otherwise a 0700 directory under $XDG_RUNTIME_DIR or \
/dev/shm whose size cap is only watched (soft).\n\n\
Default --size: 50% of MemAvailable at start. Sizes use binary units (512M = 512 MiB); N% \
is a share of MemTotal, as for tmpfs. A size above MemTotal + SwapTotal is refused unless \
--force; 0 and 0% are refused (tmpfs reads them as no cap). The scratch holds one inode \
per 4 KiB of --size (at least 64; --size 1M: 256): an empty file pins about 1 KiB of \
kernel memory that size= does not count, so a scratch pins at most about 1.27 x --size. A \
plain directory goes under $XDG_RUNTIME_DIR only if it is yours with mode 0700, else under \
/run/tmpfsctl-scratch (root) or /dev/shm.\n\n\
Peak usage is sampled every 10 ms (one statfs) while usage changes or the scratch is over \
90% full, backing off to every 250 ms while it stays idle, plus once when CMD exits. A \
file written and deleted between two samples can be missed: within 10 ms while usage \
moves, within 250 ms after an idle spell (which is also how late a burst that fills an \
idle scratch can be reported full; CMD gets its ENOSPC at once either way).\n\n\
Exit status: CMD's; 128+N if CMD was killed by signal N; 127/126 if CMD cannot be \
found/run; 2 if tmpfsctl itself fails before CMD starts. SIGINT, SIGTERM and SIGHUP sent \
to tmpfsctl are passed to CMD (a ^C from the terminal reaches CMD directly and is not sent \
twice).";

const AFTER_HELP_SHELL: &str = "\
Examples:
  tmpfsctl shell
  tmpfsctl shell --size 4G --keep
  tmpfsctl shell -- -c 'make -j8 && make check'

Starts $SHELL (or /bin/sh) in the scratch; `cd -` goes back to where you were. Everything \
in the scratch is gone when the shell exits, unless --keep. See `tmpfsctl run --help` for \
how the scratch is made and what the exit status means.";

// Options shared by `run` and `shell`. (A plain comment: as a doc comment it
// would replace their about, their arguments being defined late.)
#[derive(Debug, Clone, clap::Args)]
pub struct ScratchOpts {
    /// Size cap: 512M, 2G (binary units) or 10% of RAM [default: 50% of MemAvailable]
    #[arg(long, short = 's', value_name = "SIZE", value_parser = parse_size)]
    pub size: Option<Size>,
    /// Keep the scratch: a private tmpfs is copied to DIR (default: a new directory under /var/tmp); a plain directory is left in place
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    pub keep: Option<Option<PathBuf>>,
    /// No summary line and no notes on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Write the summary as JSON (schema_version 1) to FILE, - (stdout) or fd:N
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Use a plain 0700 directory instead of a private mount (other processes of yours can see it; the cap is soft)
    #[arg(long)]
    pub no_namespace: bool,
    /// Allow a --size above RAM + swap (refused otherwise: such a cap limits nothing)
    #[arg(long)]
    pub force: bool,
}

impl ScratchOpts {
    /// Nothing on stdout (CMD has it); the summary's JSON where `--json` says.
    pub fn output(&self) -> Output {
        Output::nothing().export("--json", Format::JSON, self.json.as_ref())
    }

    fn options(&self) -> ScratchOptions {
        ScratchOptions {
            size: self.size,
            // `--keep` alone is Some(None): clap's flag with an optional value.
            keep: self.keep.as_ref().map(|p| match p {
                None => Keep::Default,
                Some(p) => Keep::Dir(p.clone()),
            }),
            quiet: self.quiet,
            private: !self.no_namespace,
            force: self.force,
        }
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP_RUN)]
pub struct RunArgs {
    #[command(flatten)]
    pub scratch: ScratchOpts,
    /// Start CMD with the scratch as its working directory
    #[arg(long)]
    pub cd: bool,
    /// The command to run and its arguments (put `--` before it)
    #[arg(value_name = "CMD", required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub cmd: Vec<OsString>,
}

impl RunArgs {
    pub fn request(&self) -> Result<RunRequest> {
        let (program, rest) = self
            .cmd
            .split_first()
            .context("no CMD given; write e.g. tmpfsctl run -- make test")?;
        Ok(RunRequest {
            scratch: self.scratch.options(),
            program: program.clone(),
            args: rest.to_vec(),
            cd: self.cd,
            shell: false,
        })
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP_SHELL)]
pub struct ShellArgs {
    #[command(flatten)]
    pub scratch: ScratchOpts,
    /// Stay in the current directory instead of starting in the scratch
    #[arg(long)]
    pub no_cd: bool,
    /// Arguments for the shell (after `--`)
    #[arg(value_name = "ARGS", num_args = 0.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

impl ShellArgs {
    pub fn request(&self) -> RunRequest {
        let shell = std::env::var_os("SHELL")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| OsString::from("/bin/sh"));
        RunRequest {
            scratch: self.scratch.options(),
            program: shell,
            args: self.args.clone(),
            cd: !self.no_cd,
            shell: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> crate::cli::Command {
        let mut v = vec!["tmpfsctl"];
        v.extend(args);
        Cli::try_parse_from(v).unwrap().command
    }

    #[test]
    fn requests_carry_the_command_line() {
        let Command::Run(a) = parse(&["run", "--keep=/x", "--no-namespace", "--", "a", "-b"])
        else {
            panic!("not run");
        };
        let r = a.request().unwrap();
        assert!(
            matches!(r.scratch.keep, Some(Keep::Dir(ref p)) if p == std::path::Path::new("/x"))
        );
        assert!(!r.scratch.private);
        assert_eq!(r.program, "a");
        assert_eq!(r.args, vec![OsString::from("-b")]);
        // `--keep` without a value: the default place (it used to be refused
        // as an empty path).
        let Command::Shell(a) = parse(&["shell", "--keep", "--", "-c", "true"]) else {
            panic!("not shell");
        };
        assert!(matches!(a.request().scratch.keep, Some(Keep::Default)));
        assert!(Cli::try_parse_from(["tmpfsctl", "run", "--keep=", "--", "true"]).is_err());
    }
}
