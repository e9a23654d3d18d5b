//! The pure planning step: what the machine looks like ([`Facts`]) plus what
//! the user asked for ([`Request`]) gives a [`Plan`]: mount options with the
//! reason for each, the fstab line or systemd drop-in, the live steps and the
//! warnings. No I/O here, so `advise` can call [`plan`] on any facts and the
//! rules are tested table-driven.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sys::fstab::FstabEntry;
use crate::sys::systemd::{UnitInfo, UnitState};
use crate::sys::{MemInfo, resolve};
use crate::units::{Size, fmt_bytes};

pub const SCHEMA_VERSION: u32 = 1;

pub use crate::sys::boot::Boot;

/// Transparent huge pages policy (tmpfs `huge=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Huge {
    Never,
    Always,
    /// Also accepted as the kernel spells it: within_size
    WithinSize,
    Advise,
}

crate::variants::all_variants!(Huge, [Never, Always, WithinSize, Advise]);

impl Huge {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Huge::Never => "never",
            Huge::Always => "always",
            Huge::WithinSize => "within_size",
            Huge::Advise => "advise",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    Tmpfs,
    /// No size limit, never swapped: accepted by `plan` only to explain why not
    Ramfs,
}

crate::variants::all_variants!(FsKind, [Tmpfs, Ramfs]);

/// What the user asked for; `None` means "recommend something".
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub size: Option<Size>,
    pub inodes: Option<u64>,
    pub noexec: bool,
    pub noswap: bool,
    pub huge: Option<Huge>,
    /// Permission bits of the mount's root, e.g. 0o1777.
    pub mode: Option<u32>,
    /// `None`: recommend fstab or systemd from what manages DIR now.
    pub boot: Option<Boot>,
    pub ramfs: bool,
    /// Per-user block limit (`usrquota_block_hardlimit`, Linux 6.6+).
    pub user_quota: Option<Size>,
    /// Per-group block limit (`grpquota_block_hardlimit`, Linux 6.6+).
    pub group_quota: Option<Size>,
    /// Go ahead although DIR holds files the package manager installed.
    pub allow_package_files: bool,
    /// Allow a size above RAM + swap (`--force`).
    pub force: bool,
    /// Options to repeat in the commands the plan tells the user to run
    /// (` --fstab F --unit-dir D`), so they act on the same files.
    pub follow_up: String,
    /// The mount options as the user gave them (` --size 2G --noexec`), to
    /// repeat in the `tmpfsctl apply` commands the plan prints.
    pub options_given: String,
}

/// A tmpfs/ramfs mounted exactly at DIR right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CurrentMount {
    pub fstype: String,
    /// Size limit in bytes (statfs on a live system; from `size=` otherwise).
    pub size_bytes: Option<u64>,
    pub nr_inodes: Option<u64>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nosuid: bool,
    pub nodev: bool,
    pub noexec: bool,
    pub noswap: bool,
    pub huge: Option<String>,
    pub options: Vec<String>,
}

pub use crate::sys::procfd::ProcUse;

/// What the machine looks like, as far as planning DIR is concerned.
#[derive(Debug, Clone)]
pub struct Facts {
    /// Absolute, symlinks resolved.
    pub dir: PathBuf,
    /// Filesystem DIR lives on now (`ext4`, or `tmpfs` when already applied).
    pub dir_fstype: String,
    pub dir_mode: u32,
    pub dir_uid: u32,
    pub dir_gid: u32,
    /// Allocated bytes under DIR (`du -s -x -B1`).
    pub used_bytes: u64,
    pub inodes: u64,
    pub mem: MemInfo,
    /// Sum of the size limits of all other tmpfs mounts (each superblock once).
    pub other_tmpfs_limits_bytes: u64,
    pub current: Option<CurrentMount>,
    pub fstab_path: PathBuf,
    /// The entry fstab has for DIR now, if any.
    pub fstab_entry: Option<FstabEntry>,
    pub unit: UnitInfo,
    /// Where a drop-in goes: `/etc/systemd/system` (or --unit-dir).
    pub unit_dir: PathBuf,
    pub busy: Vec<ProcUse>,
    /// Mount points below DIR (they would be hidden).
    pub nested_mounts: Vec<PathBuf>,
    /// A few files under DIR that the package manager installed, and how many in all.
    pub package_files: Vec<PathBuf>,
    pub package_files_total: usize,
    /// The running kernel's release (`uname -r`), named when it lacks a feature.
    pub kernel_release: String,
    /// Whether this kernel's tmpfs takes `usrquota`/`grpquota`.
    pub tmpfs_quota: Support,
}

