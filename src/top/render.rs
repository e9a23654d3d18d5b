//! Human output for `top`: one table of mounts, then per mount what holds its
//! bytes, then what lives outside any mount, then the Shmem reconciliation.

use std::fmt::Write;
use std::time::Duration;

use super::{MountTop, TopOutcome, TopReport};
use crate::command::{self, ExitCode, Format, Report};
use crate::render::color::{Tone, paint, paint_fullness};
use crate::render::fit;
use crate::term::safe;
use crate::units::{fmt_bytes, fmt_count};

/// What the refreshing view orders mounts by (keys `b`, `i`, `g`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    #[default]
    Bytes,
    Inodes,
    Growth,
}

impl SortBy {
    fn name(self) -> &'static str {
        match self {
            SortBy::Bytes => "bytes",
            SortBy::Inodes => "inodes",
            SortBy::Growth => "growth",
        }
    }
}

/// How the refreshing view shows a report: its order, the one mount it is
/// filtered to, and whether the key help is up.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub sort: SortBy,
    /// Mount point to show alone.
    pub only: Option<String>,
    pub help: bool,
}

/// A line of prose wrapped to the terminal at words, as status wraps.
fn prose(s: &mut String, indent: &str, tone: Option<Tone>, text: &str) {
    crate::render::push_paragraph(s, indent, tone, text);
}

fn opt(b: Option<u64>, none: &str) -> String {
    b.map(fmt_bytes).unwrap_or_else(|| none.to_string())
}

/// A duration in the largest unit that reads well ("3h 12m", "45s").
pub fn fmt_secs(s: f64) -> String {
    let s = s.max(0.0) as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        3600..86_400 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}

fn growth(m: &MountTop) -> String {
    match m.growth_bytes_per_s {
        None => "-".into(),
        // Steady: nothing to say, and a column of it takes the mount column's room.
        Some(0.0) => "-".into(),
        Some(g) if g < 0.0 => format!("-{}/s", fmt_bytes((-g) as u64)),
        Some(g) => format!("+{}/s", fmt_bytes(g as u64)),
    }
}

fn mounts_table(mounts: &[&MountTop]) -> String {
    // Growth and time to full exist only from the second refresh on: empty,
    // they would take width from the mount column.
    let rates = mounts
        .iter()
        .any(|m| m.growth_bytes_per_s.is_some_and(|g| g != 0.0));
    // A column of "tmpfs" on every row says nothing: shown when a ramfs is listed.
    let types = mounts.iter().any(|m| m.fstype != "tmpfs");
    let mut header = vec!["mount"];
    if types {
        header.push("type");
    }
    header.extend(["used", "size", "use%", "inodes", "deleted"]);
    if rates {
        header.extend(["growth", "full in"]);
    }
    let mut t = crate::render::table(&header);
    for m in mounts {
        let pct = match (m.used_bytes, m.size_bytes) {
            (Some(u), Some(s)) if s > 0 => {
                let p = u as f64 * 100.0 / s as f64;
                paint_fullness(Some(p), &format!("{p:.0}%"))
            }
            _ => "-".into(),
        };
        let mut row = vec![safe(&m.mountpoint).into_owned()];
        if types {
            row.push(m.fstype.clone());
        }
        row.extend([
            opt(m.used_bytes, "?"),
            opt(m.size_bytes, "unlimited"),
            pct,
            {
                let txt = format!(
                    "{} / {}",
                    m.inodes_used.map(fmt_count).unwrap_or_else(|| "?".into()),
                    m.inodes_total
                        .map(fmt_count)
                        .unwrap_or_else(|| "unlimited".into())
                );
                // Out of inodes is as full as out of bytes: the same colour.
                paint_fullness(inode_percent(m), &txt)
            },
            match (m.deleted_open_bytes, m.deleted_open_known) {
                (0, true) => "0 B".into(),
                (0, false) => paint(Tone::Warn, "unknown"),
                (b, true) => paint(Tone::Warn, &fmt_bytes(b)),
                (b, false) => paint(Tone::Warn, &format!(">= {}", fmt_bytes(b))),
            },
        ]);
        if rates {
            row.push(growth(m));
            row.push(m.time_to_full_s.map(fmt_secs).unwrap_or_else(|| "-".into()));
        }
        t.add_row(row);
    }
    // The mount point whole (it is what the user copies), the figures wrap.
    if let Some(w) = crate::render::terminal_columns() {
        fit::fit_keeping_whole(&mut t, w, &[0]);
    }
    t.to_string()
}

