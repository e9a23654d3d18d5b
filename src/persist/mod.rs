//! `tmpfsctl persist`: a directory kept on tmpfs with a crash-safe copy on
//! disk (the store), synced on demand, on a timer and at shutdown.
//!
//! The store is always one complete generation (see [`store`]); a sync
//! writes only what changed and hard-links the rest ([`sync`]); a restore
//! loads the newest complete generation, verifying every byte against the
//! manifest ([`load`]). Commands take plain requests; clap lives in
//! `cli/persist.rs`.

pub mod admin;
pub mod content;
pub mod disable;
pub mod handover;
pub mod load;
pub mod manifest;
pub mod mount;
pub mod record;
pub mod registry;
pub mod report;
pub mod restore;
pub use restore::restore_cmd;
pub mod scan;
pub mod status;
pub mod store;
pub mod sync;
pub mod trust;
pub mod units;
pub mod verify;

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use rustix::fs::{Mode, OFlags};

use crate::command::Context;
use crate::sys::signals::{self, Interrupt};
use crate::sys::{Sysroot, fs, resolve};
use crate::term::safe_path;
use crate::units::{fmt_bytes, noun};
use registry::Registry;
use store::{Store, gen_name};

pub const DEFAULT_KEEP: usize = 2;
pub const DEFAULT_INTERVAL_S: u64 = 600;

#[derive(Debug, Clone)]
pub struct SyncRequest {
    pub dir: PathBuf,
    pub store: Option<PathBuf>,
    pub keep: Option<usize>,
    pub allow_empty: bool,
    pub registry: PathBuf,
}

#[derive(Debug, Clone)]
pub struct RestoreRequest {
    pub dir: PathBuf,
    pub store: Option<PathBuf>,
    pub size: Option<String>,
    pub force: bool,
    /// Load this generation, not the newest that verifies.
    pub generation: Option<u64>,
    pub registry: PathBuf,
    /// Say nothing on stderr (the newer generations passed over): the
    /// caller's report lists them.
    pub quiet: bool,
}

/// DIR as an absolute path without symlinks (what the registry and units
/// name), checked the way `apply` checks it: a symlinked DIR, a system
/// directory, or one that a non-root user other than the caller could swap
/// for another is refused, since persist mounts over it and writes its data
/// back as root.
pub fn resolve_dir(dir: &Path) -> Result<PathBuf> {
    let p = resolve::resolve_dir(&Sysroot::live(), dir)?;
    resolve::refuse_system_dir(&p)?;
    Ok(p)
}

pub fn open_dir(dir: &Path) -> Result<OwnedFd> {
    rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", safe_path(dir)))
}

/// The store for DIR: `--store`, else the registry's; and the registry entry.
pub fn store_for(
    dir: &Path,
    store: Option<&Path>,
    reg_path: &Path,
) -> Result<(PathBuf, Option<registry::Registered>)> {
    let reg = Registry::load(reg_path)?;
    let entry = reg.get(dir).cloned();
    match (store, &entry) {
        (Some(s), _) => Ok((s.to_path_buf(), entry)),
        (None, Some(e)) => Ok((e.store.clone(), entry)),
        (None, None) => bail!(
            "{} is not a persisted directory (not in {}); run `tmpfsctl persist enable {}` \
             or give --store",
            safe_path(dir),
            safe_path(reg_path),
            safe_path(dir)
        ),
    }
}

/// What `tmpfsctl persist` is asked: one of its subcommands.
#[derive(Debug, Clone)]
pub enum PersistRequest {
    Enable(admin::EnableRequest),
    Sync(SyncRequest),
    Restore(RestoreRequest),
    Status(status::StatusRequest),
    Verify(verify::VerifyRequest),
    Disable(disable::DisableRequest),
}

/// `tmpfsctl persist`: the subcommand's report.
impl crate::command::Request for PersistRequest {
    type Report = report::PersistReport;

    fn run(&self, ctx: &Context) -> Result<Self::Report> {
        use report::PersistReport as R;
        Ok(match self {
            PersistRequest::Enable(r) => R::Enabled(admin::enable_cmd(ctx, r)?),
            PersistRequest::Sync(r) => R::Synced(sync_cmd(ctx, r)?),
            PersistRequest::Restore(r) => R::Restored(restore_cmd(ctx, r)?),
            PersistRequest::Status(r) => R::Status(status::status_cmd(ctx, r)?),
            PersistRequest::Verify(r) => R::Verified(verify::verify_cmd(ctx, r)?),
            PersistRequest::Disable(r) => R::Disabled(disable::disable_cmd(ctx, r)?),
        })
    }
}

pub fn sync_cmd(ctx: &Context, req: &SyncRequest) -> Result<report::Synced> {
    let dir = resolve_dir(&req.dir)?;
    let (store_path, entry) = store_for(&dir, req.store.as_deref(), &req.registry)?;
    let store = store::open(&store_path)?;
    // Held until the report is written: a signal stops the copy (nothing
    // switched) or, once the generation is being switched, waits for it.
    let intr = Interrupt::install(true)?;
    let out = sync_checked(ctx, req, &dir, &*store, entry.as_ref(), &intr.flag());
    let rep = match out {
        Ok(r) => r,
        Err(e) if signals::is_interrupted(&e) => {
            return Err(e.context("sync stopped; nothing switched"));
        }
        Err(e) => {
            record::LastSync {
                error: Some(format!("{e:#}")),
                ..Default::default()
            }
            .save(store.fd(), store.path());
            return Err(e);
        }
    };
    record::LastSync {
        ok: true,
        generation: Some(rep.generation),
        torn_files: rep.torn.iter().map(|t| t.path.clone()).collect(),
        prefixed_files: rep.prefixed.len() as u64,
        error: None,
        dir_dev: Some(rep.dir_dev),
        ..Default::default()
    }
    .save(store.fd(), store.path());
    if !rep.pruned.is_empty() {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        empty_trash_in_background(&store_path);
    }
    // A signal after the last point a sync stops at: it finished.
    signals::check_finished(|| {
        format!(
            "sync finished first: {} of {} is current",
            gen_name(rep.generation),
            safe_path(&dir)
        )
    })?;
    Ok(report::Synced {
        dir,
        store: store_path,
        report: rep,
    })
}