/// Whether the kernel has a feature, as far as could be found out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    Yes,
    /// It does not; why, in the kernel's words where it gave them.
    No(String),
    /// It could not be asked (not root, or another system under --sysroot).
    Unknown(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OptionWhy {
    pub option: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MountState {
    /// DIR is not a tmpfs: apply mounts one.
    NotMounted,
    /// DIR already is a tmpfs with exactly these options: nothing to mount.
    Same,
    /// DIR is a tmpfs whose only difference is the size: `apply --resize` changes it live.
    SizeDiffers,
    /// DIR is a tmpfs/ramfs with other options: revert first.
    Conflict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PersistAction {
    Append,
    Replace,
    Unchanged,
    Write,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Persist {
    pub via: Boot,
    /// fstab file, or the drop-in file.
    pub path: String,
    pub unit: String,
    /// The exact fstab line (no newline) or the whole drop-in file.
    pub content: String,
    pub action: PersistAction,
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub schema_version: u32,
    pub dir: String,
    pub fstype: FsKind,
    pub dir_fstype: String,
    pub used_bytes: u64,
    pub inodes: u64,
    pub mem_total_bytes: u64,
    pub swap_total_bytes: u64,
    pub other_tmpfs_limits_bytes: u64,
    /// Size limit as written in the options (`50%`, `2G`); null for ramfs.
    pub size_option: Option<String>,
    pub size_bytes: Option<u64>,
    pub nr_inodes: Option<u64>,
    pub mode: String,
    pub options: Vec<OptionWhy>,
    /// Comma-joined, as for `mount -o` / fstab / `Options=`.
    pub mount_options: String,
    pub mount_state: MountState,
    pub current: Option<CurrentMount>,
    pub persist: Persist,
    /// The command that carries out this plan, with every option given.
    pub apply_command: String,
    pub steps: Vec<String>,
    pub busy: Vec<ProcUse>,
    pub warnings: Vec<Warning>,
    /// Reasons `apply` would refuse; empty when it can go ahead.
    pub blockers: Vec<String>,
}

/// A bad request (exit 2): e.g. a size below what DIR holds now.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct PlanError(pub String);

const MIB: u64 = 1 << 20;
/// Kernel page size assumed for rounding size comparisons.
const PAGE: u64 = 4096;
/// Free room on top of current usage: half as much again, at least this.
const MIN_HEADROOM_BYTES: u64 = 64 * MIB;
const MIN_HEADROOM_INODES: u64 = 10_000;
/// systemd's tmp.mount default (nr_inodes=1m).
const DEFAULT_INODES: u64 = 1 << 20;

fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to).saturating_mul(to)
}

/// Bytes DIR needs: current usage plus headroom.
pub fn needed_bytes(used: u64) -> u64 {
    round_up(used.saturating_add((used / 2).max(MIN_HEADROOM_BYTES)), MIB)
}

/// Below this a limit is "tight": less than 10% (at least 1 MiB) free.
fn tight_bytes(used: u64) -> u64 {
    used.saturating_add((used / 10).max(MIB))
}

pub fn needed_inodes(inodes: u64) -> u64 {
    round_up(
        inodes.saturating_add((inodes / 2).max(MIN_HEADROOM_INODES)),
        1024,
    )
}

/// Size as tmpfs computes it: percentages of RAM in whole pages.
pub fn resolve_size(s: Size, mem_total: u64) -> u64 {
    match s {
        Size::Bytes(b) => round_up(b, PAGE),
        Size::PercentOfRam(p) => ((mem_total / PAGE) as f64 * p / 100.0) as u64 * PAGE,
    }
}

/// Escape a path for an fstab field (fstab(5): octal for space, tab, newline, backslash).
pub fn fstab_escape(p: &Path) -> String {
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

pub fn fstab_line(dir: &Path, fstype: &str, options: &str) -> String {
    format!("{fstype} {} {fstype} {options} 0 0", fstab_escape(dir))
}

pub const DROPIN_MARKER: &str = "# Written by `tmpfsctl apply`";

/// The drop-in for DIR's mount unit. systemd reads `%` as the start of a
/// specifier, so a share of RAM (`size=50%`) is written `%%`.
pub fn dropin_text(dir: &Path, options: &str) -> String {
    let options = options.replace('%', "%%");
    format!(
        "{DROPIN_MARKER}; `tmpfsctl revert {}` removes it.\n\
         # Every setting is restated so the result does not depend on the distribution's unit.\n\
         [Mount]\nWhat=tmpfs\nWhere={}\nType=tmpfs\nOptions={options}\n",
        dir.display(),
        dir.display()
    )
}

pub fn dropin_path(unit_dir: &Path, unit: &str) -> PathBuf {
    unit_dir.join(format!("{unit}.d")).join("override.conf")
}

fn is_shared_tmp(dir: &Path) -> bool {
    dir == Path::new("/tmp") || dir == Path::new("/var/tmp")
}

fn close(a: u64, b: u64) -> bool {
    a.abs_diff(b) < 16 * PAGE
}

/// What the planning steps collect along the way, in the order the user
/// sees them.
#[derive(Default)]
pub(super) struct Draft {
    options: Vec<OptionWhy>,
    warnings: Vec<Warning>,
    pub(super) blockers: Vec<String>,
}

impl Draft {
    pub(super) fn opt(&mut self, o: String, r: String) {
        self.options.push(OptionWhy {
            option: o,
            reason: r,
        })
    }

    pub(super) fn warn(&mut self, code: &str, m: String) {
        self.warnings.push(Warning {
            code: code.into(),
            message: m,
        })
    }
}

/// The limits chosen for a tmpfs (none for ramfs).
#[derive(Default)]
pub(super) struct Limits {
    size_option: Option<String>,
    pub(super) size_bytes: Option<u64>,
    pub(super) nr_inodes: Option<u64>,
}

/// Plan putting `facts.dir` on tmpfs. Pure; `Err` only for requests that can
/// never work (a limit below what DIR holds now).
pub fn plan(facts: &Facts, req: &Request) -> Result<Plan, PlanError> {
    let dir = &facts.dir;
    let shown = dir.display().to_string();
    let mem = &facts.mem;
    let mut d = Draft::default();
    outlives_reboot(&mut d, facts, req);
    security_flags(&mut d, req);
    let limits = if req.ramfs {
        Limits::default()
    } else {
        let (size_option, size_bytes) = size_limit(&mut d, facts, req)?;
        let nr_inodes = inode_limit(&mut d, facts, req)?;
        Limits {
            size_option: Some(size_option),
            size_bytes: Some(size_bytes),
            nr_inodes: Some(nr_inodes),
        }
    };
    let mode = mode_and_owner(&mut d, facts, req);
    if let Some(h) = req.huge {
        d.opt(
            format!("huge={}", h.as_str()),
            "asked for: transparent huge pages for large files (fewer TLB misses, more memory per file)".into(),
        );
    }
    if req.noswap {
        d.opt(
            "noswap".into(),
            "asked for: pages never go to swap (Linux 6.4+); the limit then counts against RAM alone".into(),
        );
    }
    quota_options(&mut d, facts, req)?;
    let mount_options = d
        .options
        .iter()
        .map(|o| o.option.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let fstype = if req.ramfs {
        FsKind::Ramfs
    } else {
        FsKind::Tmpfs
    };
    let fsname = if req.ramfs { "ramfs" } else { "tmpfs" };

    if req.ramfs {
        let m = format!(
            "ramfs has no size limit and is never swapped: one runaway writer in {shown} can take all RAM \
             and hang the machine. Use tmpfs with a size (drop --fstype ramfs); `apply` only sets up tmpfs"
        );
        d.warn("ramfs_requested", m);
        d.blockers
            .push("ramfs requested; apply only sets up tmpfs (it has a size limit)".into());
    }
    let mount_state = mount_state(&mut d, facts, req, mode, &limits);
    if !facts.nested_mounts.is_empty() {
        let list: Vec<String> = facts
            .nested_mounts
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        d.blockers.push(format!(
            "mount points inside {shown} would be hidden: {}; unmount them first",
            list.join(", ")
        ));
    }
    if facts.package_files_total > 0 && !req.allow_package_files {
        let list: Vec<String> = facts
            .package_files
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        d.blockers.push(format!(
            "{shown} holds {} file(s) installed by packages (e.g. {}); on tmpfs they would be hidden and lost at reboot, \
             breaking those packages. Pass --allow-package-files if that is really meant",
            facts.package_files_total,
            list.join(", ")
        ));
    }
    let persist = persistence(&mut d, facts, req, fsname, &mount_options);
    busy_warning(&mut d, facts);
    let steps = steps(
        facts,
        req,
        mount_state,
        &limits,
        fsname,
        &mount_options,
        &persist,
    );

    Ok(Plan {
        schema_version: SCHEMA_VERSION,
        dir: shown,
        fstype,
        dir_fstype: facts.dir_fstype.clone(),
        used_bytes: facts.used_bytes,
        inodes: facts.inodes,
        mem_total_bytes: mem.mem_total_bytes,
        swap_total_bytes: mem.swap_total_bytes,
        other_tmpfs_limits_bytes: facts.other_tmpfs_limits_bytes,
        size_option: limits.size_option,
        size_bytes: limits.size_bytes,
        nr_inodes: limits.nr_inodes,
        mode: format!("{mode:o}"),
        options: d.options,
        mount_options,
        mount_state,
        current: facts.current.clone(),
        persist,
        apply_command: format!(
            "tmpfsctl apply {}{}{}",
            crate::term::shell_path(&facts.dir),
            req.options_given,
            req.follow_up
        ),
        steps,
        busy: facts.busy.clone(),
        warnings: d.warnings,
        blockers: d.blockers,
    })
}

/// A plain tmpfs on a directory whose contents must outlive a reboot
/// deletes them at every boot: said first, and refused unless `--force`;
/// `persist` is the way to keep such a directory in RAM.
fn outlives_reboot(d: &mut Draft, facts: &Facts, req: &Request) {
    let Some(what) = resolve::outlives_reboot(&facts.dir) else {
        return;
    };
    let shown = facts.dir.display();
    let persist = format!(
        "tmpfsctl persist enable {}",
        crate::term::shell_path(&facts.dir)
    );
    d.warn(
        "outlives_reboot",
        format!(
            "{shown} holds {what}, meant to outlive a reboot: a plain tmpfs here is emptied at every \
             boot and they are deleted. To keep it in RAM with a durable copy on disk, run `{persist}`"
        ),
    );
    if !req.force {
        d.blockers.push(format!(
            "{shown} must keep its contents across reboots ({what}); a reboot would delete them all. \
             Use `{persist}`, or pass --force if losing them at each boot is meant"
        ));
    }
}

fn security_flags(d: &mut Draft, req: &Request) {
    d.opt(
        "nosuid".into(),
        "nothing kept in RAM here needs to run setuid programs".into(),
    );
    d.opt(
        "nodev".into(),
        "device nodes in a writable directory are a way around /dev permissions".into(),
    );
    if req.noexec {
        d.opt(
            "noexec".into(),
            "asked for; note that some installers and build tools execute from /tmp and then fail"
                .into(),
        );
    }
}

/// The tmpfs that exists at DIR now, if it is one.
pub(super) fn current_tmpfs(facts: &Facts) -> Option<&CurrentMount> {
    facts.current.as_ref().filter(|c| c.fstype == "tmpfs")
}

/// Where the mount is made permanent: as asked, else fstab when it already
/// has a line, else the systemd unit when one mounts DIR, else fstab.
fn persistence(
    d: &mut Draft,
    facts: &Facts,
    req: &Request,
    fsname: &str,
    mount_options: &str,
) -> Persist {
    let dir = &facts.dir;
    let shown = dir.display().to_string();
    let unit = facts.unit.name.clone();
    let vendor_unit = facts.unit.fragment.is_some() && facts.unit.state != UnitState::Masked;
    let (via, via_why) = match req.boot {
        Some(Boot::None) => {
            return Persist {
                via: Boot::None,
                path: String::new(),
                unit,
                content: String::new(),
                action: PersistAction::Unchanged,
                why: format!(
                    "asked for: a live mount only; {shown} is back on disk after the next reboot"
                ),
            };
        }
        Some(v) => (v, "asked for".to_string()),
        None if facts.fstab_entry.is_some() => (
            Boot::Fstab,
            format!(
                "{} already has a line for {shown}",
                facts.fstab_path.display()
            ),
        ),
        None if vendor_unit && facts.unit.state == UnitState::Enabled => (
            Boot::Systemd,
            format!(
                "systemd mounts {shown} with {unit} ({}); a drop-in keeps that and sets the options",
                facts
                    .unit
                    .fragment
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
        ),
        None => (
            Boot::Fstab,
            format!("no systemd unit mounts {shown}; fstab is the usual place"),
        ),
    };
    // `Boot::None` returned above: what is left is fstab or systemd.
    match via {
        Boot::Fstab | Boot::None => {
            let line = fstab_line(dir, fsname, mount_options);
            let action = match &facts.fstab_entry {
                None => PersistAction::Append,
                Some(e)
                    if e.vfstype == fsname
                        && e.spec == fsname
                        && e.options.join(",") == mount_options =>
                {
                    PersistAction::Unchanged
                }
                Some(_) => PersistAction::Replace,
            };
            if facts.unit.state == UnitState::Enabled
                && facts
                    .unit
                    .fragment
                    .as_ref()
                    .is_some_and(|f| f.starts_with("/etc"))
            {
                d.warn(
                    "unit_overrides_fstab",
                    format!(
                        "{} in /etc overrides fstab for {shown}; use --boot systemd or remove that unit",
                        unit
                    ),
                );
            }
            Persist {
                via,
                path: facts.fstab_path.display().to_string(),
                unit: unit.clone(),
                content: line,
                action,
                why: via_why,
            }
        }
        Boot::Systemd => {
            if facts.unit.state == UnitState::Masked {
                d.blockers.push(format!(
                    "{unit} is masked, so a drop-in would never be used; `systemctl unmask {unit}` first, or --boot fstab"
                ));
            } else if facts.unit.fragment.is_none() {
                d.blockers.push(format!(
                    "no {unit} unit file exists to add a drop-in to; use --boot fstab"
                ));
            }
            if facts.fstab_entry.is_some() {
                d.warn(
                    "fstab_overrides_unit",
                    format!(
                        "{} has a line for {shown}, which systemd turns into {unit} and which wins over the vendor unit; \
                         remove that line or use --boot fstab",
                        facts.fstab_path.display()
                    ),
                );
            }
            Persist {
                via,
                path: dropin_path(&facts.unit_dir, &unit).display().to_string(),
                unit: unit.clone(),
                content: dropin_text(dir, mount_options),
                action: PersistAction::Write,
                why: via_why,
            }
        }
    }
}

fn busy_warning(d: &mut Draft, facts: &Facts) {
    if facts.busy.is_empty() {
        return;
    }
    let shown = facts.dir.display().to_string();
    let mut list: Vec<String> = facts
        .busy
        .iter()
        .take(10)
        .map(|p| format!("{} ({})", p.pid, crate::term::safe(&p.comm)))
        .collect();
    if facts.busy.len() > 10 {
        list.push(format!("and {} more", facts.busy.len() - 10));
    }
    d.warn(
        "busy",
        format!(
            "processes use files under {shown}: {}. They keep using the old files on disk after the switch; \
             restart them afterwards",
            list.join(", ")
        ),
    );
}

/// The live steps `apply` takes, in order, as sentences.
fn steps(
    facts: &Facts,
    req: &Request,
    mount_state: MountState,
    limits: &Limits,
    fsname: &str,
    mount_options: &str,
    persist: &Persist,
) -> Vec<String> {
    let shown = facts.dir.display().to_string();
    if req.ramfs {
        // Apply refuses ramfs, so the only step is the one that works.
        return vec![format!(
            "none: `tmpfsctl apply` refuses ramfs, which has no size limit and is never swapped \
             (one runaway writer can take all RAM); plan a tmpfs instead: `tmpfsctl plan {shown}{}`",
            req.follow_up
        )];
    }
    let mut steps = Vec::new();
    match mount_state {
        MountState::Same => steps.push(format!("{shown} already is a tmpfs with these options: mount nothing")),
        MountState::SizeDiffers => steps.push(format!(
            "{shown} already is a tmpfs; change its size live with `tmpfsctl apply {shown} --resize {}{}`",
            limits.size_option.clone().unwrap_or_default(),
            req.follow_up
        )),
        _ => {
            steps.push(format!(
                "create a new {fsname} ({mount_options}) as a detached mount that no other process can see"
            ));
            steps.push(format!(
                "copy {shown} into it ({} in {} {}), keeping owners, modes, ns timestamps, symlinks, hard links, \
                 xattrs/ACLs, FIFOs, sockets and device nodes",
                fmt_bytes(facts.used_bytes),
                facts.inodes,
                crate::units::noun(facts.inodes, "entry", "entries")
            ));
            steps.push(
                "compare the two trees entry by entry; on any error or difference discard the new mount (nothing changed)"
                    .into(),
            );
            steps.push(format!(
                "move the new mount onto {shown} in one step (move_mount); the old files stay on disk underneath"
            ));
        }
    }
    match (persist.via, persist.action) {
        (Boot::Fstab, PersistAction::Unchanged) => {
            steps.push(format!("{} already has this line: leave it", persist.path))
        }
        (Boot::Fstab, a) => steps.push(format!(
            "{} the line for {shown} {} {} atomically (backup {}.tmpfsctl.bak, other lines byte-for-byte), \
             checked with `findmnt --verify`",
            if a == PersistAction::Append { "append" } else { "replace" },
            if a == PersistAction::Append { "to" } else { "in" },
            persist.path,
            persist.path
        )),
        (Boot::None, _) => steps.push(format!(
            "write no fstab line or drop-in: {shown} is back on disk after the next reboot"
        )),
        (Boot::Systemd, _) => steps.push(format!(
            "write the drop-in {} (an existing one is kept as override.conf.tmpfsctl.bak), checked with `systemd-analyze verify`",
            persist.path
        )),
    }
    steps.push(format!(
        "re-read /proc/self/mountinfo to confirm {shown} is the new tmpfs"
    ));
    steps
}

mod options;
mod state;

pub(crate) use options::{configured_size, same_size};
use options::{inode_limit, mode_and_owner, quota_options, size_limit};
use state::mount_state;

#[cfg(test)]
mod tests;
