//! `tmpfsctl plan`, `apply`, `revert` (issue 5): put a directory on tmpfs
//! without hiding its files, live and across reboots, and undo it.
//!
//! Data flows one way: [`gather_facts`] reads the machine, [`plan::plan`]
//! (pure) decides, `apply`/`revert` act on the plan, `render` prints.

pub mod copy;
pub mod live;
pub mod persist;
pub mod plan;
mod render;

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use crate::context::{Context, ExitCode};
use crate::sys::atomic::AtomicWrite;
use crate::sys::signals::Interrupt;
use crate::sys::{self, MountInfo, Sysroot, statfs, systemd};
use crate::units::{Size, parse_count, parse_size};

pub use plan::{Facts, Plan, PlanError, Request, plan};

const AFTER_PLAN: &str = "Examples:\n  tmpfsctl plan /tmp\n  tmpfsctl plan /tmp --size 4G --noexec --json\n  \
tmpfsctl plan ~/build --via fstab\n\nChanges nothing. Exit 1 when `apply` would refuse (see \"blockers\").";
const AFTER_APPLY: &str = "Examples:\n  sudo tmpfsctl apply /tmp\n  sudo tmpfsctl apply /tmp --size 8G --persist systemd --yes\n  \
sudo tmpfsctl apply /tmp --resize 12G\n\nThe old contents stay on disk underneath the tmpfs; `tmpfsctl revert /tmp --keep-data` \
copies the current ones back.";
const AFTER_REVERT: &str = "Examples:\n  sudo tmpfsctl revert /tmp --keep-data\n  sudo tmpfsctl revert /tmp --lazy --yes\n\n\
Without --keep-data, what was written to the tmpfs is discarded and the old on-disk contents reappear.";

fn parse_mode(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s.trim_start_matches("0o"), 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| format!("mode {s:?} is not an octal mode such as 1777 or 0755"))
}

fn parse_inodes(s: &str) -> Result<u64, String> {
    parse_count(s).map_err(|e| e.to_string())
}

/// The directory and where its configuration lives.
#[derive(Debug, Clone, clap::Args)]
pub struct TargetArgs {
    /// The directory to put on tmpfs, e.g. /tmp
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Read and edit this file instead of /etc/fstab
    #[arg(long, value_name = "PATH")]
    pub fstab: Option<PathBuf>,
    /// Look for mount units and write drop-ins here instead of /etc/systemd/system
    #[arg(long, value_name = "PATH")]
    pub unit_dir: Option<PathBuf>,
    /// Print a JSON document (schema_version 1) instead of text
    #[arg(long)]
    pub json: bool,
}

/// Mount options (all optional: plan recommends what is not given).
#[derive(Debug, Clone, clap::Args)]
pub struct MountOptArgs {
    /// Size limit: 512M, 2G, 50% (of RAM); never below what DIR holds now
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub size: Option<Size>,
    /// Inode limit (nr_inodes): 500000, 1m
    #[arg(long, value_name = "N", value_parser = parse_inodes)]
    pub inodes: Option<u64>,
    /// Forbid executing programs from DIR
    #[arg(long)]
    pub noexec: bool,
    /// Never swap DIR's pages out (Linux 6.4+)
    #[arg(long)]
    pub noswap: bool,
    /// Transparent huge pages for DIR's files
    #[arg(long, value_enum, value_name = "POLICY")]
    pub huge: Option<plan::Huge>,
    /// Mode of the mount's root in octal (default: DIR's mode now; 1777 for /tmp and /var/tmp)
    #[arg(long, value_name = "OCTAL", value_parser = parse_mode)]
    pub mode: Option<u32>,
    /// How to persist: fstab line or systemd drop-in (default: what manages DIR now)
    #[arg(long, value_enum)]
    pub via: Option<plan::Via>,
    /// Filesystem type; ramfs is only explained (it has no size limit)
    #[arg(long, value_enum, default_value = "tmpfs")]
    pub fstype: plan::FsKind,
}

impl MountOptArgs {
    fn request(&self) -> Request {
        Request {
            size: self.size,
            inodes: self.inodes,
            noexec: self.noexec,
            noswap: self.noswap,
            huge: self.huge,
            mode: self.mode,
            via: self.via,
            ramfs: self.fstype == plan::FsKind::Ramfs,
        }
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_PLAN)]
pub struct PlanArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub opts: MountOptArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PersistArg {
    Fstab,
    Systemd,
    /// Live mount only; gone after a reboot
    None,
}

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_APPLY)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub opts: MountOptArgs,
    /// Where to persist (default: as `plan` recommends)
    #[arg(long, value_enum)]
    pub persist: Option<PersistArg>,
    /// Change the size of the tmpfs already at DIR, live (never below its usage)
    #[arg(long, value_name = "SIZE", value_parser = parse_size, conflicts_with = "size")]
    pub resize: Option<Size>,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub yes: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_REVERT)]
