//! `tmpfsctl persist` arguments; each subcommand converts to the plain
//! request the library takes.

use std::path::PathBuf;

use clap::Subcommand;

use super::output::Structured;
use crate::command::{Format, Output};
use crate::persist::admin::{EnableRequest, On};
use crate::persist::disable::DisableRequest;
use crate::persist::status::StatusRequest;
use crate::persist::verify::VerifyRequest;
use crate::persist::{PersistRequest, RestoreRequest, SyncRequest, registry};
use crate::sys::boot::Boot;
use crate::units::Size;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  sudo tmpfsctl persist enable /var/log --store /var/lib/tmpfsctl/persist/log --size 256M --yes\n  \
sudo tmpfsctl persist sync /var/log\n  tmpfsctl persist status --json\n  sudo tmpfsctl persist disable /var/log --yes\n\n\
The store always holds one complete generation: a sync writes what changed into a new one, \
hard-links the rest, fsyncs, then switches one pointer. \
The store must be a directory only root can change (no symlink in its path, not writable by \
group or others, no ancestor another user can rename things in) on a disk (not tmpfs, ramfs, \
a RAM disk or a loop device backed by one); restore refuses a store whose owner or mode \
changed since enable. DIR's tmpfs is nosuid,nodev unless enable gets --allow-suid/--allow-dev. \
See docs/persist.md."
)]
pub struct PersistArgs {
    /// The list of persisted directories (JSON)
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "TMPFSCTL_PERSIST_REGISTRY",
        default_value = registry::DEFAULT_PATH
    )]
    pub registry: PathBuf,
    #[command(subcommand)]
    pub cmd: PersistCmd,
}

#[derive(Debug, Subcommand)]
pub enum PersistCmd {
    /// Put DIR on tmpfs with a durable, crash-safe copy in STORE
    Enable(EnableArgs),
    /// Write a new generation of DIR into its store now
    Sync(SyncArgs),
    /// Mount the tmpfs if missing and load the newest complete generation
    Restore(RestoreArgs),
    /// Age of the last good sync and what a power loss would cost now
    Status(StatusArgs),
    /// Sync, unmount and put DIR's final tree back on disk
    Disable(DisableArgs),
    /// Read every object every kept generation refers to and check it
    /// against its manifest (exit 1 with a list of what is damaged)
    Verify(VerifyArgs),
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  sudo tmpfsctl persist enable /var/log --size 256M --yes\n  \
sudo tmpfsctl persist enable /srv/cache --store /var/lib/cache-store --interval 2min --boot fstab --yes\n  \
sudo tmpfsctl persist enable /var/log --on zram:lz4 --size 512M --yes\n\n\
DIR's files are copied into the store (generation 1) and into a new tmpfs mounted on DIR; \
the files on disk stay underneath, untouched."
)]
pub struct EnableArgs {
    /// The directory to keep in RAM, e.g. /var/log
    pub dir: PathBuf,
    /// Directory on disk for the generations [default: /var/lib/tmpfsctl/persist/<escaped DIR>]
    #[arg(long, value_name = "STORE")]
    pub store: Option<PathBuf>,
    /// tmpfs size (512M, 2G, 50% of RAM) [default: the kernel's, 50%]; with --on zram, the
    /// file system's size (the device gets its metadata on top)
    #[arg(long, value_name = "SIZE")]
    pub size: Option<Size>,
    /// What DIR is kept on: tmpfs, or zram[:ALGORITHM] (a zram device with an ext4 without a
    /// journal, mounted with discard, made again by the restore unit at every boot)
    #[arg(long, value_name = "tmpfs|zram[:ALG]", default_value = "tmpfs")]
    pub on: On,
    /// Go ahead although --size is above RAM + swap (such a cap limits nothing), or a process
    /// other than journald (which enable hands over itself) has a file in DIR open for writing
    /// (what it writes after the copy goes to the file hidden under the tmpfs and is lost)
    #[arg(long)]
    pub force: bool,
    /// Time between timer syncs (10min, 1h, 600)
    #[arg(long, value_name = "DURATION", default_value = "10min", value_parser = crate::units::parse_seconds)]
    pub interval: u64,
    /// Generations kept in the store (at least 1)
    #[arg(long, value_name = "N", default_value_t = crate::persist::DEFAULT_KEEP)]
    pub keep: usize,
    /// How the setup comes back at boot: systemd units (restore at boot, sync on a timer and at shutdown), the same plus an fstab line for the tmpfs, or none (the live mount only)
    #[arg(long, value_name = "HOW", value_enum, default_value = "systemd")]
    pub boot: Boot,
    /// Old spelling of --boot
    #[arg(
        long,
        value_name = "HOW",
        value_enum,
        hide = true,
        conflicts_with = "boot"
    )]
    pub persist: Option<Boot>,
    /// fstab to edit with --boot fstab
    #[arg(long, value_name = "FILE", default_value = "/etc/fstab")]
    pub fstab: PathBuf,
    /// Where to write the systemd units
    #[arg(long, value_name = "DIR", default_value = "/etc/systemd/system")]
    pub unit_dir: PathBuf,
    /// Mount the tmpfs without nosuid: set-uid files in DIR take effect (default: nosuid, as a
    /// forged store could otherwise name a set-uid root file)
    #[arg(long)]
    pub allow_suid: bool,
    /// Mount the tmpfs without nodev: device nodes in DIR work (default: nodev)
    #[arg(long)]
    pub allow_dev: bool,
    /// A unit that uses DIR early at boot (before local-fs.target): the restore runs before it (repeatable)
    #[arg(long, value_name = "UNIT")]
    pub before: Vec<String>,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub structured: Structured,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  sudo tmpfsctl persist sync /var/log\n  \
