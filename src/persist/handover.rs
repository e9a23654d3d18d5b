//! Writers in DIR when `persist enable` copies it: refused (as `apply`
//! refuses them), except journald, which enable hands over itself.

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::sys::unmount::holders_line;
use crate::sys::{Sysroot, procfd};
use crate::term::safe_path;

/// Whether systemd-journald is the process `pid` (its executable, which
/// only root can replace, not a name anyone can give a process).
fn is_journald(pid: u32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| {
        p.file_name().is_some_and(|n| n == "systemd-journald")
            && std::fs::metadata(&p).is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.uid() == 0 && m.mode() & 0o022 == 0
            })
    })
}

/// Refuse (exit 2, before anything changes) while a process has a file in
/// DIR open for writing, as `apply` does: after the copy it would go on
/// writing to the file hidden under the tmpfs. journald is the one writer
/// enable hands over itself; whether it is among them is returned.
pub fn check(dir: &Path, already_tmpfs: bool, force: bool) -> Result<bool> {
    if already_tmpfs {
        return Ok(false);
    }
    let writers = procfd::writers_of(&Sysroot::live(), dir);
    let (journald, others): (Vec<_>, Vec<_>) =
        writers.into_iter().partition(|w| is_journald(w.pid));
    if let Some(w) = procfd::refuse_writers(dir, &others, force)? {
        crate::command::warn(&w);
    }
    Ok(!journald.is_empty())
}

/// journald's files in DIR handed over around the copy: `journalctl
/// --relinquish-var` (journald writes to /run/log/journal meanwhile) before
/// generation 1 is written, `journalctl --flush` (back to DIR, now on the
/// tmpfs) once it is mounted, or on the way out of a failed enable (back to
/// DIR on disk, as before).
pub struct Journald {
    flushed: bool,
}

impl Journald {
    pub fn begin(dir: &Path) -> Result<Journald> {
        journalctl("--relinquish-var")?;
        let j = Journald { flushed: false };
        let still: Vec<_> = procfd::writers_of(&Sysroot::live(), dir)
            .into_iter()
            .filter(|w| is_journald(w.pid))
            .collect();
        if !still.is_empty() {
            bail!(
                "journald still writes in {} after `journalctl --relinquish-var` ({}); nothing was changed",
                safe_path(dir),
                holders_line(&still)
            );
        }
        Ok(j)
    }

    pub fn flush(&mut self) {
        if !self.flushed {
            self.flushed = true;
            if let Err(e) = journalctl("--flush") {
                crate::command::warn(&format!(
                    "{e:#}; journald keeps writing to /run/log/journal until `journalctl --flush`"
                ));
            }
        }
    }
}

impl Drop for Journald {
    fn drop(&mut self) {
        self.flush();
    }
}

fn journalctl(arg: &str) -> Result<()> {
    let st = std::process::Command::new("journalctl")
        .arg(arg)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("cannot run `journalctl {arg}`"))?;
    if !st.success() {
        bail!("`journalctl {arg}` failed ({st})");
    }
    Ok(())
}
