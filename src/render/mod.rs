//! Shared pieces of output: terminal detection, JSON, tables, the HTML page shell.

pub mod color;
pub mod exposition;
pub mod fit;
pub mod html;

use std::io::IsTerminal;

use comfy_table::{ContentArrangement, LineStyle, Table, presets};

pub fn stdout_is_tty() -> bool {
    std::io::stdout().is_terminal()
}

pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// A table in the project's house style: light rules; on a terminal, wrapped
/// to its width (at spaces, never inside a number and its unit: see
/// [`fit_to_terminal`]); piped, never wrapped, so a script can `grep` a row.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    let tty = stdout_is_tty();
    // Header rule only: a table per screen, readable when piped to a file too.
    t.load_style(presets::NOTHING.header_separator(if tty {
        LineStyle::new(' ', '─', '─', ' ')
    } else {
        LineStyle::new(' ', '-', '-', ' ')
    }))
    .set_header(header.iter().map(|h| h.to_string()));
    if tty {
        t.set_content_arrangement(ContentArrangement::Dynamic);
        // A pty that reports 0 (or a silly small) width would get one
        // character per column; 80 is what every terminal can show.
        if t.width().is_none_or(|w| w < MIN_WIDTH) {
            t.set_width(80);
        }
    } else {
        t.set_content_arrangement(ContentArrangement::Disabled);
    }
    t
}

/// Below this many columns a terminal width is not believed.
const MIN_WIDTH: u16 = 40;

/// The width tables are fitted to: `None` when stdout is not a terminal
/// (piped output is never wrapped); 80 when the terminal reports a width
/// too small to believe (a pty that says 0).
pub fn terminal_columns() -> Option<usize> {
    if !stdout_is_tty() {
        return None;
    }
    let w = Table::new()
        .width()
        .filter(|w| *w >= MIN_WIDTH)
        .unwrap_or(80);
    Some(usize::from(w))
}

/// Fit a table to the terminal: every column keeps its longest unbreakable
/// piece (a word, a number with its unit such as "23.5 GiB", a path
/// component) whole; paths wrap after `/`, option lists after `,`. Call after
/// the rows are in; a no-op for piped (unwrapped) tables. A caller with more
/// columns than fit drops or abbreviates its low-value ones first (see
/// [`terminal_columns`]).
pub fn fit_to_terminal(t: &mut Table) {
    if let Some(w) = terminal_columns() {
        fit::fit(t, w);
    }
}

/// A paragraph of prose indented by `indent` (later lines by `indent` plus
/// two spaces): on a terminal wrapped at spaces to its width, so the
/// terminal never cuts a word or a "23.5 GiB"; piped, one line.
pub fn paragraph(indent: &str, text: &str) -> String {
    match terminal_columns() {
        Some(w) => paragraph_at(indent, text, w),
        None => format!("{indent}{text}"),
    }
}

/// [`paragraph`] appended to `out` with a newline, each wrapped line painted
/// on its own (so colour never runs into the next line's indent).
pub fn push_paragraph(out: &mut String, indent: &str, tone: Option<color::Tone>, text: &str) {
    for l in paragraph(indent, text).lines() {
        match tone {
            Some(t) => out.push_str(&color::paint(t, l)),
            None => out.push_str(l),
        }
        out.push('\n');
    }
}

/// A shell command for the user to copy, indented by `indent`: on a
/// terminal too narrow for it, broken before its options with ` \`
/// continuations (still one command when pasted into a shell); piped, one
/// line.
pub fn command(indent: &str, cmd: &str) -> String {
    match terminal_columns() {
        Some(w) => command_at(indent, cmd, w),
        None => format!("{indent}{cmd}"),
    }
}

pub(crate) fn command_at(indent: &str, cmd: &str, w: usize) -> String {
    if fit::width(indent) + fit::width(cmd) <= w {
        return format!("{indent}{cmd}");
    }
    let mut out = String::from(indent);
    let mut line = fit::width(indent);
    for (i, part) in cmd.split(" --").enumerate() {
        let part = if i == 0 {
            part.to_string()
        } else {
            format!("--{part}")
        };
        // Room for " \" at the end of the line.
        if i > 0 && line + 1 + fit::width(&part) + 2 > w {
            out.push_str(" \\\n");
            out.push_str(indent);
            out.push_str("    ");
            line = fit::width(indent) + 4;
        } else if i > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(&part);
        line += fit::width(&part);
    }
    out
}

fn paragraph_at(indent: &str, text: &str, w: usize) -> String {
    let room = w.saturating_sub(fit::width(indent) + 2).max(20);
    let wrapped = fit::wrap(text, room);
    let mut out = String::new();
    for (i, line) in wrapped.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str("  ");
        }
        out.push_str(indent);
        out.push_str(line);
    }
    out
}

/// Escape text for HTML element content and attribute values.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    #[test]
    fn paragraphs_wrap_at_words_within_the_width() {
        let text =
            "RAM 23.5 GiB total, 21.7 GiB available; Shmem 23.4 MiB; swap 0 B total, 0 B free";
        let p = super::paragraph_at("  ", text, 40);
        for l in p.lines() {
            assert!(l.chars().count() <= 40, "{l:?}");
            assert!(l.starts_with("  "), "{l:?}");
        }
        assert!(p.contains("23.5 GiB") && p.contains("0 B free"), "{p}");
        assert_eq!(
            p.split_whitespace().collect::<Vec<_>>(),
            text.split_whitespace().collect::<Vec<_>>()
        );
    }
}