sudo tmpfsctl persist sync /var/log --keep 4   # keep four generations from now on")]
pub struct SyncArgs {
    /// The persisted directory to copy to its store
    pub dir: PathBuf,
    /// The store [default: DIR's, from the registry]
    #[arg(long, value_name = "STORE")]
    pub store: Option<PathBuf>,
    /// Generations kept [default: as enabled, else 2]
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
    /// Sync even when DIR is empty and the store is not
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub structured: Structured,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  sudo tmpfsctl persist restore /var/log\n  \
sudo tmpfsctl persist restore /var/log --generation 3 --force   # an older generation, replacing DIR's content")]
pub struct RestoreArgs {
    /// The persisted directory to load from its store
    pub dir: PathBuf,
    /// The store [default: DIR's, from the registry]
    #[arg(long, value_name = "STORE")]
    pub store: Option<PathBuf>,
    /// tmpfs size when a tmpfs has to be mounted [default: as enabled]
    #[arg(long, value_name = "SIZE")]
    pub size: Option<Size>,
    /// Replace DIR's content even when it differs from the store (it is lost)
    #[arg(long)]
    pub force: bool,
    /// Load generation N (see `persist verify`) instead of the newest that verifies
    #[arg(long, value_name = "N")]
    pub generation: Option<u64>,
    #[command(flatten)]
    pub structured: Structured,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  tmpfsctl persist status\n  tmpfsctl persist status /var/log --json\n  \
tmpfsctl persist status --prom /var/lib/prometheus/node-exporter/tmpfsctl-persist.prom"
)]
pub struct StatusArgs {
    /// One persisted directory [default: all in the registry]
    pub dir: Option<PathBuf>,
    /// The store [default: DIR's, from the registry]
    #[arg(long, value_name = "STORE")]
    pub store: Option<PathBuf>,
    /// The sync interval to judge staleness by [default: as enabled, else 10min]
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_seconds)]
    pub interval: Option<u64>,
    /// Also write node_exporter textfile metrics to FILE, - (stdout) or fd:N (a FILE is replaced atomically)
    #[arg(long, value_name = "FILE")]
    pub prom: Option<PathBuf>,
    #[command(flatten)]
    pub structured: Structured,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  tmpfsctl persist verify /var/log\n  tmpfsctl persist verify --json\n\n\