pub struct RevertArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Copy the tmpfs contents back to the directory on disk first
    #[arg(long)]
    pub keep_data: bool,
    /// Detach the tmpfs even when processes still use it (it goes away when they let go)
    #[arg(long)]
    pub lazy: bool,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Resolve DIR (relative to cwd, symlinks followed) to its absolute path on the
/// inspected system, with the error messages the issue asks for.
pub fn resolve_dir(root: &Sysroot, p: &Path) -> Result<PathBuf> {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    let host = root.path(&abs);
    let md = match std::fs::metadata(&host) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "{}: no such directory; check the path, or create it first (mkdir -p {})",
            p.display(),
            p.display()
        ),
        Err(e) => bail!("{}: cannot be inspected: {e}", p.display()),
    };
    if !md.is_dir() {
        bail!(
            "{}: is a file, not a directory; tmpfs is mounted on a directory (give the directory that should hold the files)",
            p.display()
        );
    }
    let canon =
        std::fs::canonicalize(&host).with_context(|| format!("cannot resolve {}", p.display()))?;
    let resolved = if root.is_live() {
        canon
    } else {
        Path::new("/").join(canon.strip_prefix(root.root()).unwrap_or(&canon))
    };
    if resolved == Path::new("/") {
        bail!("refusing to put / on tmpfs; give a directory such as /tmp");
    }
    Ok(resolved)
}

/// The topmost mount exactly at `dir`, if any.
fn mount_at<'a>(mounts: &'a [MountInfo], dir: &Path) -> Option<&'a MountInfo> {
    mounts.iter().rev().find(|m| m.mount_point == dir)
}

fn current_mount(root: &Sysroot, m: &MountInfo, mem_total: u64) -> plan::CurrentMount {
    let stats = if root.is_live() {
        statfs::statfs(&m.mount_point).ok()
    } else {
        None
    };
    let size_opt = m
        .option("size")
        .and_then(|v| parse_size(v).ok())
        .map(|s| plan::resolve_size(s, mem_total));
    let size_bytes = match stats {
        Some(s) if m.fstype == "tmpfs" => (s.size_bytes > 0).then_some(s.size_bytes),
        _ if m.fstype == "tmpfs" => size_opt
            .or_else(|| Some(plan::resolve_size(Size::PercentOfRam(50.0), mem_total)))
            .filter(|&b| b > 0),
        _ => None,
    };
    let nr_inodes = match stats {
        Some(s) => (s.inodes_total > 0).then_some(s.inodes_total),
        None => m
            .option("nr_inodes")
            .and_then(|v| parse_count(v).ok())
            .filter(|&n| n > 0),
    };
    let num = |k: &str| m.option(k).and_then(|v| v.parse().ok()).unwrap_or(0);
    plan::CurrentMount {
        fstype: m.fstype.clone(),
        size_bytes,
        nr_inodes,
        mode: m
            .option("mode")
            .and_then(|v| parse_mode(v).ok())
            .unwrap_or(0o1777),
        uid: num("uid"),
        gid: num("gid"),
        nosuid: m.has_flag("nosuid"),
        nodev: m.has_flag("nodev"),
        noexec: m.has_flag("noexec"),
        noswap: m.has_flag("noswap"),
        huge: m.option("huge").map(str::to_string),
        options: m.all_options(),
    }
}

/// Relative --fstab/--unit-dir paths are shown and written as absolute ones.
fn absolute(p: &Path) -> PathBuf {
    std::env::current_dir()
        .map(|c| c.join(p))
        .unwrap_or_else(|_| p.to_path_buf())
}

fn fstab_file(root: &Sysroot, t: &TargetArgs) -> PathBuf {
    t.fstab
        .as_deref()
        .map(absolute)
        .unwrap_or_else(|| root.path("/etc/fstab"))
}

fn unit_dir(root: &Sysroot, t: &TargetArgs) -> PathBuf {
    t.unit_dir
        .as_deref()
        .map(absolute)
        .unwrap_or_else(|| root.path("/etc/systemd/system"))
}

