//! `persist enable` and `persist disable`.
//!
//! enable: generation 1 is written from DIR on disk first and read back
//! (verified), and only then is a tmpfs filled from it and mounted over DIR:
//! at no moment is DIR's data only in RAM. disable: a last sync, unmount,
//! the final tree written back into DIR on disk, units and registry entry
//! removed; the store is kept (it is the user's backup; they delete it).

use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result, bail};

use super::registry::{Registered, Registry};
use super::store::{Store, gen_name};
use super::{load, mount, open_dir, resolve_dir, store, sync, units};
use crate::command::Context;
use crate::render::confirm;
use crate::sys::atomic::AtomicWrite;
use crate::sys::procfd::ProcUse;
use crate::sys::unmount::{At, How, holders_line, unmount};
use crate::term::safe_path;
use crate::units::{Size, fmt_bytes};

use crate::sys::boot::Boot;

#[derive(Debug, Clone)]
pub struct EnableRequest {
    pub dir: PathBuf,
    pub store: Option<PathBuf>,
    pub size: Option<Size>,
    pub interval_s: u64,
    pub keep: usize,
    /// How the setup comes back at boot (`--boot`).
    pub boot: Boot,
    pub fstab: PathBuf,
    pub unit_dir: PathBuf,
    pub registry: PathBuf,
    /// Mount the tmpfs without `nosuid` / `nodev`.
    pub allow_suid: bool,
    pub allow_dev: bool,
    /// Units the boot restore must run before (`--before`).
    pub before: Vec<String>,
    /// Allow a `size` above RAM + swap.
    pub force: bool,
    pub yes: bool,
}

#[derive(Debug, Clone)]
pub struct DisableRequest {
    pub dir: PathBuf,
    pub registry: PathBuf,
    pub yes: bool,
}

#[derive(Debug, serde::Serialize)]
pub struct EnableReport {
    pub dir: PathBuf,
    pub store: PathBuf,
    pub generation: u64,
    pub files: u64,
    pub bytes: u64,
    /// A tmpfs was mounted on DIR (false: DIR already was one).
    pub mounted: bool,
    pub persist: &'static str,
    pub units: Vec<PathBuf>,
    pub units_verified: bool,
    /// The units were started now (false: written for a systemd that is
    /// not running here, or into another --unit-dir; nothing syncs yet).
    pub units_started: bool,
    /// Directories above the store that did not exist and were made.
    pub created_dirs: Vec<PathBuf>,
    pub fstab: Option<PathBuf>,
}

/// The default store for DIR: /var/lib/tmpfsctl/persist/<escaped DIR>.
pub fn default_store(dir: &Path) -> PathBuf {
    Path::new("/var/lib/tmpfsctl/persist").join(units::escaped(dir))
}

fn size_option(s: Size) -> String {
    match s {
        Size::Bytes(b) => crate::units::tmpfs_size_option(b),
        Size::PercentOfRam(p) => format!("{p}%"),
    }
}

fn fstab_escape(p: &Path) -> String {
    let mut s = String::new();
    for &b in p.as_os_str().as_bytes() {
        if b.is_ascii_graphic() && b != b'\\' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\{b:03o}"));
        }
    }
    s
}

/// What enable will write to make the setup survive a reboot, all checked
/// before anything changes: the fstab line (DIR must have no entry yet) and
/// the units (verified with `systemd-analyze verify`).
struct BootSetup {
    fstab_line: Option<String>,
    units: Vec<(String, String)>,
    units_verified: bool,
}

fn plan_boot(
    req: &EnableRequest,
    dir: &Path,
    store: &Path,
    size: Option<&str>,
) -> Result<BootSetup> {
    let mut b = BootSetup {
        fstab_line: None,
        units: Vec::new(),
        units_verified: false,
    };
    if req.boot == Boot::Fstab {
        check_no_fstab_entry(&req.fstab, dir)?;
        b.fstab_line = Some(format!(
            "tmpfs {} tmpfs {}{} 0 0",
            fstab_escape(dir),
            size.map_or(String::new(), |s| format!("size={s},")),
            match (req.allow_suid, req.allow_dev) {
                (false, false) => "nosuid,nodev",
                (true, false) => "nodev",
                (false, true) => "nosuid",
                (true, true) => "defaults",
            }
        ));
    }
    for u in &req.before {
        units::check_unit_name(u)?;
    }
    if req.boot != Boot::None {
        let spec = units::UnitSpec {
            dir: dir.to_path_buf(),
            store: store.to_path_buf(),
            interval_s: req.interval_s,
            bin: units::unit_binary()?,
            registry: (req.registry != Path::new(super::registry::DEFAULT_PATH))
                .then(|| req.registry.clone()),
            fstab_mount: req.boot == Boot::Fstab,
            before: req.before.clone(),
        };
        b.units = units::render(&spec).to_vec();
        b.units_verified = units::verify(&b.units)?;
    }
    Ok(b)
}

