//! Booting the Debian 13 guest: the cached image (scripts/boot-image), the
//! package under test (scripts/package), and two ways to run a scenario
//! across boots: systemd-nspawn (about a second a boot; its /tmp is nspawn's
//! own) and QEMU under TCG (about 20 s a boot; genuine tmp.mount, a real
//! kernel, and a power cord that can be pulled).
//!
//! A scenario is a shell script run by `boot-scenario.service` at every boot
//! from /probe: a bind mount under nspawn, a second disk under QEMU. The
//! prelude counts boots in /probe/boots, installs the package with `dpkg -i`
//! at the first, and gives the script `reboot_now`, `power_off` and `plug`.
//! What the guest saw is written to /probe/out/ and asserted on the host.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Why a guest cannot be booted on this machine, if it cannot.
pub fn cannot_boot(qemu: bool) -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("needs root to build and boot a guest (CI runs as root)".into());
    }
    let mut tools = vec!["systemd-nspawn", "debootstrap", "mkfs.ext4"];
    if qemu {
        tools.extend(["qemu-system-x86_64", "qemu-img", "debugfs"]);
    }
    // A root shell's PATH may lack the sbin directories (su without -l,
    // sudo's secure_path elsewhere): look there too.
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from));
    for t in tools {
        if !dirs.iter().any(|d| d.join(t).is_file()) {
            return Some(format!("{t} is not installed (scripts/setup installs it)"));
        }
    }
    None
}

/// Skip the test (see `skip!`) where the machine cannot boot a guest.
#[macro_export]
macro_rules! require_guest {
    ($qemu:expr) => {
        if let Some(why) = $crate::guest::cannot_boot($qemu) {
            $crate::skip!("{why}");
        }
    };
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run_script(name: &str, args: &[&str]) -> PathBuf {
    let out = Command::new(repo().join("scripts").join(name))
        .args(args)
        .current_dir(repo())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run scripts/{name}: {e}"));
    assert!(
        out.status.success(),
        "scripts/{name} failed ({})",
        out.status
    );
    let s = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(s.lines().last().unwrap_or_default().trim())
}

/// The cached guest image (built on first use; several minutes).
pub fn image() -> &'static Path {
    static IMAGE: OnceLock<PathBuf> = OnceLock::new();
    IMAGE.get_or_init(|| run_script("boot-image", &[]))
}

/// The .deb of the binary under test (packaged once per test run), or the
/// one TMPFSCTL_BOOT_DEB names (to run the scenarios against another build).
pub fn deb() -> &'static Path {
    static DEB: OnceLock<PathBuf> = OnceLock::new();
    DEB.get_or_init(|| {
        if let Some(d) = std::env::var_os("TMPFSCTL_BOOT_DEB") {
            return PathBuf::from(d);
        }
        // The test binary's tmpfsctl is the release build `scripts/package` packs.
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_tmpfsctl"));
        let target = bin
            .parent()
            .and_then(Path::parent)
            .expect("target dir of the tmpfsctl binary");
        let out = Command::new(repo().join("scripts/package"))
            .arg("--no-build")
            .env("CARGO_TARGET_DIR", target)
            .current_dir(repo())
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .expect("run scripts/package");
        assert!(out.status.success(), "scripts/package failed");
        let s = String::from_utf8_lossy(&out.stdout);
        PathBuf::from(s.lines().last().unwrap_or_default().trim())
    })
}

/// Guests run one at a time: each QEMU under TCG wants both cores, and the
/// shared image is built once.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

const PRELUDE: &str = r#"#!/bin/sh
# Boot-test prelude: boot counter, package install, reboot/poweroff/plug.
P=/probe
O=$P/out
mkdir -p $O
n=$(( $(cat $P/boots 2>/dev/null || echo 0) + 1 ))
echo $n > $P/boots
say() { echo "$*" >> $O/log; }
save() { sync -f $P/boots; }
reboot_now() { save; systemctl --no-block reboot; exit 0; }
power_off() { save; systemctl --no-block poweroff; exit 0; }
# The host kills QEMU (kill -9) when it reads this on the console.
plug() { save; echo TMPFSCTL-PULL-THE-PLUG > /dev/console; sleep 600; }
if [ "$n" = 1 ]; then
  dpkg -i $P/tmpfsctl.deb > $O/dpkg.log 2>&1 || { say "dpkg -i failed"; power_off; }