Exit 0: every kept generation is sound. Exit 1: the damaged paths in the store are listed; \
`persist sync` copies a damaged shared object again from DIR, `persist restore` falls back to \
the newest generation that verifies (or `--generation N`)."
)]
pub struct VerifyArgs {
    /// One persisted directory [default: all in the registry]
    pub dir: Option<PathBuf>,
    /// The store [default: DIR's, from the registry]
    #[arg(long, value_name = "STORE")]
    pub store: Option<PathBuf>,
    #[command(flatten)]
    pub structured: Structured,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  sudo tmpfsctl persist disable /var/log --yes")]
pub struct DisableArgs {
    /// The persisted directory to put back on disk with its final tree
    pub dir: PathBuf,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub structured: Structured,
}

fn size_text(s: Size) -> String {
    match s {
        Size::Bytes(b) => crate::units::tmpfs_size_option(b),
        Size::PercentOfRam(p) => format!("{p}%"),
    }
}

impl PersistArgs {
    /// What the subcommand did, as text or `--json`; `status --prom FILE`
    /// writes its metrics too (`-` or `fd:1`: on stdout instead).
    pub fn output(&self) -> Output {
        let (structured, prom) = match &self.cmd {
            PersistCmd::Enable(a) => (a.structured, None),
            PersistCmd::Sync(a) => (a.structured, None),
            PersistCmd::Restore(a) => (a.structured, None),
            PersistCmd::Status(a) => (a.structured, a.prom.as_ref()),
            PersistCmd::Verify(a) => (a.structured, None),
            PersistCmd::Disable(a) => (a.structured, None),
        };
        structured
            .on(Output::stdout(Format::TEXT))
            .export("--prom", Format::PROM, prom)
    }

    pub fn request(&self) -> anyhow::Result<PersistRequest> {
        let registry = self.registry.clone();
        Ok(match &self.cmd {
            PersistCmd::Enable(a) => {
                if a.keep == 0 {
                    anyhow::bail!("--keep 0: the store must keep at least the current generation");
                }
                PersistRequest::Enable(EnableRequest {
                    dir: a.dir.clone(),
                    store: a.store.clone(),
                    size: a.size,
                    interval_s: a.interval,
                    keep: a.keep,
                    boot: match a.persist {
                        Some(old) => {
                            super::mounts::deprecated("--persist", old);
                            old
                        }
                        None => a.boot,
                    },
                    fstab: a.fstab.clone(),
                    unit_dir: a.unit_dir.clone(),
                    registry,
                    allow_suid: a.allow_suid,
                    allow_dev: a.allow_dev,
                    before: a.before.clone(),
                    force: a.force,
                    yes: a.yes,
                    on: a.on.clone(),
                })
            }
            PersistCmd::Sync(a) => PersistRequest::Sync(SyncRequest {
                dir: a.dir.clone(),
                store: a.store.clone(),
                keep: a.keep.map(|k| k.max(1)),
                allow_empty: a.allow_empty,
                registry,
            }),
            PersistCmd::Restore(a) => PersistRequest::Restore(RestoreRequest {
                dir: a.dir.clone(),
                store: a.store.clone(),
                size: a.size.map(size_text),
                force: a.force,
                generation: a.generation,
                registry,
                quiet: a.structured.any(),
            }),
            PersistCmd::Status(a) => PersistRequest::Status(StatusRequest {
                dir: a.dir.clone(),
                store: a.store.clone(),
                interval_s: a.interval,
                registry,
            }),
            PersistCmd::Verify(a) => PersistRequest::Verify(VerifyRequest {
                dir: a.dir.clone(),
                store: a.store.clone(),
                registry,
            }),
            PersistCmd::Disable(a) => PersistRequest::Disable(DisableRequest {
                dir: a.dir.clone(),
                registry,
                yes: a.yes,
            }),
        })
    }
}
