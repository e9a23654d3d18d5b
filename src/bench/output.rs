//! How a bench outcome goes out in each format: the one place that picks a
//! renderer per format, apart from the renderers so that they (the table,
//! the HTML page, the A/B comparison) need not know each other. A
//! measurement is a report of its own, so a command that composes bench
//! (advise) shows it through the command contract, not bench's renderers.

use super::{BenchOutcome, BenchReport, compare, html, notes, render};
use crate::command::{self, Format, Report, text};

/// The report's charts, one SVG a workload, as an HTML fragment for a page
/// that shows the measurement among other things.
pub const CHARTS: Format = Format::new("charts");

impl Report for BenchReport {
    command::its_own_document!();

    fn render(&self, f: Format) -> Option<anyhow::Result<Vec<u8>>> {
        match f {
            Format::TEXT => text(render::table(self)),
            Format::CSV => text(render::csv(self)),
            Format::MARKDOWN => text(render::markdown(self)),
            Format::HTML => text(html::html(self)),
            CHARTS => text(html::charts(self)),
            _ => None,
        }
    }
}

impl Report for BenchOutcome {
    type Document<'a> = &'a BenchReport;

    /// An A/B comparison has no document of its own: each side has one.
    fn document(&self) -> Option<&BenchReport> {
        match self {
            BenchOutcome::Measured(r) => Some(r),
            BenchOutcome::Compared { .. } => None,
        }
    }

    fn render(&self, f: Format) -> Option<anyhow::Result<Vec<u8>>> {
        match self {
            BenchOutcome::Measured(r) => r.render(f),
            BenchOutcome::Compared {
                a,
                b,
                a_path,
                b_path,
            } => match f {
                Format::TEXT => text(compare::text(a, b, a_path, b_path)),
                Format::HTML => text(compare::html(a, b, a_path, b_path)),
                _ => None,
            },
        }
    }

    /// Warnings the table did not already explain under itself.
    fn after(&self, stdout: Option<Format>) -> String {
        let BenchOutcome::Measured(r) = self else {
            return String::new();
        };
        let table_shown = stdout == Some(Format::TEXT);
        let mut out = String::new();
        for w in &r.warnings {
            if !table_shown || !notes::CODES.contains(&w.code.as_str()) {
                out.push_str(&command::warned_paragraph(&w.message));
            }
        }
        out
    }
}
