//! What `apply` (and a resize, and `revert`'s config steps) report: the
//! JSON and the text are both rendered from these.

use serde::Serialize;

use super::boot;
use super::plan::Plan;
use crate::sys::copy;

#[derive(Debug, Clone, Serialize)]
pub struct PersistResult {
    pub via: String,
    pub path: Option<String>,
    pub edit: boot::Edit,
    pub backup: Option<String>,
}

impl PersistResult {
    /// The file changed and its backup, as a change line ends: "PATH (backup
    /// PATH.tmpfsctl.bak)", or the path alone when none was made.
    pub fn changed_file(&self) -> String {
        let path = self.path.as_deref().unwrap_or_default();
        match &self.backup {
            Some(b) => format!("{path} (backup {b})"),
            None => path.to_string(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    pub schema_version: u32,
    pub dir: String,
    pub plan: Plan,
    /// True when this run mounted the tmpfs; false when it already was.
    pub mounted: bool,
    pub resized_to: Option<String>,
    pub copied: Option<copy::CopyStats>,
    /// Entries compared equal between DIR and the copy (root included).
    /// Entries written during the copy are not compared and not counted.
    pub verified_entries: Option<u64>,
    pub persist: PersistResult,
    pub changes: Vec<String>,
    /// Options repeated in the printed undo command.
    #[serde(skip)]
    pub follow_up: String,
    /// The command that undoes this run, when it is not `revert` (a resize
    /// is undone by resizing back).
    #[serde(skip)]
    pub undo: Option<String>,
}
