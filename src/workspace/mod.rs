//! `tmpfsctl run -- CMD` and `tmpfsctl shell`: a private, size-capped RAM
//! scratch directory for one command, always cleaned up (issue 6).
//!
//! Flow: validate every argument, block the signals we pass on, create the
//! scratch ([`Scratch::create`]), start CMD with TMPDIR/TMP/TEMP pointing at
//! it, then wait while sampling its usage, tear it down and report. The
//! reusable pieces (`Scratch`, `probe`, `default_size`) are public for
//! `advise`.

mod sampling;
mod scratch;
mod supervise;

use std::ffi::{OsStr, OsString};
use std::os::fd::BorrowedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

pub use scratch::{
    DEFAULT_SIZE_TEXT, Keep, Mode, Scratch, Spec, Teardown, Usage, default_size, probe,
};

use crate::context::{Context, ExitCode};
use crate::units::{Size, fmt_bytes, fmt_ns, parse_size};

pub const SCHEMA_VERSION: u32 = 1;

/// How often a private tmpfs is sampled: [`SAMPLE_INTERVAL`] while usage
/// changes or it is nearly full, backing off to [`SAMPLE_INTERVAL_MAX`] while
/// idle (see `sampling` for what that can miss). Whatever is still there when
/// CMD exits is always counted.
pub use sampling::{SAMPLE_INTERVAL, SAMPLE_INTERVAL_MAX};
/// A plain directory needs a tree walk per sample: at least this apart, and
/// never more than 5% of the time spent walking (the fast rate; idle, it
/// backs off like a tmpfs).
const DIR_SAMPLE_MIN: Duration = Duration::from_millis(100);

const AFTER_HELP_RUN: &str = "\
Examples:
  tmpfsctl run -- make -j8 test
  tmpfsctl run --size 2G --cd -- sh -c 'git clone ~/src/app . && cargo build'
  tmpfsctl run --json fd:3 -- ./job.sh 3>summary.json

The scratch: as root, a tmpfs in a private mount namespace (nobody else sees it, the kernel
enforces --size, and it disappears even if tmpfsctl is SIGKILLed, once CMD exits).
Unprivileged, the same inside a user namespace when the kernel allows it (setuid programs such
as sudo do not work in there); otherwise a 0700 directory under $XDG_RUNTIME_DIR or /dev/shm
whose size cap is only watched (soft).
Default --size: 50% of MemAvailable at start. Sizes use binary units (512M = 512 MiB);
N% is a share of MemTotal, as for tmpfs.
Peak usage is sampled every 10 ms (one statfs) while usage changes or the scratch is over 90%
full, backing off to every 250 ms while it stays idle, plus once when CMD exits. A file
written and deleted between two samples can be missed: within 10 ms while usage moves, within
250 ms after an idle spell (which is also how late a burst that fills an idle scratch can be
reported full; CMD gets its ENOSPC at once either way).
Exit status: CMD's; 128+N if CMD was killed by signal N; 127/126 if CMD cannot be found/run;
2 if tmpfsctl itself fails before CMD starts. SIGINT, SIGTERM and SIGHUP sent to tmpfsctl are
passed to CMD (a ^C from the terminal reaches CMD directly and is not sent twice).";

const AFTER_HELP_SHELL: &str = "\
Examples:
  tmpfsctl shell
  tmpfsctl shell --size 4G --keep
  tmpfsctl shell -- -c 'make -j8 && make check'

Starts $SHELL (or /bin/sh) in the scratch; `cd -` goes back to where you were. Everything in
the scratch is gone when the shell exits, unless --keep. See `tmpfsctl run --help` for how the
scratch is made and what the exit status means.";

