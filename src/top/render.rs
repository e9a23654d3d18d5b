//! Human output for `top`: one table of mounts, then per mount what holds its
//! bytes, then what lives outside any mount, then the Shmem reconciliation.

use std::fmt::Write;
use std::time::Duration;

use super::{MountTop, TopReport};
use crate::render::color::{Tone, paint, paint_fullness};
use crate::render::term::safe;
use crate::units::{fmt_bytes, fmt_count};

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
        Some(g) if g < 0.0 => format!("-{}/s", fmt_bytes((-g) as u64)),
        Some(g) => format!("+{}/s", fmt_bytes(g as u64)),
    }
}

fn mounts_table(r: &TopReport) -> String {
    let mut t = crate::render::table(&[
        "mount", "type", "used", "size", "use%", "inodes", "deleted", "growth", "full in",
    ]);
    // Numbers never wrap: a long mount point makes the table wider instead.
    for c in t.column_iter_mut() {
        c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
    }
    for m in &r.mounts {
        let pct = match (m.used_bytes, m.size_bytes) {
            (Some(u), Some(s)) if s > 0 => {
                let p = u as f64 * 100.0 / s as f64;
                paint_fullness(Some(p), &format!("{p:.0}%"))
            }
            _ => "-".into(),
        };
        t.add_row(vec![
            safe(&m.mountpoint).into_owned(),
            m.fstype.clone(),
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
            growth(m),
            m.time_to_full_s.map(fmt_secs).unwrap_or_else(|| "-".into()),
        ]);
    }
    crate::render::fit_to_terminal(&mut t);
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
    let q = crate::render::term::shell_word(&m.mountpoint);
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
        let _ = writeln!(s, "  {}", paint(Tone::Bad, &line));
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
        let _ = writeln!(s, "  {}", paint(Tone::Bad, &line));
    }
}

fn mount_detail(s: &mut String, m: &MountTop) {
    let _ = writeln!(s, "\n{}", paint(Tone::Strong, &safe(&m.mountpoint)));
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
        let _ = writeln!(s, "  owners:       {}", owners.join(", "));
    }
    if !m.by_dir.is_empty() {
        let mut by_dir: Vec<&super::DirUse> = m.by_dir.iter().collect();
        if inode_percent(m).is_some_and(|p| p >= 90.0) {
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
        let _ = writeln!(s, "  largest dirs: {}", dirs.join(", "));
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
            let _ = writeln!(
                s,
                "    {:>10}  {}  ({}{held})",
                fmt_bytes(f.bytes),
                safe(&f.path),
                safe(&f.owner)
            );
        }
    }
    for d in m.deleted_open.iter().take(5) {
        let _ = writeln!(
            s,
            "  deleted, still open: {} by pid {} ({}) fd {}, was {}; fix: `: > /proc/{}/fd/{}` frees it without a restart, or restart pid {}",
            fmt_bytes(d.bytes),
            d.pid,
            safe(&d.comm),
            d.fd,
            safe(&d.path),
            d.pid,
            d.fd,
            d.pid
        );
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
        let _ = writeln!(s, "  held open by: {}", who.join(", "));
    }
    if m.unreadable_dirs > 0 {
        let _ = writeln!(
            s,
            "  {} directories could not be read (run as root to count them)",
            m.unreadable_dirs
        );
    }
}

/// The whole report; `interval` set for the refreshing view's header.
pub fn text(r: &TopReport, interval: Option<Duration>) -> String {
    let mut s = String::new();
    if let Some(d) = interval {
        let _ = writeln!(
            s,
            "{}  every {:.1}s, sorted by bytes; q quits",
            paint(Tone::Strong, "tmpfsctl top"),
            d.as_secs_f64()
        );
    }
    if r.mounts.is_empty() && r.paths_not_ram_backed.is_empty() {
        let _ = writeln!(s, "No tmpfs or ramfs mount.");
    } else if r.mounts.is_empty() {
    } else {
        let _ = writeln!(s, "{}", mounts_table(r));
        if r.unreadable_processes > 0 {
            let _ = writeln!(
                s,
                "{}",
                paint(
                    Tone::Warn,
                    &format!(
                        "deleted-but-open: unknown, {} processes unreadable — run as root to see them",
                        r.unreadable_processes
                    )
                )
            );
        }
    }
    for p in &r.paths_not_ram_backed {
        let _ = writeln!(
            s,
            "{}",
            paint(
                Tone::Warn,
                &format!(
                    "{} is on {} ({} mounted at {}), a disk, not RAM: top shows RAM-backed mounts only \
                     (`tmpfsctl top` lists them all; `du -x -d1 {}` shows that disk's use).",
                    safe(&p.path),
                    safe(&p.fstype),
                    safe(&p.source),
                    safe(&p.mountpoint),
                    crate::render::term::shell_word(&p.mountpoint)
                )
            )
        );
    }
    for m in r.mounts.iter().filter(|m| wants_detail(m)) {
        mount_detail(&mut s, m);
    }
    if !r.memfd.is_empty() {
        let _ = writeln!(
            s,
            "\n{}",
            paint(Tone::Strong, "memfd (anonymous RAM files)")
        );
        for f in r.memfd.iter().take(5) {
            let names: Vec<String> = f.names.iter().map(|n| safe(n).into_owned()).collect();
            let _ = writeln!(
                s,
                "  pid {} ({}): {} in {} fds [{}]",
                f.pid,
                safe(&f.comm),
                fmt_bytes(f.bytes),
                f.fds.len(),
                names.join(", ")
            );
        }
    }
    if !r.sysv_shm.is_empty() {
        let _ = writeln!(s, "\n{}", paint(Tone::Strong, "SysV shared memory"));
        for g in &r.sysv_shm {
            let _ = writeln!(
                s,
                "  key {:#x} id {}: {} (resident {}), uid {}, {} attached",
                g.key,
                g.id,
                fmt_bytes(g.bytes),
                opt(g.rss_bytes, "?"),
                g.uid,
                g.attached
            );
        }
    }
    if !r.cgroups.is_empty() {
        let _ = writeln!(s, "\n{}", paint(Tone::Strong, "cgroups charged with shmem"));
        let mut t = crate::render::table(&["cgroup", "shmem", "memory", "limit", "belongs to"]);
        for c in r.cgroups.iter().take(10) {
            let owner = [
                c.pod.as_ref().map(|p| format!("pod {p}")),
                c.container
                    .as_ref()
                    .map(|p| format!("container {}", &p[..p.len().min(12)])),
                c.unit.clone(),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
            t.add_row(vec![
                format!("{} (v{})", safe(&c.path), c.cgroup_version),
                fmt_bytes(c.shmem_bytes),
                opt(c.memory_current_bytes, "?"),
                opt(c.memory_limit_bytes, "none"),
                safe(&owner).into_owned(),
            ]);
        }
        crate::render::fit_to_terminal(&mut t);
        let _ = writeln!(s, "{t}");
    }
    let pct = if r.shmem_bytes > 0 {
        format!(
            " ({:.0}%)",
            r.accounted_bytes as f64 * 100.0 / r.shmem_bytes as f64
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "\nShmem (meminfo): {}; attributed above: {}{pct}; unattributed: {}",
        fmt_bytes(r.shmem_bytes),
        fmt_bytes(r.accounted_bytes),
        fmt_bytes(r.unattributed_bytes)
    );
    for n in &r.notes {
        let _ = writeln!(s, "  {}", paint(Tone::Dim, n));
    }
    s
}
