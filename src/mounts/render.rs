//! Human output for `plan` and `apply`.

use std::fmt::Write;

use super::plan::{Boot, MountState, Plan};
use super::{ApplyReport, RevertReport};
use crate::command::{self, ExitCode, Format, Report};
use crate::render::color::{self, Tone, paint};
use crate::term::safe;
use crate::units::{fmt_bytes, fmt_count};

impl Report for Plan {
    command::its_own_document!();

    fn render(&self, f: Format) -> Option<anyhow::Result<Vec<u8>>> {
        match f {
            Format::TEXT => command::text(plan_text(self)),
            _ => None,
        }
    }

    /// Apply would refuse: a problem the user asked about.
    fn exit_code(&self) -> ExitCode {
        ExitCode::problem_if(!self.blockers.is_empty())
    }
}

impl Report for ApplyReport {
    command::its_own_document!();

    fn render(&self, f: Format) -> Option<anyhow::Result<Vec<u8>>> {
        match f {
            Format::TEXT => command::text(apply_text(self)),
            _ => None,
        }
    }
}

impl Report for RevertReport {
    command::its_own_document!();

    /// The text is what changed, a line each.
    fn render(&self, f: Format) -> Option<anyhow::Result<Vec<u8>>> {
        match f {
            Format::TEXT => command::text(self.changes.iter().map(|c| format!("{c}\n")).collect()),
            _ => None,
        }
    }
}

pub fn plan_text(p: &Plan) -> String {
    let mut s = String::new();
    let para = |s: &mut String, indent: &str, text: String| {
        let _ = writeln!(s, "{}", crate::render::paragraph(indent, &text));
    };
    para(
        &mut s,
        "",
        format!(
            "Plan for {} (now on {}: {} in {} {}; RAM {}, swap {})",
            p.dir,
            p.dir_fstype,
            fmt_bytes(p.used_bytes),
            fmt_count(p.inodes),
            crate::units::noun(p.inodes, "inode", "inodes"),
            fmt_bytes(p.mem_total_bytes),
            fmt_bytes(p.swap_total_bytes)
        ),
    );
    // What a reboot would delete is said before anything else.
    for w in p.warnings.iter().filter(|w| w.code == "outlives_reboot") {
        para(&mut s, "", color::warning_line(&w.code, &w.message));
    }
    if let Some(c) = &p.current {
        let _ = writeln!(
            s,
            "Mounted at {} now: {} ({})",
            p.dir,
            c.fstype,
            c.options.join(",")
        );
    }
    let _ = writeln!(s);
    let mut t = crate::render::table(&["option", "why"]);
    for o in &p.options {
        t.add_row(vec![o.option.clone(), o.reason.clone()]);
    }
    crate::render::fit_to_terminal(&mut t);
    let _ = writeln!(s, "{t}");
    let _ = writeln!(s, "\nMount options: {}", p.mount_options);
    let _ = writeln!(
        s,
        "Live: {}",
        match p.mount_state {
            MountState::NotMounted => "mount a new tmpfs over the directory, contents copied",
            MountState::Same => "already mounted like this; nothing to do",
            MountState::SizeDiffers => "already a tmpfs; only the size differs (apply --resize)",
            MountState::Conflict => "already mounted with other options (see blockers)",
        }
    );
    let _ = writeln!(s);
    match p.persist.via {
        Boot::None => para(&mut s, "", format!("Not persisted ({})", p.persist.why)),
        Boot::Fstab => {
            para(
                &mut s,
                "",
                format!(
                    "Persist via fstab ({}): {:?} in {}",
                    p.persist.why, p.persist.action, p.persist.path
                ),
            );
            let _ = writeln!(s, "  {}", p.persist.content);
        }
        Boot::Systemd => {
            para(
                &mut s,
                "",
                format!(
                    "Persist via systemd ({}): {}",
                    p.persist.why, p.persist.path
                ),
            );
            for l in p.persist.content.lines() {
                let _ = writeln!(s, "  {l}");
            }
        }
    }
    if p.fstype == super::plan::FsKind::Ramfs {
        let _ = writeln!(s, "\nWhat apply would do:");
    } else {
        let line = format!("Steps `{}` takes:", p.apply_command);
        if crate::render::terminal_columns().is_none_or(|w| line.chars().count() <= w) {
            let _ = writeln!(s, "\n{line}");
        } else {
            // Too long for the terminal: the command on lines of its own, to copy.
            let _ = writeln!(s, "\nSteps this command takes:");
            let _ = writeln!(s, "{}", crate::render::command("  ", &p.apply_command));
        }
    }
    for (i, st) in p.steps.iter().enumerate() {
        para(&mut s, "  ", format!("{}. {st}", i + 1));
    }
    if !p.busy.is_empty() {
        let _ = writeln!(s, "\nProcesses using {}:", p.dir);
        // A busy /tmp can have hundreds of users: a screenful is enough, --json has all.
        const SHOW: usize = 10;
        const USES: usize = 3;
        for b in p.busy.iter().take(SHOW) {
            let mut uses = b
                .uses
                .iter()
                .take(USES)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if b.uses.len() > USES {
                uses.push_str(&format!(", ... {} more", b.uses.len() - USES));
            }
            let _ = writeln!(s, "  {} {}: {uses}", b.pid, safe(&b.comm));
        }
        if p.busy.len() > SHOW {
            let _ = writeln!(
                s,
                "  ... and {} more processes (--json lists all)",
                p.busy.len() - SHOW
            );
        }
    }
    if p.warnings.iter().any(|w| w.code != "outlives_reboot") {
        let _ = writeln!(s, "\n{}", color::warnings_heading());
        for w in p.warnings.iter().filter(|w| w.code != "outlives_reboot") {
            para(&mut s, "  ", color::warning_line(&w.code, &w.message));
        }
    }
    if !p.blockers.is_empty() {
        let _ = writeln!(s, "\n{}", paint(Tone::Bad, "apply would refuse:"));
        for b in &p.blockers {
            para(&mut s, "  ", format!("- {b}"));
        }
    }
    let _ = writeln!(s, "\n(sizes in binary units: KiB, MiB, GiB)");
    s
}

pub fn apply_text(r: &ApplyReport) -> String {
    let mut s = String::new();
    if r.changes.is_empty() {
        // Nothing was done, so there is nothing to undo either.
        let _ = writeln!(
            s,
            "{}",
            crate::render::paragraph(
                "",
                &format!(
                    "Nothing to change: {} already is on tmpfs as planned.",
                    crate::term::safe(&r.dir)
                )
            )
        );
        return s;
    }
    let _ = writeln!(s, "Changed:");
    for c in &r.changes {
        let _ = writeln!(s, "{}", crate::render::paragraph("  ", &format!("- {c}")));
    }
    if let Some(n) = r.verified_entries {
        let _ = writeln!(
            s,
            "{}",
            crate::render::paragraph(
                "",
                &format!(
                    "Verified: {n} entries identical in the tmpfs (type, mode, owner, ns mtime, xattrs, content, links)"
                )
            )
        );
    }
    let undo = r.undo.clone().unwrap_or_else(|| {
        format!(
            "tmpfsctl revert {} --keep-data{}",
            crate::term::shell_word(&r.dir),
            r.follow_up
        )
    });
    if crate::render::terminal_columns().is_none_or(|w| undo.chars().count() + 11 <= w) {
        let _ = writeln!(s, "Undo with: {undo}");
    } else {
        let _ = writeln!(s, "Undo with:\n{}", crate::render::command("  ", &undo));
    }
    s
}