/// Options shared by `run` and `shell`.
#[derive(Debug, Clone, clap::Args)]
pub struct ScratchOpts {
    /// Size cap: 512M, 2G (binary units) or 10% of RAM [default: 50% of MemAvailable]
    #[arg(long, short = 's', value_name = "SIZE", value_parser = parse_size)]
    pub size: Option<Size>,
    /// Keep the scratch: a private tmpfs is copied to DIR (default: a new directory under /var/tmp); a plain directory is left in place
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub keep: Option<PathBuf>,
    /// No summary line and no notes on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Write the summary as JSON (schema_version 1) to FILE, or to an open descriptor with fd:N
    #[arg(long, value_name = "FILE|fd:N")]
    pub json: Option<String>,
    /// Use a plain 0700 directory instead of a private mount (other processes of yours can see it; the cap is soft)
    #[arg(long)]
    pub no_namespace: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP_RUN)]
pub struct RunArgs {
    #[command(flatten)]
    pub scratch: ScratchOpts,
    /// Start CMD with the scratch as its working directory
    #[arg(long)]
    pub cd: bool,
    /// The command to run and its arguments (put `--` before it)
    #[arg(value_name = "CMD", required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub cmd: Vec<OsString>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP_SHELL)]
pub struct ShellArgs {
    #[command(flatten)]
    pub scratch: ScratchOpts,
    /// Stay in the current directory instead of starting in the scratch
    #[arg(long)]
    pub no_cd: bool,
    /// Arguments for the shell (after `--`)
    #[arg(value_name = "ARGS", num_args = 0.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

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

pub fn run_cmd(ctx: &Context, args: &RunArgs) -> Result<ExitCode> {
    let (program, rest) = args
        .cmd
        .split_first()
        .context("no CMD given; write e.g. tmpfsctl run -- make test")?;
    execute(ctx, &args.scratch, program, rest, args.cd, false)
}

pub fn shell_cmd(ctx: &Context, args: &ShellArgs) -> Result<ExitCode> {
    let shell = std::env::var_os("SHELL")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| OsString::from("/bin/sh"));
    execute(ctx, &args.scratch, &shell, &args.args, !args.no_cd, true)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum JsonDest {
    File(PathBuf),
    Fd(i32),
}

fn parse_json_dest(s: &str) -> Result<JsonDest> {
    if let Some(n) = s.strip_prefix("fd:") {
        let fd: i32 = n.parse().ok().filter(|&n| n >= 0).with_context(|| {
            format!("--json {s}: {n:?} is not a file descriptor number; write e.g. fd:3")
        })?;
        return Ok(JsonDest::Fd(fd));
    }
    if s.is_empty() {
        bail!("--json needs a FILE or fd:N");
    }
    Ok(JsonDest::File(PathBuf::from(s)))
}

/// Fail before anything runs if the summary could not be written later.
fn check_json_dest(d: &JsonDest) -> Result<()> {
    match d {
        JsonDest::Fd(n) => {
            // SAFETY: only used for fcntl within this function; a closed fd
            // makes fcntl fail with EBADF, which is what we check.
            let fd = unsafe { BorrowedFd::borrow_raw(*n) };
            let flags = rustix::io::fcntl_getfd(fd).map_err(|e| {
                anyhow::anyhow!("--json fd:{n}: {e}; open it for tmpfsctl, e.g. `3>summary.json`")
            })?;
            // CMD should not inherit a descriptor that was opened for us.
            if *n > 2 {
                rustix::io::fcntl_setfd(fd, flags | rustix::io::FdFlags::CLOEXEC)?;
            }
        }
        JsonDest::File(p) => {
            if p.is_dir() {
                bail!("--json {}: is a directory; give a file name", p.display());
            }
            let parent = match p.parent() {
                Some(q) if !q.as_os_str().is_empty() => q.to_path_buf(),
                _ => PathBuf::from("."),
            };
            if !parent.is_dir() {
                bail!(
                    "--json {}: directory {} does not exist; create it first",
                    p.display(),
                    parent.display()
                );
            }
        }
    }
    Ok(())
}

fn write_json(d: &JsonDest, s: &RunSummary) -> Result<()> {
    let mut buf = serde_json::to_vec_pretty(s)?;
    buf.push(b'\n');
    match d {
        JsonDest::File(p) => {
            std::fs::write(p, &buf).with_context(|| format!("writing --json {}", p.display()))
        }
        JsonDest::Fd(n) => {
            // SAFETY: checked open in check_json_dest; borrowed, never closed here.
            let fd = unsafe { BorrowedFd::borrow_raw(*n) };
            let mut rest = &buf[..];
            while !rest.is_empty() {
                match rustix::io::write(fd, rest) {
                    Ok(0) => bail!("writing --json fd:{n}: wrote nothing"),
                    Ok(k) => rest = &rest[k..],
                    Err(rustix::io::Errno::INTR) => {}
                    Err(e) => bail!("writing --json fd:{n}: {e}"),
                }
            }
            Ok(())
        }
    }
}

/// Resolve `--size` (or the default) to bytes, with a note when it is more
/// than the machine can hold without swapping.
fn resolve_size(
    ctx: &Context,
    size: Option<Size>,
    notes: &mut Vec<String>,
) -> Result<(u64, String)> {
    if let Some(Size::Bytes(b)) = size {
        // No /proc/meminfo read on this path: keeps startup lean.
        if b == 0 {
            bail!("--size 0 would mean \"no limit\" to tmpfs; give a positive size such as 512M");
        }
        return Ok((
            scratch::round_up_page(b),
            format!("--size {}", fmt_bytes(b)),
        ));
    }
    let (mem, _) = ctx.sysroot.meminfo()?;
    let (bytes, source) = match size {
        Some(s @ Size::PercentOfRam(p)) => (
            s.resolve(mem.mem_total_bytes),
            format!("--size {p}% of MemTotal"),
        ),
        _ => (
            default_size(mem.mem_available_bytes),
            format!(
                "default: {DEFAULT_SIZE_TEXT} ({})",
                fmt_bytes(mem.mem_available_bytes)
            ),
        ),
    };
    if bytes == 0 {
        bail!(
            "the size resolves to 0 bytes (MemTotal {}); give --size in bytes, e.g. 512M",
            mem.mem_total_bytes
        );
    }
    if bytes > mem.mem_available_bytes {
        notes.push(format!(
            "the cap {} is more than MemAvailable ({}): filling it would push the machine into swap or the OOM killer",
            fmt_bytes(bytes),
            fmt_bytes(mem.mem_available_bytes)
        ));
    }
    Ok((scratch::round_up_page(bytes), source))
}

fn signal_name(n: i32) -> String {
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

fn full_message(s: &Scratch) -> String {
    format!(
        "tmpfsctl: workspace full at {}: writes in {} now fail with ENOSPC (No space left on device); rerun with a larger --size",
        fmt_bytes(s.size_bytes),
        s.path.display()
    )
}

#[derive(Debug, Default)]
struct Peak {
    used: u64,
    inodes: u64,
    samples: u64,
    full: bool,
    over: bool,
}

impl Peak {
    fn add(&mut self, s: &Scratch, u: &Usage, quiet: bool) {
        self.samples += 1;
        self.used = self.used.max(u.used_bytes);
        self.inodes = self.inodes.max(u.inodes);
        if !self.full && s.is_full(u) {
            self.full = true;
            // Said as soon as it is seen, so it sits next to CMD's own error.
            eprintln!("{}", full_message(s));
        }
        if !self.over && s.over_soft_cap(u) {
            self.over = true;
            if !quiet {
                eprintln!(
                    "tmpfsctl: warning: the scratch holds {}, over its soft cap of {} (not enforced for a plain directory)",
                    fmt_bytes(u.used_bytes),
                    fmt_bytes(s.size_bytes)
                );
            }
        }
    }
}

fn execute(
    ctx: &Context,
    opts: &ScratchOpts,
    program: &OsStr,
    args: &[OsString],
    cd: bool,
    is_shell: bool,
) -> Result<ExitCode> {
    // 1. Everything that can be wrong with the arguments, before any change.
    let mut notes = Vec::new();
    let (size_bytes, size_source) = resolve_size(ctx, opts.size, &mut notes)?;
    let json = opts.json.as_deref().map(parse_json_dest).transpose()?;
    if let Some(d) = &json {
        check_json_dest(d)?;
    }
    let keep = match &opts.keep {
        None => None,
        Some(p) if p.as_os_str().is_empty() => Some(Keep::Default),
        Some(p) => {
            scratch::check_keep_dir(p)?;
            Some(Keep::Dir(p.clone()))
        }
    };
    let oldpwd = if is_shell && cd {
        std::env::current_dir().ok()
    } else {
        None
    };

    // 2. From here a ^C or SIGTERM is read, not fatal, so cleanup always runs.
    let signals = supervise::Signals::block().context("setting up signal handling")?;
    let start = Instant::now();
    let scratch = Scratch::create(&Spec {
        size_bytes,
        allow_private: !opts.no_namespace,
    })?;
    notes.extend(scratch.notes.iter().cloned());
    if !opts.quiet {
        for n in &notes {
            eprintln!("tmpfsctl: note: {n}");
        }
    }

    let command: Vec<String> = std::iter::once(program)
        .chain(args.iter().map(|a| a.as_os_str()))
        .map(|a| a.to_string_lossy().into_owned())
        .collect();

    // 3. Start CMD, unless we were told to stop while setting up.
    let pending = signals.drain().unwrap_or_default();
    let early = pending
        .iter()
        .find(|r| supervise::FORWARDED.contains(&r.signo));
    let mut peak = Peak::default();
    let outcome: Result<ExitStatus, (u8, String)>;
    if let Some(r) = early {
        outcome = Err((
            (128 + r.signo) as u8,
            format!("{} before CMD started", signal_name(r.signo)),
        ));
    } else {
        let mut cmd = std::process::Command::new(program);
        cmd.args(args);
        for k in ["TMPDIR", "TMP", "TEMP", "TMPFSCTL_WORKSPACE"] {
            cmd.env(k, &scratch.path);
        }
        if cd {
            cmd.current_dir(&scratch.path);
        }
        if let Some(o) = &oldpwd {
            cmd.env("OLDPWD", o);
        }
        supervise::unblock_in_child(&mut cmd);
        match cmd.spawn() {
            Err(e) => {
                let code = if e.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                };
                outcome = Err((
                    code,
                    format!(
                        "cannot run {}: {e}; check the name and $PATH",
                        program.to_string_lossy()
                    ),
                ));
            }
            Ok(mut child) => {
                let pid = child.id();
                let own_pgid = supervise::own_pgid();
                let mut pace = sampling::Pace::new(
                    if scratch.mode == Mode::Directory {
                        DIR_SAMPLE_MIN
                    } else {
                        SAMPLE_INTERVAL
                    },
                    SAMPLE_INTERVAL_MAX,
                );
                let status = loop {
                    let got = signals
                        .wait(Some(pace.interval()))
                        .context("waiting for signals")?;
                    for r in got {
                        if !supervise::FORWARDED.contains(&r.signo) {
                            continue;
                        }
                        // The terminal's ^C already went to CMD if it shares
                        // our process group; sending it again would make it
                        // count twice.
                        if r.from_kernel && supervise::pgid_of(pid) == Some(own_pgid) {
                            continue;
                        }
                        supervise::send(pid, r.signo);
                    }
                    // Once CMD has exited the final reading below is the sample.
                    if let Some(st) = child.try_wait().context("waiting for CMD")? {
                        break st;
                    }
                    let t0 = Instant::now();
                    if let Ok(u) = scratch.usage() {
                        peak.add(&scratch, &u, opts.quiet);
                        if scratch.mode == Mode::Directory {
                            pace.set_floor(DIR_SAMPLE_MIN.max(t0.elapsed() * 20));
                        }
                        pace.observe(&u, scratch.near_full(&u));
                    }
                };
                outcome = Ok(status);
            }
        }
    }

    // 4. Final reading (CMD has exited; what is still there counts), then cleanup.
    let last = scratch.usage().unwrap_or_default();
    peak.add(&scratch, &last, opts.quiet);
    let mode = scratch.mode;
    let path = scratch.path.clone();
    let ram_backed = scratch.ram_backed;
    let cap = scratch.size_bytes;
    let teardown = scratch.teardown(keep.as_ref());
    let wall = start.elapsed();

    let (status, exit_code, signal) = match &outcome {
        Ok(st) => status_of(*st),
        Err((code, msg)) => {
            eprintln!("tmpfsctl: error: {msg}");
            (*code, None, None)
        }
    };
    let mut all_notes = notes;
    all_notes.extend(teardown.notes.iter().cloned());
    let summary = RunSummary {
        schema_version: SCHEMA_VERSION,
        command,
        mode,
        path: path.display().to_string(),
        ram_backed,
        size_bytes: cap,
        size_source,
        cap_enforced: mode.cap_enforced(),
        peak_used_bytes: peak.used,
        peak_inodes: peak.inodes,
        final_used_bytes: last.used_bytes,
        final_inodes: last.inodes,
        samples: peak.samples,
        sample_interval_ns: if mode == Mode::Directory {
            DIR_SAMPLE_MIN.as_nanos() as u64
        } else {
            SAMPLE_INTERVAL.as_nanos() as u64
        },
        sample_interval_max_ns: SAMPLE_INTERVAL_MAX.as_nanos() as u64,
        full: peak.full,
        over_soft_cap: peak.over,
        wall_ns: wall.as_nanos() as u64,
        exit_code,
        signal,
        status,
        removed: teardown.removed,
        kept_at: teardown.kept_at.as_ref().map(|p| p.display().to_string()),
        notes: all_notes,
    };
    if let Some(e) = &teardown.error {
        eprintln!("tmpfsctl: error: {e}");
    }
    if !opts.quiet {
        for n in &teardown.notes {
            eprintln!("tmpfsctl: note: {n}");
        }
        eprintln!("{}", summary_line(&summary));
    }
    if let Some(k) = &summary.kept_at {
        // Printed even with --quiet: it is the answer to --keep.
        eprintln!("tmpfsctl: scratch kept in {k}");
    }
    if let Some(d) = &json
        && let Err(e) = write_json(d, &summary)
    {
        eprintln!("tmpfsctl: error: {e:#}");
    }
    // A signal that came after CMD ended has nobody left to go to; swallow
    // it so it cannot replace CMD's exit status with tmpfsctl's own death.
    let _ = signals.drain();
    drop(signals);
    Ok(ExitCode::Child(status))
}

/// The one-line human summary (stderr).
pub fn summary_line(s: &RunSummary) -> String {
    let pct = if s.size_bytes > 0 {
        format!(
            " ({:.0}%)",
            s.peak_used_bytes as f64 * 100.0 / s.size_bytes as f64
        )
    } else {
        String::new()
    };
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
        "tmpfsctl: scratch peak {}{pct} of {}{}, {} inode{}; {}; CMD {how}; {} {} {fate}",
        fmt_bytes(s.peak_used_bytes),
        fmt_bytes(s.size_bytes),
        cap_kind,
        s.peak_inodes,
        if s.peak_inodes == 1 { "" } else { "s" },
        fmt_ns(s.wall_ns as f64),
        s.mode.describe(),
        s.path,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_destinations() {
        assert_eq!(parse_json_dest("fd:3").unwrap(), JsonDest::Fd(3));
        assert_eq!(
            parse_json_dest("out.json").unwrap(),
            JsonDest::File("out.json".into())
        );
        assert!(
            parse_json_dest("fd:x")
                .unwrap_err()
                .to_string()
                .contains("fd:3")
        );
        assert!(parse_json_dest("fd:-1").is_err());
        assert!(parse_json_dest("").is_err());
        let e = check_json_dest(&JsonDest::File("/no/such/dir/x.json".into())).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        // A descriptor far above anything a test process has open.
        let e = check_json_dest(&JsonDest::Fd(987_654)).unwrap_err();
        assert!(e.to_string().contains("fd:987654"), "{e}");
    }

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
