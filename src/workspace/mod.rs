//! `tmpfsctl run -- CMD` and `tmpfsctl shell`: a private, size-capped RAM
//! scratch directory for one command, always cleaned up.
//!
//! Flow: validate every argument, block the signals we pass on, create the
//! scratch ([`Scratch::create`]), start CMD with TMPDIR/TMP/TEMP pointing at
//! it, then wait while sampling its usage, kill whatever CMD left running,
//! tear the scratch down and report. CMD and everything it starts die with
//! tmpfsctl, however tmpfsctl ends (see `tree`). The
//! reusable pieces (`Scratch`, `probe`, `default_size`) are public for
//! `advise`. The library takes a [`RunRequest`]; the command line that
//! builds one lives in `cli::workspace`.

mod cleanup;
mod guard;
mod pidns;
mod place;
mod procs;
mod sampling;
mod scratch;
mod summary;
mod supervise;
mod tree;
mod vspawn;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

pub use scratch::{DEFAULT_SIZE_TEXT, Keep, Mode, Scratch, Spec, Usage, default_size};
pub use summary::{RunSummary, SCHEMA_VERSION, status_of, summary_line};

use crate::command::{self, Context};
use crate::units::{Size, fmt_bytes};
use summary::signal_name;

/// How often a private tmpfs is sampled: [`SAMPLE_INTERVAL`] while usage
/// changes or it is nearly full, backing off to [`SAMPLE_INTERVAL_MAX`] while
/// idle (see `sampling` for what that can miss). Whatever is still there when
/// CMD exits is always counted.
pub use sampling::{SAMPLE_INTERVAL, SAMPLE_INTERVAL_MAX};
/// A plain directory needs a tree walk per sample: at least this apart, and
/// never more than 5% of the time spent walking (the fast rate; idle, it
/// backs off like a tmpfs).
const DIR_SAMPLE_MIN: Duration = Duration::from_millis(100);

/// How the scratch is made and reported, shared by `run` and `shell`.
#[derive(Debug, Clone, Default)]
pub struct ScratchOptions {
    /// The cap; `None` is the default rule ([`DEFAULT_SIZE_TEXT`]).
    pub size: Option<Size>,
    pub keep: Option<Keep>,
    /// No summary line and no notes on stderr.
    pub quiet: bool,
    /// False: a plain directory, no private mount.
    pub private: bool,
    /// Allow a cap above RAM + swap.
    pub force: bool,
}

/// One command to run in a scratch.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub scratch: ScratchOptions,
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Start CMD in the scratch.
    pub cd: bool,
    /// CMD is the user's shell: it gets OLDPWD so `cd -` returns.
    pub shell: bool,
}

impl RunRequest {
    /// CMD and its arguments as text, for the summary.
    fn command_line(&self) -> Vec<String> {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }
}

/// `tmpfsctl run` and `shell`: CMD's output and the summary line (stderr)
/// are shown as it runs; the report is the summary (its JSON goes where the
/// command's `Output` says: `--json FILE|fd:N`), its exit code CMD's.
impl crate::command::Request for RunRequest {
    type Report = RunSummary;

    fn run(&self, ctx: &Context) -> Result<Self::Report> {
        run(ctx, self)
    }
}

/// Run the request's command in a new scratch and report.
fn run(ctx: &Context, req: &RunRequest) -> Result<RunSummary> {
    let checked = check(ctx, req)?;
    execute(req, checked)
}

/// What `shell` says before the shell starts: where its scratch is, the
/// cap, and that exiting discards it (or where --keep copies it).
fn shell_banner(scratch: &Scratch, keep: Option<&Keep>) -> String {
    let cap = if scratch.mode.cap_enforced() {
        format!("capped at {}", crate::units::fmt_bytes(scratch.size_bytes))
    } else {
        format!(
            "soft cap {} (watched, not enforced)",
            crate::units::fmt_bytes(scratch.size_bytes)
        )
    };
    let leaving = match keep {
        None => "exit the shell to discard it and everything in it".to_string(),
        Some(Keep::Dir(d)) => format!(
            "exit the shell to end it: its contents are copied to {}",
            crate::term::safe_path(d)
        ),
        Some(Keep::Default) => {
            "exit the shell to end it: its contents are copied to a new directory under /var/tmp"
                .to_string()
        }
    };
    format!(
        "tmpfsctl: shell in {} ($TMPDIR; {}), {cap}; {leaving}",
        crate::term::safe_path(&scratch.path),
        scratch.mode.describe()
    )
}

/// The request after every check that needs no change to the system.
struct Checked {
    size_bytes: u64,
    size_source: String,
    oldpwd: Option<PathBuf>,
    notes: Vec<String>,
}