fn inode_percent(m: &MountTop) -> Option<f64> {
    match (m.inodes_used, m.inodes_total) {
        (Some(u), Some(t)) if t > 0 => Some(u as f64 * 100.0 / t as f64),
        _ => None,
    }
}

fn byte_percent(m: &MountTop) -> Option<f64> {
    match (m.used_bytes, m.size_bytes) {
        (Some(u), Some(t)) if t > 0 => Some(u as f64 * 100.0 / t as f64),
        _ => None,
    }
}

/// Worth a block of its own: it holds data (or data it could not read), or
/// it is (nearly) full by bytes or by inodes, which an empty-looking mount
/// can be.
pub(super) fn wants_detail(m: &MountTop) -> bool {
    m.visible_bytes > 0
        || m.unreadable_dirs > 0
        || !m.deleted_open.is_empty()
        || inode_percent(m).is_some_and(|p| p >= 90.0)
        || byte_percent(m).is_some_and(|p| p >= 90.0)
}

/// A full mount's line: how full, and the remount that grows it (works on
/// any live tmpfs, fstab line or not).
fn full_line(s: &mut String, m: &MountTop) {
    let q = crate::term::shell_word(&m.mountpoint);
    if let (Some(p), Some(u), Some(t)) = (inode_percent(m), m.inodes_used, m.inodes_total)
        && p >= 90.0
    {
        let line = format!(
            "inodes {p:.0}% used ({} of {}): creating a file fails with ENOSPC however many bytes are free; \
             fix: `mount -o remount,nr_inodes={} {q}`, or delete many small files (largest dirs by count below)",
            fmt_count(u),
            fmt_count(t),
            t.saturating_mul(2)
        );
        prose(s, "  ", Some(Tone::Bad), &line);
    }
    if let (Some(p), Some(u), Some(t)) = (byte_percent(m), m.used_bytes, m.size_bytes)
        && p >= 90.0
        && m.fstype == "tmpfs"
    {
        let line = format!(
            "bytes {p:.0}% used ({} of {}); fix: `mount -o remount,size={} {q}` (if RAM allows), or delete the largest files below",
            fmt_bytes(u),
            fmt_bytes(t),
            crate::units::tmpfs_size_option(t.saturating_mul(2))
        );
        prose(s, "  ", Some(Tone::Bad), &line);
    }
}

fn mount_detail(s: &mut String, m: &MountTop, sort: SortBy) {
    s.push('\n');
    prose(s, "", Some(Tone::Strong), &safe(&m.mountpoint));
    full_line(s, m);
    if !m.by_owner.is_empty() {
        let owners: Vec<String> = m
            .by_owner
            .iter()
            .take(5)
            .map(|o| {
                let who = o.user.clone().unwrap_or_else(|| format!("uid {}", o.uid));
                format!(
                    "{} {} ({} inodes)",
                    safe(&who),
                    fmt_bytes(o.bytes),
                    fmt_count(o.inodes)
                )
            })
            .collect();
        prose(
            s,
            "  ",
            None,
            &format!("owners:       {}", owners.join(", ")),
        );
    }
    if !m.by_dir.is_empty() {
        let mut by_dir: Vec<&super::DirUse> = m.by_dir.iter().collect();
        if sort == SortBy::Inodes || inode_percent(m).is_some_and(|p| p >= 90.0) {
            by_dir.sort_by_key(|d| std::cmp::Reverse(d.inodes));
        }
        let dirs: Vec<String> = by_dir
            .iter()
            .take(5)
            .map(|d| {
                if d.unreadable {
                    format!("{}: unreadable", safe(&d.path))
                } else if d.unreadable_dirs > 0 {
                    format!(
                        "{} >= {} ({}; {} dirs unreadable)",
                        safe(&d.path),
                        fmt_bytes(d.bytes),
                        fmt_count(d.inodes),
                        d.unreadable_dirs
                    )
                } else {
                    format!(
                        "{} {} ({})",
                        safe(&d.path),
                        fmt_bytes(d.bytes),
                        fmt_count(d.inodes)
                    )
                }
            })
            .collect();
        prose(s, "  ", None, &format!("largest dirs: {}", dirs.join(", ")));
    }
    if !m.largest_files.is_empty() {
        let _ = writeln!(s, "  largest files:");
        for f in m.largest_files.iter().take(5) {
            let held = if f.open_by.is_empty() {
                String::new()
            } else {
                let who: Vec<String> = f
                    .open_by
                    .iter()
                    .take(3)
                    .map(|o| format!("pid {} ({})", o.pid, safe(&o.comm)))
                    .collect();
                format!(", open by {}", who.join(", "))
            };
            let line = format!(
                "{:>10}  {}  ({}{held})",
                fmt_bytes(f.bytes),
                safe(&f.path),
                safe(&f.owner)
            );
            prose(s, "    ", None, &line);
        }
    }
    for d in m.deleted_open.iter().take(5) {
        let line = format!(
            "deleted, still open: {} by pid {} ({}) fd {}, was {}; fix: `: > /proc/{}/fd/{}` frees it without a restart, or restart pid {}",
            fmt_bytes(d.bytes),
            d.pid,
            safe(&d.comm),
            d.fd,
            safe(&d.path),
            d.pid,
            d.fd,
            d.pid
        );
        prose(s, "  ", None, &line);
    }
    if !m.open_by.is_empty() {
        let who: Vec<String> = m
            .open_by
            .iter()
            .take(5)
            .map(|h| {
                format!(
                    "{} ({}) {} {}",
                    h.pid,
                    safe(&h.comm),
                    if h.files == 1 {
                        "1 file".to_string()
                    } else {
                        format!("{} files", h.files)
                    },
                    fmt_bytes(h.bytes)
                )
            })
            .collect();
        prose(s, "  ", None, &format!("held open by: {}", who.join(", ")));
    }
    if m.unreadable_dirs > 0 {
        let line = format!(
            "{} directories could not be read (run as root to count them)",
            m.unreadable_dirs
        );
        prose(s, "  ", None, &line);
    }
}
/// The mounts the view shows, in its order: the one it is filtered to, or
/// all, by bytes (the snapshot's order), inodes or growth.
fn ordered<'a>(r: &'a TopReport, view: &View) -> Vec<&'a MountTop> {
    let mut ms: Vec<&MountTop> = r
        .mounts
        .iter()
        .filter(|m| view.only.as_ref().is_none_or(|o| *o == m.mountpoint))
        .collect();
    match view.sort {
        SortBy::Bytes => {}
        SortBy::Inodes => ms.sort_by_key(|m| std::cmp::Reverse(m.inodes_used)),
        SortBy::Growth => ms.sort_by(|a, b| {
            let g = |m: &MountTop| m.growth_bytes_per_s.unwrap_or(f64::NEG_INFINITY);
            g(b).total_cmp(&g(a))
        }),
    }
    ms
}

