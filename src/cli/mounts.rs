//! `tmpfsctl plan`, `apply` and `revert` arguments: parsed and validated
//! here, handed to [`crate::mounts`] as plain request values.

use std::path::PathBuf;

use super::output::{Structured, json_help};
use crate::command::{Format, Output};
use crate::mounts::plan::{self, Request};
use crate::mounts::{ApplyRequest, PlanRequest, RevertRequest, Target};
use crate::units::{Size, parse_count, parse_size};

const AFTER_PLAN: &str = "Examples:\n  tmpfsctl plan /tmp\n  tmpfsctl plan /tmp --size 4G --noexec --json\n  \
tmpfsctl plan ~/build --boot fstab\n\nChanges nothing. Exit 1 when `apply` would refuse (see \"blockers\"); exit 2 for a request that can never \
work: a --size below what DIR holds, or above RAM + swap (unless --force, as for apply).";
const AFTER_APPLY: &str = "Examples:\n  sudo tmpfsctl apply /tmp\n  sudo tmpfsctl apply /tmp --size 8G --boot systemd --yes\n  \
sudo tmpfsctl apply /tmp --resize 12G\n\nThe old contents stay on disk underneath the tmpfs; `tmpfsctl revert /tmp --keep-data` \
copies the current ones back.";
const AFTER_REVERT: &str = "Examples:\n  sudo tmpfsctl revert /tmp --keep-data\n  sudo tmpfsctl revert /tmp --discard --lazy --yes\n\n\
With --discard, what was written to the tmpfs is thrown away and the old on-disk contents reappear; \
a tmpfs holding files needs --keep-data or --discard.";

fn parse_mode(s: &str) -> Result<u32, String> {
    crate::mounts::parse_mode(s)
}

fn parse_inodes(s: &str) -> Result<u64, String> {
    parse_count(s).map_err(|e| e.to_string())
}

// The directory and where its configuration lives. (A plain comment: as a
// doc comment it would replace the about of the commands that flatten it.)
#[derive(Debug, Clone, clap::Args)]
#[command(mut_args(json_help("Print a JSON document (schema_version 1) instead of text", &[])))]
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
    #[command(flatten)]
    pub structured: Structured,
}

// Mount options (all optional: plan recommends what is not given). (A plain
// comment: as a doc comment it would replace the about of plan and apply.)
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
    /// Transparent huge pages for DIR's files (the kernel's huge=; within_size and within-size both work)
    #[arg(long, value_enum, value_name = "POLICY")]
    pub huge: Option<plan::Huge>,
    /// Most each user may hold in DIR (usrquota; Linux 6.6+ with CONFIG_TMPFS_QUOTA)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub user_quota: Option<Size>,
    /// Most each group may hold in DIR (grpquota; Linux 6.6+ with CONFIG_TMPFS_QUOTA)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub group_quota: Option<Size>,
    /// Mode of the mount's root in octal (default: DIR's mode now; 1777 for /tmp and /var/tmp)
    #[arg(long, value_name = "OCTAL", value_parser = parse_mode)]
    pub mode: Option<u32>,
    /// How the mount comes back at boot: an fstab line, a systemd drop-in, or none (live only) [default: what manages DIR now]
    #[arg(long, value_enum, value_name = "HOW")]
    pub boot: Option<plan::Boot>,
    /// Old spelling of --boot fstab|systemd
    #[arg(long, value_enum, hide = true, conflicts_with = "boot")]
    pub via: Option<plan::Boot>,
    /// Filesystem type; ramfs is only explained (it has no size limit)
    #[arg(long, value_enum, default_value = "tmpfs")]
    pub fstype: plan::FsKind,
    /// Allow a size above RAM + swap (refused otherwise: such a cap limits nothing), and a plain tmpfs on a directory whose contents must outlive a reboot (/var/log, /var/cache, /var/tmp, /var/spool, /var/mail, /srv, /home: a reboot deletes them; `persist enable` keeps them); for apply, also go ahead although processes have files under DIR open for writing (what they write after the copy stays hidden on disk)
    #[arg(long)]
    pub force: bool,
}

impl MountOptArgs {
    /// `--boot`, or its old spelling `--via` with a note on stderr.
    fn boot(&self) -> Option<plan::Boot> {
        self.boot.or(self.via)
    }

    fn deprecation_notes(&self) {
        if let Some(v) = self.via {
            deprecated("--via", v);
        }
    }

    fn request(&self) -> Request {
        self.deprecation_notes();
        Request {
            size: self.size,
            inodes: self.inodes,
            noexec: self.noexec,
            noswap: self.noswap,
            huge: self.huge,
            mode: self.mode,
            boot: self.boot(),
            ramfs: self.fstype == plan::FsKind::Ramfs,
            user_quota: self.user_quota,
            group_quota: self.group_quota,
            allow_package_files: false,
            force: self.force,
            follow_up: String::new(),
            options_given: self.given(),
        }
    }

