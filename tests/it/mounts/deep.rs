//! A tree deeper than one path can name, made by an unprivileged user in a
//! shared (1777) directory: `apply` and `revert` carry it whole, under the
//! usual soft limit of 1024 open files, and refuse one deeper than they walk
//! before changing anything, naming it.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;

use super::*;
use crate::common::bin;

/// As uid 65534: `DIR/deep/a/a/…/f` (`levels` directories `a`), every
/// entry last written in 2020, so apply's verification compares them all
/// (an entry written during the copy is left to the catch-up instead).
fn make_deep(dir: &Path, levels: usize) {
    let st = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "perl",
            "-e",
        ])
        .arg(
            "my ($d, $n) = @ARGV; my $t = 1577836800; \
             chdir $d or die; mkdir 'deep' or die; chdir 'deep' or die; \
             for (1..$n) { mkdir 'a' or die; chdir 'a' or die } \
             open(my $f, '>', 'f') or die; print $f 'deep'; close $f; utime $t, $t, 'f' or die; \
             for (1..$n) { chdir '..' or die; utime $t, $t, 'a' or die } \
             chdir '..' or die; utime $t, $t, 'deep' or die",
        )
        .arg(dir)
        .arg(levels.to_string())
        .status()
        .unwrap();
    assert!(st.success(), "making the deep tree failed");
}

/// (content, owner uid, device) of `DIR/deep/a/…/f`, reached one level at a
/// time (its path is too long for one call).
fn read_deep(dir: &Path, levels: usize) -> (Vec<u8>, u32, u64) {
    use rustix::fs::{Mode, OFlags};
    let open = |at: &OwnedFd, name: &str, flags: OFlags| {
        rustix::fs::openat(at, name, flags | OFlags::NOFOLLOW, Mode::empty()).unwrap()
    };
    let dirf = OFlags::RDONLY | OFlags::DIRECTORY;
    let mut cur: OwnedFd = std::fs::File::open(dir).unwrap().into();
    cur = open(&cur, "deep", dirf);
    for _ in 0..levels {
        cur = open(&cur, "a", dirf);
    }
    let f = std::fs::File::from(open(&cur, "f", OFlags::RDONLY));
    let st = rustix::fs::fstat(f.as_fd()).unwrap();
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut &f, &mut data).unwrap();
    (data, st.st_uid, st.st_dev)
}

/// tmpfsctl with the soft open-files limit most shells and services start
/// with (1024), below the two descriptors per level a deep copy holds.
fn tmpfsctl_1024(args: &[&str]) -> Output {
    let mut c = bin();
    c.args(args);
    // SAFETY: setrlimit is async-signal-safe and touches no memory shared
    // with the parent.
    unsafe {
        c.pre_exec(|| {
            let mut l = rustix::process::getrlimit(rustix::process::Resource::Nofile);
            l.current = Some(1024);
            rustix::process::setrlimit(rustix::process::Resource::Nofile, l)?;
            Ok(())
        });
    }
    c.output().unwrap()
}

/// A shared directory, as /tmp is: its parent reachable by uid 65534.
fn shared_dir(t: &tempfile::TempDir) -> PathBuf {
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(dir.join("before"), b"b").unwrap();
    dir
}

#[test]
fn apply_and_revert_carry_a_file_2100_levels_deep_that_another_user_made() {
    require_root!();
    let t = scratch("mounts-deep");
    let dir = shared_dir(&t);
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"").unwrap();
    let _cleanup = Cleanup(dir.clone());
    make_deep(&dir, 2100);
    let disk_dev = read_deep(&dir, 2100).2;

    let o = tmpfsctl_1024(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--size",
        "64M",
        "--yes",
        "--json",
    ]);
    ok(&o);
    assert_eq!(findmnt_fstype(&dir).as_deref(), Some("tmpfs"));
    let (data, uid, dev) = read_deep(&dir, 2100);
    assert_eq!((data.as_slice(), uid), (&b"deep"[..], 65534));
    assert_ne!(dev, disk_dev, "read from the tmpfs");
    // deep, its 2100 levels and f were compared (DIR itself and `before`,
    // written less than a second before the copy, may be left to the
    // catch-up).
    let j = json(&o);
    assert!(
        j["verified_entries"].as_u64().is_some_and(|n| n >= 2102),
        "{j}"
    );

    std::fs::write(dir.join("during"), b"w").unwrap();
    let o = tmpfsctl_1024(&[
        "revert",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--keep-data",
        "--yes",
    ]);
    ok(&o);
    assert_eq!(findmnt_fstype(&dir), None, "DIR is on disk again");
    let (data, uid, dev) = read_deep(&dir, 2100);
    assert_eq!((data.as_slice(), uid, dev), (&b"deep"[..], 65534, disk_dev));
    assert_eq!(std::fs::read(dir.join("during")).unwrap(), b"w");
}

#[test]
fn a_directory_deeper_than_apply_walks_is_named_and_nothing_changes() {
    require_root!();
    let t = scratch("mounts-deeper");
    let dir = shared_dir(&t);
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"").unwrap();
    let _cleanup = Cleanup(dir.clone());
    make_deep(&dir, 4200);

    let o = tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--size",
        "64M",
        "--yes",
    ]);
    let all = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{all}");
    let err = all
        .lines()
        .find(|l| l.contains("error:"))
        .unwrap_or_else(|| panic!("no error line: {all}"));
    assert!(err.contains("levels below the top"), "{err}");
    assert!(err.contains("deep/a/a/a"), "names it: {err}");
    assert!(err.contains("nothing was changed"), "{err}");
    assert!(err.len() < 1000, "the path is shortened, not dumped: {err}");
    assert_eq!(findmnt_fstype(&dir), None, "nothing mounted");
    assert_eq!(std::fs::read(&fstab).unwrap(), b"", "fstab untouched");
    assert_eq!(read_deep(&dir, 4200).0, b"deep");
}
