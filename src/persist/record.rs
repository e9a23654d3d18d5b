//! `STORE/last-sync`: how the last sync attempt ended (not only the last
//! good one, which the newest manifest dates), so `status` can say when a
//! sync failed or stored files torn, and which tmpfs the sync read.

use std::path::Path;

use serde::{Deserialize, Serialize};

const NAME: &str = "last-sync";
const TMP: &str = ".last-sync.tmp";

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

    pub fn load(store: &Path) -> Option<LastSync> {
        let b = std::fs::read(store.join(NAME)).ok()?;
        serde_json::from_slice(&b).ok()
    }

    /// Best effort: a store that cannot take this small file has already
    /// failed the sync loudly. Written through the store's descriptor
    /// (never a path someone could redirect) under a temp name, fsynced,
    /// renamed over the old record and the store fsynced, like every other
    /// file in the store: a crash leaves the old record or the new one.
    pub fn save(mut self, store: std::os::fd::BorrowedFd<'_>) {
        use rustix::fs::{AtFlags, Mode, OFlags};
        self.schema_version = 1;
        self.finished_unix_s = (super::sync::now_unix_ns() / 1_000_000_000).max(0) as u64;
        let Ok(mut text) = serde_json::to_vec_pretty(&self) else {
            return;
        };
        text.push(b'\n');
        let _ = rustix::fs::unlinkat(store, TMP, AtFlags::empty());
        let written = (|| -> rustix::io::Result<()> {
            let f = rustix::fs::openat(
                store,
                TMP,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )?;
            let mut off = 0;
            while off < text.len() {
                off += rustix::io::pwrite(&f, &text[off..], off as u64)?;
            }
            rustix::fs::fsync(&f)?;
            rustix::fs::renameat(store, TMP, store, NAME)?;
            rustix::fs::fsync(store)
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(store, TMP, AtFlags::empty());
        }
    }
}
