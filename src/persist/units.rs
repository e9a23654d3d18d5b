//! systemd units for a persisted directory, generated as text:
//! * `tmpfsctl-persist-NAME.service`: restores DIR from the store early at
//!   boot (before local-fs.target, so before any service can use DIR, and
//!   before the units named with `--before`) and, through ExecStop, syncs it
//!   at shutdown after the services that use it have stopped (stop order is
//!   the reverse of start order). It is ordered after DIR's own mount unit,
//!   so at shutdown its sync runs before systemd unmounts the tmpfs: without
//!   that order both stop at once and on some boots the tmpfs is gone before
//!   the sync reads it.
//! * A DIR holding /var/log/journal: the restore runs before journald moves
//!   its journal there (systemd-journal-flush), and at shutdown journald is
//!   told to stop writing there (`journalctl --relinquish-var`) before the
//!   last sync, so every stored journal file is closed, not torn. The timer's
//!   sync asks journald to write its files out first (`--sync`).
//! * `tmpfsctl-persist-sync-NAME.timer` + `.service`: a sync every interval;
//!   Requisite= on the restore unit, so a DIR whose restore failed is never
//!   synced over the good generations.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::sys::atomic::AtomicWrite;
use crate::sys::{statfs, systemd};

#[derive(Debug, Clone)]
pub struct UnitSpec {
    pub dir: PathBuf,
    pub store: PathBuf,
    pub interval_s: u64,
    pub bin: PathBuf,
    /// Passed on to the commands when not the default registry.
    pub registry: Option<PathBuf>,
    /// The tmpfs comes from an fstab line: order after its mount unit.
    pub fstab_mount: bool,
    /// Units that use DIR early at boot and must start after the restore.
    pub before: Vec<String>,
}

/// A unit name `--before` accepts: systemd's characters and a unit type.
pub fn check_unit_name(u: &str) -> Result<()> {
    const TYPES: [&str; 11] = [
        ".service",
        ".socket",
        ".target",
        ".mount",
        ".automount",
        ".timer",
        ".path",
        ".swap",
        ".slice",
        ".scope",
        ".device",
    ];
    let ok_chars = !u.is_empty()
        && u.len() <= 255
        && u.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b":-_.\\@".contains(&b));
    if !ok_chars || !TYPES.iter().any(|t| u.len() > t.len() && u.ends_with(t)) {
        bail!(
            "--before {}: not a systemd unit name; give one like `myapp.service` (see `systemctl list-units`)",
            crate::term::safe(u)
        );
    }
    Ok(())
}

/// DIR is /var/log/journal or holds it: journald writes there.
fn holds_journal(dir: &Path) -> bool {
    Path::new("/var/log/journal").starts_with(dir)
}

/// The escaped name systemd would give DIR (`/srv/my cache` -> `srv-my\x20cache`).
pub fn escaped(dir: &Path) -> String {
    let m = systemd::mount_unit_name(dir);
    m.strip_suffix(".mount").unwrap_or(&m).to_string()
}

pub fn names(dir: &Path) -> [String; 3] {
    let e = escaped(dir);
    [
        format!("tmpfsctl-persist-{e}.service"),
        format!("tmpfsctl-persist-sync-{e}.service"),
        format!("tmpfsctl-persist-sync-{e}.timer"),
    ]
}

