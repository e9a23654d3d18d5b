//! `STORE/last-sync`: how the last sync attempt ended (not only the last
//! good one, which the newest manifest dates), so `status` can say when a
//! sync failed or stored files torn, and which tmpfs the sync read.

use std::os::fd::BorrowedFd;
use std::path::Path;

use crate::sys::atomic::{AtomicWrite, NewMode};

use serde::{Deserialize, Serialize};

const NAME: &str = "last-sync";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LastSync {
    pub schema_version: u32,
    pub finished_unix_s: u64,
    /// The sync committed a generation.
    pub ok: bool,
    pub generation: Option<u64>,
    /// Files stored torn in that generation.
    pub torn_files: Vec<String>,
    /// Files stored as the prefix copied while they grew.
    pub prefixed_files: u64,
    pub error: Option<String>,
    /// st_dev of the filesystem the sync read DIR from: the tmpfs persist
    /// mounted, so `status` can tell another mount on DIR from it.
    pub dir_dev: Option<u64>,
}

impl LastSync {
    /// Completed with every file whole (or a consistent prefix).
    pub fn complete(&self) -> bool {
        self.ok && self.torn_files.is_empty()
    }

    /// Read through the store's descriptor, never a path.
    pub fn load(store: BorrowedFd<'_>) -> Option<LastSync> {
        let b = super::store::read_beneath(store, NAME).ok()?;
        serde_json::from_slice(&b).ok()
    }

    /// Best effort: a store that cannot take this small file has already
    /// failed the sync loudly. Replaced through the store's descriptor
    /// (never a path someone could redirect) the one way every file is
    /// replaced (`sys::atomic`): temp file, fsync, rename, fsync of the
    /// store, so a crash leaves the old record or the new one.
    pub fn save(mut self, store: BorrowedFd<'_>, path: &Path) {
        self.schema_version = 1;
        self.finished_unix_s = (super::sync::now_unix_ns() / 1_000_000_000).max(0) as u64;
        let Ok(mut text) = serde_json::to_vec_pretty(&self) else {
            return;
        };
        text.push(b'\n');
        let _ = AtomicWrite {
            what: "the store's last-sync record",
            mode: NewMode::Exactly(0o600),
        }
        .write_beneath(store, path, NAME, &text);
    }
}