fn read_fstab(path: &Path) -> Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn unit_for(root: &Sysroot, t: &TargetArgs, name: &str) -> systemd::UnitInfo {
    if let Some(d) = &t.unit_dir {
        let f = d.join(name);
        if f.exists() {
            let wanted = std::fs::read_dir(d).is_ok_and(|rd| {
                rd.flatten().any(|e| {
                    e.file_name().to_string_lossy().ends_with(".wants")
                        && e.path().join(name).exists()
                })
            });
            return systemd::UnitInfo {
                name: name.to_string(),
                state: if wanted {
                    systemd::UnitState::Enabled
                } else {
                    systemd::UnitState::Disabled
                },
                fragment: Some(f),
                dropins: Vec::new(),
            };
        }
    }
    let mut u = systemd::unit_info(root, name);
    // Keep the fragment readable from here (it is a path on the inspected system).
    u.fragment = u.fragment.map(|f| root.path(f));
    u
}

/// Read everything planning needs about `dir` from the machine (or --sysroot).
pub fn gather_facts(ctx: &Context, t: &TargetArgs) -> Result<Facts> {
    let root = &ctx.sysroot;
    let dir = resolve_dir(root, &t.dir)?;
    let host = root.path(&dir);
    let (mounts, _) = root.mountinfo()?;
    let (mem, _) = root.meminfo()?;
    let md = std::fs::metadata(&host)?;
    let usage =
        sys::du::usage(&host).with_context(|| format!("{}: cannot be read", dir.display()))?;
    let top = mount_at(&mounts, &dir);
    let current = top.map(|m| current_mount(root, m, mem.mem_total_bytes));

    // All tmpfs limits from `status`, minus the one at DIR (which we replace).
    let status = crate::status::gather(ctx, &crate::status::StatusQuery::default())?;
    let mut other = status.memory.tmpfs_limits_bytes;
    if let Some(m) = top.filter(|m| m.fstype == "tmpfs")
        && let Some(r) = status
            .mounts
            .iter()
            .find(|r| Path::new(&r.mountpoint) == dir)
        && !status
            .mounts
            .iter()
            .any(|o| o.device == r.device && Path::new(&o.mountpoint) != dir)
    {
        let _ = m;
        other = other.saturating_sub(r.size_bytes.unwrap_or(0));
    }

    let fstab_path = fstab_file(root, t);
    let fstab = sys::fstab::Fstab::parse(&read_fstab(&fstab_path)?);
    let unit_name = systemd::mount_unit_name(&dir);
    let nested = mounts
        .iter()
        .filter(|m| m.mount_point != dir && m.mount_point.starts_with(&dir))
        .map(|m| m.mount_point.clone())
        .collect();
    Ok(Facts {
        dir_fstype: sys::mountinfo::mount_for(&mounts, &dir)
            .map(|m| m.fstype.clone())
            .unwrap_or_else(|| "unknown".into()),
        dir_mode: md.mode(),
        dir_uid: md.uid(),
        dir_gid: md.gid(),
        used_bytes: usage.bytes,
        inodes: usage.inodes,
        mem,
        other_tmpfs_limits_bytes: other,
        current,
        fstab_entry: fstab.entry_for(&dir).cloned(),
        fstab_path,
        unit: unit_for(root, t, &unit_name),
        unit_dir: unit_dir(root, t),
        busy: live::users_of(&root.path("/proc"), &dir),
        nested_mounts: nested,
        dir,
    })
}

pub fn plan_cmd(ctx: &Context, args: &PlanArgs) -> Result<ExitCode> {
    let facts = gather_facts(ctx, &args.target)?;
    let p = plan::plan(&facts, &args.opts.request())?;
    if args.target.json {
        crate::render::print_json(&p)?;
    } else {
        print!("{}", render::plan_text(&p));
    }
    Ok(if p.blockers.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Problem
    })
}

fn require_root(what: &str) -> Result<()> {
    if !rustix::process::geteuid().is_root() {
        bail!(
            "`tmpfsctl {what}` needs root: it mounts filesystems and edits /etc/fstab or systemd units; \
             run it with sudo (`tmpfsctl plan` shows what it would do without root)"
        );
    }
    Ok(())
}

fn confirm(question: &str, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        bail!("stdin is not a terminal, so I cannot ask for confirmation; pass --yes to go ahead");
    }
    eprint!("{question} [y/N] ");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    if matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        Ok(())
    } else {
        bail!("not confirmed; nothing changed")
    }
}

fn sparse_note(stats: &copy::CopyStats) -> String {
    format!(
        "kept {} sparse file(s) sparse: {} of data copied for {} of content",
        stats.sparse_files,
        crate::units::fmt_bytes(stats.data_bytes),
        crate::units::fmt_bytes(stats.content_bytes)
    )
}

