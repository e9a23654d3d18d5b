//! `tmpfsctl status` arguments.

use std::path::PathBuf;

use crate::status::StatusQuery;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  tmpfsctl status\n  tmpfsctl status --json | jq '.mounts[] | select(.fstype==\"tmpfs\")'\n  tmpfsctl status ~/build /srv/cache\n\n\
Numbers come from statfs(2) and agree with `df -B1` and `df -i`; a PATH that is its own mount gets its data size from statfs too; any other PATH's data is counted only with --du (a walk like `du -s -x -B1`, a stat per file)."
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
    /// Print a JSON document (schema_version 3) instead of tables
    #[arg(long)]
    pub json: bool,
}

impl StatusArgs {
    pub fn query(&self) -> StatusQuery {
        StatusQuery {
            paths: self.paths.clone(),
            all: self.all,
            du: self.du,
        }
    }
}