/// One argument of an Exec line, quoted for systemd: `%` doubled, `"` and
/// `\` escaped, bytes outside printable ASCII as `\xNN`.
fn quote(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::from("\"");
    for &b in p.as_os_str().as_bytes() {
        match b {
            b'%' => s.push_str("%%"),
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'$' => s.push_str("$$"),
            0x21..=0x7e | b' ' => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s.push('"');
    s
}

fn command(spec: &UnitSpec, verb: &str) -> String {
    let mut c = format!(
        "{} persist {verb} {} --store {}",
        quote(&spec.bin),
        quote(&spec.dir),
        quote(&spec.store)
    );
    if let Some(r) = &spec.registry {
        c.push_str(&format!(" --registry {}", quote(r)));
    }
    c
}

/// The three unit files: (name, text).
pub fn render(spec: &UnitSpec) -> [(String, String); 3] {
    let [main, sync, timer] = names(&spec.dir);
    let shown = crate::term::safe_path(&spec.dir).replace('%', "%%");
    let head = "# Written by `tmpfsctl persist enable`; `tmpfsctl persist disable` removes it.\n";
    // With an fstab line DIR's tmpfs is a mount unit systemd generates at
    // boot: restore after it (RequiresMountsFor also names it when it does
    // not exist yet, so the unit verifies before the next daemon-reload).
    let mount_dep = if spec.fstab_mount {
        format!("RequiresMountsFor={}\n", quote(&spec.dir))
    } else {
        String::new()
    };
    // DIR's mount unit appears when the restore mounts the tmpfs (or comes
    // from fstab): ordered after it, this unit stops before it is unmounted.
    let dir_mount = systemd::mount_unit_name(&spec.dir);
    let journal = holds_journal(&spec.dir);
    let mut before = vec!["local-fs.target".to_string()];
    if journal {
        before.push("systemd-journal-flush.service".into());
    }
    before.extend(spec.before.iter().cloned());
    before.push("shutdown.target".into());
    let relinquish = if journal {
        "ExecStop=-journalctl --relinquish-var\n"
    } else {
        ""
    };
    let main_text = format!(
        "{head}[Unit]\n\
Description=tmpfsctl persist: {shown} in RAM, restored at boot and synced at shutdown\n\
DefaultDependencies=no\n\
RequiresMountsFor={store}\n\
{mount_dep}After=local-fs-pre.target {dir_mount}\n\
Before={before}\n\
Conflicts=shutdown.target\n\n\
[Service]\n\
Type=oneshot\n\
RemainAfterExit=yes\n\
ExecStart={restore}\n\
{relinquish}ExecStop={syncc}\n\
TimeoutStopSec=30min\n\n\
[Install]\n\
WantedBy=local-fs.target\n",
        store = quote(&spec.store),
        before = before.join(" "),
        restore = command(spec, "restore"),
        syncc = command(spec, "sync"),
    );
    let sync_text = format!(
        "{head}[Unit]\n\
Description=tmpfsctl persist: sync {shown} to its store\n\
Requisite={main}\n\
After={main}\n\n\
[Service]\n\
Type=oneshot\n\
{flush}ExecStart={syncc}\n",
        flush = if journal {
            "ExecStartPre=-journalctl --sync\n"
        } else {
            ""
        },
        syncc = command(spec, "sync"),
    );
    let timer_text = format!(
        "{head}[Unit]\n\
Description=tmpfsctl persist: sync {shown} every {i}s\n\n\
[Timer]\n\
OnBootSec={i}s\n\
OnUnitActiveSec={i}s\n\
AccuracySec=1s\n\
Unit={sync}\n\n\
[Install]\n\
WantedBy=timers.target\n",
        i = spec.interval_s.max(1),
    );
    [(main, main_text), (sync, sync_text), (timer, timer_text)]
}

/// Where the package installs the binary.
pub const PACKAGED_BIN: &str = "/usr/bin/tmpfsctl";
/// dpkg's list of the package's files: present while the package is installed.
const PACKAGE_LIST: &str = "/var/lib/dpkg/info/tmpfsctl.list";

/// The binary the units run as root at boot, every interval and at
/// shutdown: the package's when it is installed, else the running one, and
/// only if nobody but root can change it and it outlives a reboot and a
/// `cargo clean` (a build tree, /tmp or a user's copy would either vanish,
/// losing the shutdown sync and the boot restore, or run as root whatever
/// its owner puts there). Refused with the fix otherwise.
pub fn unit_binary() -> Result<PathBuf> {
    let exe = if Path::new(PACKAGE_LIST).exists() {
        PathBuf::from(PACKAGED_BIN)
    } else {
        std::env::current_exe().context("cannot tell where tmpfsctl is installed")?
    };
    if let Some(why) = binary_problem(&exe) {
        bail!(
            "refusing to write units that run {} as root: {why}. A unit needs a binary only root \
             can change that stays where it is: install the package (its binary is {PACKAGED_BIN}), \
             or `sudo install -m755 {} /usr/local/bin/tmpfsctl` and run enable with that one; \
             `--boot none` writes no units (nothing was changed)",
            crate::term::safe_path(&exe),
            crate::term::shell_path(&exe)
        );
    }
    Ok(exe)
}

/// Directories whose contents go at a reboot or at any user's will.
const SCRATCH: &[&str] = &["/tmp", "/var/tmp", "/dev/shm", "/run"];

/// Why root must not run `bin` from a unit, if it must not: it is gone or
/// not a regular executable file; it or a directory above it belongs to
/// another user or is group/other-writable (sticky or not: a binary's
/// directory needs no sharing); it lies in a scratch directory, on a RAM
/// file system or in a build tree (a directory above it holds `Cargo.toml`,
/// `.git` or Cargo's `CACHEDIR.TAG`).
pub fn binary_problem(bin: &Path) -> Option<String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !bin.is_absolute() {
        return Some(format!("{} is not an absolute path", bin.display()));
    }
    let real = match std::fs::canonicalize(bin) {
        Ok(r) => r,
        Err(e) => return Some(format!("{} cannot be found ({e})", bin.display())),
    };
    for p in [bin, real.as_path()] {
        if let Some(s) = SCRATCH.iter().find(|s| p.starts_with(s)) {
            return Some(format!(
                "{} is under {s}, which is emptied at boot or open to every user",
                p.display()
            ));
        }
        for a in p.ancestors().skip(1) {
            for mark in ["Cargo.toml", ".git", "CACHEDIR.TAG"] {
                if a.join(mark).exists() {
                    return Some(format!(
                        "{} is in a build tree ({} holds {mark}): `cargo clean` or a rebuild \
                         replaces or removes it",
                        p.display(),
                        a.display()
                    ));
                }
            }
        }
        // The file and every directory above it, as named (symbolic links
        // included: whoever owns the directory holding a link can repoint it).
        for a in p.ancestors() {
            let Ok(m) = std::fs::symlink_metadata(a) else {
                return Some(format!("{} cannot be read", a.display()));
            };
            if m.uid() != 0 {
                return Some(format!(
                    "{} belongs to uid {}, who can change what runs",
                    a.display(),
                    m.uid()
                ));
            }
            let mode = m.permissions().mode() & 0o7777;
            if !m.file_type().is_symlink() && mode & 0o022 != 0 {
                return Some(format!(
                    "{} is writable by {} (mode {mode:o})",
                    a.display(),
                    if mode & 0o002 != 0 {
                        "everyone"
                    } else {
                        "its group"
                    }
                ));
            }
        }
    }
    let m = std::fs::metadata(&real).ok()?;
    if !m.is_file() || m.permissions().mode() & 0o100 == 0 {
        return Some(format!("{} is not an executable file", real.display()));
    }
    if rustix::fs::statfs(&real).is_ok_and(|s| statfs::is_ram_fs_type(s.f_type as u64)) {
        return Some(format!(
            "{} is on a RAM file system, gone at the next boot",
            real.display()
        ));
    }
    None
}

/// The binary the restore unit written for DIR in `unit_dir` runs, if it
/// can be read back (the first word of its ExecStart, unquoted).
pub fn unit_bin(unit_dir: &Path, dir: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let [main, _, _] = names(dir);
    let text = std::fs::read_to_string(unit_dir.join(main)).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("ExecStart="))?;
    let mut b = line.strip_prefix('"')?.bytes();
    let mut out = Vec::new();
    loop {
        match b.next()? {
            b'"' => break,
            b'\\' => match b.next()? {
                b'x' => {
                    let h = [b.next()?, b.next()?];
                    out.push(u8::from_str_radix(std::str::from_utf8(&h).ok()?, 16).ok()?);
                }
                c => out.push(c),
            },
            // `%%` and `$$` each stand for one.
            c @ (b'%' | b'$') => {
                (b.next()? == c).then_some(())?;
                out.push(c);
            }
            c => out.push(c),
        }
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `systemd-analyze verify` on the units, written to a private temp dir.
/// Ok(false) when systemd-analyze is not installed (said on stderr).
pub fn verify(units: &[(String, String)]) -> Result<bool> {
    if !have("systemd-analyze") {
        crate::command::note("systemd-analyze not found; units not verified");
        return Ok(false);
    }
    let t = tempfile::Builder::new()
        .prefix("tmpfsctl-verify-")
        .tempdir()?;
    let mut paths = Vec::new();
    for (n, text) in units {
        let p = t.path().join(n);
        std::fs::write(&p, text)?;
        paths.push(p);
    }
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .args(&paths)
        .output()
        .context("cannot run systemd-analyze")?;
    let err = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = err
        .lines()
        .filter(|l| units.iter().any(|(n, _)| l.contains(n.as_str())))
        .collect();
    if !out.status.success() || !ours.is_empty() {
        bail!("`systemd-analyze verify` rejects the generated units:\n{err}");
    }
    Ok(true)
}

/// Units in `unit_dir` are loaded and started now: it is systemd's own
/// directory and systemd runs this machine.
pub(crate) fn systemd_running(unit_dir: &Path) -> bool {
    unit_dir == Path::new("/etc/systemd/system") && Path::new("/run/systemd/system").is_dir()
}

/// Write the units into `unit_dir`, enable them (the `.wants/` links
/// `systemctl enable` would make) and, on a running systemd, start them: the
/// restore unit must be active for its ExecStop to sync at shutdown.
pub fn install(unit_dir: &Path, units: &[(String, String)]) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (n, text) in units {
        let p = unit_dir.join(n);
        AtomicWrite::report("unit").write(&p, text.as_bytes())?;
        written.push(p);
    }
    let [main, _, timer] = [&units[0].0, &units[1].0, &units[2].0];
    // The .wants directories are reached through --unit-dir's descriptor
    // and never through a symlink planted in their place: root writes in
    // them, so they must be the ones systemd reads.
    use rustix::fs::{AtFlags, Mode, OFlags};
    let ud = rustix::fs::open(
        unit_dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("--unit-dir {}", crate::term::safe_path(unit_dir)))?;
    for (target, unit) in [
        ("local-fs.target.wants", main),
        ("timers.target.wants", timer),
    ] {
        let d = unit_dir.join(target);
        match rustix::fs::mkdirat(&ud, target, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e).with_context(|| format!("mkdir {}", d.display())),
        }
        let wants = rustix::fs::openat(
            &ud,
            target,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            anyhow::anyhow!(
                "{} is not a directory ({e}: a symlink or another file in its place); \
                 remove it and run enable again",
                crate::term::safe_path(&d)
            )
        })?;
        let l = d.join(unit);
        let _ = rustix::fs::unlinkat(&wants, unit.as_str(), AtFlags::empty());
        rustix::fs::symlinkat(unit_dir.join(unit), &wants, unit.as_str())
            .with_context(|| format!("enabling {unit}"))?;
        written.push(l);
    }
    if systemd_running(unit_dir) {
        systemctl(&["daemon-reload"])?;
        systemctl(&["start", main, timer])?;
    }
    Ok(written)
}