/// A bar on stderr for copying about `total` bytes of file data; hidden
/// unless stderr is a terminal and --json is off. Finished by the caller.
fn copy_bar(show: bool, total: u64, what: &str) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(total);
    if let Ok(st) = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} [{elapsed}]",
    ) {
        pb.set_style(st.progress_chars("=> "));
    }
    pb.set_message(what.to_string());
    pb
}

#[derive(Debug, Clone, Serialize)]
pub struct PersistResult {
    pub via: String,
    pub path: Option<String>,
    pub edit: persist::Edit,
    pub backup: Option<String>,
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
    pub verified_entries: Option<u64>,
    pub persist: PersistResult,
    pub changes: Vec<String>,
}

fn persist_step(
    p: &Plan,
    dir: &Path,
    via: Option<plan::Via>,
    fragment: Option<&Path>,
) -> Result<PersistResult> {
    let Some(via) = via else {
        return Ok(PersistResult {
            via: "none".into(),
            path: None,
            edit: persist::Edit::Unchanged,
            backup: None,
        });
    };
    let path = PathBuf::from(&p.persist.path);
    match via {
        plan::Via::Fstab => {
            let old = read_fstab(&path)?;
            let (new, edit) = persist::fstab_with_line(&old, dir, &p.persist.content);
            let mut backup = None;
            if edit != persist::Edit::Unchanged {
                backup = persist::make_backup(&path)?;
                AtomicWrite::config("--fstab")
                    .write_checked(&path, &new, |tmp| persist::verify_fstab(tmp, dir))?;
                persist::daemon_reload_if_real(&path, "/etc/");
            }
            Ok(PersistResult {
                via: "fstab".into(),
                path: Some(path.display().to_string()),
                edit,
                backup: backup.map(|b| b.display().to_string()),
            })
        }
        plan::Via::Systemd => {
            let frag = p.persist.unit.clone();
            let fragment = fragment.with_context(|| {
                format!("no {frag} unit file to add a drop-in to; use --persist fstab")
            })?;
            let (edit, backup) = persist::write_dropin(&path, &p.persist.content, |_| {
                persist::verify_dropin(fragment, &p.persist.unit, &p.persist.content)
            })?;
            persist::daemon_reload_if_real(&path, "/etc/");
            Ok(PersistResult {
                via: "systemd".into(),
                path: Some(path.display().to_string()),
                edit,
                backup: backup.map(|b| b.display().to_string()),
            })
        }
    }
}

