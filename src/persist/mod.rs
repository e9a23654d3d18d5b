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
pub mod load;
pub mod manifest;
pub mod mount;
pub mod registry;
pub mod scan;
pub mod status;
pub mod store;
pub mod sync;
pub mod units;

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use rustix::fs::{Mode, OFlags};

use crate::context::{Context, ExitCode};
use crate::render::term::safe_path;
use crate::sys::fs;
use crate::units::fmt_bytes;
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
    pub json: bool,
}

#[derive(Debug, Clone)]
pub struct RestoreRequest {
    pub dir: PathBuf,
    pub store: Option<PathBuf>,
    pub size: Option<String>,
    pub force: bool,
    pub registry: PathBuf,
    pub json: bool,
}

/// DIR as an absolute path without symlinks (what the registry and units
/// name), checked the way `apply` checks it: a symlinked DIR, a system
/// directory, or one that a non-root user other than the caller could swap
/// for another is refused, since persist mounts over it and writes its data
/// back as root.
pub fn resolve_dir(dir: &Path) -> Result<PathBuf> {
    let p = crate::mounts::facts::resolve_dir(&crate::sys::Sysroot::default(), dir)?;
    crate::mounts::facts::refuse_system_dir(&p)?;
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

fn interrupted(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<crate::sys::signals::Interrupted>()
            .is_some()
    })
}

pub fn sync_cmd(ctx: &Context, req: &SyncRequest) -> Result<ExitCode> {
    let dir = resolve_dir(&req.dir)?;
    let (store_path, entry) = store_for(&dir, req.store.as_deref(), &req.registry)?;
    let store = Store::open(&store_path)?;
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    store::check_store(&store_path, &dir, &mounts)?;
    let keep = req
        .keep
        .or(entry.as_ref().map(|e| e.keep))
        .unwrap_or(DEFAULT_KEEP);
    if entry.is_some() && mount::tmpfs_at(&mounts, &dir).is_none() {
        // A persisted DIR without its tmpfs is the stale tree on disk (after
        // a reboot, before the restore): syncing it would bury the newest data.
        bail!(
            "{} is persisted but no tmpfs is mounted on it (rebooted or crashed?); \
             run `tmpfsctl persist restore {}` first",
            safe_path(&dir),
            safe_path(&dir)
        );
    }
    let dfd = open_dir(&dir)?;
    if !req.allow_empty && fs::names(dfd.as_fd())?.is_empty() {
        // An empty DIR over a store with data is almost always a tmpfs that
        // was never restored (a failed boot): syncing it would start pruning
        // the good generations.
        if let Some(g) = store.newest_complete()?
            && store.manifest(g)?.0.len() > 1
        {
            bail!(
                "{} is empty but {} holds {} with data; not syncing an empty directory over it \
                 (run `tmpfsctl persist restore {}`, or pass --allow-empty if emptying it was meant)",
                safe_path(&dir),
                safe_path(&store_path),
                gen_name(g),
                safe_path(&dir)
            );
        }
    }
    let intr = crate::sys::signals::Interrupt::install(true)?;
    let flag = intr.flag();
    let rep = match sync::sync(dfd.as_fd(), &store, keep, &flag) {
        Ok(r) => r,
        Err(e) if interrupted(&e) => {
            eprintln!("tmpfsctl: sync interrupted; nothing switched");
            return Ok(ExitCode::Interrupted);
        }
        Err(e) => return Err(e),
    };
    report_sync(&dir, &store_path, &rep, req.json)?;
    if !rep.pruned.is_empty() {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        empty_trash_in_background(&store_path);
    }
    Ok(ExitCode::Ok)
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
    if let Ok(s) = Store::open(store) {
        let _ = s.empty_trash(true);
    }
    // SAFETY: see above.
    unsafe { libc::_exit(0) }
}

fn report_sync(dir: &Path, store_path: &Path, rep: &sync::SyncReport, json: bool) -> Result<()> {
    if json {
        crate::render::print_json(rep)?;
    } else {
        println!(
            "{}: {} written to {} ({} files, {}): {} changed file(s) copied ({}), {} unchanged shared, in {:.3} s",
            safe_path(dir),
            gen_name(rep.generation),
            safe_path(store_path),
            rep.files,
            fmt_bytes(rep.bytes),
            rep.copied_files,
            fmt_bytes(rep.copied_bytes),
            rep.shared_files,
            rep.duration_ns as f64 / 1e9
        );
        for p in &rep.unsettled {
            eprintln!(
                "tmpfsctl: warning: {} kept changing during the sync; its previous version was kept",
                crate::render::term::safe(p)
            );
        }
        for p in &rep.skipped_mounts {
            eprintln!(
                "tmpfsctl: note: {} is another mount inside DIR; not synced",
                crate::render::term::safe(p)
            );
        }
    }
    Ok(())
}

#[derive(Debug, serde::Serialize)]
pub struct RestoreReport {
    pub dir: PathBuf,
    pub store: PathBuf,
    pub generation: u64,
    /// "mounted" (a new tmpfs filled and mounted), "loaded" (into the
    /// tmpfs already there), "unchanged" (DIR already held it).
    pub action: &'static str,
    pub files: u64,
    pub bytes: u64,
}

