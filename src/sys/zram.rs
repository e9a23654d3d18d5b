//! zram: compressed block devices in RAM. Reading what the kernel offers and
//! what each device costs (sysfs), and the one way tmpfsctl makes a device
//! with a file system on it and takes it away again.
//!
//! What a device offers is read from its sysfs files, never assumed: kernels
//! differ in back ends (lzo, lzo-rle, lz4, lz4hc, zstd, deflate), and in
//! whether recompression (`recomp_algorithm`), writeback (`writeback`) and
//! per-algorithm parameters (`algorithm_params`) exist.
//!
//! The RAM a device costs is `mem_used_total` in `mm_stat` (allocator
//! overhead included), not the compressed size.
//!
//! A device tmpfsctl makes is recorded, right after `hot_add` hands out its
//! number, in a note under [`NOTE_DIR`] naming the process that made it (PID,
//! start time, PID namespace) and the file-system label it gets. A later run
//! removes a device whose maker is gone and that still is what the note says
//! (its label, or no file system yet): killed by SIGKILL or a power cut of
//! the process, nothing stays but RAM until the next run. /run is a tmpfs, so
//! the notes go with a reboot, as the devices do.

use std::io::Read as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::Sysroot;
use super::proc::Owner;

/// Where the notes naming each device's maker live (root only).
pub const NOTE_DIR: &str = "/run/tmpfsctl-zram";

/// `/sys/block/zramN/mm_stat`, in bytes (the kernel counts pages for the
/// last four; they are converted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MmStat {
    /// Data written, uncompressed.
    pub orig_data_bytes: u64,
    /// The same, compressed.
    pub compr_data_bytes: u64,
    /// RAM the device holds now, allocator overhead included: what it costs.
    pub mem_used_total_bytes: u64,
    /// 0 = no limit.
    pub mem_limit_bytes: u64,
    pub mem_used_max_bytes: u64,
    /// Pages stored as one repeated word (zeros): cost nothing but metadata.
    pub same_pages: u64,
    pub pages_compacted: u64,
    /// Pages that did not compress and are stored whole.
    pub huge_pages: Option<u64>,
}

impl MmStat {
    /// Parse the one line; None unless it has at least the seven fields every
    /// kernel since 4.1 writes.
    pub fn parse(text: &str) -> Option<MmStat> {
        let v: Vec<u64> = text
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        if v.len() < 7 {
            return None;
        }
        Some(MmStat {
            orig_data_bytes: v[0],
            compr_data_bytes: v[1],
            mem_used_total_bytes: v[2],
            mem_limit_bytes: v[3],
            mem_used_max_bytes: v[4],
            same_pages: v[5],
            pages_compacted: v[6],
            huge_pages: v.get(7).copied(),
        })
    }

    /// Data stored per byte of RAM it costs (`orig_data_size /
    /// mem_used_total`); None while the device holds nothing.
    pub fn ratio(&self) -> Option<f64> {
        (self.mem_used_total_bytes > 0)
            .then(|| self.orig_data_bytes as f64 / self.mem_used_total_bytes as f64)
    }
}

/// `comp_algorithm`: `lzo [lzo-rle] lz4`: the back ends offered, and the
/// bracketed one in use.
pub fn parse_algorithms(text: &str) -> (Vec<String>, Option<String>) {
    let mut all = Vec::new();
    let mut current = None;
    for w in text.split_whitespace() {
        match w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            Some(c) => {
                current = Some(c.to_string());
                all.push(c.to_string());
            }
            None => all.push(w.to_string()),
        }
    }
    (all, current)
}

/// What this kernel's zram offers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Features {
    /// zram is there (built in, or its module loaded): /sys/class/zram-control.
    pub available: bool,
    /// Compression back ends, as a device lists them (empty when no device
    /// exists to ask).
    pub algorithms: Vec<String>,
    /// Recompression with a second algorithm (`recomp_algorithm`).
    pub recompress: bool,
    /// Writing idle or incompressible pages out to a backing device (`writeback`).
    pub writeback: bool,
    /// Per-algorithm parameters such as a level or a dictionary (`algorithm_params`).
    pub algorithm_params: bool,
}

