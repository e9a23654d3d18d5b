//! Human output for `status`.

use std::fmt::Write;

use super::StatusReport;
use crate::render::term::safe;
use crate::units::{fmt_bytes, fmt_count};

fn opt_bytes(b: Option<u64>, none: &str) -> String {
    b.map(fmt_bytes).unwrap_or_else(|| none.to_string())
}

pub fn text(r: &StatusReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "RAM-backed filesystems");
    if r.mounts.is_empty() {
        let _ = writeln!(s, "  (none)");
    } else {
        let mut t = crate::render::table(&[
            "mount point",
            "type",
            "size",
            "used",
            "avail",
            "use%",
            "inodes",
            "options",
        ]);
        // Paths are the key: wrap the options, never the mount point.
        if let Some(c) = t.column_mut(0) {
            c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
        }
        for m in &r.mounts {
            let limitless = if m.fstype == "ramfs" {
                "unlimited"
            } else {
                "none"
            };
            t.add_row(vec![
                safe(&m.mountpoint).into_owned(),
                safe(&m.fstype).into_owned(),
                opt_bytes(m.size_bytes, limitless),
                opt_bytes(m.used_bytes, "?"),
                opt_bytes(m.avail_bytes, "?"),
                m.use_percent
                    .map(|p| format!("{p:.0}%"))
                    .unwrap_or_else(|| "-".into()),
                format!(
                    "{} / {}",
                    m.inodes_used.map(fmt_count).unwrap_or_else(|| "?".into()),
                    m.inodes_total
                        .map(fmt_count)
                        .unwrap_or_else(|| "unlimited".into())
                ),
                safe(&m.key_options.join(" ")).into_owned(),
            ]);
        }
        crate::render::fit_to_terminal(&mut t);
        let _ = writeln!(s, "{t}");
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
        let mut data = fmt_bytes(p.used_bytes);
        if p.unreadable_dirs > 0 {
            data.push_str(&format!(" (+{} unreadable dirs)", p.unreadable_dirs));
        }
        t.add_row(vec![
            safe(&p.path).into_owned(),
            safe(&p.mountpoint).into_owned(),
            safe(&p.fstype).into_owned(),
            if p.ram_backed { "yes" } else { "no" }.to_string(),
            data,
            fmt_count(p.inodes),
            how.join("\n"),
        ]);
    }
    crate::render::fit_to_terminal(&mut t);
    let _ = writeln!(s, "{t}");

    let m = &r.memory;
    let _ = writeln!(s, "\nMemory");
    let _ = writeln!(
        s,
        "  RAM {} total, {} available; Shmem {}; swap {} total, {} free",
        fmt_bytes(m.mem_total_bytes),
        fmt_bytes(m.mem_available_bytes),
        fmt_bytes(m.shmem_bytes),
        fmt_bytes(m.swap_total_bytes),
        fmt_bytes(m.swap_free_bytes)
    );
    let _ = writeln!(
        s,
        "  tmpfs/ramfs hold {} now; tmpfs limits add up to {}",
        fmt_bytes(m.ram_fs_used_bytes),
        fmt_bytes(m.tmpfs_limits_bytes)
    );
    for n in &m.notes {
        let _ = writeln!(s, "  {n}");
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(s, "\nWarnings");
        for w in &r.warnings {
            // Messages quote mount points and parsed lines as they are.
            let _ = writeln!(s, "  [{}] {}", w.code, safe(&w.message));
        }
    }
    let _ = writeln!(s, "\n(sizes in binary units: KiB, MiB, GiB)");
    s
}