fi
say "boot $n"
"#;

/// A guest run's scratch on the host: the probe directory (the guest's
/// /probe), and for nspawn the overlay whose upper layer is the guest's disk.
pub struct Run {
    pub scratch: PathBuf,
    /// What the guest wrote to /probe/out.
    pub out: PathBuf,
    /// nspawn: the guest's root as its disk holds it after power-off.
    pub root: PathBuf,
    pub boots: u32,
    pub console: PathBuf,
    mounted: bool,
}

impl Run {
    fn new(name: &str, script: &str) -> Run {
        let scratch = tempfile::Builder::new()
            .prefix(&format!("tmpfsctl-boot-{name}-"))
            .tempdir_in("/var/tmp")
            .expect("scratch dir")
            .keep();
        let probe = scratch.join("probe");
        std::fs::create_dir_all(probe.join("out")).unwrap();
        std::fs::write(probe.join("run"), format!("{PRELUDE}\n{script}\n")).unwrap();
        std::fs::copy(deb(), probe.join("tmpfsctl.deb")).unwrap();
        Run {
            out: probe.join("out"),
            root: scratch.join("root"),
            console: scratch.join("console.log"),
            scratch,
            boots: 0,
            mounted: false,
        }
    }

    /// A file the guest wrote to /probe/out. Missing is a failure: a scenario
    /// that never got as far as writing it must not read as an empty answer.
    pub fn read(&self, name: &str) -> String {
        self.try_read(name)
            .unwrap_or_else(|| panic!("the guest wrote no /probe/out/{name}\n{}", self.context()))
    }

    /// A file the guest may or may not have written to /probe/out.
    pub fn try_read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.out.join(name)).ok()
    }

    /// The console and the guest's log, for assertion messages.
    pub fn context(&self) -> String {
        let c = std::fs::read_to_string(&self.console).unwrap_or_default();
        let tail: Vec<&str> = c.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!(
            "guest log:\n{}\nconsole tail:\n{}",
            self.try_read("log").unwrap_or_else(|| "(no log)".into()),
            tail.join("\n")
        )
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg("-l").arg(&self.root).status();
        }
        if std::env::var_os("TMPFSCTL_BOOT_KEEP").is_none() && !std::thread::panicking() {
            let _ = Command::new("rm")
                .args(["-rf", "--one-file-system"])
                .arg(&self.scratch)
                .status();
        } else {
            eprintln!("boot test scratch kept in {}", self.scratch.display());
        }
    }
}

/// Wait for `child` to exit, at most `limit`; kills it (by its pid) past that.
fn wait_for(child: &mut Child, limit: Duration, what: &str, run: &Run) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("wait") {
            return st.code().unwrap_or(-1);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish in {limit:?}\n{}", run.context());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn console_file(run: &Run) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&run.console)
        .unwrap()
}