/// Everything that can be wrong with the arguments, before any change.
fn check(ctx: &Context, req: &RunRequest) -> Result<Checked> {
    let opts = &req.scratch;
    let mut notes = Vec::new();
    let (size_bytes, size_source) = resolve_size(ctx, opts.size, opts.force, &mut notes)?;
    if let Some(Keep::Dir(p)) = &opts.keep {
        scratch::check_keep_dir(p)?;
    }
    let oldpwd = if req.shell && req.cd {
        std::env::current_dir().ok()
    } else {
        None
    };
    Ok(Checked {
        size_bytes,
        size_source,
        oldpwd,
        notes,
    })
}

/// Resolve `--size` (or the default) to bytes, with a note when it is more
/// than the machine can hold without swapping.
fn resolve_size(
    ctx: &Context,
    size: Option<Size>,
    force: bool,
    notes: &mut Vec<String>,
) -> Result<(u64, String)> {
    let (mem, _) = ctx.sysroot.meminfo()?;
    let (bytes, source) = match size {
        Some(Size::Bytes(b)) => (b, format!("--size {}", fmt_bytes(b))),
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
    let given = size.map_or_else(|| fmt_bytes(bytes), |s| s.to_string());
    crate::units::check_tmpfs_cap(
        &given,
        bytes,
        mem.mem_total_bytes,
        mem.swap_total_bytes,
        force,
    )
    .map_err(|e| anyhow::anyhow!("--size {given}: {e}"))?;
    if bytes > mem.mem_available_bytes {
        notes.push(format!(
            "the cap {} is more than MemAvailable ({}): filling it would push the machine into swap or the OOM killer",
            fmt_bytes(bytes),
            fmt_bytes(mem.mem_available_bytes)
        ));
    }
    Ok((scratch::round_up_page(bytes), source))
}

fn full_message(s: &Scratch) -> String {
    format!(
        "workspace full at {}: writes in {} now fail with ENOSPC (No space left on device); rerun with a larger --size",
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
            command::say(&full_message(s));
        }
        if !self.over && s.over_soft_cap(u) {
            self.over = true;
            if !quiet {
                crate::command::warn(&format!(
                    "the scratch holds {}, over its soft cap of {} (not enforced for a plain directory)",
                    fmt_bytes(u.used_bytes),
                    fmt_bytes(s.size_bytes)
                ));
            }
        }
    }
}

/// How CMD ended: its status, or tmpfsctl's status and why it never ran.
type Outcome = std::result::Result<ExitStatus, (u8, String)>;

fn execute(req: &RunRequest, checked: Checked) -> Result<RunSummary> {
    let opts = &req.scratch;
    let Checked {
        size_bytes,
        size_source,
        oldpwd,
        mut notes,
    } = checked;

    // From here a ^C or SIGTERM is read, not fatal, so cleanup always runs.
    let signals = supervise::Signals::block().context("setting up signal handling")?;
    let start = Instant::now();
    // Before the scratch: its guard must stay outside the private mount
    // namespace, and the cgroup files are opened before any user namespace.
    let mut tree = tree::Tree::new(opts.private);
    let scratch = Scratch::create(&Spec {
        size_bytes,
        allow_private: opts.private,
    })?;
    notes.extend(scratch.notes.iter().cloned());
    notes.extend(tree.notes.iter().cloned());
    if !opts.quiet {
        for n in &notes {
            command::note(&crate::term::safe(n));
        }
        if req.shell {
            // An interactive shell looks like any other: say where it is,
            // what bounds it and what leaving it does.
            eprintln!("{}", shell_banner(&scratch, opts.keep.as_ref()));
        }
    }

    // Start CMD, unless we were told to stop while setting up.
    let pending = signals.drain().unwrap_or_default();
    let early = pending
        .iter()
        .find(|r| supervise::FORWARDED.contains(&r.signo));
    let mut peak = Peak::default();
    let outcome: Outcome = match early {
        Some(r) => Err((
            (128 + r.signo) as u8,
            format!("{} before CMD started", signal_name(r.signo)),
        )),
        None => {
            let mut note = |n: String| {
                if !opts.quiet {
                    command::note(&crate::term::safe(&n));
                }
                notes.push(n);
            };
            match spawn(req, &scratch, &mut tree, oldpwd.as_deref(), &mut note) {
                Err(e) => Err(e),
                Ok(child) => {
                    let st = supervise_child(child, &signals, &scratch, &mut peak, opts.quiet)?;
                    Ok(tree.cmd_status(st))
                }
            }
        }
    };

    // Final reading (CMD has exited; what is still there counts), then
    // what CMD left running goes, before the scratch it may be using.
    let last = scratch.usage().unwrap_or_default();
    peak.add(&scratch, &last, opts.quiet);
    let ended = tree.end();
    let mode = scratch.mode;
    let path = scratch.path.clone();
    let ram_backed = scratch.ram_backed;
    let cap = scratch.size_bytes;
    let teardown = scratch.teardown(opts.keep.as_ref());
    let wall = start.elapsed();

    let (status, exit_code, signal) = match &outcome {
        Ok(st) => status_of(*st),
        Err((code, msg)) => {
            command::error(msg);
            (*code, None, None)
        }
    };
    let mut end_notes = ended.notes;
    end_notes.extend(teardown.notes.iter().cloned());
    notes.extend(end_notes.iter().cloned());
    let summary = RunSummary {
        schema_version: SCHEMA_VERSION,
        command: req.command_line(),
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
        notes,
    };
    report(&summary, &end_notes, teardown.error.as_deref(), opts.quiet);
    // A signal that came after CMD ended has nobody left to go to; swallow
    // it so it cannot replace CMD's exit status with tmpfsctl's own death.
    let _ = signals.drain();
    drop(signals);
    Ok(summary)
}