/// Write the fstab line and units; on failure undo what was written.
fn install_boot(req: &EnableRequest, dir: &Path, boot: &BootSetup) -> Result<Vec<PathBuf>> {
    if let Some(line) = &boot.fstab_line {
        add_fstab_line(&req.fstab, dir, line)?;
    }
    if boot.units.is_empty() {
        return Ok(Vec::new());
    }
    let r = std::fs::create_dir_all(&req.unit_dir)
        .map_err(anyhow::Error::from)
        .and_then(|()| units::install(&req.unit_dir, &boot.units));
    if r.is_err() {
        let _ = units::remove(&req.unit_dir, dir);
        if let Some(line) = &boot.fstab_line {
            let _ = remove_fstab_line(&req.fstab, line);
        }
    }
    r
}

pub fn enable_cmd(ctx: &Context, req: &EnableRequest) -> Result<EnableReport> {
    if !rustix::process::geteuid().is_root() {
        bail!("`tmpfsctl persist enable` needs root: it mounts a tmpfs; run it with sudo");
    }
    let dir = resolve_dir(&req.dir)?;
    let mut reg = Registry::load(&req.registry)?;
    if let Some(e) = reg.get(&dir) {
        bail!(
            "{} is already persisted to {}; `tmpfsctl persist disable {}` first to change it",
            safe_path(&dir),
            safe_path(&e.store),
            safe_path(&dir)
        );
    }
    let store_path = std::path::absolute(req.store.clone().unwrap_or_else(|| default_store(&dir)))?;
    super::trust::check_placement(&store_path, &dir)?;
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    let already_tmpfs = mount::tmpfs_at(&mounts, &dir).is_some();
    let (mem, _) = ctx.sysroot.meminfo()?;
    if let Some(s) = req.size {
        let given = size_option(s);
        crate::units::check_tmpfs_cap(
            &given,
            s.resolve(mem.mem_total_bytes),
            mem.mem_total_bytes,
            mem.swap_total_bytes,
            req.force,
        )
        .map_err(|e| anyhow::anyhow!("--size {given}: {e}"))?;
    }
    let size = req.size.map(size_option);
    let boot = plan_boot(req, &dir, &store_path, size.as_deref())?;
    if let Some(s) = req.size
        && !already_tmpfs
    {
        // What the files take, not their apparent size: a sparse file costs
        // a tmpfs only its allocated blocks. Checked before anything is
        // written, so a refused enable leaves no generation behind.
        let held = allocated_bytes(&dir)?;
        if s.resolve(mem.mem_total_bytes) < held {
            bail!(
                "--size {}: {} holds {} (allocated); give a larger size (nothing was changed)",
                s,
                safe_path(&dir),
                fmt_bytes(held)
            );
        }
    }
    let journald = super::handover::check(&dir, already_tmpfs, req.force)?;
    confirm(
        &format!(
            "Keep {} in RAM (tmpfs) with its durable copy in {}?",
            safe_path(&dir),
            safe_path(&store_path)
        ),
        req.yes,
    )?;
    // SIGINT and SIGTERM alike: before the mount, DIR is untouched and the
    // enable stops there; after it, the enable finishes.
    let intr = crate::sys::signals::Interrupt::install(false)?;
    let stop = intr.flag();
    let mut journal = journald
        .then(|| super::handover::Journald::begin(&dir))
        .transpose()?;
    // Said, not done silently: a mistyped --store would otherwise leave a
    // new tree of directories wherever it pointed.
    let created_dirs: Vec<PathBuf> = {
        let mut missing: Vec<PathBuf> = store_path
            .ancestors()
            .skip(1)
            .take_while(|p| std::fs::symlink_metadata(p).is_err())
            .map(Path::to_path_buf)
            .collect();
        missing.reverse();
        missing
    };
    let store = store::create(&store_path)?;
    store::check_store(&store_path, &dir, &mounts)?;
    let trust = super::trust::record(store.fd(), req.allow_suid, req.allow_dev)?;
    let rep = copy_and_mount(
        &dir,
        &*store,
        req,
        size.as_deref(),
        already_tmpfs,
        trust,
        &stop,
    )?;
    let installed = install_boot(req, &dir, &boot).and_then(|u| {
        reg.put(Registered {
            dir: dir.clone(),
            store: store_path.clone(),
            size: size.clone(),
            interval_s: req.interval_s,
            keep: req.keep,
            persist: req.boot.name().into(),
            unit_dir: (req.boot != Boot::None).then(|| req.unit_dir.clone()),
            fstab: (req.boot == Boot::Fstab).then(|| req.fstab.clone()),
            fstab_line: boot.fstab_line.clone(),
            trust: Some(trust),
        });
        reg.save(&req.registry)?;
        Ok(u)
    });
    let units_written = match installed {
        Ok(u) => u,
        Err(e) => {
            // The tmpfs holds exactly generation 1 (nothing has written to it
            // yet): unmounting it loses nothing and leaves DIR as it was.
            if !already_tmpfs {
                let _ = unmount(At::Dir(&dir), How::Checked);
            }
            if req.boot != Boot::None {
                let _ = units::remove(&req.unit_dir, &dir);
            }
            if let Some(line) = &boot.fstab_line {
                let _ = remove_fstab_line(&req.fstab, line);
            }
            return Err(e.context("enable failed; DIR is back as it was (the store is kept)"));
        }
    };
    // Only now: the restore unit just started compares DIR with the store
    // and must find it as loaded.
    if let Some(j) = journal.as_mut() {
        j.flush();
    }
    let out = EnableReport {
        dir: dir.clone(),
        store: store_path.clone(),
        generation: rep.generation,
        files: rep.files,
        bytes: rep.bytes,
        mounted: !already_tmpfs,
        persist: req.boot.name(),
        units: units_written,
        units_verified: boot.units_verified,
        units_started: !boot.units.is_empty() && units::systemd_running(&req.unit_dir),
        created_dirs,
        fstab: (req.boot == Boot::Fstab).then(|| req.fstab.clone()),
    };
    crate::sys::signals::check_finished(|| {
        format!(
            "enable finished first: {} is on tmpfs with {} in {}",
            safe_path(&dir),
            gen_name(rep.generation),
            safe_path(&store_path)
        )
    })?;
    Ok(out)
}

