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

use super::registry::{Registered, Registry, ZramSetup};
use super::store::{Store, gen_name};
use super::{load, mount, open_dir, resolve_dir, store, sync, units};
use crate::command::{Context, confirm};
use crate::sys::atomic::AtomicWrite;
use crate::sys::unmount::{At, How, unmount};
use crate::term::safe_path;
use crate::units::{Size, fmt_bytes};

use crate::sys::Sysroot;
use crate::sys::boot::Boot;
use crate::sys::fstab::Fstab;
use crate::sys::signals::{self, Interrupt, Interrupted};
use crate::sys::tmpfs::Allow;
use crate::sys::zram::ZramDevice;

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
    /// What DIR is kept on (`--on`).
    pub on: On,
}

/// What a persisted DIR is kept on: a tmpfs, or an ext4 on a zram device
/// with the named back end (None: the kernel's default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum On {
    #[default]
    Tmpfs,
    Zram(Option<String>),
}

impl std::str::FromStr for On {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<On, String> {
        match s.split_once(':') {
            None if s == "tmpfs" => Ok(On::Tmpfs),
            None if s == "zram" => Ok(On::Zram(None)),
            Some(("zram", a))
                if !a.is_empty() && a.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
            {
                Ok(On::Zram(Some(a.to_string())))
            }
            _ => Err(format!(
                "{:?}: write tmpfs, zram or zram:ALGORITHM (e.g. zram:lz4; `tmpfsctl status` lists the ones this kernel offers)",
                crate::term::safe(s)
            )),
        }
    }
}