pub fn restore_cmd(ctx: &Context, req: &RestoreRequest) -> Result<ExitCode> {
    let dir = resolve_dir(&req.dir)?;
    let (store_path, entry) = store_for(&dir, req.store.as_deref(), &req.registry)?;
    let store = Store::open(&store_path)?;
    let _lock = store.lock()?;
    let Some(g) = store.newest_complete()? else {
        bail!(
            "store {} holds no complete generation yet; run `tmpfsctl persist sync` first",
            safe_path(&store_path)
        );
    };
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    let size = req
        .size
        .clone()
        .or_else(|| entry.as_ref().and_then(|e| e.size.clone()));
    let mut rep = RestoreReport {
        dir: dir.clone(),
        store: store_path.clone(),
        generation: g,
        action: "mounted",
        files: 0,
        bytes: 0,
    };
    if mount::tmpfs_at(&mounts, &dir).is_none() {
        let mut out = None;
        mount::mount_dir(&dir, size.as_deref(), Default::default(), |root| {
            let st = rustix::fs::fstat(root)?;
            let (l, live) = load::load(&store, g, root)?;
            out = Some((l, live, st.st_dev));
            Ok(())
        })?;
        if let Some((l, live, dev)) = out {
            store.write_live_index(g, dev, &live)?;
            rep.files = l.files;
            rep.bytes = l.bytes;
        }
    } else {
        let dfd = open_dir(&dir)?;
        if !fs::names(dfd.as_fd())?.is_empty() {
            let d = load::diff(dfd.as_fd(), &store, Some(g))?;
            if d.is_empty() {
                rep.action = "unchanged";
                return finish_restore(&rep, req.json);
            }
            if !req.force {
                let mut names: Vec<String> = Vec::new();
                for (what, v) in [
                    ("changed", &d.changed),
                    ("only in DIR", &d.added),
                    ("only in the store", &d.removed),
                ] {
                    for p in v.iter().take(10) {
                        names.push(format!("  {what}: {}", crate::render::term::safe(p)));
                    }
                }
                bail!(
                    "{} holds data that differs from {} in {} ({} entries, {} in files that would be lost):\n{}\n\
                     not overwriting it; run `tmpfsctl persist sync {}` to keep DIR's data, or pass --force to replace it with the store's",
                    safe_path(&dir),
                    gen_name(g),
                    safe_path(&store_path),
                    d.changed_files(),
                    fmt_bytes(d.changed_bytes),
                    names.join("\n"),
                    safe_path(&dir)
                );
            }
            fs::clear_dir(dfd.as_fd()).with_context(|| format!("clearing {}", safe_path(&dir)))?;
        }
        let st = rustix::fs::fstat(&dfd)?;
        let (l, live) = load::load(&store, g, dfd.as_fd())?;
        store.write_live_index(g, st.st_dev, &live)?;
        rep.action = "loaded";
        rep.files = l.files;
        rep.bytes = l.bytes;
    }
    finish_restore(&rep, req.json)
}

fn finish_restore(rep: &RestoreReport, json: bool) -> Result<ExitCode> {
    if json {
        crate::render::print_json(rep)?;
    } else if rep.action == "unchanged" {
        println!(
            "{} already holds {} of {}; nothing to restore",
            safe_path(&rep.dir),
            gen_name(rep.generation),
            safe_path(&rep.store)
        );
    } else {
        println!(
            "{}: {} restored from {} ({} files, {}){}",
            safe_path(&rep.dir),
            gen_name(rep.generation),
            safe_path(&rep.store),
            rep.files,
            fmt_bytes(rep.bytes),
            if rep.action == "mounted" {
                " onto a new tmpfs"
            } else {
                ""
            }
        );
    }
    Ok(ExitCode::Ok)
}

/// `10min`, `600`, `30s`, `1h`, `2h30m`, `1d`: seconds.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let err = || format!("duration {s:?}: write e.g. 10min, 600s, 1h or 2h30m");
    if t.is_empty() {
        return Err(err());
    }
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    let mut total = 0u64;
    let mut rest = t;
    while !rest.is_empty() {
        let d = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if d == 0 {
            return Err(err());
        }
        let n: u64 = rest[..d].parse().map_err(|_| err())?;
        rest = &rest[d..];
        let u = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let mult = match rest[..u].trim() {
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hr" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86400,
            _ => return Err(err()),
        };
        rest = &rest[u..];
        total = n
            .checked_mul(mult)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(err)?;
    }
    if total == 0 {
        return Err(format!("duration {s:?} is zero"));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations() {
        use super::parse_duration as p;
        assert_eq!(p("10min"), Ok(600));
        assert_eq!(p("600"), Ok(600));
        assert_eq!(p("2h30m"), Ok(9000));
        assert_eq!(p("1d"), Ok(86400));
        assert!(p("soon").is_err());
        assert!(p("0s").is_err());
    }
}