/// Start CMD in the scratch; on failure, the status tmpfsctl exits with and why.
fn spawn(
    req: &RunRequest,
    scratch: &Scratch,
    tree: &mut tree::Tree,
    oldpwd: Option<&std::path::Path>,
    note: &mut dyn FnMut(String),
) -> std::result::Result<i32, (u8, String)> {
    let mut cmd = std::process::Command::new(&req.program);
    cmd.args(&req.args);
    for k in ["TMPDIR", "TMP", "TEMP", "TMPFSCTL_WORKSPACE"] {
        cmd.env(k, &scratch.path);
    }
    if req.cd {
        cmd.current_dir(&scratch.path);
    }
    if let Some(o) = oldpwd {
        cmd.env("OLDPWD", o);
    }
    supervise::unblock_in_child(&mut cmd);
    tree.spawn(&mut cmd, note).map_err(|e| {
        let (code, fix) = match e.kind() {
            std::io::ErrorKind::NotFound => (127, "check the name and $PATH"),
            // execvp's EACCES: found, but no execute permission on it (or
            // on its directory, or its filesystem is mounted noexec).
            std::io::ErrorKind::PermissionDenied => (
                126,
                "make it executable (chmod +x, on a filesystem not mounted noexec) or give its interpreter first (sh FILE)",
            ),
            _ => (126, "check the name and $PATH"),
        };
        (
            code,
            format!(
                "cannot run {}: {e}; {fix}",
                crate::term::safe(&req.program.to_string_lossy())
            ),
        )
    })
}

/// Wait for CMD while passing signals on and sampling the scratch.
fn supervise_child(
    pid: i32,
    signals: &supervise::Signals,
    scratch: &Scratch,
    peak: &mut Peak,
    quiet: bool,
) -> Result<ExitStatus> {
    let own_pgid = supervise::own_pgid();
    let mut pace = sampling::Pace::new(
        if scratch.mode == Mode::Directory {
            DIR_SAMPLE_MIN
        } else {
            SAMPLE_INTERVAL
        },
        SAMPLE_INTERVAL_MAX,
    );
    loop {
        let got = signals
            .wait(Some(pace.interval()))
            .context("waiting for signals")?;
        for r in got {
            if !supervise::FORWARDED.contains(&r.signo) {
                continue;
            }
            // The terminal's ^C already went to CMD if it shares our
            // process group; sending it again would make it count twice.
            if r.from_kernel && supervise::pgid_of(pid as u32) == Some(own_pgid) {
                continue;
            }
            supervise::send(pid as u32, r.signo);
        }
        // Once CMD has exited the final reading is the sample.
        if let Some(st) = supervise::try_wait(pid).context("waiting for CMD")? {
            return Ok(st);
        }
        let t0 = Instant::now();
        if let Ok(u) = scratch.usage() {
            peak.add(scratch, &u, quiet);
            if scratch.mode == Mode::Directory {
                pace.set_floor(DIR_SAMPLE_MIN.max(t0.elapsed() * 20));
            }
            pace.observe(&u, scratch.near_full(&u));
        }
    }
}

/// Say what happened on stderr: errors and notes, the summary line,
/// `--keep` (the `--json` document is the report, written after).
fn report(summary: &RunSummary, end_notes: &[String], error: Option<&str>, quiet: bool) {
    use crate::term::safe;
    // Paths and errors here carry what the user typed (--keep=DIR) and what
    // CMD named: escaped, so no control sequence reaches the terminal.
    if let Some(e) = error {
        command::error(safe(e));
    }
    if !quiet {
        for n in end_notes {
            command::note(&safe(n));
        }
        command::say(&summary_line(summary));
    }
    if let Some(k) = &summary.kept_at {
        // Printed even with --quiet: it is the answer to --keep.
        command::say(&format!("scratch kept in {}", safe(k)));
    }
}