/// Write generation 1 from DIR on disk, read it back, and (unless DIR is a
/// tmpfs already) mount a tmpfs filled from it on DIR. A signal before the
/// mount stops here with DIR untouched; the store keeps what was written.
fn copy_and_mount(
    dir: &Path,
    store: &dyn Store,
    req: &EnableRequest,
    size: Option<&str>,
    already_tmpfs: bool,
    trust: super::trust::Trust,
    stop: &AtomicBool,
) -> Result<sync::SyncReport> {
    let untouched = || {
        format!(
            "enable stopped before mounting anything: {} is untouched on disk; the store {} is kept \
             (run `tmpfsctl persist enable {}` again)",
            safe_path(dir),
            safe_path(store.path()),
            crate::term::shell_path(dir)
        )
    };
    let dfd = open_dir(dir)?;
    let rep = sync::sync(dfd.as_fd(), store, req.keep, stop).map_err(|e| e.context(untouched()))?;
    load::verify(store, rep.generation)?;
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(anyhow::Error::new(crate::sys::signals::Interrupted).context(untouched()));
    }
    if !already_tmpfs {
        let mut live = None;
        let allow = crate::sys::tmpfs::Allow {
            suid: trust.allow_suid,
            dev: trust.allow_dev,
        };
        mount::mount_dir(dir, size, allow, |root| {
            let st = rustix::fs::fstat(root)?;
            let (_, l) = load::load(store, rep.generation, root)?;
            live = Some((l, st.st_dev));
            Ok(())
        })?;
        if let Some((l, dev)) = live {
            store.write_live_index(rep.generation, dev, &l)?;
        }
    }
    Ok(rep)
}

pub fn enable_text(out: &EnableReport) -> String {
    let mut s = format!(
        "{} is {} with its durable copy in {}: {} ({} {}, {}, written from disk and verified before mounting)\n",
        safe_path(&out.dir),
        if out.mounted {
            "now on tmpfs"
        } else {
            "on tmpfs"
        },
        safe_path(&out.store),
        gen_name(out.generation),
        out.files,
        crate::units::noun(out.files, "file", "files"),
        fmt_bytes(out.bytes)
    );
    if !out.created_dirs.is_empty() {
        let made: Vec<String> = out.created_dirs.iter().map(|d| safe_path(d)).collect();
        s.push_str(&format!(
            "  created {} to hold the store (they did not exist)\n",
            made.join(", ")
        ));
    }
    for u in &out.units {
        s.push_str(&format!("  wrote {}\n", safe_path(u)));
    }
    if !out.units.is_empty() && !out.units_started {
        s.push_str(&format!(
            "  the units are written and enabled but not started: systemd is not running here (no /run/systemd/system) \
             or they went to another --unit-dir; nothing syncs {} until systemd loads them at a boot, so run \
             `tmpfsctl persist sync {}` yourself meanwhile\n",
            safe_path(&out.dir),
            safe_path(&out.dir)
        ));
    }
    if let Some(f) = &out.fstab {
        s.push_str(&format!("  added the tmpfs line to {}\n", safe_path(f)));
    }
    if out.persist == Boot::None.name() {
        s.push_str(&format!(
            "  --boot none: no units; run `tmpfsctl persist sync {}` yourself (after a reboot: `persist restore`)\n",
            safe_path(&out.dir)
        ));
    }
    s
}

