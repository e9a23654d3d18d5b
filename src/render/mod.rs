//! Shared pieces of output: terminal detection, JSON, tables, the HTML page shell.

pub mod color;
pub mod html;
pub mod term;

use std::io::{IsTerminal, Write};

use anyhow::{Context, Result, bail};
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

/// Keep each cell's words whole when the table is wrapped: every column gets
/// a lower bound of its longest unbreakable piece (a word, or a number with
/// its unit such as "23.5 GiB"), so comfy-table wraps only at spaces between
/// them. Call after the rows are in; a no-op for piped (unwrapped) tables.
pub fn fit_to_terminal(t: &mut Table) {
    use comfy_table::{ColumnConstraint, Width};
    if !stdout_is_tty() {
        return;
    }
    let n = t.column_count();
    let mut longest = vec![0usize; n];
    for row in t.row_iter() {
        for (i, cell) in row.cell_iter().enumerate().take(n) {
            let text = cell.content();
            longest[i] = longest[i].max(longest_piece(&text));
        }
    }
    for (i, w) in longest.into_iter().enumerate() {
        if let Some(c) = t.column_mut(i) {
            let w = u16::try_from(w).unwrap_or(u16::MAX);
            c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(w)));
        }
    }
}

/// The widest run of text that must not be broken: words, joined to the next
/// word when that is a unit after a number ("1.5 GiB", "12 ms", "3.4 x").
fn longest_piece(text: &str) -> usize {
    let mut best = 0;
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
        let mut i = 0;
        while i < words.len() {
            let mut len = words[i].chars().count();
            let numeric = words[i].chars().next().is_some_and(|c| c.is_ascii_digit());
            if numeric && i + 1 < words.len() && is_unit(words[i + 1]) {
                len += 1 + words[i + 1].chars().count();
                i += 1;
            }
            best = best.max(len);
            i += 1;
        }
    }
    best
}

fn is_unit(w: &str) -> bool {
    let w = w.trim_end_matches([',', ';', ')']);
    let w = w.split('/').next().unwrap_or(w);
    matches!(
        w,
        "B" | "KiB"
            | "MiB"
            | "GiB"
            | "TiB"
            | "PiB"
            | "k"
            | "M"
            | "G"
            | "ns"
            | "us"
            | "µs"
            | "ms"
            | "s"
            | "x"
            | "×"
            | "%"
            | "IOPS"
            | "files"
            | "hosts"
            | "inodes"
    )
}

/// Ask `question` on the terminal; `yes` (the `--yes` flag) skips it. With no
/// terminal to ask on, refuse rather than guess.
pub fn confirm(question: &str, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        bail!("stdin is not a terminal, so I cannot ask for confirmation; pass --yes to go ahead");
    }
    eprint!("{question} [y/N] ");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    if matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        Ok(())
    } else {
        bail!("not confirmed; nothing changed")
    }
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
    use super::longest_piece;

    #[test]
    fn numbers_stay_with_their_units() {
        assert_eq!(longest_piece("23.5 GiB"), 8);
        assert_eq!(longest_piece("a b c"), 1);
        assert_eq!(longest_piece("size=24684084k,nr_inodes=1m"), 27);
        assert_eq!(longest_piece("used 1.2 MiB of 4 GiB"), 7);
        assert_eq!(longest_piece("12 ms/op"), 8);
    }
}