    /// The mount options as given, for the `tmpfsctl apply` commands the
    /// tool prints (so copying one does what was planned).
    fn given(&self) -> String {
        use clap::ValueEnum;
        let name = |v: Option<clap::builder::PossibleValue>| {
            v.map(|v| v.get_name().to_string()).unwrap_or_default()
        };
        let mut s = String::new();
        let mut add = |flag: &str, v: Option<String>| {
            if let Some(v) = v {
                s.push_str(&format!(" --{flag} {v}"));
            }
        };
        add("size", self.size.map(|v| v.to_string()));
        add("inodes", self.inodes.map(|v| v.to_string()));
        add("huge", self.huge.map(|h| name(h.to_possible_value())));
        add("user-quota", self.user_quota.map(|v| v.to_string()));
        add("group-quota", self.group_quota.map(|v| v.to_string()));
        add("mode", self.mode.map(|m| format!("{m:o}")));
        add("boot", self.boot().map(|v| name(v.to_possible_value())));
        if self.noexec {
            s.push_str(" --noexec");
        }
        if self.noswap {
            s.push_str(" --noswap");
        }
        if self.force {
            s.push_str(" --force");
        }
        s
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

/// One line on stderr for an old option spelling that still works.
pub fn deprecated(old: &str, v: plan::Boot) {
    crate::command::note(&format!(
        "{old} is deprecated and will go away; use --boot {}",
        v.name()
    ));
}

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_APPLY)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub opts: MountOptArgs,
    /// Old spelling of --boot fstab|systemd|none
    #[arg(long, value_enum, hide = true, conflicts_with_all = ["boot", "via"])]
    pub persist: Option<plan::Boot>,
    /// Change the size of the tmpfs already at DIR, live (never below its usage)
    #[arg(long, value_name = "SIZE", value_parser = parse_size, conflicts_with = "size")]
    pub resize: Option<Size>,
    /// Go ahead although DIR holds files the package manager installed (they are hidden until revert)
    #[arg(long)]
    pub allow_package_files: bool,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub yes: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_REVERT)]
#[command(mut_arg("dir", |a| a.help("The directory to take off tmpfs (where `apply` mounted one), e.g. /tmp")))]
pub struct RevertArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Copy the tmpfs contents back to the directory on disk first
    #[arg(long, conflicts_with = "discard")]
    pub keep_data: bool,
    /// Throw away what the tmpfs holds (needed, or --keep-data, when it holds files)
    #[arg(long)]
    pub discard: bool,
    /// Detach the tmpfs even when processes still use it (it goes away when they let go)
    #[arg(long)]
    pub lazy: bool,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub yes: bool,
}

impl TargetArgs {
    pub fn target(&self) -> Target {
        Target {
            dir: self.dir.clone(),
            fstab: self.fstab.clone(),
            unit_dir: self.unit_dir.clone(),
            // The JSON document holds what the text would say on stderr.
            quiet: self.structured.any(),
        }
    }
}

impl TargetArgs {
    /// The report as text, or `--json`; prose about the steps goes to stderr.
    fn output(&self) -> Output {
        self.structured.on(Output::stdout(Format::TEXT))
    }
}

impl PlanArgs {
    pub fn output(&self) -> Output {
        self.target.output()
    }

    pub fn request(&self) -> PlanRequest {
        let target = self.target.target();
        let mut opts = self.opts.request();
        opts.follow_up = target.follow_up();
        PlanRequest { target, opts }
    }
}

impl ApplyArgs {
    pub fn output(&self) -> Output {
        self.target.output()
    }

    pub fn request(&self) -> ApplyRequest {
        let target = self.target.target();
        let mut opts = self.opts.request();
        opts.follow_up = target.follow_up();
        opts.allow_package_files = self.allow_package_files;
        if let Some(p) = self.persist {
            deprecated("--persist", p);
            opts.boot = Some(p);
            opts.options_given
                .push_str(&format!(" --boot {}", p.name()));
        }
        ApplyRequest {
            target,
            opts,
            resize: self.resize,
            force: self.opts.force,
            yes: self.yes,
        }
    }
}

impl RevertArgs {
    pub fn output(&self) -> Output {
        self.target.output()
    }

    pub fn request(&self) -> RevertRequest {
        RevertRequest {
            target: self.target.target(),
            keep_data: self.keep_data,
            discard: self.discard,
            lazy: self.lazy,
            yes: self.yes,
        }
    }
}
