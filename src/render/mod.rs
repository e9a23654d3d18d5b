//! Shared pieces of output: terminal detection, JSON, tables, the HTML page shell.

pub mod html;
pub mod term;

use std::io::{IsTerminal, Write};

use anyhow::{Context, Result};
use comfy_table::{ContentArrangement, LineStyle, Table, presets};
use serde::Serialize;

pub fn stdout_is_tty() -> bool {
    std::io::stdout().is_terminal()
}

pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// Pretty JSON with a trailing newline on stdout.
pub fn print_json<T: Serialize>(value: &T) -> Result<()> {
    // Stdout is line-buffered: unbuffered, a document of 40 000 mounts was a
    // million write(2) calls, most of `status`'s time.
    let mut out = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value).context("writing JSON")?;
    writeln!(out)?;
    out.flush().context("writing JSON")?;
    Ok(())
}

/// A table in the project's house style: light rules, wrapped to the terminal.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    // Header rule only: a table per screen, readable when piped to a file too.
    t.load_style(presets::NOTHING.header_separator(if stdout_is_tty() {
        LineStyle::new(' ', '─', '─', ' ')
    } else {
        LineStyle::new(' ', '-', '-', ' ')
    }))
    .set_content_arrangement(ContentArrangement::Dynamic)
    .set_header(header.iter().map(|h| h.to_string()));
    // Piped to a file or a pager there is no terminal width: wrap long "why"
    // columns at a width that still reads well instead of 300-column lines.
    if t.width().is_none() {
        t.set_width(120);
    }
    t
}

/// Escape text for HTML element content and attribute values.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