#[derive(Debug, serde::Serialize)]
pub struct EnableReport {
    pub dir: PathBuf,
    pub store: PathBuf,
    pub generation: u64,
    pub files: u64,
    pub bytes: u64,
    /// A file system was mounted on DIR (false: DIR already was a tmpfs).
    pub mounted: bool,
    /// The zram device DIR is on (`--on zram`); absent on tmpfs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zram: Option<ZramEnabled>,
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

#[derive(Debug, serde::Serialize)]
pub struct ZramEnabled {
    /// `zram3`.
    pub device: Option<String>,
    /// None: the kernel's default back end.
    pub algorithm: Option<String>,
    pub disksize_bytes: u64,
    /// The device was already on DIR, left by an enable killed before it
    /// finished, and this enable finished with it.
    pub taken_over: bool,
}

/// The directories above `path` that do not exist, top first: what creating
/// the store makes too. Said, not done silently: a mistyped --store would
/// otherwise leave a new tree of directories wherever it pointed.
fn missing_parents(path: &Path) -> Vec<PathBuf> {
    let mut missing: Vec<PathBuf> = path
        .ancestors()
        .skip(1)
        .take_while(|p| std::fs::symlink_metadata(p).is_err())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    missing
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
    let (mem, _) = ctx.sysroot.meminfo()?;
    let (zram, taken_over) = match &req.on {
        On::Tmpfs => (None, None),
        On::Zram(a) => plan_zram(ctx, req, &dir, &mounts, &mem, a.as_deref())?,
    };
    let already_tmpfs =
        taken_over.is_some() || (zram.is_none() && mount::tmpfs_at(&mounts, &dir).is_some());
    if let Some(s) = req.size.filter(|_| zram.is_none()) {
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
    let size = req.size.filter(|_| zram.is_none()).map(size_option);
    let boot = plan_boot(req, &dir, &store_path, size.as_deref())?;
    if let Some(s) = req.size.filter(|_| zram.is_none())
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
            "Keep {} in RAM ({}) with its durable copy in {}?",
            safe_path(&dir),
            if zram.is_some() {
                "an ext4 on zram"
            } else {
                "tmpfs"
            },
            safe_path(&store_path)
        ),
        req.yes,
    )?;
    // SIGINT and SIGTERM alike: before the mount, DIR is untouched and the
    // enable stops there; after it, the enable finishes.
    let intr = Interrupt::install(false)?;
    let stop = intr.flag();
    let mut journal = journald
        .then(|| super::handover::Journald::begin(&dir))
        .transpose()?;
    let created_dirs = missing_parents(&store_path);
    let store = store::create(&store_path)?;
    store::check_store(&store_path, &dir, &mounts)?;
    let trust = super::trust::record(store.fd(), req.allow_suid, req.allow_dev)?;
    let backing = match &zram {
        Some(z) => mount::Backing::Zram(z),
        None => mount::Backing::Tmpfs {
            size: size.as_deref(),
        },
    };
    let rep = copy_and_mount(&dir, &*store, req, backing, already_tmpfs, trust, &stop)?;
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
            zram: zram.clone(),
        });
        reg.save(&req.registry)?;
        Ok(u)
    });
    let units_written = match installed {
        Ok(u) => u,
        Err(e) => {
            // The tmpfs holds exactly generation 1 (nothing has written to it
            // yet): unmounting it loses nothing and leaves DIR as it was.
            if let Some(z) = zram.as_ref().filter(|_| taken_over.is_none()) {
                let _ = release_zram(&dir, z);
            } else if !already_tmpfs {
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
    take_over(taken_over.as_deref(), zram.as_ref())?;
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
        zram: zram.as_ref().map(|z| ZramEnabled {
            device: Sysroot::live().mountinfo().ok().and_then(|(m, _)| {
                mount::persisted_at(&m, &dir, Some(z)).and_then(mount::zram_name)
            }),
            algorithm: z.algorithm.clone(),
            disksize_bytes: z.disksize_bytes,
            taken_over: taken_over.is_some(),
        }),
        persist: req.boot.name(),
        units: units_written,
        units_verified: boot.units_verified,
        units_started: !boot.units.is_empty() && units::systemd_running(&req.unit_dir),
        created_dirs,
        fstab: (req.boot == Boot::Fstab).then(|| req.fstab.clone()),
    };
    signals::check_finished(|| {
        format!(
            "enable finished first: {} is on {} with {} in {}",
            safe_path(&dir),
            if out.zram.is_some() { "zram" } else { "tmpfs" },
            gen_name(rep.generation),
            safe_path(&store_path)
        )
    })?;
    Ok(out)
}

/// What `--on zram[:ALG]` will make, all checked before anything changes:
/// zram there and offering the algorithm, nothing mounted on DIR already,
/// `--boot` not fstab (the restore unit makes the device at boot, before it
/// fills and mounts it), and a device whose worst case (every page
/// incompressible) fits in the RAM available now, so that filling its file
/// system ends in ENOSPC for the writer, never in a write zram cannot store
/// (an I/O error, and ext4 remounting read-only).
fn plan_zram(
    ctx: &Context,
    req: &EnableRequest,
    dir: &Path,
    mounts: &[crate::sys::MountInfo],
    mem: &crate::sys::MemInfo,
    algorithm: Option<&str>,
) -> Result<(Option<ZramSetup>, Option<String>)> {
    use crate::sys::zram;
    if req.boot == Boot::Fstab {
        bail!(
            "--boot fstab writes a tmpfs line, but --on zram needs a device made at every boot: \
             use --boot systemd (its restore unit makes the device) or --boot none (nothing was changed)"
        );
    }
    let label = zram::persist_label(dir);
    if let Some(m) = mounts.iter().rev().find(|m| m.mount_point == dir) {
        // An enable killed between mounting its device on DIR and noting
        // the device as persist's: DIR already shows generation 1 (and
        // whatever was written since), so this run takes it over, as a
        // rerun does with a tmpfs left on DIR.
        if let Some(name) = mount::persisted_at(mounts, dir, Some(&zram_of(None, 0, &label)))
            .and_then(mount::zram_name)
            .filter(|n| zram::orphaned(n, &label))
        {
            let (_, algorithm) = zram::algorithms_of(&name);
            let z = zram_of(algorithm, zram::disksize_of(&name), &label);
            return Ok((Some(z), Some(name)));
        }
        bail!(
            "{} is a mount already ({} from {}); --on zram mounts its own file system there: \
             unmount it first (nothing was changed)",
            safe_path(dir),
            crate::term::safe(&m.fstype),
            crate::term::safe(&m.source)
        );
    }
    zram::load_module();
    let f = zram::features(&ctx.sysroot);
    if !f.available {
        bail!(
            "--on zram: this kernel has no zram (/sys/class/zram-control is missing and \
             `modprobe zram` did not add it); use a kernel with zram or keep DIR on tmpfs (nothing was changed)"
        );
    }
    if let Some(a) = algorithm
        && !f.algorithms.is_empty()
        && !f.algorithms.iter().any(|o| o == a)
    {
        bail!(
            "--on zram:{}: this kernel's zram does not offer it; it offers {} (nothing was changed)",
            crate::term::safe(a),
            f.algorithms.join(", ")
        );
    }
    let fs_bytes = req
        .size
        .unwrap_or(Size::PercentOfRam(50.0))
        .resolve(mem.mem_total_bytes);
    if fs_bytes == 0 {
        bail!(
            "--size {}: give a positive size such as 512M",
            req.size.map(|s| s.to_string()).unwrap_or_default()
        );
    }
    let disksize = zram::device_bytes(fs_bytes);
    let worst = zram::worst_case_ram(disksize);
    if worst > mem.mem_available_bytes {
        bail!(
            "--on zram with {} for files needs a {} device, which holds up to {} of RAM when \
             its data does not compress, but only {} is available now: a full file system would \
             then fail writes with I/O errors instead of ENOSPC. Give a smaller --size \
             (nothing was changed)",
            fmt_bytes(fs_bytes),
            fmt_bytes(disksize),
            fmt_bytes(worst),
            fmt_bytes(mem.mem_available_bytes)
        );
    }
    let held = allocated_bytes(dir)?;
    if fs_bytes < held {
        bail!(
            "--size {}: {} holds {} (allocated); give a larger size (nothing was changed)",
            fmt_bytes(fs_bytes),
            safe_path(dir),
            fmt_bytes(held)
        );
    }
    let z = zram_of(algorithm.map(str::to_string), disksize, &label);
    Ok((Some(z), None))
}

/// Note a device taken over (see [`plan_zram`]) as persist's, now that
/// DIR is registered on it.
fn take_over(name: Option<&str>, z: Option<&ZramSetup>) -> Result<()> {
    match (name, z) {
        (Some(name), Some(z)) => ZramDevice::note_as_persist(name, &z.label),
        _ => Ok(()),
    }
}

fn zram_of(algorithm: Option<String>, disksize_bytes: u64, label: &str) -> ZramSetup {
    ZramSetup {
        algorithm,
        disksize_bytes,
        label: label.to_string(),
    }
}

/// Unmount DIR's zram file system (it holds nothing that is not in the
/// store) and remove its device: an enable that failed after mounting.
fn release_zram(dir: &Path, z: &ZramSetup) -> Result<()> {
    let (mounts, _) = Sysroot::live().mountinfo()?;
    let Some(name) = mount::persisted_at(&mounts, dir, Some(z)).and_then(mount::zram_name) else {
        return Ok(());
    };
    let dev = ZramDevice::take_back(&name, &z.label)?;
    unmount(At::Dir(dir), How::Checked)?;
    dev.remove()
}

/// Write generation 1 from DIR on disk, read it back, and (unless DIR is a
/// tmpfs already) mount a file system filled from it on DIR. A signal before
/// the mount stops here with DIR untouched; the store keeps what was written.
fn copy_and_mount(
    dir: &Path,
    store: &dyn Store,
    req: &EnableRequest,
    backing: mount::Backing<'_>,
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
        return Err(anyhow::Error::new(Interrupted).context(untouched()));
    }
    if !already_tmpfs {
        let mut live = None;
        let allow = Allow {
            suid: trust.allow_suid,
            dev: trust.allow_dev,
        };
        mount::mount_dir(dir, backing, allow, |root| {
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
        match (&out.zram, out.mounted) {
            (Some(z), _) => format!(
                "now on zram ({}, /dev/{}, an ext4 without a journal mounted with discard)",
                z.algorithm
                    .as_deref()
                    .unwrap_or("the kernel's default algorithm"),
                z.device.as_deref().unwrap_or("zram?")
            ),
            (None, true) => "now on tmpfs".into(),
            (None, false) => "on tmpfs".into(),
        },
        safe_path(&out.store),
        gen_name(out.generation),
        out.files,
        crate::units::noun(out.files, "file", "files"),
        fmt_bytes(out.bytes)
    );
    if let Some(z) = out.zram.as_ref().filter(|z| z.taken_over) {
        s.push_str(&format!(
            "  took over /dev/{}: an earlier enable was stopped after mounting it on DIR; \
             {} holds DIR's files as they were on it now\n",
            z.device.as_deref().unwrap_or("zram?"),
            gen_name(out.generation)
        ));
    }
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

pub(super) fn read_fstab(fstab: &Path) -> Result<Vec<u8>> {
    match std::fs::read(fstab) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("--fstab {}", fstab.display())),
    }
}

fn check_no_fstab_entry(fstab: &Path, dir: &Path) -> Result<()> {
    let f = Fstab::parse(&read_fstab(fstab)?);
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

pub(super) fn remove_fstab_line(fstab: &Path, line: &str) -> Result<bool> {
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