pub fn apply_cmd(ctx: &Context, args: &ApplyArgs) -> Result<ExitCode> {
    require_root("apply")?;
    if !ctx.sysroot.is_live() {
        bail!("--sysroot is for `plan` only; apply changes the running system");
    }
    let mut req = args.opts.request();
    match args.persist {
        Some(PersistArg::Fstab) => req.via = Some(plan::Via::Fstab),
        Some(PersistArg::Systemd) => req.via = Some(plan::Via::Systemd),
        _ => {}
    }
    let facts = gather_facts(ctx, &args.target)?;
    let dir = facts.dir.clone();
    if let Some(r) = args.resize {
        let cur = facts.current.as_ref().filter(|c| c.fstype == "tmpfs");
        if cur.is_none() {
            bail!(
                "{} is not a tmpfs, so there is nothing to resize; run `tmpfsctl apply {}` without --resize first",
                dir.display(),
                dir.display()
            );
        }
        let used = statfs::statfs(&dir)?.used_bytes;
        let b = plan::resolve_size(r, facts.mem.mem_total_bytes);
        if b < used {
            bail!(
                "--resize {r} ({}) is below the {} in use in {}; give at least that plus headroom",
                crate::units::fmt_bytes(b),
                crate::units::fmt_bytes(used),
                dir.display()
            );
        }
        req.size = Some(r);
    }
    let p = plan::plan(&facts, &req)?;
    if !p.blockers.is_empty() {
        bail!("cannot apply: {}", p.blockers.join("; "));
    }
    if p.mount_state == plan::MountState::SizeDiffers && args.resize.is_none() {
        bail!(
            "{} already is a tmpfs with a different size ({}); change it with `tmpfsctl apply {} --resize {}`",
            dir.display(),
            p.current
                .as_ref()
                .and_then(|c| c.size_bytes)
                .map(crate::units::fmt_bytes)
                .unwrap_or_default(),
            dir.display(),
            p.size_option.clone().unwrap_or_default()
        );
    }
    let via = match args.persist {
        Some(PersistArg::None) => None,
        _ => Some(p.persist.via),
    };
    if !args.target.json {
        eprint!("{}", render::plan_text(&p));
    }
    let nothing_to_mount = p.mount_state == plan::MountState::Same;
    let nothing_to_persist = via.is_none()
        || (via == Some(plan::Via::Fstab) && p.persist.action == plan::PersistAction::Unchanged)
        || (via == Some(plan::Via::Systemd)
            && std::fs::read_to_string(&p.persist.path).ok().as_deref()
                == Some(p.persist.content.as_str()));
    let mut changes = Vec::new();
    if !(nothing_to_mount && nothing_to_persist) {
        confirm(
            &format!("Put {} on tmpfs as above?", dir.display()),
            args.yes,
        )?;
    }
    let interrupt = Interrupt::install(false).context("cannot install signal handlers")?;
    let cancel = interrupt.flag();

    let mut copied = None;
    let mut verified = None;
    let mut mounted = false;
    let mut resized_to = None;
    match p.mount_state {
        plan::MountState::Same => {}
        plan::MountState::SizeDiffers => {
            let s = p.size_option.clone().unwrap_or_default();
            live::resize(&dir, &s)?;
            changes.push(format!("resized the tmpfs at {} to {s}", dir.display()));
            resized_to = Some(s);
        }
        plan::MountState::NotMounted => {
            let show = crate::render::stderr_is_tty() && !args.target.json;
            let (stats, n) = stage_and_move(&p, &dir, &cancel, show)?;
            changes.push(format!(
                "mounted tmpfs ({}) on {} with its {} files, {} dirs, {} symlinks, {} hard links, {} special files ({})",
                p.mount_options,
                dir.display(),
                stats.files,
                stats.dirs,
                stats.symlinks,
                stats.hard_links,
                stats.special_files,
                crate::units::fmt_bytes(stats.content_bytes)
            ));
            if stats.sparse_files > 0 {
                changes.push(sparse_note(&stats));
            }
            copied = Some(stats);
            verified = Some(n);
            mounted = true;
        }
        plan::MountState::Conflict => unreachable!("conflicts are blockers"),
    }
    let persisted = match persist_step(&p, &dir, via, facts.unit.fragment.as_deref()) {
        Ok(r) => r,
        Err(e) if mounted => {
            return Err(e.context(format!(
                "{} IS now on tmpfs, but making that permanent failed; fix the cause and re-run apply \
                 (it will only persist), or `tmpfsctl revert {} --keep-data`",
                dir.display(),
                dir.display()
            )));
        }
        Err(e) => return Err(e),
    };
    if persisted.edit != persist::Edit::Unchanged {
        changes.push(format!(
            "{} {}{}",
            match persisted.edit {
                persist::Edit::Appended => "added to",
                _ => "updated",
            },
            persisted.path.clone().unwrap_or_default(),
            persisted
                .backup
                .as_ref()
                .map(|b| format!(" (backup {b})"))
                .unwrap_or_default()
        ));
    }

    // Verify from the kernel's point of view, not from what we think we did.
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    let top = mount_at(&mounts, &dir)
        .filter(|m| m.fstype == "tmpfs")
        .with_context(|| {
            format!(
                "after apply, mountinfo shows no tmpfs at {}; check `findmnt {}`",
                dir.display(),
                dir.display()
            )
        })?;
    for flag in ["nosuid", "nodev"] {
        if !top.has_flag(flag) {
            bail!(
                "after apply, the tmpfs at {} lacks {flag}; check `findmnt {}`",
                dir.display(),
                dir.display()
            );
        }
    }
    if changes.is_empty() {
        changes.push(format!(
            "nothing: {} already is on tmpfs as planned",
            dir.display()
        ));
    }
    let report = ApplyReport {
        schema_version: plan::SCHEMA_VERSION,
        dir: dir.display().to_string(),
        plan: p,
        mounted,
        resized_to,
        copied,
        verified_entries: verified,
        persist: persisted,
        changes,
    };
    if args.target.json {
        crate::render::print_json(&report)?;
    } else {
        print!("{}", render::apply_text(&report));
    }
    Ok(ExitCode::Ok)
}