fn sync_checked(
    ctx: &Context,
    req: &SyncRequest,
    dir: &Path,
    store: &dyn Store,
    entry: Option<&registry::Registered>,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<sync::SyncReport> {
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    store::check_store(store.path(), dir, &mounts)?;
    let keep = req.keep.or(entry.map(|e| e.keep)).unwrap_or(DEFAULT_KEEP);
    if let Some(e) = entry
        && mount::persisted_at(&mounts, dir, e.zram.as_ref()).is_none()
    {
        // A persisted DIR without its tmpfs is the stale tree on disk (after
        // a reboot, before the restore): syncing it would bury the newest data.
        bail!(
            "{} is persisted but no {} is mounted on it (rebooted or crashed?); \
             run `tmpfsctl persist restore {}` first",
            safe_path(dir),
            if e.zram.is_some() {
                "zram file system"
            } else {
                "tmpfs"
            },
            safe_path(dir)
        );
    }
    let dfd = open_dir(dir)?;
    if !req.allow_empty && fs::names(dfd.as_fd())?.is_empty() {
        refuse_empty_over_data(dir, store)?;
    }
    sync::sync(dfd.as_fd(), store, keep, stop)
}

/// An empty DIR over a store with data is almost always a tmpfs that was
/// never restored (a failed boot): syncing it would start pruning the good
/// generations. Every generation is looked at, not only `current` (which
/// may be lost or damaged).
fn refuse_empty_over_data(dir: &Path, store: &dyn Store) -> Result<()> {
    for g in store.generations()?.into_iter().rev() {
        if store.manifest(g).is_ok_and(|(m, _)| m.len() > 1) {
            bail!(
                "{} is empty but {} holds {} with data; not syncing an empty directory over it \
                 (run `tmpfsctl persist restore {}`, or pass --allow-empty if emptying it was meant)",
                safe_path(dir),
                safe_path(store.path()),
                gen_name(g),
                safe_path(dir)
            );
        }
    }
    Ok(())
}

/// Free the pruned generations' space after this command returns: the new
/// generation is durable and current already, and freeing blocks costs a
/// journal round trip per file on ext4. A detached child does it (stdio on
/// /dev/null, every other fd closed, so no pipe or lock is held open); if it
/// is killed, the next sync empties the trash first.
fn empty_trash_in_background(store: &Path) {
    // SAFETY: tmpfsctl's sync path is single-threaded, so the child may
    // allocate; fork failure (-1) just leaves the trash to the next sync.
    let pid = unsafe { libc::fork() };
    if pid != 0 {
        return;
    }
    // SAFETY: plain syscalls on fds this child owns; _exit skips the
    // parent's atexit handlers and buffered output.
    unsafe {
        libc::setsid();
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
        }
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    }
    if let Ok(s) = store::open(store) {
        let _ = s.empty_trash(true);
    }
    // SAFETY: see above.
    unsafe { libc::_exit(0) }
}

/// The line a sync prints.
pub fn sync_text(dir: &Path, store_path: &Path, rep: &sync::SyncReport) -> String {
    format!(
        "{}: {} written to {} ({} {}, {}): {} changed {} copied ({}), {} unchanged shared, in {:.3} s\n",
        safe_path(dir),
        gen_name(rep.generation),
        safe_path(store_path),
        rep.files,
        noun(rep.files, "file", "files"),
        fmt_bytes(rep.bytes),
        rep.copied_files,
        noun(rep.copied_files, "file", "files"),
        fmt_bytes(rep.copied_bytes),
        rep.shared_files,
        rep.duration_ns as f64 / 1e9
    )
}

/// What a sync says on stderr after its line (not with `--json`, which
/// holds it all): what it had to do besides copying, naming files.
pub fn sync_after(rep: &sync::SyncReport) -> String {
    use crate::command::{noted, warned};
    use crate::term::safe;
    let mut out = String::new();
    for n in &rep.notes {
        out += &warned(&safe(n));
    }
    for r in &rep.repaired_objects {
        out += &warned(&format!(
            "store damaged: {}; copied that file again from DIR",
            safe(r)
        ));
    }
    for m in &rep.moved_aside {
        out += &warned(&safe(m));
    }
    for p in &rep.prefixed {
        out += &noted(&format!(
            "{} grew during the sync; stored its first {} (its size when the copy began; \
             it had {} when the copy ended, the rest goes into the next sync)",
            safe(&p.path),
            fmt_bytes(p.stored_bytes),
            fmt_bytes(p.size_after_copy_bytes)
        ));
    }
    for t in &rep.torn {
        out += &warned(&format!(
            "{}: {}; stored as copied and marked torn in {}",
            safe(&t.path),
            t.reason,
            gen_name(rep.generation)
        ));
    }
    for p in &rep.too_long {
        out += &warned(&format!(
            "{} is too deep below DIR to store (its path is over {} bytes); not synced, \
             with everything below it: move it higher up",
            safe(p),
            scan::MAX_REL
        ));
    }
    for p in &rep.skipped_mounts {
        out += &noted(&format!(
            "{} is another mount inside DIR; not synced",
            safe(p)
        ));
    }
    out
}