/// Stop (on a running systemd) and remove the units and their links.
pub fn remove(unit_dir: &Path, dir: &Path) -> Result<Vec<PathBuf>> {
    let [main, sync, timer] = names(dir);
    if systemd_running(unit_dir) {
        // The restore unit's ExecStop would sync; disable has just synced.
        let _ = systemctl(&["stop", &timer, &sync]);
        let _ = Command::new("systemctl")
            .args(["kill", "--kill-whom=all", &main])
            .output();
    }
    let mut removed = Vec::new();
    for p in [
        unit_dir.join("local-fs.target.wants").join(&main),
        unit_dir.join("timers.target.wants").join(&timer),
        unit_dir.join(&main),
        unit_dir.join(&sync),
        unit_dir.join(&timer),
    ] {
        if std::fs::symlink_metadata(&p).is_ok() {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
            removed.push(p);
        }
    }
    if systemd_running(unit_dir) {
        let _ = systemctl(&["daemon-reload"]);
    }
    Ok(removed)
}

fn systemctl(args: &[&str]) -> Result<()> {
    let out = Command::new("systemctl")
        .args(args)
        .output()
        .context("cannot run systemctl")?;
    if !out.status.success() {
        bail!(
            "systemctl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// The timer's next run (Unix seconds), from a running systemd.
pub fn next_run_unix_s(dir: &Path) -> Option<u64> {
    let [_, _, timer] = names(dir);
    let out = Command::new("systemctl")
        .args([
            "show",
            "-P",
            "NextElapseUSecRealtime",
            "--timestamp=unix",
            &timer,
        ])
        .output()
        .ok()?;
    let t = String::from_utf8_lossy(&out.stdout);
    t.trim().strip_prefix('@')?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_name_the_dir_quoted_and_order_restore_before_local_fs() {
        let spec = UnitSpec {
            dir: PathBuf::from("/srv/my cache%"),
            store: PathBuf::from("/var/lib/tmpfsctl/persist/x"),
            interval_s: 600,
            bin: PathBuf::from("/usr/bin/tmpfsctl"),
            registry: None,
            fstab_mount: false,
            before: vec!["early.service".into()],
        };
        let u = render(&spec);
        assert_eq!(u[0].0, "tmpfsctl-persist-srv-my\\x20cache\\x25.service");
        assert!(
            u[0].1
                .contains("ExecStart=\"/usr/bin/tmpfsctl\" persist restore \"/srv/my cache%%\"")
        );
        assert!(u[0].1.contains("Before=local-fs.target"));
        assert!(u[0].1.contains("ExecStop="));
        assert!(u[2].1.contains("OnUnitActiveSec=600s"));
        assert!(u[1].1.contains(&format!("Requisite={}", u[0].0)));
        // Stops before its tmpfs is unmounted; starts before the named unit.
        assert!(
            u[0].1
                .contains("After=local-fs-pre.target srv-my\\x20cache\\x25.mount\n")
        );
        assert!(
            u[0].1
                .contains("Before=local-fs.target early.service shutdown.target\n")
        );
        assert!(!u[0].1.contains("journalctl"));
    }

    #[test]
    fn a_dir_holding_the_journal_relinquishes_it_before_the_shutdown_sync() {
        let spec = UnitSpec {
            dir: PathBuf::from("/var/log"),
            store: PathBuf::from("/var/lib/tmpfsctl/persist/var-log"),
            interval_s: 600,
            bin: PathBuf::from("/usr/bin/tmpfsctl"),
            registry: None,
            fstab_mount: false,
            before: Vec::new(),
        };
        let u = render(&spec);
        let main = &u[0].1;
        let relinquish = main.find("ExecStop=-journalctl --relinquish-var").unwrap();
        assert!(
            relinquish
                < main
                    .find("ExecStop=\"/usr/bin/tmpfsctl\" persist sync")
                    .unwrap()
        );
        assert!(
            main.contains("Before=local-fs.target systemd-journal-flush.service shutdown.target")
        );
        assert!(u[1].1.contains("ExecStartPre=-journalctl --sync\n"));
    }

    #[test]
    fn the_binary_named_in_exec_start_reads_back() {
        let t = tempfile::tempdir().unwrap();
        let spec = UnitSpec {
            dir: PathBuf::from("/srv/x"),
            store: PathBuf::from("/var/lib/tmpfsctl/persist/x"),
            interval_s: 600,
            bin: PathBuf::from("/opt/my tools/100%/\"$x\\/tmpfs\u{e9}ctl"),
            registry: None,
            fstab_mount: false,
            before: Vec::new(),
        };
        for (n, text) in render(&spec) {
            std::fs::write(t.path().join(n), text).unwrap();
        }
        assert_eq!(unit_bin(t.path(), &spec.dir), Some(spec.bin.clone()));
        assert_eq!(unit_bin(t.path(), Path::new("/srv/other")), None);
    }

    #[test]
    fn a_binary_in_a_build_tree_or_scratch_dir_or_owned_by_a_user_is_refused() {
        // This test binary itself lives in Cargo's target directory, which
        // may itself be below /tmp (CI clones anywhere): either refusal is right.
        let me = std::env::current_exe().unwrap();
        let why = binary_problem(&me).unwrap();
        assert!(
            why.contains("build tree")
                || why.contains("belongs to uid")
                || why.contains("under /tmp"),
            "{why}"
        );
        assert!(binary_problem(Path::new("/nonexistent/tmpfsctl")).is_some());
        assert!(binary_problem(Path::new("relative/tmpfsctl")).is_some());
        let t = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
        let f = t.path().join("tmpfsctl");
        std::fs::copy("/bin/true", &f).unwrap();
        let why = binary_problem(&f).unwrap();
        assert!(why.contains("under /var/tmp"), "{why}");
    }

    #[test]
    fn before_takes_unit_names_only() {
        assert!(check_unit_name("myapp.service").is_ok());
        assert!(check_unit_name("getty@tty1.service").is_ok());
        for bad in ["", "myapp", "my app.service", "a\nb.service", ".service"] {
            assert!(check_unit_name(bad).is_err(), "{bad:?}");
        }
    }
}