/// Steps 1-4 of apply: detached tmpfs, copy, compare, move. Any error before
/// the move drops the detached mount (closing its fd unmounts it), so nothing
/// on the system has changed.
fn stage_and_move(
    p: &Plan,
    dir: &Path,
    cancel: &AtomicBool,
    show_progress: bool,
) -> Result<(copy::CopyStats, u64)> {
    let abort = |e: anyhow::Error| {
        e.context(format!(
            "apply aborted; nothing was changed ({} is as it was)",
            dir.display()
        ))
    };
    let staged = live::mount_detached(&p.mount_options).map_err(abort)?;
    let src = rustix::fs::openat(
        rustix::fs::CWD,
        dir,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", dir.display()))
    .map_err(abort)?;
    // Holes are not copied, so the data moved adds up to about the allocated
    // bytes `plan` measured (directories' blocks aside).
    let pb = copy_bar(show_progress, p.used_bytes, "copying");
    let stats = copy::copy_tree(src.as_fd(), staged.root.as_fd(), true, cancel, &|n| {
        pb.inc(n)
    });
    pb.finish_and_clear();
    let stats = stats
        .context("copying into the new tmpfs failed")
        .map_err(abort)?;
    // The root keeps DIR's mode unless another mode was asked for; the
    // filesystem option and the live root must agree, or a reboot changes it.
    let mode = u32::from_str_radix(&p.mode, 8).unwrap_or(0o1777);
    rustix::fs::fchmod(&staged.root, rustix::fs::Mode::from_raw_mode(mode))
        .context("cannot set the mode of the new tmpfs")
        .map_err(abort)?;
    let mut a = copy::snapshot(src.as_fd(), cancel).map_err(abort)?;
    let b = copy::snapshot(staged.root.as_fd(), cancel).map_err(abort)?;
    if let (Some(ra), Some(rb)) = (a.get_mut(&Vec::new()), b.get(&Vec::new())) {
        // The root's ctime-like bits (mode chosen above) are not a copy error.
        ra.mode = rb.mode;
    }
    let diff = copy::differences(&a, &b);
    if !diff.is_empty() {
        let n = diff.len();
        let first: Vec<String> = diff.into_iter().take(5).collect();
        return Err(abort(anyhow::anyhow!(
            "{n} entries changed while copying or did not copy faithfully (first: {}); stop the programs writing to {} and retry",
            first.join("; "),
            dir.display()
        )));
    }
    drop(src);
    if cancel.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(abort(anyhow::anyhow!("interrupted")));
    }
    live::attach(&staged, dir).map_err(abort)?;
    Ok((stats, a.len() as u64))
}

#[derive(Debug, Clone, Serialize)]
pub struct RevertReport {
    pub schema_version: u32,
    pub dir: String,
    pub was_mounted: bool,
    pub unmounted: bool,
    pub lazy: bool,
    pub copied_back: Option<copy::CopyStats>,
    pub fstab: Option<PersistResult>,
    pub dropin: Option<PersistResult>,
    pub busy: Vec<plan::ProcUse>,
    pub changes: Vec<String>,
}