/// The mount table and what must be read with it (what could not be seen,
/// PATHs on disk): the part of the report the refreshing view always shows.
fn head(s: &mut String, r: &TopReport, mounts: &[&MountTop]) {
    if r.mounts.is_empty() && r.paths_not_ram_backed.is_empty() {
        let _ = writeln!(s, "No tmpfs or ramfs mount.");
    } else if !mounts.is_empty() {
        let _ = writeln!(s, "{}", mounts_table(mounts));
        if r.unreadable_processes > 0 {
            let line = format!(
                "deleted-but-open: unknown, {} processes unreadable — run as root to see them",
                r.unreadable_processes
            );
            prose(s, "", Some(Tone::Warn), &line);
        }
    }
    for p in &r.paths_not_ram_backed {
        let line = format!(
            "{} is on {} ({} mounted at {}), a disk, not RAM: top shows RAM-backed mounts only \
             (`tmpfsctl top` lists them all; `du -x -d1 {}` shows that disk's use).",
            safe(&p.path),
            safe(&p.fstype),
            safe(&p.source),
            safe(&p.mountpoint),
            crate::term::shell_word(&p.mountpoint)
        );
        prose(s, "", Some(Tone::Warn), &line);
    }
}

fn memory_outside_mounts(s: &mut String, r: &TopReport) {
    if !r.memfd.is_empty() {
        let _ = writeln!(
            s,
            "\n{}",
            paint(Tone::Strong, "memfd (anonymous RAM files)")
        );
        for f in r.memfd.iter().take(5) {
            let names: Vec<String> = f.names.iter().map(|n| safe(n).into_owned()).collect();
            let line = format!(
                "pid {} ({}): {} in {} fds [{}]",
                f.pid,
                safe(&f.comm),
                fmt_bytes(f.bytes),
                f.fds.len(),
                names.join(", ")
            );
            prose(s, "  ", None, &line);
        }
    }
    if !r.sysv_shm.is_empty() {
        let _ = writeln!(s, "\n{}", paint(Tone::Strong, "SysV shared memory"));
        for g in &r.sysv_shm {
            let line = format!(
                "key {:#x} id {}: {} (resident {}), uid {}, {} attached",
                g.key,
                g.id,
                fmt_bytes(g.bytes),
                opt(g.rss_bytes, "?"),
                g.uid,
                g.attached
            );
            prose(s, "  ", None, &line);
        }
    }
}

