//! The notes `apply` and `revert` keep under /run/tmpfsctl-journal/ while
//! they change the system (written and swept by `mounts::journal`). Reading
//! them lives here, on the ground floor, so `status` can name a run that was
//! killed part way without depending on the mounts capability.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Sysroot, proc};

/// Where the notes live on the running system.
pub const JOURNAL_DIR: &str = "/run/tmpfsctl-journal";

/// One apply or revert that was started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// `apply` or `revert`.
    pub op: String,
    pub dir: String,
    pub pid: u32,
    /// The run's start time (clock ticks after boot, /proc/PID/stat): with
    /// the pid it names the run; a later process given the same pid is
    /// another. None in notes of versions that did not record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start: Option<u64>,
    pub started_unix_s: u64,
    /// The fstab the run was editing, if any.
    pub fstab: Option<String>,
    /// The last step the run recorded before going on (`attaching`,
    /// `caught-up` for apply; `staging`, `swapping`,
    /// `copied-back`, `unmounting`, `caught-up` for revert).
    #[serde(default)]
    pub step: String,
    /// The device number of the tmpfs being switched, to recognise it later.
    #[serde(default)]
    pub dev: Option<u64>,
    /// The clock just before the switch (seconds, nanoseconds): entries
    /// written at or after it on the side the switch made visible are
    /// newer than anything left to carry.
    #[serde(default)]
    pub cut: Option<(i64, u64)>,
    /// Where revert keeps the tmpfs reachable while it copies back.
    #[serde(default)]
    pub stage: Option<String>,
}

/// Every note under `base`, with its file.
pub fn read_in(base: &Path) -> Vec<(PathBuf, Pending)> {
    let Ok(rd) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| {
            let p: Pending = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
            Some((e.path(), p))
        })
        .collect()
}

impl Pending {
    /// Whether the run that wrote this note still runs, judged from `root`'s
    /// /proc: same pid and same start time. An old note without a start
    /// time: a process that started after the note was written is not it.
    pub fn running(&self, root: &Sysroot) -> bool {
        match self.pid_start {
            Some(starttime) => proc::Owner {
                pid: self.pid,
                starttime,
            }
            .alive(root),
            None => proc::alive_since(root, self.pid, self.started_unix_s),
        }
    }
}

/// Runs that were started and whose process is gone (killed part way), from
/// the notes under `root`'s [`JOURNAL_DIR`] and its /proc.
pub fn pending(root: &Sysroot) -> Vec<Pending> {
    let mut v: Vec<Pending> = read_in(&root.path(JOURNAL_DIR))
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| !p.running(root))
        .collect();
    v.sort_by(|a, b| a.dir.cmp(&b.dir));
    v
}