pub fn revert_cmd(ctx: &Context, args: &RevertArgs) -> Result<ExitCode> {
    require_root("revert")?;
    if !ctx.sysroot.is_live() {
        bail!("--sysroot is for `plan` only; revert changes the running system");
    }
    let root = &ctx.sysroot;
    let t = &args.target;
    let dir = resolve_dir(root, &t.dir)?;
    let (mounts, _) = root.mountinfo()?;
    let top = mount_at(&mounts, &dir)
        .filter(|m| m.fstype == "tmpfs")
        .cloned();
    let fstab_path = fstab_file(root, t);
    let fstab_text = read_fstab(&fstab_path)?;
    let fstab_managed = sys::fstab::Fstab::parse(&fstab_text)
        .entry_for(&dir)
        .is_some_and(|e| e.vfstype == "tmpfs");
    let dropin = plan::dropin_path(&unit_dir(root, t), &systemd::mount_unit_name(&dir));
    let dropin_ours =
        std::fs::read_to_string(&dropin).is_ok_and(|s| s.starts_with(plan::DROPIN_MARKER));
    if top.is_none() && !fstab_managed && !dropin_ours {
        let msg = format!(
            "{} is not a tmpfs and neither {} nor {} sets it up: nothing to revert",
            dir.display(),
            fstab_path.display(),
            dropin.display()
        );
        if t.json {
            crate::render::print_json(&RevertReport {
                schema_version: plan::SCHEMA_VERSION,
                dir: dir.display().to_string(),
                was_mounted: false,
                unmounted: false,
                lazy: args.lazy,
                copied_back: None,
                fstab: None,
                dropin: None,
                busy: Vec::new(),
                changes: vec![msg],
            })?;
        } else {
            println!("{msg}");
        }
        return Ok(ExitCode::Ok);
    }
    let nested: Vec<String> = mounts
        .iter()
        .filter(|m| m.mount_point != dir && m.mount_point.starts_with(&dir))
        .map(|m| m.mount_point.display().to_string())
        .collect();
    if top.is_some() && !nested.is_empty() {
        bail!(
            "mounts inside {} must be unmounted first: {}",
            dir.display(),
            nested.join(", ")
        );
    }
    let busy = if top.is_some() {
        live::users_of(Path::new("/proc"), &dir)
    } else {
        Vec::new()
    };
    if !busy.is_empty() && !args.lazy {
        let list: Vec<String> = busy
            .iter()
            .map(|b| format!("{} ({}: {})", b.pid, b.comm, b.uses.join(", ")))
            .collect();
        bail!(
            "{} is busy: {}; stop those processes, or pass --lazy to detach it anyway (their files stay until they let go)",
            dir.display(),
            list.join("; ")
        );
    }
    let mut what = Vec::new();
    if top.is_some() {
        what.push(if args.keep_data {
            format!("copy the tmpfs contents back to the directory on disk, then unmount {}", dir.display())
        } else {
            format!(
                "unmount {} and DISCARD what is in the tmpfs (the old on-disk contents reappear; --keep-data copies back)",
                dir.display()
            )
        });
    }
    if fstab_managed {
        what.push(format!(
            "remove/restore the tmpfs line for {} in {}",
            dir.display(),
            fstab_path.display()
        ));
    }
    if dropin_ours {
        what.push(format!("remove the drop-in {}", dropin.display()));
    }
    if !t.json {
        eprintln!("Revert {}:", dir.display());
        for w in &what {
            eprintln!("  - {w}");
        }
    }
    confirm("Go ahead?", args.yes)?;
    let interrupt = Interrupt::install(false).context("cannot install signal handlers")?;
    let cancel = interrupt.flag();
    let mut changes = Vec::new();
    let mut copied_back = None;
    if let Some(top) = &top {
        if args.keep_data {
            let show = crate::render::stderr_is_tty() && !t.json;
            let stats = copy_back(&mounts, top, &dir, &cancel, show)?;
            changes.push(format!(
                "copied {} files, {} dirs, {} symlinks ({}) back to the directory on disk",
                stats.files,
                stats.dirs,
                stats.symlinks,
                crate::units::fmt_bytes(stats.content_bytes)
            ));
            if stats.sparse_files > 0 {
                changes.push(sparse_note(&stats));
            }
            copied_back = Some(stats);
        }
        live::unmount(&dir, args.lazy).map_err(|e| {
            let b = live::users_of(Path::new("/proc"), &dir);
            let list: Vec<String> = b
                .iter()
                .map(|b| format!("{} ({})", b.pid, b.comm))
                .collect();
            e.context(format!(
                "{} is busy{}; stop those processes or pass --lazy{}",
                dir.display(),
                if list.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", list.join(", "))
                },
                if args.keep_data {
                    " (the data is already copied back)"
                } else {
                    ""
                }
            ))
        })?;
        changes.push(format!(
            "unmounted the tmpfs at {}{}",
            dir.display(),
            if args.lazy { " (lazily)" } else { "" }
        ));
    }
    let mut fstab_res = None;
    if fstab_managed {
        let backup = persist::backup_path(&fstab_path);
        let bk = std::fs::read(&backup).ok();
        let (new, edit) = persist::fstab_without_line(&fstab_text, bk.as_deref(), &dir, "tmpfs");
        if edit != persist::Edit::Unchanged {
            let restored = edit == persist::Edit::Restored;
            AtomicWrite::config("--fstab").write_checked(&fstab_path, &new, |tmp| {
                if restored {
                    persist::verify_fstab(tmp, &dir)
                } else {
                    Ok(())
                }
            })?;
            persist::daemon_reload_if_real(&fstab_path, "/etc/");
            changes.push(format!(
                "{} the line for {} in {}",
                if restored { "restored" } else { "removed" },
                dir.display(),
                fstab_path.display()
            ));
        }
        if bk.is_some() {
            std::fs::remove_file(&backup)
                .with_context(|| format!("cannot remove {}", backup.display()))?;
        }
        fstab_res = Some(PersistResult {
            via: "fstab".into(),
            path: Some(fstab_path.display().to_string()),
            edit,
            backup: None,
        });
    }
    let mut dropin_res = None;
    if dropin_ours {
        let edit = persist::remove_dropin(&dropin)?;
        persist::daemon_reload_if_real(&dropin, "/etc/");
        changes.push(format!("removed the drop-in {}", dropin.display()));
        dropin_res = Some(PersistResult {
            via: "systemd".into(),
            path: Some(dropin.display().to_string()),
            edit,
            backup: None,
        });
    }
    let report = RevertReport {
        schema_version: plan::SCHEMA_VERSION,
        dir: dir.display().to_string(),
        was_mounted: top.is_some(),
        unmounted: top.is_some(),
        lazy: args.lazy,
        copied_back,
        fstab: fstab_res,
        dropin: dropin_res,
        busy,
        changes,
    };
    if t.json {
        crate::render::print_json(&report)?;
    } else {
        for c in &report.changes {
            println!("{c}");
        }
    }
    Ok(ExitCode::Ok)
}