/// Bytes DIR's regular files take on disk (st_blocks * 512), hard links
/// once: what their data will take in the tmpfs.
fn allocated_bytes(dir: &Path) -> Result<u64> {
    let dfd = open_dir(dir)?;
    let scan = super::scan::walk(dfd.as_fd())?;
    let mut seen = std::collections::HashSet::new();
    Ok(scan
        .found
        .iter()
        .filter(|f| f.e.is_file() && (f.nlink < 2 || seen.insert(f.e.ino)))
        .map(|f| f.alloc_bytes)
        .sum())
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
}

fn sync_detach_catch_up(
    dir: &Path,
    top: &crate::sys::MountInfo,
    mounts: &[crate::sys::MountInfo],
    store: &dyn Store,
    keep: usize,
    stop: &AtomicBool,
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
    let under = crate::sys::hidden::open_underlying(mounts, top, dir)?;
    let u = under.dir.as_fd();
    {
        let _lock = store.lock()?;
        super::fs::clear_dir(u).with_context(|| format!("clearing {} on disk", safe_path(dir)))?;
        load::load(store, rep.generation, u)?;
    }
    if stop.load(Ordering::Relaxed) {
        return Err(
            anyhow::Error::new(crate::sys::signals::Interrupted).context(still_on_tmpfs(&format!(
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
    let held_by = crate::sys::procfd::users_of(&crate::sys::Sysroot::live(), dir);
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
    rustix::fs::syncfs(u).context("flushing DIR on disk")?;
    let fin = if brought.is_empty() {
        rep.generation
    } else {
        sync::sync(u, store, keep, never)?.generation
    };
    Ok(Detached {
        generation: fin,
        brought,
        held_by,
    })
}

fn read_fstab(fstab: &Path) -> Result<Vec<u8>> {
    match std::fs::read(fstab) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("--fstab {}", fstab.display())),
    }
}

fn check_no_fstab_entry(fstab: &Path, dir: &Path) -> Result<()> {
    let f = crate::sys::fstab::Fstab::parse(&read_fstab(fstab)?);
    if let Some(e) = f.entry_for(dir) {
        bail!(
            "--fstab {} already has an entry for {} ({} {}); remove it or use --boot systemd",
            fstab.display(),
            safe_path(dir),
            e.spec,
            e.vfstype
        );
    }
    Ok(())
}

fn add_fstab_line(fstab: &Path, dir: &Path, line: &str) -> Result<()> {
    check_no_fstab_entry(fstab, dir)?;
    let mut new = read_fstab(fstab)?;
    if !new.is_empty() && !new.ends_with(b"\n") {
        new.push(b'\n');
    }
    new.extend_from_slice(line.as_bytes());
    new.push(b'\n');
    AtomicWrite::config("--fstab").write(fstab, &new)
}

fn remove_fstab_line(fstab: &Path, line: &str) -> Result<bool> {
    let Ok(text) = std::fs::read(fstab) else {
        return Ok(false);
    };
    let mut out = Vec::with_capacity(text.len());
    let mut removed = false;
    for l in text.split_inclusive(|&b| b == b'\n') {
        if !removed && l.strip_suffix(b"\n").unwrap_or(l) == line.as_bytes() {
            removed = true;
            continue;
        }
        out.extend_from_slice(l);
    }
    if removed {
        AtomicWrite::config("--fstab").write(fstab, &out)?;
    }
    Ok(removed)
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
    let mounted = mount::tmpfs_at(&mounts, &dir).is_some();
    // SIGINT and SIGTERM (what systemd and shutdown send) alike: rolled back
    // before the detach, finished after it; never a second-signal exit.
    let intr = crate::sys::signals::Interrupt::install(false)?;
    let stop = intr.flag();
    let mut caught_up = Vec::new();
    let mut held_by = Vec::new();
    let g = if let Some(top) = mount::tmpfs_at(&mounts, &dir) {
        let d = sync_detach_catch_up(&dir, top, &mounts, &*store, e.keep, &stop)?;
        caught_up = d.brought;
        held_by = d.held_by;
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
        crate::sys::fs::clear_dir(dfd.as_fd())
            .with_context(|| format!("clearing {} on disk", safe_path(&dir)))?;
        load::load(&*store, g, dfd.as_fd())?;
        rustix::fs::syncfs(&dfd).context("flushing DIR on disk")?;
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
    crate::sys::signals::check_finished(|| {
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
        if out.unmounted {
            ", tmpfs unmounted"
        } else {
            ""
        },
        safe_path(&out.store)
    ));
    s
}
