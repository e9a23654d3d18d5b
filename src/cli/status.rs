//! `tmpfsctl status` arguments.

use super::output::{Structured, json_help};
use crate::command::{Format, Output};
use std::path::PathBuf;

use crate::status::StatusQuery;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  tmpfsctl status\n  tmpfsctl status --json | jq '.mounts[] | select(.fstype==\"tmpfs\")'\n  tmpfsctl status ~/build /srv/cache\n\n\
Numbers come from statfs(2) and agree with `df -B1` and `df -i`; a PATH that is its own mount gets its data size from statfs too; any other PATH's data is counted only with --du (a walk like `du -s -x -B1`, a stat per file).\n\n\
tmpfs size limits may add up to more than RAM + swap (a stock systemd machine has /dev/shm and /tmp at 50% each, \
/run at 20%, each /run/user/UID at 10%): limits are not reservations, so that alone is no warning. \
tmpfs_overcommit warns when one mount filling up, on top of what RAM filesystems hold now, would not fit in \
RAM + swap (the OOM killer would run before the writer gets ENOSPC); read-only and kernel-interface tmpfs \
(under /sys, /proc) are not counted. tmpfs_nearly_full is above 90% used, and says when writes already fail.",
    mut_args(json_help("Print a JSON document (schema_version 3) instead of tables", &[])),
)]
pub struct StatusArgs {
    /// Extra directories to report on, besides /tmp, /var/tmp and $TMPDIR
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Also list hugetlbfs and devtmpfs mounts
    #[arg(long)]
    pub all: bool,
    /// Count the data under each directory that is not its own mount by
    /// walking it, like `du -s -x -B1` (costs a stat per file; without it
    /// such a directory's data is "not counted")
    #[arg(long)]
    pub du: bool,
    #[command(flatten)]
    pub structured: Structured,
}

impl StatusArgs {
    pub fn query(&self) -> StatusQuery {
        StatusQuery {
            paths: self.paths.clone(),
            all: self.all,
            du: self.du,
        }
    }

    pub fn output(&self) -> Output {
        self.structured.on(Output::stdout(Format::TEXT))
    }
}