/// Who a cgroup belongs to: its pod, container and unit, or (when its path
/// names none) the first of its processes.
fn belongs_to(c: &super::CgroupTop) -> String {
    let m = &c.memory;
    let named = [
        m.pod.as_ref().map(|p| format!("pod {p}")),
        m.container
            .as_ref()
            .map(|p| format!("container {}", &p[..p.len().min(12)])),
        m.unit.clone(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    if !named.is_empty() {
        return named;
    }
    let first = c
        .holds
        .held_files
        .iter()
        .flat_map(|f| f.held_by.first())
        .next();
    match (first, c.holds.processes) {
        (Some(h), n) if n > 1 => format!("pid {} ({}) and {} more", h.pid, h.comm, n - 1),
        (Some(h), _) => format!("pid {} ({})", h.pid, h.comm),
        (None, 0) => String::new(),
        (None, n) => format!("{n} processes"),
    }
}

/// A cgroup's line under the table: the mounts and largest files its
/// processes hold, each file with a holder.
fn holds_line(c: &super::CgroupTop) -> Option<String> {
    let h = &c.holds;
    if h.held_files.is_empty() {
        return None;
    }
    let mounts: Vec<String> = h
        .held_mounts
        .iter()
        .take(3)
        .map(|m| {
            format!(
                "{} ({} {}, {})",
                safe(&m.mountpoint),
                m.files,
                if m.files == 1 { "file" } else { "files" },
                fmt_bytes(m.bytes)
            )
        })
        .collect();
    let files: Vec<String> = h
        .held_files
        .iter()
        .take(3)
        .map(|f| {
            let how = f.held_by.first().map_or(String::new(), |b| {
                let by = match b.fd {
                    Some(fd) => format!("open by pid {} ({}) fd {fd}", b.pid, safe(&b.comm)),
                    None => format!("mapped by pid {} ({})", b.pid, safe(&b.comm)),
                };
                if f.holders > 1 {
                    format!("{by} and {} more", f.holders - 1)
                } else {
                    by
                }
            });
            format!(
                "{}{} ({}, {how})",
                safe(&f.path),
                if f.deleted { " (deleted)" } else { "" },
                opt(f.bytes, "size unknown")
            )
        })
        .collect();
    let on = if mounts.is_empty() {
        String::new()
    } else {
        format!(" on {}", mounts.join(", "))
    };
    Some(format!(
        "{} holds{on}: {}",
        safe(&c.memory.path),
        files.join(", ")
    ))
}

fn cgroups_table(s: &mut String, r: &TopReport) {
    if r.cgroups.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n{}", paint(Tone::Strong, "cgroups charged with shmem"));
    let mut t = crate::render::table(&["cgroup", "shmem", "memory", "limit", "belongs to"]);
    let shown = &r.cgroups[..r.cgroups.len().min(10)];
    for c in shown {
        let m = &c.memory;
        t.add_row(vec![
            format!("{} (v{})", safe(&m.path), m.cgroup_version),
            fmt_bytes(m.shmem_bytes),
            opt(m.memory_current_bytes, "?"),
            opt(m.memory_limit_bytes, "none"),
            safe(&belongs_to(c)).into_owned(),
        ]);
    }
    crate::render::fit_to_terminal(&mut t);
    let _ = writeln!(s, "{t}");
    let lines: Vec<String> = shown.iter().filter_map(holds_line).collect();
    for l in &lines {
        prose(s, "  ", None, l);
    }
    prose(
        s,
        "  ",
        Some(Tone::Dim),
        "A cgroup is linked to the RAM-backed files its processes hold open (`tmpfsctl explain PATH --cgroup CGROUP` \
         also reads what they map); files they wrote and closed stay charged to it, but the kernel does not say \
         which (each mount's largest files are above).",
    );
}

fn shmem_summary(s: &mut String, r: &TopReport) {
    let pct = crate::units::fmt_share(r.accounted_bytes, r.shmem_bytes);
    s.push('\n');
    let line = format!(
        "Shmem (meminfo): {}; attributed above: {}{pct}; unattributed: {}",
        fmt_bytes(r.shmem_bytes),
        fmt_bytes(r.accounted_bytes),
        fmt_bytes(r.unattributed_bytes)
    );
    prose(s, "", None, &line);
    for n in &r.notes {
        prose(s, "  ", Some(Tone::Dim), n);
    }
}

/// Everything below the mount table: per mount, then what lives outside
/// mounts. Filtered to one mount, only that mount's block.
fn detail(s: &mut String, r: &TopReport, mounts: &[&MountTop], view: &View) {
    for m in mounts.iter().filter(|m| wants_detail(m)) {
        mount_detail(s, m, view.sort);
    }
    if view.only.is_some() {
        return;
    }
    memory_outside_mounts(s, r);
    cgroups_table(s, r);
    shmem_summary(s, r);
}

impl Report for TopOutcome {
    type Document<'a> = &'a TopReport;

    /// The live view drew its own screens: no document.
    fn document(&self) -> Option<&TopReport> {
        match self {
            TopOutcome::Snapshot(r) => Some(r),
            TopOutcome::Live(_) => None,
        }
    }

    fn render(&self, f: Format) -> Option<anyhow::Result<Vec<u8>>> {
        let TopOutcome::Snapshot(r) = self else {
            // The live view drew its own screens.
            return Some(Ok(Vec::new()));
        };
        match f {
            Format::TEXT => command::text(text(r)),
            Format::PROM => command::text(super::prom::text(r)),
            _ => None,
        }
    }

    /// A PATH on disk is a problem the user asked about: top cannot show it.
    fn exit_code(&self) -> ExitCode {
        match self {
            TopOutcome::Snapshot(r) => ExitCode::problem_if(!r.paths_not_ram_backed.is_empty()),
            TopOutcome::Live(s) => s.exit_code(),
        }
    }
}

/// The whole report, as `top --once` prints it.
pub fn text(r: &TopReport) -> String {
    let view = View::default();
    let mounts = ordered(r, &view);
    let mut s = String::new();
    head(&mut s, r, &mounts);
    detail(&mut s, r, &mounts, &view);
    s
}

const KEYS: &[(&str, &str)] = &[
    ("b", "sort mounts by bytes used"),
    (
        "i",
        "sort mounts by inodes used (directories by file count)",
    ),
    ("g", "sort mounts by growth since the last refresh"),
    ("f", "show one mount; again for the next one, then all"),
    ("a", "all mounts again"),
    ("? h", "this help; any key returns"),
    ("q", "quit (Ctrl-C too)"),
];

/// One screenful for the refreshing view: the title, the mount table, then
/// as many detail lines as fit in `rows`, each line at most `cols` wide
/// (wrapped by the same fitting as `--once`), the last line saying what was
/// left out. Lines end by clearing the rest of the row, so a frame drawn
/// over the last one leaves nothing of it behind.
pub fn frame(r: &TopReport, view: &View, interval: Duration, cols: usize, rows: usize) -> String {
    let mut s = String::new();
    let shown = match &view.only {
        Some(m) => format!("mount {}", safe(m)),
        None => "all mounts".into(),
    };
    let title = format!(
        "every {:.1}s, sorted by {}, {shown}; ? help, q quits",
        interval.as_secs_f64(),
        view.sort.name()
    );
    let _ = writeln!(
        s,
        "{}",
        crate::render::paragraph(
            "",
            &format!("{} {title}", paint(Tone::Strong, "tmpfsctl top"))
        )
    );
    if view.help {
        let _ = writeln!(s, "\n{}", paint(Tone::Strong, "keys"));
        for (k, what) in KEYS {
            prose(&mut s, "  ", None, &format!("{k:<4} {what}"));
        }
    } else {
        let mounts = ordered(r, view);
        head(&mut s, r, &mounts);
        detail(&mut s, r, &mounts, view);
    }
    let rows = rows.max(2);
    let lines: Vec<&str> = s.lines().collect();
    // A line the terminal would still wrap takes more than one row.
    let height = |l: &str| fit::width(l).div_ceil(cols.max(1)).max(1);
    let mut out: Vec<&str> = Vec::new();
    let mut used = 0;
    for (i, l) in lines.iter().enumerate() {
        let left = lines.len() - i;
        let room = if left > 1 { rows - 1 } else { rows };
        if used + height(l) > room {
            break;
        }
        used += height(l);
        out.push(l);
    }
    let more = lines.len() - out.len();
    let tail = (more > 0).then(|| {
        paint(
            Tone::Dim,
            &format!("… {more} more lines: f shows one mount at a time, ? lists the keys"),
        )
    });
    let mut f = String::from("\x1b[H");
    for (i, l) in out.iter().copied().chain(tail.as_deref()).enumerate() {
        if i > 0 {
            f.push_str("\x1b[K\n");
        }
        f.push_str(l);
    }
    // No newline after the last row: the screen must not scroll.
    f.push_str("\x1b[K\x1b[J");
    f
}
