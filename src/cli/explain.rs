//! `tmpfsctl explain` arguments.

use super::output::{Structured, json_help};
use crate::command::{Format, Output};
use std::path::PathBuf;

use crate::explain::{ExplainQuery, Writer};

#[derive(Debug, clap::Args)]
#[command(
    after_help = format!(
        "Examples:\n  tmpfsctl explain /tmp\n  tmpfsctl explain /dev/shm/job --pid 4242\n  tmpfsctl explain /run/app --cgroup /system.slice/app.service --json\n\n\
         {}\n\
         Exit codes: 0 nothing binds, 1 something binds, 2 error.",
        crate::explain::help_list()
    ),
    mut_args(json_help("Print a JSON document (schema_version 3)", &[])),
)]
pub struct ExplainArgs {
    /// The file or directory a write fails at (or would be made in)
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// The writing process: its memory cgroup and uid are checked (default: the caller's)
    #[arg(long, value_name = "PID", conflicts_with = "cgroup")]
    pub pid: Option<u32>,
    /// The writer's cgroup, as in /proc/PID/cgroup (e.g. /system.slice/app.service)
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<String>,
    /// Read tmpfiles.d rules from DIR instead of /etc, /run, /usr/local/lib and /usr/lib tmpfiles.d (repeat; first wins by name)
    #[arg(long = "tmpfiles-dir", value_name = "DIR")]
    pub tmpfiles_dirs: Vec<PathBuf>,
    #[command(flatten)]
    pub structured: Structured,
}

impl ExplainArgs {
    pub fn query(&self) -> ExplainQuery {
        ExplainQuery {
            path: self.path.clone(),
            writer: match (&self.pid, &self.cgroup) {
                (Some(p), _) => Writer::Pid(*p),
                (None, Some(c)) => Writer::Cgroup(c.clone()),
                (None, None) => Writer::Caller,
            },
            tmpfiles_dirs: self.tmpfiles_dirs.clone(),
        }
    }

    pub fn output(&self) -> Output {
        self.structured.on(Output::stdout(Format::TEXT))
    }
}
