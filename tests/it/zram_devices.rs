//! The zram devices of this kernel as the zram tests see them (bench's
//! targets, persist on zram): listing them, the notes tmpfsctl keeps for the
//! ones it makes, and a guard that removes what a test made even when the
//! test fails. The guard removes a device only by its number and only while
//! its note and its file system both carry the label it was made for: never
//! the machine's own devices (zram0 here), never another test's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Where tmpfsctl notes each device it makes (`PID START PIDNS LABEL`, or
/// `persist LABEL` for a persisted directory's).
pub(crate) const NOTES: &str = "/run/tmpfsctl-zram";

/// Every zram device, by name.
pub(crate) fn zram_devices() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("zram"))
        .collect();
    v.sort();
    v
}

/// Every back end this kernel's zram offers, read from any zram device, or
/// from one made for the asking when there is none.
pub(crate) fn offered() -> Vec<String> {
    let text = zram_devices()
        .iter()
        .find_map(|d| std::fs::read_to_string(format!("/sys/block/{d}/comp_algorithm")).ok())
        .unwrap_or_else(|| {
            let n = std::fs::read_to_string("/sys/class/zram-control/hot_add")
                .expect("the test machines have zram built in or loaded");
            let t = std::fs::read_to_string(format!("/sys/block/zram{}/comp_algorithm", n.trim()))
                .unwrap();
            std::fs::write("/sys/class/zram-control/hot_remove", n.trim()).unwrap();
            t
        });
    text.split_whitespace()
        .map(|w| w.trim_matches(['[', ']']).to_string())
        .collect()
}

/// The algorithm to test with: lz4 where offered (this kernel and the Debian
/// guest both have it), else the first the kernel lists.
pub(crate) fn algorithm() -> String {
    let all = offered();
    if all.iter().any(|a| a == "lz4") {
        "lz4".into()
    } else {
        all[0].clone()
    }
}

/// A device's sequence number: each device the kernel makes gets a new one,
/// so a number handed out again (to a test running alongside) is told apart.
pub(crate) fn diskseq(dev: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/block/{dev}/diskseq")).ok()
}

/// The devices whose note names `pid` as their maker.
pub(crate) fn made_by(pid: u32) -> Vec<String> {
    notes()
        .into_iter()
        .filter(|(_, t)| t.split_whitespace().next() == Some(&pid.to_string()))
        .map(|(n, _)| n)
        .collect()
}

/// Every note: the device's name and the note's text.
fn notes() -> Vec<(String, String)> {
    std::fs::read_dir(NOTES)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let t = std::fs::read_to_string(e.path()).ok()?;
            n.starts_with("zram").then_some((n, t))
        })
        .collect()
}

/// The ext4 label persist gives the device of `dir`: `tmpfsctl-p` and six
/// hex digits of the FNV-1a hash of the path. Written here from its
/// definition, not taken from the crate, so a test also checks it.
pub(crate) fn persist_label(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in dir.as_os_str().as_bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    format!("tmpfsctl-p{:06x}", h & 0xff_ffff)
}

/// The label of the file system on `/dev/NAME` as blkid probes it (no
/// cache); None when it has none.
pub(crate) fn fs_label(name: &str) -> Option<String> {
    let o = Command::new("blkid")
        .args(["-p", "-s", "LABEL", "-o", "value"])
        .arg(format!("/dev/{name}"))
        .output()
        .ok()?;
    let l = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (!l.is_empty()).then_some(l)
}

/// Remove device `name`, retried while udev's probe holds it for a moment.
fn hot_remove(name: &str) -> bool {
    let index = name.trim_start_matches("zram");
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if std::fs::write("/sys/class/zram-control/hot_remove", index).is_ok() {
            return true;
        }
        if !Path::new(&format!("/sys/block/{name}")).exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Where `/dev/NAME` is mounted in this mount namespace.
fn mountpoints(name: &str) -> Vec<PathBuf> {
    let dev = format!("/dev/{name}");
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (a, b) = l.split_once(" - ")?;
            let at = a.split_whitespace().nth(4)?;
            (b.split_whitespace().nth(1) == Some(dev.as_str()))
                .then(|| PathBuf::from(at.replace("\\040", " ")))
        })
        .collect()
}

/// Removes, when dropped, every zram device persist made for `dir`: the
/// ones whose note carries `dir`'s label and whose file system carries it
/// too (or none yet), unmounted from `dir` first. Declare it after the
/// test's `World`, so that it runs before the World unmounts DIR lazily
/// (a device still mounted somewhere cannot be removed).
pub(crate) struct PersistDevices {
    dir: PathBuf,
}

impl PersistDevices {
    pub(crate) fn of(dir: &Path) -> PersistDevices {
        PersistDevices {
            dir: dir.to_path_buf(),
        }
    }
}

impl Drop for PersistDevices {
    fn drop(&mut self) {
        let label = persist_label(&self.dir);
        for (name, text) in notes() {
            if name == "zram0" || text.split_whitespace().last() != Some(label.as_str()) {
                continue;
            }
            if fs_label(&name).is_some_and(|l| l != label) {
                continue;
            }
            for m in mountpoints(&name) {
                if m != self.dir {
                    continue;
                }
                let _ = Command::new("umount").arg("-l").arg(&m).status();
            }
            if mountpoints(&name).is_empty() && hot_remove(&name) {
                let _ = std::fs::remove_file(Path::new(NOTES).join(&name));
            }
        }
    }
}

/// Removes, when dropped, every device whose note names process `pid` as
/// its maker (a bench run a test killed or that failed): by then `pid` is
/// gone, and its devices are no one else's.
pub(crate) struct MadeBy(pub(crate) u32);

impl Drop for MadeBy {
    fn drop(&mut self) {
        for name in made_by(self.0) {
            if name != "zram0" && mountpoints(&name).is_empty() && hot_remove(&name) {
                let _ = std::fs::remove_file(Path::new(NOTES).join(&name));
            }
        }
    }
}
