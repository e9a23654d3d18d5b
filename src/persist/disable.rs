//! `persist disable`: a last sync, the tmpfs (or zram file system) detached
//! with what was written meanwhile carried across, the final tree written
//! back into DIR on disk and made durable, units and registry entry
//! removed; the store is kept (it is the user's backup; they delete it).

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result, bail};

use super::registry::Registry;
use super::store::{Store, gen_name};
use super::{load, mount, open_dir, resolve_dir, store, sync, units};
use crate::command::{Context, confirm, warn};
use crate::sys::knockout::durable;
use crate::sys::procfd::{self, ProcUse};
use crate::sys::unmount::{At, How, holders_line, unmount};
use crate::term::safe_path;

use crate::sys::signals::{self, Interrupt, Interrupted};
use crate::sys::zram::ZramDevice;
use crate::sys::{Sysroot, fs, hidden};

use super::admin::remove_fstab_line;

#[derive(Debug, Clone)]
pub struct DisableRequest {
    pub dir: PathBuf,
    pub registry: PathBuf,
    pub yes: bool,
}

/// How long `disable` waits for processes to close files they write on the
/// detached tmpfs before it lets the tmpfs go without their last writes.
const WRITER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Sync the tmpfs, make the directory underneath it that generation,
/// detach the tmpfs (holding its root, as `revert --keep-data` does) and
/// carry what was written to it meanwhile across with the same catch-up
/// (`copy::delta::carry`), waiting while a process still has a file open
/// for writing on it; then store the final tree as one more generation.
/// What [`sync_detach_catch_up`] ended with.
struct Detached {
    /// The generation the store ends with.
    generation: u64,
    /// The entries caught up.
    brought: Vec<String>,
    /// Who still used DIR when its tmpfs was detached.
    held_by: Vec<ProcUse>,
    /// DIR's zram device, taken back by this process when its file system
    /// was detached: removed once nothing holds it.
    device: Option<ZramDevice>,
}