/// Boot the guest under systemd-nspawn until the script powers it off; a
/// reboot inside makes nspawn exit 133 and the loop boots it again. The
/// overlay's upper layer persists across boots: it is the guest's disk.
pub fn nspawn(name: &str, script: &str, max_boots: u32) -> Run {
    let img = image();
    let mut run = Run::new(name, script);
    let (upper, work) = (run.scratch.join("upper"), run.scratch.join("work"));
    for d in [&upper, &work, &run.root] {
        std::fs::create_dir_all(d).unwrap();
    }
    let opts = format!(
        "lowerdir={},upperdir={},workdir={}",
        img.join("rootfs").display(),
        upper.display(),
        work.display()
    );
    let st = Command::new("mount")
        .args(["-t", "overlay", "overlay", "-o", &opts])
        .arg(&run.root)
        .status()
        .unwrap();
    assert!(st.success(), "mounting the guest's overlay failed");
    run.mounted = true;
    loop {
        run.boots += 1;
        assert!(
            run.boots <= max_boots,
            "guest booted more than {max_boots} times\n{}",
            run.context()
        );
        let mut child = Command::new("systemd-nspawn")
            .env("SYSTEMD_NSPAWN_UNIFIED_HIERARCHY", "1")
            .args(["-q", "-b", "--register=no", "--keep-unit"])
            .arg(format!("--machine=tmpfsctl-boot-{name}"))
            .arg("-D")
            .arg(&run.root)
            .arg(format!(
                "--bind={}:/probe",
                run.scratch.join("probe").display()
            ))
            .stdin(Stdio::null())
            .stdout(console_file(&run))
            .stderr(console_file(&run))
            .spawn()
            .expect("start systemd-nspawn");
        match wait_for(&mut child, Duration::from_secs(180), "an nspawn boot", &run) {
            133 => continue,
            0 => break,
            c => panic!("systemd-nspawn exited {c}\n{}", run.context()),
        }
    }
    run
}

/// Boot the guest under QEMU (TCG) until the script powers it off. The
/// guest reboots inside QEMU; when it calls `plug`, QEMU is killed with
/// SIGKILL (its disks are cache=unsafe: what the guest did not flush is
/// lost, as at a power cut) and started again. Returns the probe disk's
/// content in `out`.
pub fn qemu(name: &str, script: &str, max_powerons: u32) -> Run {
    qemu_with(name, script, max_powerons, &Extra::default())
}

/// What a QEMU run adds to the plain guest: files copied into /probe, and
/// disks whose every write, flush and FUA QEMU logs (`blklogwrites`, in the
/// kernel's dm-log-writes format) to a log file beside the image.
#[derive(Default)]
pub struct Extra<'a> {
    /// (host file, name under /probe)
    pub files: Vec<(&'a Path, &'a str)>,
    pub logged: Vec<LoggedDisk<'a>>,
}

/// A raw disk image behind `blklogwrites`; `log` must exist, pre-sized (the
/// driver does not grow it).
pub struct LoggedDisk<'a> {
    pub image: &'a Path,
    pub log: &'a Path,
}

