//! A descriptor the caller opened for tmpfsctl to write to (`fd:N`, as in
//! `tmpfsctl run --json fd:3 -- CMD 3>summary.json`): a stream, written in
//! place from wherever it stands, never replaced, never closed (it is the
//! caller's).

use std::os::fd::BorrowedFd;

use anyhow::{Result, bail};

/// Fail now unless descriptor `n` is open for writing. `what` is the option
/// that named it (`--export-json`), for the message. A descriptor above 2
/// is also marked close-on-exec: it was opened for tmpfsctl, and a command
/// tmpfsctl starts (`run`'s CMD) must not hold it open or write to it.
pub fn check_writable(what: &str, n: i32) -> Result<()> {
    if n == 0 {
        bail!(
            "{what} fd:0: descriptor 0 is standard input; give one opened for writing, e.g. fd:3 with `3>file`"
        );
    }
    // SAFETY: fcntl(F_GETFL) only reads the descriptor table; a number that
    // is not an open descriptor makes it fail with EBADF, which is the check.
    let flags = unsafe { libc::fcntl(n, libc::F_GETFL) };
    if flags < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EBADF) {
            bail!("{what} fd:{n}: descriptor {n} is not open; open it: `{n}>file`");
        }
        bail!("{what} fd:{n}: {e}; open it: `{n}>file`");
    }
    if flags & libc::O_PATH != 0 || flags & libc::O_ACCMODE == libc::O_RDONLY {
        bail!("{what} fd:{n}: descriptor {n} is not open for writing; open it: `{n}>file`");
    }
    if n > 2 {
        let fd = borrowed(n);
        let fdflags = rustix::io::fcntl_getfd(fd)?;
        rustix::io::fcntl_setfd(fd, fdflags | rustix::io::FdFlags::CLOEXEC)?;
    }
    Ok(())
}

/// (device, inode) of the regular file open as descriptor `n`, if it is one
/// (a pipe, terminal or device is not a file two writers would clobber).
pub fn file_identity(n: i32) -> Option<(u64, u64)> {
    // SAFETY: fcntl(F_GETFD) only reads the descriptor table; it fails with
    // EBADF when `n` is not open, and `n` is only borrowed once it is.
    if unsafe { libc::fcntl(n, libc::F_GETFD) } < 0 {
        return None;
    }
    let st = rustix::fs::fstat(borrowed(n)).ok()?;
    let is_file =
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile;
    is_file.then_some((st.st_dev, st.st_ino))
}

/// Write all of `data` to descriptor `n` (checked by [`check_writable`]).
pub fn write_all(what: &str, n: i32, data: &[u8]) -> Result<()> {
    let fd = borrowed(n);
    let mut rest = data;
    while !rest.is_empty() {
        match rustix::io::write(fd, rest) {
            Ok(0) => bail!("{what} fd:{n}: writing: nothing was written"),
            Ok(k) => rest = &rest[k..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => bail!("{what} fd:{n}: writing: {e}"),
        }
    }
    Ok(())
}

fn borrowed(n: i32) -> BorrowedFd<'static> {
    // SAFETY: only called for a descriptor found open (check_writable or
    // the fcntl in file_identity); tmpfsctl never closes a descriptor it
    // was handed, so it stays open for the rest of the process.
    unsafe { BorrowedFd::borrow_raw(n) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn open_writable_descriptors_pass_and_others_are_refused_with_the_fix() {
        let d = tempfile::tempdir().unwrap();
        let w = std::fs::File::create(d.path().join("w")).unwrap();
        check_writable("--x", w.as_raw_fd()).unwrap();
        write_all("--x", w.as_raw_fd(), b"abc").unwrap();
        assert_eq!(std::fs::read(d.path().join("w")).unwrap(), b"abc");
        let flags = rustix::io::fcntl_getfd(&w).unwrap();
        assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        let id = file_identity(w.as_raw_fd()).unwrap();
        let m = std::fs::metadata(d.path().join("w")).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(id, (m.dev(), m.ino()));

        let r = std::fs::File::open(d.path().join("w")).unwrap();
        let e = check_writable("--x", r.as_raw_fd())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not open for writing"), "{e}");
        let e = check_writable("--x", 987_654).unwrap_err().to_string();
        assert_eq!(
            e,
            "--x fd:987654: descriptor 987654 is not open; open it: `987654>file`"
        );
        assert!(file_identity(987_654).is_none());
        let e = check_writable("--x", 0).unwrap_err().to_string();
        assert!(e.contains("standard input"), "{e}");
    }
}