/// What a device is used for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Use {
    Swap,
    Mount { mountpoint: String, fstype: String },
}

/// One zram device as sysfs, /proc/swaps and mountinfo show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// `zram0`.
    pub name: String,
    /// 0 while the device is not set up.
    pub disksize_bytes: u64,
    pub algorithm: Option<String>,
    pub algorithms: Vec<String>,
    pub mm: Option<MmStat>,
    /// `orig_data_size / mem_used_total`.
    pub ratio: Option<f64>,
    pub uses: Vec<Use>,
    /// Made by tmpfsctl (a note under /run/tmpfsctl-zram names it).
    pub made_by_tmpfsctl: bool,
}

fn sys_block(root: &Sysroot, name: &str, file: &str) -> PathBuf {
    root.path(format!("/sys/block/{name}/{file}"))
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Names of the zram devices, by number.
fn device_names(root: &Sysroot) -> Vec<String> {
    let mut v: Vec<(u32, String)> = std::fs::read_dir(root.path("/sys/block"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.to_string();
            let i = n.strip_prefix("zram")?.parse().ok()?;
            Some((i, n))
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, n)| n).collect()
}

/// What the kernel's zram offers: from zram-control and the files of the
/// first device (no device is made to find out).
pub fn features(root: &Sysroot) -> Features {
    let available = root.path("/sys/class/zram-control/hot_add").exists();
    let Some(first) = device_names(root).into_iter().next() else {
        return Features {
            available,
            ..Features::default()
        };
    };
    let has = |f: &str| sys_block(root, &first, f).exists();
    Features {
        available,
        algorithms: read_trim(&sys_block(root, &first, "comp_algorithm"))
            .map(|t| parse_algorithms(&t).0)
            .unwrap_or_default(),
        recompress: has("recomp_algorithm"),
        writeback: has("writeback"),
        algorithm_params: has("algorithm_params"),
    }
}

/// Every zram device with what it holds, costs and is used for.
pub fn devices(root: &Sysroot) -> Vec<Device> {
    let swaps = std::fs::read_to_string(root.path("/proc/swaps")).unwrap_or_default();
    let mounts = root.mountinfo().map(|(m, _)| m).unwrap_or_default();
    device_names(root)
        .into_iter()
        .map(|name| {
            let (algorithms, algorithm) = read_trim(&sys_block(root, &name, "comp_algorithm"))
                .map(|t| parse_algorithms(&t))
                .unwrap_or_default();
            let mm = read_trim(&sys_block(root, &name, "mm_stat")).and_then(|t| MmStat::parse(&t));
            let dev = format!("/dev/{name}");
            let mut uses: Vec<Use> = swaps
                .lines()
                .skip(1)
                .filter(|l| l.split_whitespace().next() == Some(dev.as_str()))
                .map(|_| Use::Swap)
                .collect();
            uses.extend(
                mounts
                    .iter()
                    .filter(|m| m.source == dev)
                    .map(|m| Use::Mount {
                        mountpoint: m.mount_point.display().to_string(),
                        fstype: m.fstype.clone(),
                    }),
            );
            Device {
                disksize_bytes: read_trim(&sys_block(root, &name, "disksize"))
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(0),
                algorithm,
                algorithms,
                ratio: mm.and_then(|m| m.ratio()),
                mm,
                uses,
                made_by_tmpfsctl: root.is_live() && Path::new(NOTE_DIR).join(&name).exists(),
                name,
            }
        })
        .collect()
}

/// The ext4 label in a device's superblock, read directly (offset 1024,
/// magic 0xEF53 at +0x38, 16-byte label at +0x78): one read, and no blkid
/// cache that could name the device's last owner. None: no ext2/3/4 there.
pub fn ext_label(dev: &Path) -> Option<String> {
    let mut sb = [0u8; 2048];
    std::fs::File::open(dev).ok()?.read_exact(&mut sb).ok()?;
    let s = &sb[1024..];
    if u16::from_le_bytes([s[0x38], s[0x39]]) != 0xEF53 {
        return None;
    }
    let label = &s[0x78..0x88];
    let end = label.iter().position(|&b| b == 0).unwrap_or(label.len());
    Some(String::from_utf8_lossy(&label[..end]).into_owned())
}

/// A device being made or in use: dropping it unmounts nothing (the caller
/// owns its mount) but removes the device and its note.
#[derive(Debug)]
pub struct ZramDevice {
    index: u32,
    /// Its ext4 label, which its note repeats.
    label: String,
    removed: bool,
}

/// What to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// None: the kernel's default back end.
    pub algorithm: Option<String>,
    pub disksize_bytes: u64,
    /// The ext4 label (at most 16 bytes): says who made it, in `blkid` too.
    pub label: String,
}