fn sync_detach_catch_up(
    dir: &Path,
    top: &crate::sys::MountInfo,
    mounts: &[crate::sys::MountInfo],
    store: &dyn Store,
    keep: usize,
    stop: &AtomicBool,
    zram: Option<(&str, &str)>,
) -> Result<Detached> {
    use crate::sys::copy;
    use std::sync::atomic::Ordering;
    let still_on_tmpfs = |what: &str| {
        format!(
            "disable stopped {what}: {} is still on its tmpfs, nothing was lost; run `tmpfsctl persist disable {}` again",
            safe_path(dir),
            crate::term::shell_path(dir)
        )
    };
    let src = open_dir(dir)?;
    // Until the tmpfs is detached, a signal rolls back: DIR stays on its
    // tmpfs with everything, whatever the disk below holds.
    let rep = sync::sync(src.as_fd(), store, keep, stop)
        .map_err(|e| e.context(still_on_tmpfs("during its sync")))?;
    if let Some(p) = rep.too_long.first() {
        // Detaching would let it go: it is in no generation.
        bail!(
            "{} is too deep below {} to store ({} such entries); not disabling, DIR stays on its tmpfs \
             with everything: move it higher up and run disable again",
            crate::term::safe(p),
            safe_path(dir),
            rep.too_long.len()
        );
    }
    let under = hidden::open_underlying(mounts, top, dir)?;
    let u = under.dir.as_fd();
    {
        let _lock = store.lock()?;
        super::fs::clear_dir(u).with_context(|| format!("clearing {} on disk", safe_path(dir)))?;
        load::load(store, rep.generation, u)?;
    }
    if stop.load(Ordering::Relaxed) {
        return Err(
            anyhow::Error::new(Interrupted).context(still_on_tmpfs(&format!(
                "before detaching the tmpfs ({} is in the store)",
                gen_name(rep.generation)
            ))),
        );
    }
    // From the detach on, only finishing loses nothing: what is written to
    // the detached tmpfs exists nowhere else until it is carried across.
    let never = &AtomicBool::new(false);
    let mut base = copy::snapshot(u, never)?;
    // Detached on purpose (the data is on disk now): a process that keeps
    // DIR busy would otherwise stop the disable halfway. It is named, since
    // what it writes on the old tmpfs after the catch-up is lost.
    let held_by = procfd::users_of(&Sysroot::live(), dir);
    // A zram device is this process's to remove from here on: if it is
    // killed, the next run's sweep removes the device once nothing holds it.
    let device = zram
        .map(|(name, label)| ZramDevice::take_back(name, label))
        .transpose()?;
    unmount(At::Root(src.as_fd(), dir), How::Detach).map_err(|e| {
        anyhow::Error::new(e.errno())
            .context(format!("cannot detach the tmpfs at {}", safe_path(dir)))
    })?;
    if !held_by.is_empty() {
        crate::command::warn(&format!(
            "{} was detached while {}: they keep the old tmpfs until they let go, \
             and what they write there after this disable is lost; restart them",
            safe_path(dir),
            holders_line(&held_by)
        ));
    }
    // Writers still holding a file open on the detached tmpfs finish first:
    // carrying a file while it grows would leave the disk copy longer than
    // the version recorded as carried, and the catch-up would then take it
    // for a newer one written on disk and stop updating it.
    let t0 = std::time::Instant::now();
    while let Some(p) = sync::open_for_writing(src.as_fd())? {
        if t0.elapsed() > WRITER_WAIT {
            crate::command::warn(&format!(
                "{} is still open for writing on the detached tmpfs after {} s; \
                 what is written to it from now on is lost",
                crate::term::safe(&p),
                WRITER_WAIT.as_secs()
            ));
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut brought = Vec::new();
    for _ in 0..copy::delta::CATCH_UP_PASSES {
        let d = copy::delta::carry(src.as_fd(), u, &mut base, never).with_context(|| {
            format!(
                "the tmpfs of {} is detached; copying back what was written to it after the last sync failed",
                safe_path(dir)
            )
        })?;
        let quiet = d.is_empty();
        brought.extend(d.brought);
        brought.extend(d.removed);
        if quiet {
            break;
        }
    }
    copy::copy_root_meta(src.as_fd(), u).context("copying DIR's own owner, mode and times")?;
    durable!("disable-syncfs-live", "", rustix::fs::syncfs(u)).context("flushing DIR on disk")?;
    let fin = if brought.is_empty() {
        rep.generation
    } else {
        sync::sync(u, store, keep, never)?.generation
    };
    Ok(Detached {
        generation: fin,
        brought,
        held_by,
        device,
    })
}

#[derive(Debug, serde::Serialize)]
pub struct DisableReport {
    pub dir: PathBuf,
    pub store: PathBuf,
    pub generation: u64,
    pub unmounted: bool,
    /// The final tree was written into DIR on disk.
    pub written_back: bool,
    /// Entries written to the tmpfs after the last sync and brought back to
    /// disk before it was let go.
    pub caught_up: Vec<String>,
    /// Processes that still used DIR when its tmpfs was detached.
    pub held_by: Vec<ProcUse>,
    pub removed: Vec<PathBuf>,
    /// The zram device DIR was on, removed (`zram3`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zram_removed: Option<String>,
}

pub fn disable_cmd(ctx: &Context, req: &DisableRequest) -> Result<DisableReport> {
    if !rustix::process::geteuid().is_root() {
        bail!("`tmpfsctl persist disable` needs root: it unmounts a tmpfs; run it with sudo");
    }
    let dir = resolve_dir(&req.dir)?;
    let mut reg = Registry::load(&req.registry)?;
    let Some(e) = reg.get(&dir).cloned() else {
        bail!(
            "{} is not a persisted directory (not in {})",
            safe_path(&dir),
            safe_path(&req.registry)
        );
    };
    confirm(
        &format!(
            "Sync {}, unmount its tmpfs and put its files back on disk?",
            safe_path(&dir)
        ),
        req.yes,
    )?;
    let store = store::open(&e.store)?;
    super::trust::check_unchanged(&e.store, store.fd(), e.trust.as_ref())?;
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    let top = mount::persisted_at(&mounts, &dir, e.zram.as_ref());
    let mounted = top.is_some();
    // SIGINT and SIGTERM (what systemd and shutdown send) alike: rolled back
    // before the detach, finished after it; never a second-signal exit.
    let intr = Interrupt::install(false)?;
    let stop = intr.flag();
    let mut caught_up = Vec::new();
    let mut held_by = Vec::new();
    let mut device = None;
    let g = if let Some(top) = top {
        let name = mount::zram_name(top);
        let zram = e
            .zram
            .as_ref()
            .and_then(|z| Some((name.as_deref()?, z.label.as_str())));
        let d = sync_detach_catch_up(&dir, top, &mounts, &*store, e.keep, &stop, zram)?;
        caught_up = d.brought;
        held_by = d.held_by;
        device = d.device;
        d.generation
    } else {
        store
            .newest_complete()?
            .ok_or_else(|| anyhow::anyhow!("store {} holds no generation", safe_path(&e.store)))?
    };
    // DIR on disk now: make it the final tree, unless it already is.
    let dfd = open_dir(&dir)?;
    let d = load::diff(dfd.as_fd(), &*store, Some(g))?;
    let written_back = mounted || !d.is_empty();
    if !mounted && written_back {
        let _lock = store.lock()?;
        fs::clear_dir(dfd.as_fd())
            .with_context(|| format!("clearing {} on disk", safe_path(&dir)))?;
        load::load(&*store, g, dfd.as_fd())?;
        durable!("disable-syncfs-load", "", rustix::fs::syncfs(&dfd))
            .context("flushing DIR on disk")?;
    }
    store.drop_live_index();
    let mut removed = Vec::new();
    if let Some(ud) = &e.unit_dir {
        removed.extend(units::remove(ud, &dir)?);
    }
    if let (Some(f), Some(line)) = (&e.fstab, &e.fstab_line)
        && remove_fstab_line(f, line)?
    {
        removed.push(f.clone());
    }
    reg.remove(&dir);
    reg.save(&req.registry)?;
    // After the last sync and the write-back: the device held nothing else.
    let zram_removed = match device {
        Some(d) => {
            let name = d.name();
            match d.remove() {
                Ok(()) => Some(name),
                Err(err) => {
                    warn(&format!(
                        "{err:#}; the next tmpfsctl run that makes a zram device removes it once nothing holds it"
                    ));
                    None
                }
            }
        }
        None => None,
    };
    signals::check_finished(|| {
        format!(
            "disable finished first: {} is back on disk with {} of {}, units and registry entry removed",
            safe_path(&dir),
            gen_name(g),
            safe_path(&e.store)
        )
    })?;
    let out = DisableReport {
        dir: dir.clone(),
        store: e.store.clone(),
        generation: g,
        unmounted: mounted,
        written_back,
        caught_up,
        held_by,
        removed,
        zram_removed,
    };
    Ok(out)
}

pub fn disable_text(out: &DisableReport) -> String {
    let mut s = String::new();
    if !out.caught_up.is_empty() {
        s.push_str(&format!(
            "  caught up {} entries written after the last sync ({})\n",
            out.caught_up.len(),
            out.caught_up
                .iter()
                .take(5)
                .map(|p| crate::term::safe(p).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    s.push_str(&format!(
        "{}: {} is back on disk{}; the store {} is kept (delete it when you no longer need it)\n",
        safe_path(&out.dir),
        gen_name(out.generation),
        match (&out.zram_removed, out.unmounted) {
            (Some(z), _) => format!(", its file system unmounted and /dev/{z} removed"),
            (None, true) => ", tmpfs unmounted".into(),
            (None, false) => String::new(),
        },
        safe_path(&out.store)
    ));
    s
}
