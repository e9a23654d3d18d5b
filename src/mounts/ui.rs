//! Small interactive pieces shared by apply and revert: the root check, the
//! confirmation prompt, the copy progress bar.

use anyhow::{Result, bail};

use crate::sys::copy;

pub(crate) fn require_root(what: &str) -> Result<()> {
    if !rustix::process::geteuid().is_root() {
        bail!(
            "`tmpfsctl {what}` needs root: it mounts filesystems and edits /etc/fstab or systemd units; \
             run it with sudo (`tmpfsctl plan` shows what it would do without root)"
        );
    }
    Ok(())
}

pub(crate) use crate::command::confirm;

pub(crate) fn sparse_note(stats: &copy::CopyStats) -> String {
    format!(
        "kept {} sparse file(s) sparse: {} of data copied for {} of content",
        stats.sparse_files,
        crate::units::fmt_bytes(stats.data_bytes),
        crate::units::fmt_bytes(stats.content_bytes)
    )
}

/// A bar on stderr for copying about `total` bytes of file data: what runs,
/// bytes done of the total, speed, time taken and left. Hidden unless
/// stderr is a terminal and --json is off. Finished by the caller.
pub(crate) fn copy_bar(show: bool, total: u64, what: &str) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(total);
    if let Ok(st) = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} [{elapsed}, ETA {eta}]",
    ) {
        pb.set_style(st.progress_chars("=> "));
    }
    pb.set_message(what.to_string());
    pb
}

/// What a command that finished despite a signal says it did.
pub(super) fn finished_first(cmd: &str, changes: &[String]) -> String {
    if changes.is_empty() {
        format!("{cmd} finished first; nothing needed changing")
    } else {
        format!("{cmd} finished first: {}", changes.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_bar_draws_only_when_asked() {
        assert!(copy_bar(false, 1 << 20, "copying").is_hidden());
        let pb = copy_bar(true, 1 << 20, "copying");
        pb.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        pb.inc(1 << 19);
        assert_eq!(pb.position(), 1 << 19);
        assert_eq!(pb.length(), Some(1 << 20));
        assert_eq!(pb.message(), "copying");
    }
}