/// The note of a device tmpfsctl made: `PID STARTTIME PIDNS LABEL`.
fn note_text(o: &Owner, pidns: u64, label: &str) -> String {
    format!("{} {} {} {}\n", o.pid, o.starttime, pidns, label)
}

fn parse_note(text: &str) -> Option<(Owner, u64, String)> {
    let mut it = text.split_whitespace();
    let pid = it.next()?.parse().ok()?;
    let starttime = it.next()?.parse().ok()?;
    let pidns = it.next()?.parse().ok()?;
    let label = it.next()?.to_string();
    Some((Owner { pid, starttime }, pidns, label))
}

/// The note directory, made if missing; refused unless a directory only
/// root can write (root never writes where another user can redirect it).
fn note_dir() -> Result<&'static Path> {
    let d = Path::new(NOTE_DIR);
    match std::fs::DirBuilder::new().mode(0o700).create(d) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {NOTE_DIR}")),
    }
    let m = std::fs::symlink_metadata(d).with_context(|| format!("cannot read {NOTE_DIR}"))?;
    anyhow::ensure!(
        m.is_dir() && m.uid() == 0 && m.mode() & 0o022 == 0,
        "{NOTE_DIR} is not a directory only root can write; remove it (a reboot also clears /run)"
    );
    Ok(d)
}

/// Replace a device's note in one step (a temporary name, then rename): a
/// kill halfway leaves the old note or the new one, never an empty one that
/// no run could read.
fn write_note(dir: &Path, name: &str, text: &str) -> Result<()> {
    let tmp = dir.join(format!(".{name}.new"));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, dir.join(name)))
        .with_context(|| format!("cannot write {NOTE_DIR}/{name}"))
}

/// The note of a device a persisted directory lives on: no maker whose
/// death frees it (it outlives the command that made it, until `persist
/// disable` or a reboot), so [`sweep`] never takes it.
fn persist_note(label: &str) -> String {
    format!("persist {label}\n")
}

/// Where zram is a module (Debian's kernels), load it without the one
/// device it makes by default: devices are made with hot_add, one each.
pub fn load_module() {
    if !Path::new("/sys/class/zram-control").exists() {
        let _ = Command::new("modprobe")
            .args(["zram", "num_devices=0"])
            .output();
    }
}

fn write_sys(p: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(p, value)
}

impl ZramDevice {
    /// Make a device: hot_add, note it, set its algorithm and size, and put
    /// an ext4 without a journal on it (ext4's own `discard` needs the mount
    /// option; nothing here mounts). On any failure the device is removed
    /// again.
    pub fn make(spec: &Spec) -> Result<ZramDevice> {
        anyhow::ensure!(
            spec.label.len() <= 16,
            "zram label {:?} is longer than ext4's 16 bytes",
            spec.label
        );
        let dir = note_dir()?;
        let me = Owner::me().context("cannot read this process's start time from /proc")?;
        let pidns = super::proc::pid_namespace().context("cannot read /proc/self/ns/pid")?;
        sweep();
        load_module();
        let mut text = String::new();
        std::fs::File::open("/sys/class/zram-control/hot_add")
            .and_then(|mut f| f.read_to_string(&mut text))
            .context(
                "cannot add a zram device (/sys/class/zram-control/hot_add): load the zram module (modprobe zram) or use a kernel with zram",
            )?;
        let index: u32 = text
            .trim()
            .parse()
            .with_context(|| format!("hot_add answered {:?}, not a device number", text.trim()))?;
        let d = ZramDevice {
            index,
            label: spec.label.clone(),
            removed: false,
        };
        // The note first, so that a kill from here on leaves a device the
        // next run can tell is ours.
        write_note(dir, &d.name(), &note_text(&me, pidns, &spec.label))?;
        d.setup(spec)?;
        Ok(d)
    }