/// [`qemu`] with files in /probe and logged disks. Disks are found by label
/// in the guest: a logged disk (a `-blockdev`) enumerates before the
/// `-drive` ones, so /dev/vda is not the root.
pub fn qemu_with(name: &str, script: &str, max_powerons: u32, extra: &Extra<'_>) -> Run {
    let img = image();
    let mut run = Run::new(name, script);
    for (from, to) in &extra.files {
        std::fs::copy(from, run.scratch.join("probe").join(to)).unwrap();
    }
    let s = &run.scratch;
    let disk = s.join("root.qcow2");
    let probe_img = s.join("probe.img");
    let st = Command::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2", "-F", "raw", "-b"])
        .arg(img.join("root.ext4"))
        .arg(&disk)
        .status()
        .unwrap();
    assert!(st.success(), "qemu-img create failed");
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-L", "probe", "-d"])
        .arg(s.join("probe"))
        .arg(&probe_img)
        .arg("512M")
        .status()
        .unwrap();
    assert!(st.success(), "mkfs.ext4 of the probe disk failed");
    let mut powerons = 0;
    loop {
        powerons += 1;
        assert!(
            powerons <= max_powerons,
            "guest powered on more than {max_powerons} times\n{}",
            run.context()
        );
        // One vCPU: with two, TCG lost the race of the kernel patching its
        // own code (an int3 oops in enqueue_timer at boot, seen once).
        let mut child = Command::new("qemu-system-x86_64")
            .args(["-machine", "q35,accel=tcg", "-cpu", "max", "-smp", "1", "-m", "1536"])
            .args(["-nodefaults", "-display", "none", "-no-user-config"])
            .arg("-serial")
            .arg(format!("file:{}", s.join("serial.log").display()))
            .arg("-kernel")
            .arg(img.join("vmlinuz"))
            .arg("-initrd")
            .arg(img.join("initrd.img"))
            .args([
                "-append",
                // No device timeout on the probe disk: on a loaded host the
                // guest's 90 s pass before udev has run, and the boot
                // ended in emergency mode (seen at load 20).
                "root=LABEL=guestroot rw console=ttyS0 quiet systemd.mount-extra=LABEL=probe:/probe:ext4:x-systemd.device-timeout=0 systemd.show_status=1",
            ])
            .arg("-drive")
            .arg(format!(
                "file={},if=virtio,format=qcow2,cache=unsafe",
                disk.display()
            ))
            .arg("-drive")
            .arg(format!(
                "file={},if=virtio,format=raw,cache=unsafe",
                probe_img.display()
            ))
            .args(logged_args(&extra.logged))
            .stdin(Stdio::null())
            .stdout(console_file(&run))
            .stderr(console_file(&run))
            .spawn()
            .expect("start qemu-system-x86_64");
        let start = Instant::now();
        // 900 s; more by hand on a loaded machine (bench/crash-mutants.sh).
        let limit = Duration::from_secs(
            std::env::var("TMPFSCTL_GUEST_TIMEOUT_S")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(900),
        );
        let mut plugged = false;
        loop {
            if let Some(st) = child.try_wait().expect("wait") {
                assert!(st.success(), "qemu exited {st}\n{}", run.context());
                break;
            }
            let serial = std::fs::read(s.join("serial.log")).unwrap_or_default();
            if serial.windows(22).any(|w| w == b"TMPFSCTL-PULL-THE-PLUG") {
                // The power cut: no flush, no shutdown.
                let _ = child.kill();
                let _ = child.wait();
                plugged = true;
                break;
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                append_serial(&run);
                panic!(
                    "qemu guest did not finish in {} s\n{}",
                    limit.as_secs(),
                    run.context()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Keep only new serial output per power-on in the console log.
        append_serial(&run);
        if !plugged {
            break;
        }
    }
    run.boots = powerons;
    let back = run.scratch.join("from-disk");
    std::fs::create_dir_all(&back).unwrap();
    let o = Command::new("debugfs")
        .arg("-R")
        .arg(format!("rdump /out {}", back.display()))
        .arg(&probe_img)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    run.out = back.join("out");
    // debugfs exits 0 when the request inside -R fails: the prelude's log
    // (written at every boot) is the proof that /out came back.
    assert!(
        o.status.success() && run.out.join("log").is_file(),
        "debugfs rdump of the probe disk failed ({}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    run
}

/// `-blockdev` a file node for each image and its log, a `blklogwrites`
/// node over both (512-byte log sectors), and a virtio disk on it.
fn logged_args(disks: &[LoggedDisk<'_>]) -> Vec<String> {
    let mut a = Vec::new();
    for (i, d) in disks.iter().enumerate() {
        a.push("-blockdev".into());
        a.push(format!(
            "driver=file,filename={},node-name=limg{i}",
            d.image.display()
        ));
        a.push("-blockdev".into());
        a.push(format!(
            "driver=file,filename={},node-name=llog{i}",
            d.log.display()
        ));
        a.push("-blockdev".into());
        a.push(format!(
            "driver=blklogwrites,file=limg{i},log=llog{i},log-sector-size=512,node-name=logged{i}"
        ));
        // No write-zeroes (nor discard): blklogwrites logs a write-zeroes
        // as its header, then places the zeros wherever the log's end is
        // once that header is written, after entries that completed
        // meanwhile; a replay then reads another entry as the zeros. The
        // guest writes zeros as ordinary writes instead.
        a.push("-device".into());
        a.push(format!(
            "virtio-blk-pci,drive=logged{i},write-zeroes=off,discard=off"
        ));
    }
    a
}

fn append_serial(run: &Run) {
    let p = run.scratch.join("serial.log");
    if let Ok(b) = std::fs::read(&p) {
        use std::io::Write;
        let _ = console_file(run).write_all(&b);
        let _ = std::fs::remove_file(&p);
    }
}