/// Make the directory under the tmpfs hold exactly what the tmpfs holds.
/// The copy goes to a scratch directory inside it first, so a failed copy
/// changes nothing; then old entries move to a trash directory, new ones move
/// in (renames on one filesystem), and the trash is deleted.
fn copy_back(
    mounts: &[MountInfo],
    top: &MountInfo,
    dir: &Path,
    cancel: &AtomicBool,
    show_progress: bool,
) -> Result<copy::CopyStats> {
    use rustix::fs::{AtFlags, Mode};
    let under = live::open_underlying(mounts, top, dir)?;
    let u = under.dir.as_fd();
    let pid = std::process::id();
    let stage = std::ffi::CString::new(format!(".tmpfsctl-revert-{pid}"))?;
    let trash = std::ffi::CString::new(format!(".tmpfsctl-old-{pid}"))?;
    let src = rustix::fs::openat(
        rustix::fs::CWD,
        dir,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", dir.display()))?;
    rustix::fs::mkdirat(u, &stage, Mode::RWXU)
        .context("cannot create a scratch directory on disk")?;
    let staged = copy::open_dir_at(u, &stage)?;
    let total = statfs::statfs(dir).map(|s| s.used_bytes).unwrap_or(0);
    let pb = copy_bar(show_progress, total, "copying back");
    let copied = copy::copy_tree(src.as_fd(), staged.as_fd(), false, cancel, &|n| pb.inc(n));
    pb.finish_and_clear();
    let res = copied.and_then(|s| {
        let a = copy::snapshot(src.as_fd(), cancel)?;
        let mut b = copy::snapshot(staged.as_fd(), cancel)?;
        b.remove(&Vec::new());
        let mut a = a;
        a.remove(&Vec::new());
        let d = copy::differences(&a, &b);
        if !d.is_empty() {
            bail!("{} entries differ after copying (first: {})", d.len(), d[0]);
        }
        Ok(s)
    });
    let stats = match res {
        Ok(s) => s,
        Err(e) => {
            let _ = copy::remove_tree(u, &stage);
            return Err(e.context(format!(
                "copying back failed; nothing changed: {} is still on tmpfs",
                dir.display()
            )));
        }
    };
    // From here on only renames on one filesystem.
    rustix::fs::mkdirat(u, &trash, Mode::RWXU)
        .context("cannot create a scratch directory on disk")?;
    let tr = copy::open_dir_at(u, &trash)?;
    let list = |fd: std::os::fd::BorrowedFd<'_>| -> Result<Vec<std::ffi::CString>> {
        let mut d = rustix::fs::Dir::read_from(fd)?;
        let mut v = Vec::new();
        while let Some(e) = d.read() {
            let n = e?.file_name().to_owned();
            if n.as_bytes() != b"." && n.as_bytes() != b".." {
                v.push(n);
            }
        }
        Ok(v)
    };
    for n in list(u)? {
        if n == stage || n == trash {
            continue;
        }
        rustix::fs::renameat(u, &n, &tr, &n)
            .with_context(|| format!("cannot move old entry {} aside", copy::show(n.as_bytes())))?;
    }
    for n in list(staged.as_fd())? {
        rustix::fs::renameat(&staged, &n, u, &n).with_context(|| {
            format!(
                "cannot move {} into place; the copy is in {}/{} and the old entries in {}/{}",
                copy::show(n.as_bytes()),
                dir.display(),
                stage.to_string_lossy(),
                dir.display(),
                trash.to_string_lossy()
            )
        })?;
    }
    drop(staged);
    drop(tr);
    rustix::fs::unlinkat(u, &stage, AtFlags::REMOVEDIR)
        .context("cannot remove the scratch directory")?;
    copy::remove_tree(u, &trash).context("cannot remove the old entries")?;
    // Last, so the renames above do not leave their mark on the directory's times.
    copy::copy_root_meta(src.as_fd(), u)
        .context("cannot copy the directory's own owner/mode/xattrs/times")?;
    Ok(stats)
}