    fn setup(&self, spec: &Spec) -> Result<()> {
        let name = self.name();
        let root = Sysroot::live();
        if let Some(a) = &spec.algorithm {
            let (offered, _) = read_trim(&sys_block(&root, &name, "comp_algorithm"))
                .map(|t| parse_algorithms(&t))
                .unwrap_or_default();
            anyhow::ensure!(
                offered.iter().any(|o| o == a),
                "zram algorithm {a:?} is not offered by this kernel; it offers {}",
                offered.join(", ")
            );
            write_sys(&sys_block(&root, &name, "comp_algorithm"), a)
                .with_context(|| format!("{name}: cannot set comp_algorithm {a}"))?;
        }
        write_sys(
            &sys_block(&root, &name, "disksize"),
            &spec.disksize_bytes.to_string(),
        )
        .with_context(|| format!("{name}: cannot set disksize {}", spec.disksize_bytes))?;
        // No journal: on RAM it only doubles the writes and the RAM; no lazy
        // init: else a kernel thread zeroes inode tables during the first
        // minutes, writing while figures are taken; -m 0: no blocks held
        // back for root, so the size given is the size usable.
        let out = Command::new("mkfs.ext4")
            .args(["-q", "-F", "-O", "^has_journal", "-m", "0", "-E"])
            .arg("lazy_itable_init=0,lazy_journal_init=0")
            .arg("-L")
            .arg(&spec.label)
            .arg(self.path())
            .output()
            .context("cannot run mkfs.ext4 (install e2fsprogs)")?;
        anyhow::ensure!(
            out.status.success(),
            "mkfs.ext4 on {} failed: {}",
            self.path().display(),
            crate::term::safe(String::from_utf8_lossy(&out.stderr).trim())
        );
        Ok(())
    }

    pub fn name(&self) -> String {
        format!("zram{}", self.index)
    }

    /// `/dev/zramN`.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/dev/zram{}", self.index))
    }

    /// The back end in use.
    pub fn algorithm(&self) -> Option<String> {
        read_trim(&sys_block(&Sysroot::live(), &self.name(), "comp_algorithm"))
            .and_then(|t| parse_algorithms(&t).1)
    }

    /// Keep the device past this process: its note now says a persisted
    /// directory lives on it, so no later run removes it. Returns its name.
    pub fn keep_for_persist(mut self) -> Result<String> {
        note_dir()?;
        write_note(
            Path::new(NOTE_DIR),
            &self.name(),
            &persist_note(&self.label),
        )?;
        self.removed = true;
        Ok(self.name())
    }

    /// The device a persisted directory lives on (`zramN`, checked to carry
    /// `label`), taken back by this process: from here on it goes when this
    /// process drops it, or, if it is killed, with the next run's sweep.
    pub fn take_back(name: &str, label: &str) -> Result<ZramDevice> {
        let index: u32 = name
            .strip_prefix("zram")
            .and_then(|i| i.parse().ok())
            .with_context(|| format!("{name} is not a zram device"))?;
        let dev = PathBuf::from(format!("/dev/{name}"));
        let found = ext_label(&dev);
        anyhow::ensure!(
            found.as_deref() == Some(label),
            "{} carries the label {:?}, not {label:?}: not the device persist made; not removing it",
            dev.display(),
            found.unwrap_or_default()
        );
        let dir = note_dir()?;
        let me = Owner::me().context("cannot read this process's start time from /proc")?;
        let pidns = super::proc::pid_namespace().context("cannot read /proc/self/ns/pid")?;
        write_note(dir, name, &note_text(&me, pidns, label))?;
        Ok(ZramDevice {
            index,
            label: label.to_string(),
            removed: false,
        })
    }

    /// Note device `name` (checked to carry `label`) as a persisted
    /// directory's, as [`ZramDevice::keep_for_persist`] does: for a device
    /// an enable killed between its mount and that note left on DIR, which
    /// a rerun of the enable takes over.
    pub fn note_as_persist(name: &str, label: &str) -> Result<()> {
        ZramDevice::take_back(name, label)?.keep_for_persist()?;
        Ok(())
    }

    /// Remove the device (it must not be mounted any more) and its note.
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        hot_remove(self.index)
    }
}

