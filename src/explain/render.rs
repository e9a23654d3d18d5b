//! Human output for `explain`: the answer first, then its numbers, then what
//! the next tmpfiles clean would delete.

use std::fmt::Write;

use super::ExplainReport;
use crate::command::{self, ExitCode, Format, Report};
use crate::render::color::{Tone, paint};
use crate::term::safe;
use crate::units::fmt_bytes;

/// A line of prose wrapped to the terminal at words, as status wraps.
fn prose(s: &mut String, indent: &str, tone: Option<Tone>, text: &str) {
    crate::render::push_paragraph(s, indent, tone, text);
}

impl Report for ExplainReport {
    command::its_own_document!();

    fn render(&self, f: Format) -> Option<anyhow::Result<Vec<u8>>> {
        match f {
            Format::TEXT => command::text(text(self)),
            _ => None,
        }
    }

    fn exit_code(&self) -> ExitCode {
        ExitCode::problem_if(self.binds)
    }
}

pub fn text(r: &ExplainReport) -> String {
    let mut s = String::new();
    let first = r.causes.iter().find(|c| c.binds).map(|c| c.kind);
    let verdict = match first {
        Some(k) => paint(Tone::Bad, k.verdict()),
        None => paint(Tone::Good, "a write here succeeds"),
    };
    let line = format!(
        "{}: {} ({} at {})",
        safe(&r.resolved),
        verdict,
        safe(&r.fstype),
        safe(&r.mountpoint)
    );
    prose(&mut s, "", None, &line);
    for (n, c) in r.causes.iter().enumerate() {
        let tag = if c.binds {
            paint(Tone::Bad, c.kind.name())
        } else {
            paint(Tone::Strong, c.kind.name())
        };
        let lead = if n == 0 && c.binds {
            "binds first"
        } else if c.binds {
            "also binds"
        } else {
            ""
        };
        let _ = writeln!(s, "\n{tag} {}", paint(Tone::Dim, lead));
        prose(&mut s, "  ", None, &safe(&c.detail));
        prose(&mut s, "  ", None, &format!("fix: {}", safe(&c.fix)));
    }
    if !r.largest_files.is_empty() {
        let _ = writeln!(s, "\n{}", paint(Tone::Strong, "largest files"));
        for f in r.largest_files.iter().take(5) {
            let line = format!(
                "{:>10}  {}  ({})",
                fmt_bytes(f.bytes),
                safe(&f.path),
                safe(&f.owner)
            );
            prose(&mut s, "  ", None, &line);
        }
    }
    if let Some(h) = r.hidden_below.as_ref().filter(|h| h.files > 0) {
        let line = format!(
            "{} files ({}) are hidden below this mount, on the filesystem it covers: they use that disk, out of sight of ls and du",
            h.files,
            fmt_bytes(h.bytes)
        );
        s.push('\n');
        prose(&mut s, "", Some(Tone::Warn), &line);
    } else if let Some(why) = &r.hidden_below_unknown {
        s.push('\n');
        prose(
            &mut s,
            "",
            None,
            &format!("hidden below this mount: {}", safe(why)),
        );
    }
    if let Some(by) = &r.removed_at_boot_by {
        s.push('\n');
        let line = format!(
            "removed at every boot: {} — systemd-tmpfiles --remove (systemd-tmpfiles-setup.service) deletes it whatever its age; x/X rules do not protect it",
            safe(by)
        );
        prose(&mut s, "", Some(Tone::Warn), &line);
    }
    tmpfiles_text(&mut s, r);
    s
}

/// What tmpfiles.d does with PATH: the rules, what the next clean deletes,
/// what a flock keeps, when the timer runs.
fn tmpfiles_text(s: &mut String, r: &ExplainReport) {
    if r.tmpfiles_rules.is_empty() {
        s.push('\n');
        prose(
            s,
            "",
            None,
            "No tmpfiles.d rule covers this path: nothing ages it out or removes it at boot.",
        );
    } else {
        let _ = writeln!(s, "\n{}", paint(Tone::Strong, "tmpfiles.d rules"));
        for t in &r.tmpfiles_rules {
            // The age as written, with the timestamps its letters choose.
            let age = match (&t.age, &t.age_by) {
                (Some(a), Some(by)) => {
                    let span = a.rsplit(':').next().unwrap_or(a);
                    format!(" age {} ({})", safe(span), by.join(", "))
                }
                _ => String::new(),
            };
            let boot = if t.removes_at_boot {
                " removed at boot"
            } else {
                ""
            };
            let only = if t.boot_only && t.age.is_some() {
                " (boot only: the timer's clean ignores it)"
            } else {
                ""
            };
            let ignored = t
                .ignored
                .as_ref()
                .map(|w| format!(" — not used: {}", safe(w)))
                .unwrap_or_default();
            let line = format!(
                "{} {}{age}{boot}{only} ({}:{}){ignored}",
                t.kind,
                safe(&t.path),
                safe(&t.source),
                t.line
            );
            prose(s, "  ", None, &line);
        }
        if r.will_be_cleaned.is_empty() {
            let _ = writeln!(s, "  the next age clean deletes nothing under this path");
        } else {
            let total: u64 = r.will_be_cleaned.iter().map(|c| c.bytes).sum();
            let line = format!(
                "the next clean deletes {} entries ({}):",
                r.will_be_cleaned.len(),
                fmt_bytes(total)
            );
            prose(s, "  ", None, &line);
            for c in r.will_be_cleaned.iter().take(20) {
                let open: Vec<String> = c
                    .open_by
                    .iter()
                    .map(|o| format!("pid {} ({})", o.pid, safe(&o.comm)))
                    .collect();
                let open = if open.is_empty() {
                    String::new()
                } else {
                    paint(Tone::Warn, &format!(" — open now by {}", open.join(", ")))
                };
                let line = format!("{} (unused {} days){open}", safe(&c.path), c.age_s / 86_400);
                prose(s, "    ", None, &line);
            }
        }
    }
    for l in &r.flock_protected {
        let line = format!(
            "{} is not cleaned, nor anything in it, while pid {} ({}) holds a flock on it: systemd-tmpfiles skips a locked directory",
            safe(&l.path),
            l.pid,
            safe(&l.comm)
        );
        prose(s, "  ", Some(Tone::Warn), &line);
    }
    match &r.tmpfiles_clean_next {
        Some(n) => {
            let line = format!("systemd-tmpfiles-clean.timer runs next: {}", safe(n));
            prose(s, "  ", None, &line);
        }
        None => {
            prose(
                s,
                "  ",
                None,
                "(no systemd running here: no timer cleans by these rules unless something else runs systemd-tmpfiles --clean)",
            );
        }
    }
}
