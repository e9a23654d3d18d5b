//! The list of persisted directories, so `persist status` with no DIR can
//! report on all of them and `sync`/`restore` find DIR's store. One small
//! JSON file, replaced atomically.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::sys::atomic::AtomicWrite;

pub const DEFAULT_PATH: &str = "/var/lib/tmpfsctl/persist/registry.json";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Registered {
    pub dir: PathBuf,
    pub store: PathBuf,
    /// tmpfs `size=` as given (`512M`, `50%`); None: the kernel default.
    pub size: Option<String>,
    pub interval_s: u64,
    pub keep: usize,
    /// `none`, `systemd` or `fstab`.
    pub persist: String,
    pub unit_dir: Option<PathBuf>,
    pub fstab: Option<PathBuf>,
    /// The exact fstab line added, so disable removes that line and no other.
    pub fstab_line: Option<String>,
    /// The store's owner and mode as enable accepted them, and the tmpfs's
    /// mount flags (absent in registries written before they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<super::trust::Trust>,
    /// DIR lives on a zram device (`--on zram`), made again at every
    /// restore; absent: on a tmpfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zram: Option<ZramSetup>,
}

/// The zram device a persisted DIR lives on, as restore makes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ZramSetup {
    /// The compression back end; None: the kernel's default.
    pub algorithm: Option<String>,
    /// The device's size: the file system's, plus its metadata.
    pub disksize_bytes: u64,
    /// The ext4 label, which tells persist's device from any other.
    pub label: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Registry {
    pub schema_version: u32,
    pub dirs: Vec<Registered>,
}

impl Registry {
    /// The registry; a missing file is an empty one.
    pub fn load(path: &Path) -> Result<Registry> {
        match std::fs::read(path) {
            Ok(b) => serde_json::from_slice(&b).with_context(|| {
                format!(
                    "registry {}: not a tmpfsctl persist registry",
                    path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Registry {
                schema_version: 1,
                dirs: Vec::new(),
            }),
            Err(e) => Err(e).with_context(|| format!("registry {}", path.display())),
        }
    }

    pub fn save(&mut self, path: &Path) -> Result<()> {
        self.schema_version = 1;
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)
                .with_context(|| format!("registry {}: create {}", path.display(), d.display()))?;
        }
        let mut text = serde_json::to_vec_pretty(self)?;
        text.push(b'\n');
        AtomicWrite::report("the persist registry").write(path, &text)
    }

    pub fn get(&self, dir: &Path) -> Option<&Registered> {
        self.dirs.iter().find(|e| e.dir == dir)
    }

    pub fn put(&mut self, e: Registered) {
        self.dirs.retain(|x| x.dir != e.dir);
        self.dirs.push(e);
        self.dirs.sort_by(|a, b| a.dir.cmp(&b.dir));
    }

    pub fn remove(&mut self, dir: &Path) -> Option<Registered> {
        let i = self.dirs.iter().position(|e| e.dir == dir)?;
        Some(self.dirs.remove(i))
    }
}