impl Drop for ZramDevice {
    fn drop(&mut self) {
        if !self.removed {
            let _ = hot_remove(self.index);
        }
    }
}

/// Remove device N and then its note. udev probes a new file system for a
/// moment after mkfs and an unmount, holding the device open (EBUSY), and
/// on a loaded machine that moment lasted over ten seconds: tries for thirty.
fn hot_remove(index: u32) -> Result<()> {
    let mut last = None;
    for _ in 0..600 {
        match write_sys(
            Path::new("/sys/class/zram-control/hot_remove"),
            &index.to_string(),
        ) {
            Ok(()) => {
                let _ = std::fs::remove_file(Path::new(NOTE_DIR).join(format!("zram{index}")));
                return Ok(());
            }
            // Already gone (removed by hand): only the note is left.
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {
                let _ = std::fs::remove_file(Path::new(NOTE_DIR).join(format!("zram{index}")));
                return Ok(());
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(last.map_or_else(|| anyhow::anyhow!("unknown error"), anyhow::Error::from)).with_context(
        || format!("cannot remove /dev/zram{index} (still mounted or open?); remove it with: echo {index} > /sys/class/zram-control/hot_remove"),
    )
}

/// The size to give a device that is to hold a file system with `fs_bytes`
/// for files: ext4's metadata (inode tables, bitmaps, group descriptors:
/// about 2% at the default inode ratio) on top, and at least 64 MiB so that
/// mkfs has room for its minimum.
pub fn device_bytes(fs_bytes: u64) -> u64 {
    (fs_bytes + fs_bytes / 16 + (16 << 20)).max(64 << 20)
}

/// The most RAM a device of `disksize` bytes can hold: every page
/// incompressible (stored whole) plus the device's own table (a few words
/// per page) and the allocator's pages for it: 1/64 is well above both.
pub fn worst_case_ram(disksize: u64) -> u64 {
    disksize + disksize / 64
}

/// The ext4 label of a device persist makes for `dir`: 16 bytes, at most
/// what ext4 holds, the same for the same DIR at every boot.
pub fn persist_label(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    // FNV-1a: a stable name, not a secret (the device is also found
    // through its mount on DIR).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in dir.as_os_str().as_bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    format!("tmpfsctl-p{:06x}", h & 0xff_ffff)
}

/// Whether device `name`'s note names a maker that is gone (killed before
/// it finished) and the label `label`: a device no live process owns.
pub fn orphaned(name: &str, label: &str) -> bool {
    let Some((owner, ns, l)) = std::fs::read_to_string(Path::new(NOTE_DIR).join(name))
        .ok()
        .and_then(|t| parse_note(&t))
    else {
        return false;
    };
    l == label && super::proc::pid_namespace() == Some(ns) && !owner.alive(&Sysroot::live())
}

/// `zramN` for a device number (`st_dev`), from /sys/dev/block/MAJ:MIN/uevent.
pub fn name_of_dev(dev: u64) -> Option<String> {
    let (maj, min) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let uevent = std::fs::read_to_string(format!("/sys/dev/block/{maj}:{min}/uevent")).ok()?;
    let name = uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))?
        .trim();
    name.starts_with("zram").then(|| name.to_string())
}

/// The back ends device `zramN` offers, and the one in use.
pub fn algorithms_of(name: &str) -> (Vec<String>, Option<String>) {
    read_trim(&sys_block(&Sysroot::live(), name, "comp_algorithm"))
        .map(|t| parse_algorithms(&t))
        .unwrap_or_default()
}

/// The size of device `zramN` (0: not set up).
pub fn disksize_of(name: &str) -> u64 {
    read_trim(&sys_block(&Sysroot::live(), name, "disksize"))
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

/// `mm_stat` of device `zramN`.
pub fn mm_stat_of(name: &str) -> Option<MmStat> {
    read_trim(&sys_block(&Sysroot::live(), name, "mm_stat")).and_then(|t| MmStat::parse(&t))
}

/// Mount the ext4 on `dev` detached (new mount API: no path until it is
/// attached, gone with this process if it never is), with `discard` so a
/// deleted file's blocks are freed in zram at once (else they keep holding
/// RAM until overwritten), and `nosuid,nodev` unless `allow` lifts them.
pub fn mount_detached(dev: &Path, allow: super::tmpfs::Allow) -> Result<super::tmpfs::Detached> {
    use rustix::mount::FsOpenFlags;
    let fs = rustix::mount::fsopen("ext4", FsOpenFlags::FSOPEN_CLOEXEC)
        .context("fsopen(ext4) failed; this needs Linux 5.2+, ext4 and CAP_SYS_ADMIN")?;
    rustix::mount::fsconfig_set_string(&fs, "source", dev).context("fsconfig source")?;
    rustix::mount::fsconfig_set_flag(&fs, "discard").context("ext4 rejected `discard`")?;
    rustix::mount::fsconfig_create(&fs)
        .with_context(|| format!("mounting the ext4 on {} failed", dev.display()))?;
    super::tmpfs::Detached::from_fs(&fs, allow.attrs(), "file system")
}

/// Remove the devices tmpfsctl made whose maker is gone, and their notes.
/// A device is removed only while it is still what its note says: its
/// label, or no file system yet (killed before mkfs); else the number was
/// reused by someone else after our device went, and only the note goes.
/// Best effort; returns the devices removed.
pub fn sweep() -> Vec<String> {
    let mut removed = Vec::new();
    let (Some(me), Some(my_ns)) = (Owner::me(), super::proc::pid_namespace()) else {
        return removed;
    };
    let Ok(m) = std::fs::symlink_metadata(NOTE_DIR) else {
        return removed;
    };
    if !m.is_dir() || m.uid() != 0 || m.mode() & 0o022 != 0 {
        return removed;
    }
    let root = Sysroot::live();
    let mounted = root.mountinfo().map(|(m, _)| m).unwrap_or_default();
    for e in std::fs::read_dir(NOTE_DIR).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(index) = name
            .strip_prefix("zram")
            .and_then(|i| i.parse::<u32>().ok())
        else {
            continue;
        };
        let Some((owner, ns, label)) = std::fs::read_to_string(e.path())
            .ok()
            .and_then(|t| parse_note(&t))
        else {
            continue;
        };
        if owner == me || ns != my_ns || owner.alive(&root) {
            continue;
        }
        let dev = PathBuf::from(format!("/dev/{name}"));
        if !sys_block(&root, &name, "disksize").exists() {
            let _ = std::fs::remove_file(e.path());
            continue;
        }
        match ext_label(&dev) {
            Some(l) if l == label => {}
            None => {}
            Some(_) => {
                let _ = std::fs::remove_file(e.path());
                continue;
            }
        }
        // Mounted: its files are in use (a persist enable killed after its
        // mount: the rerun takes it over); removing it is not ours to do,
        // and the kernel would refuse anyway.
        if mounted.iter().any(|m| m.source == dev.to_string_lossy()) {
            continue;
        }
        if hot_remove(index).is_ok() {
            removed.push(name);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mm_stat_parses_and_gives_the_ratio_of_data_to_ram() {
        let m = MmStat::parse(
            "  8192000  2048000  2500000        0  2600000      10      0      3     3\n",
        )
        .unwrap();
        assert_eq!(m.orig_data_bytes, 8_192_000);
        assert_eq!(m.compr_data_bytes, 2_048_000);
        assert_eq!(m.mem_used_total_bytes, 2_500_000);
        assert_eq!(m.same_pages, 10);
        assert_eq!(m.huge_pages, Some(3));
        assert!((m.ratio().unwrap() - 3.2768).abs() < 1e-9);
        let old = MmStat::parse("1 2 3 4 5 6 7").unwrap();
        assert_eq!(old.huge_pages, None);
        assert_eq!(MmStat::parse("0 0 0 0 0 0 0").unwrap().ratio(), None);
        assert_eq!(MmStat::parse("1 2 3"), None);
        assert_eq!(MmStat::parse("1 2 x 4 5 6 7"), None);
    }

    #[test]
    fn algorithms_name_the_bracketed_one_in_use() {
        let (all, cur) = parse_algorithms("lzo [lzo-rle] lz4 \n");
        assert_eq!(all, ["lzo", "lzo-rle", "lz4"]);
        assert_eq!(cur.as_deref(), Some("lzo-rle"));
        assert_eq!(parse_algorithms("").1, None);
    }

    #[test]
    fn notes_name_their_maker() {
        let o = Owner {
            pid: 42,
            starttime: 7,
        };
        let t = note_text(&o, 4026531836, "tmpfsctl-bench");
        assert_eq!(
            parse_note(&t),
            Some((o, 4026531836, "tmpfsctl-bench".into()))
        );
        assert_eq!(parse_note("42 7 1"), None);
        assert_eq!(parse_note("x 7 1 l"), None);
    }

    #[test]
    fn devices_and_features_read_from_a_sysroot() {
        let d = tempfile::tempdir().unwrap();
        let w = |p: &str, t: &str| {
            let f = d.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        };
        w("sys/class/zram-control/hot_add", "");
        w("sys/block/zram0/comp_algorithm", "lzo [lzo-rle] lz4\n");
        w("sys/block/zram0/disksize", "4294967296\n");
        w(
            "sys/block/zram0/mm_stat",
            "4096000 1024000 1200000 0 1300000 5 0 0 0\n",
        );
        w("sys/block/zram0/writeback", "");
        w("sys/block/zram1/comp_algorithm", "[lz4] zstd\n");
        w("sys/block/zram1/disksize", "1048576\n");
        w("sys/block/zram1/mm_stat", "0 0 0 0 0 0 0 0 0\n");
        w("sys/block/vda/disksize", "");
        w(
            "proc/swaps",
            "Filename Type Size Used Priority\n/dev/zram0 partition 4194300 0 100\n",
        );
        w(
            "proc/self/mountinfo",
            "30 1 252:1 / /mnt/z rw - ext4 /dev/zram1 rw,discard\n",
        );
        let root = Sysroot::new(d.path());
        let f = features(&root);
        assert!(f.available && f.writeback && !f.recompress && !f.algorithm_params);
        assert_eq!(f.algorithms, ["lzo", "lzo-rle", "lz4"]);
        let devs = devices(&root);
        assert_eq!(devs.len(), 2);
        assert_eq!(devs[0].name, "zram0");
        assert_eq!(devs[0].uses, [Use::Swap]);
        assert_eq!(devs[0].algorithm.as_deref(), Some("lzo-rle"));
        assert!((devs[0].ratio.unwrap() - 4096000.0 / 1200000.0).abs() < 1e-9);
        assert_eq!(devs[1].disksize_bytes, 1 << 20);
        assert_eq!(
            devs[1].uses,
            [Use::Mount {
                mountpoint: "/mnt/z".into(),
                fstype: "ext4".into()
            }]
        );
        assert_eq!(devs[1].ratio, None);
    }
}
