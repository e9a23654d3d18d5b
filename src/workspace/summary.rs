//! What a run reports: the one-line summary on stderr and the `--json`
//! document.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use anyhow::Result;
use serde::Serialize;

use super::scratch::{DEFAULT_SIZE_TEXT, Mode};
use crate::command::{self, ExitCode, Format, Report};
use crate::units::{fmt_bytes, fmt_ns};

pub const SCHEMA_VERSION: u32 = 1;

/// The summary, on stderr as one line and with `--json` as this document.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub schema_version: u32,
    pub command: Vec<String>,
    pub mode: Mode,
    pub path: String,
    pub ram_backed: bool,
    /// The cap: tmpfs size (enforced) or the watched limit of a plain directory.
    pub size_bytes: u64,
    /// Where the cap came from: `--size 64M` or the default rule.
    pub size_source: String,
    pub cap_enforced: bool,
    /// Highest usage seen (samples plus the one when CMD exited), empty scratch = 0.
    pub peak_used_bytes: u64,
    pub peak_inodes: u64,
    /// Usage when CMD exited.
    pub final_used_bytes: u64,
    pub final_inodes: u64,
    /// Readings taken: the periodic samples plus the one when CMD exited.
    pub samples: u64,
    /// The fast sampling interval (while usage changes or the scratch is nearly full).
    pub sample_interval_ns: u64,
    /// The slowest interval, reached while usage stays unchanged.
    pub sample_interval_max_ns: u64,
    /// The scratch was seen full: CMD got (or would get) ENOSPC.
    pub full: bool,
    /// Plain directory only: usage went past the soft cap.
    pub over_soft_cap: bool,
    pub wall_ns: u64,
    /// CMD's exit code, or null when it was killed by a signal.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// tmpfsctl's own exit status (CMD's, or 128+signal).
    pub status: u8,
    pub removed: bool,
    pub kept_at: Option<String>,
    pub notes: Vec<String>,
}

/// The run's report: shown on stderr as it ends (`summary_line`), its JSON
/// written where `--json` says by the command's `Output`; the exit code is
/// CMD's.
impl Report for RunSummary {
    command::its_own_document!();

    /// Only the document: the text was the summary line on stderr.
    fn render(&self, _format: Format) -> Option<Result<Vec<u8>>> {
        None
    }

    fn exit_code(&self) -> ExitCode {
        ExitCode::Child(self.status)
    }
}

pub fn signal_name(n: i32) -> String {
    let name = match n {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        _ => return format!("signal {n}"),
    };
    name.to_string()
}

/// tmpfsctl's exit status for CMD's: its code, or 128+N when killed by signal N.
pub fn status_of(st: ExitStatus) -> (u8, Option<i32>, Option<i32>) {
    match (st.code(), st.signal()) {
        (Some(c), _) => ((c & 0xff) as u8, Some(c), None),
        (None, Some(s)) => ((128 + s).clamp(0, 255) as u8, None, Some(s)),
        (None, None) => (ExitCode::Error.code(), None, None),
    }
}

/// The one-line human summary (said on stderr after the `tmpfsctl: `
/// prefix).
pub fn summary_line(s: &RunSummary) -> String {
    let pct = crate::units::fmt_share(s.peak_used_bytes, s.size_bytes);
    let how = match (s.exit_code, s.signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(n)) => format!("killed by {} (status {})", signal_name(n), s.status),
        (None, None) => format!("not run (status {})", s.status),
    };
    let fate = match (&s.kept_at, s.removed) {
        (Some(_), _) => "kept",
        (None, true) => "removed",
        (None, false) => "NOT removed",
    };
    let cap_kind = match (s.cap_enforced, s.size_source.starts_with("default")) {
        (true, false) => String::new(),
        (false, false) => " soft cap".to_string(),
        (enforced, true) => format!(
            " {}cap (default: {DEFAULT_SIZE_TEXT})",
            if enforced { "" } else { "soft " }
        ),
    };
    format!(
        "scratch peak {}{pct} of {}{}, {} inode{}; {}; CMD {how}; {} {} {fate}",
        fmt_bytes(s.peak_used_bytes),
        fmt_bytes(s.size_bytes),
        cap_kind,
        s.peak_inodes,
        if s.peak_inodes == 1 { "" } else { "s" },
        fmt_ns(s.wall_ns as f64),
        s.mode.describe(),
        crate::term::safe(&s.path),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_mapping() {
        assert_eq!(status_of(ExitStatus::from_raw(3 << 8)), (3, Some(3), None));
        assert_eq!(
            status_of(ExitStatus::from_raw(libc::SIGTERM)),
            (143, None, Some(15))
        );
        assert_eq!(
            status_of(ExitStatus::from_raw(libc::SIGKILL)),
            (137, None, Some(9))
        );
    }

    #[test]
    fn summary_line_says_what_happened() {
        let s = RunSummary {
            schema_version: SCHEMA_VERSION,
            command: vec!["true".into()],
            mode: Mode::PrivateMount,
            path: "/run/tmpfsctl".into(),
            ram_backed: true,
            size_bytes: 64 << 20,
            size_source: "--size 64 MiB".into(),
            cap_enforced: true,
            peak_used_bytes: 16 << 20,
            peak_inodes: 3,
            final_used_bytes: 0,
            final_inodes: 0,
            samples: 5,
            sample_interval_ns: 10_000_000,
            sample_interval_max_ns: 250_000_000,
            full: false,
            over_soft_cap: false,
            wall_ns: 1_500_000_000,
            exit_code: None,
            signal: Some(15),
            status: 143,
            removed: true,
            kept_at: None,
            notes: vec![],
        };
        let l = summary_line(&s);
        assert!(l.contains("peak 16.0 MiB (25%) of 64.0 MiB,"), "{l}");
        assert!(l.contains("killed by SIGTERM (status 143)"), "{l}");
        assert!(l.ends_with("/run/tmpfsctl removed"), "{l}");
        let d = RunSummary {
            size_source: "default: 50% of MemAvailable (8 GiB)".into(),
            ..s
        };
        let l = summary_line(&d);
        assert!(
            l.contains("of 64.0 MiB cap (default: 50% of MemAvailable),"),
            "{l}"
        );
    }
}
