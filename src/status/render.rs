//! Human output for `status`.

use std::fmt::Write;

use super::{MountReport, StatusReport, UsageSource};
use crate::command::{self, Format, Report};
use crate::render::color::{paint_fullness, warning_line, warnings_heading};
use crate::term::safe;
use crate::units::{fmt_bytes, fmt_count};

fn opt_bytes(b: Option<u64>, none: &str) -> String {
    b.map(fmt_bytes).unwrap_or_else(|| none.to_string())
}

/// How much of the mount table fits: piped output and wide terminals get
/// every column; below 120 columns the options column keeps only the tmpfs
/// options that change behaviour (huge=, noswap, quotas, ro); below 100 the
/// avail column (size minus used) goes too.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layout {
    Narrow,
    Medium,
    Full,
}

impl Layout {
    fn for_width(w: Option<usize>) -> Layout {
        match w {
            Some(w) if w < 100 => Layout::Narrow,
            Some(w) if w < 120 => Layout::Medium,
            _ => Layout::Full,
        }
    }
}

fn options_cell(m: &MountReport, layout: Layout) -> String {
    let shown: Vec<&String> = if layout == Layout::Full {
        m.key_options.iter().collect()
    } else {
        m.key_options
            .iter()
            .filter(|o| {
                *o == "ro" || *o == "noswap" || o.starts_with("huge=") || m.quota.contains(o)
            })
            .collect()
    };
    let joined: Vec<&str> = shown.iter().map(|o| o.as_str()).collect();
    safe(&joined.join(" ")).into_owned()
}

fn mounts_table(r: &StatusReport, layout: Layout) -> String {
    let mut header = vec!["mount point", "type", "size", "used"];
    if layout > Layout::Narrow {
        header.push("avail");
    }
    header.extend(["use%", "inodes", "options"]);
    let mut t = crate::render::table(&header);
    let mut walked = false;
    for m in &r.mounts {
        // "no limit" can wrap between its words where a narrow terminal
        // needs it; piped output keeps the one word scripts grep for.
        let limitless = match (m.fstype.as_str(), layout) {
            (_, Layout::Narrow | Layout::Medium) => "no limit",
            ("ramfs", _) => "unlimited",
            _ => "none",
        };
        let mut used = opt_bytes(m.used_bytes, "?");
        if m.usage_source == UsageSource::Walk {
            used.push('*');
            walked = true;
        }
        let mut row = vec![
            safe(&m.mountpoint).into_owned(),
            safe(&m.fstype).into_owned(),
            opt_bytes(m.size_bytes, limitless),
            used,
        ];
        if layout > Layout::Narrow {
            row.push(opt_bytes(m.avail_bytes, "?"));
        }
        row.extend([
            paint_fullness(
                m.use_percent,
                &m.use_percent
                    .map(|p| format!("{p:.0}%"))
                    .unwrap_or_else(|| "-".into()),
            ),
            // Out of inodes is as full as out of bytes: the same colour.
            paint_fullness(
                m.inodes_use_percent,
                &format!(
                    "{} / {}",
                    m.inodes_used.map(fmt_count).unwrap_or_else(|| "?".into()),
                    m.inodes_total
                        .map(fmt_count)
                        .unwrap_or_else(|| match layout {
                            Layout::Full => "unlimited".into(),
                            _ => "no limit".into(),
                        })
                ),
            ),
            options_cell(m, layout),
        ]);
        t.add_row(row);
    }
    crate::render::fit_to_terminal(&mut t);
    let mut s = format!("{t}\n");
    if walked {
        s.push_str(&crate::render::paragraph(
            "  ",
            "* counted by walking the files: ramfs keeps no usage figure for statfs (df shows 0).",
        ));
        s.push('\n');
    }
    s
}

impl Report for StatusReport {
    command::its_own_document!();

    fn render(&self, f: Format) -> Option<anyhow::Result<Vec<u8>>> {
        match f {
            Format::TEXT => command::text(text(self)),
            _ => None,
        }
    }
}

pub fn text(r: &StatusReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "RAM-backed filesystems");
    if r.mounts.is_empty() {
        let _ = writeln!(s, "  (none)");
    } else {
        let layout = Layout::for_width(crate::render::terminal_columns());
        s.push_str(&mounts_table(r, layout));
    }

    let _ = writeln!(s, "\nTemp directories");
    let mut t = crate::render::table(&[
        "path",
        "mount",
        "type",
        "RAM?",
        "data",
        "inodes",
        "configured by",
    ]);
    for p in &r.paths {
        let mut how = Vec::new();
        if let Some(f) = &p.fstab {
            how.push(format!(
                "fstab: {} {} {}",
                safe(&f.spec),
                safe(&f.vfstype),
                safe(&f.options.join(","))
            ));
        }
        how.push(format!("{}: {}", safe(&p.systemd_unit), p.systemd_state));
        for d in &p.systemd_dropins {
            how.push(format!("drop-in {}", safe(d)));
        }
        let mut data = match p.used_bytes {
            Some(b) => fmt_bytes(b),
            None => "not counted".into(),
        };
        if p.unreadable_dirs > 0 {
            data.push_str(&format!(" (+{} unreadable dirs)", p.unreadable_dirs));
        }
        t.add_row(vec![
            safe(&p.path).into_owned(),
            safe(&p.mountpoint).into_owned(),
            safe(&p.fstype).into_owned(),
            if p.ram_backed { "yes" } else { "no" }.to_string(),
            data,
            p.inodes.map(fmt_count).unwrap_or_else(|| "-".into()),
            how.join("\n"),
        ]);
    }
    crate::render::fit_to_terminal(&mut t);
    let _ = writeln!(s, "{t}");

    let m = &r.memory;
    let _ = writeln!(s, "\nMemory");
    let para = |s: &mut String, text: String| {
        let _ = writeln!(s, "{}", crate::render::paragraph("  ", &text));
    };
    para(
        &mut s,
        format!(
            "RAM {} total, {} available; Shmem {}; swap {} total, {} free",
            fmt_bytes(m.mem_total_bytes),
            fmt_bytes(m.mem_available_bytes),
            fmt_bytes(m.shmem_bytes),
            fmt_bytes(m.swap_total_bytes),
            fmt_bytes(m.swap_free_bytes)
        ),
    );
    let ramfs = if m.ramfs_used_bytes > 0 {
        format!(" ({} of it in ramfs)", fmt_bytes(m.ramfs_used_bytes))
    } else {
        String::new()
    };
    para(
        &mut s,
        format!(
            "tmpfs/ramfs hold {} now{ramfs}; tmpfs limits add up to {}",
            fmt_bytes(m.ram_fs_used_bytes),
            fmt_bytes(m.tmpfs_limits_bytes)
        ),
    );
    for n in &m.notes {
        para(&mut s, n.clone());
    }
    s.push_str(&super::kernel::text(&r.zram, &r.swap, &r.tmpfs_features));
    if !r.warnings.is_empty() {
        let _ = writeln!(s, "\n{}", warnings_heading());
        for w in &r.warnings {
            // Messages quote mount points and parsed lines as they are.
            para(&mut s, warning_line(&w.code, &safe(&w.message)));
        }
    }
    let _ = writeln!(s, "\n(sizes in binary units: KiB, MiB, GiB)");
    s
}
