//! Fitting a table to the terminal's width, the way duf and findmnt do: each
//! column gets at least its longest unbreakable piece (a word, a number with
//! its unit, a path component), the rest of the width goes to the columns
//! that want it most, and cells are wrapped here (at spaces, after `/` in
//! paths, after `,` in option lists) rather than by comfy-table, which cuts
//! words wherever the column ends.

use comfy_table::{Cell, ColumnConstraint, ContentArrangement, LineStyle, Row, Table, TableStyle};
use unicode_width::UnicodeWidthStr;

/// Display width of `s`, ignoring ANSI escape sequences (colour).
pub fn width(s: &str) -> usize {
    if !s.contains('\x1b') {
        return s.width();
    }
    let mut plain = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ params final-byte (0x40..=0x7e).
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        plain.push(c);
    }
    plain.width()
}

/// Pieces of one line that must stay whole: words, with a number joined to
/// the unit after it ("23.5 GiB", "12 ms").
fn pieces(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        // "(2 MiB", "<4.80 GiB", "~3 s": the figure may follow a bracket or sign.
        let numeric = words[i]
            .trim_start_matches(['(', '[', '<', '>', '=', '~', '≈', '+', '-'])
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit());
        if numeric && i + 1 < words.len() && is_unit(words[i + 1]) {
            out.push(format!("{} {}", words[i], words[i + 1]));
            i += 2;
        } else {
            out.push(words[i].to_string());
            i += 1;
        }
    }
    out
}

pub(super) fn is_unit(w: &str) -> bool {
    let w = w.trim_end_matches([',', ';', ')', '*']);
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

/// A piece cut where a path or a list may be broken: after each `/` or `,`
/// (a number with its unit is never cut).
fn segments(piece: &str) -> Vec<&str> {
    if piece.contains(' ') {
        return vec![piece];
    }
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in piece.char_indices() {
        if (c == '/' || c == ',') && i > start {
            let end = i + c.len_utf8();
            out.push(&piece[start..end]);
            start = end;
        }
    }
    if start < piece.len() {
        out.push(&piece[start..]);
    }
    out
}

/// The widest run of text that must not be broken.
pub fn longest_piece(text: &str) -> usize {
    text.lines()
        .flat_map(pieces)
        .flat_map(|p| segments(&p).into_iter().map(width).collect::<Vec<_>>())
        .max()
        .unwrap_or(0)
}

/// `text` wrapped to lines of at most `w` columns: at spaces, then after `/`
/// or `,` inside a piece too long for a line, and only when one segment is
/// longer than `w` inside it (the last resort that keeps every line within
/// the terminal).
pub fn wrap(text: &str, w: usize) -> String {
    let w = w.max(1);
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        if width(line) <= w {
            lines.push(line.to_string());
            continue;
        }
        let mut cur = String::new();
        for piece in pieces(line) {
            let sep = usize::from(!cur.is_empty());
            if width(&cur) + sep + width(&piece) <= w {
                if sep == 1 {
                    cur.push(' ');
                }
                cur.push_str(&piece);
                continue;
            }
            if !cur.is_empty() && width(&piece) <= w {
                lines.push(std::mem::take(&mut cur));
                cur = piece;
                continue;
            }
            // Too long for any line: break it after `/` or `,`. Its first
            // segment, if it stays on the current line, keeps the space
            // that parted it from the word before.
            for (i, seg) in segments(&piece).into_iter().enumerate() {
                let space = usize::from(i == 0 && sep == 1);
                if width(&cur) + space + width(seg) > w && !cur.is_empty() {
                    lines.push(std::mem::take(&mut cur));
                } else if space == 1 {
                    cur.push(' ');
                }
                let mut rest = seg;
                while width(rest) > w {
                    let cut = cut_at(rest, w);
                    lines.push(rest[..cut].to_string());
                    rest = &rest[cut..];
                }
                cur.push_str(rest);
            }
        }
        lines.push(cur);
    }
    lines.join("\n")
}

/// The byte index where the first `w` columns of `s` end.
fn cut_at(s: &str, w: usize) -> usize {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        let cw = width(c.encode_utf8(&mut [0; 4]));
        if used + cw > w && i > 0 {
            return i;
        }
        used += cw;
    }
    s.len()
}

/// The lines drawn between rows (above, under the header, between, below),
/// as opposed to the edges of the lines that hold cells.
fn rules(st: &mut TableStyle) -> [&mut LineStyle; 4] {
    [
        &mut st.top_border,
        &mut st.header_separator,
        &mut st.row_separator,
        &mut st.bottom_border,
    ]
}

/// Characters the table's borders take on a line of `visible` columns.
fn borders(t: &Table, visible: usize) -> usize {
    let st = t.style();
    let lines = [
        st.top_border,
        st.header_separator,
        st.row_separator,
        st.bottom_border,
    ];
    let content = [st.header_lines, st.content_lines];
    let left = lines.iter().any(|l| l.left.is_some()) || content.iter().any(|l| l.left.is_some());
    let right =
        lines.iter().any(|l| l.right.is_some()) || content.iter().any(|l| l.right.is_some());
    let junction =
        lines.iter().any(|l| l.junction.is_some()) || content.iter().any(|l| l.junction.is_some());
    usize::from(left)
        + usize::from(right)
        + if junction {
            visible.saturating_sub(1)
        } else {
            0
        }
}

/// Columns each wants: (longest unbreakable piece, longest line).
fn wants(cells: &[Vec<String>], n: usize) -> (Vec<usize>, Vec<usize>) {
    let mut min = vec![1usize; n];
    let mut nat = vec![1usize; n];
    for row in cells {
        for (i, c) in row.iter().enumerate().take(n) {
            min[i] = min[i].max(longest_piece(c));
            nat[i] = nat[i].max(c.lines().map(width).max().unwrap_or(0));
        }
    }
    (min, nat)
}

/// Widths for columns wanting `min`..=`nat` within `avail` columns in all:
/// each gets its minimum, then the rest is shared out, the least demanding
/// first so short columns stay on one line. Below the minimums, the widest
/// columns give way (their long words are cut) so no line passes the edge.
pub fn allot(min: &[usize], nat: &[usize], avail: usize) -> Vec<usize> {
    let total_nat: usize = nat.iter().sum();
    if total_nat <= avail {
        return nat.to_vec();
    }
    let mut w = min.to_vec();
    let total_min: usize = w.iter().sum();
    if total_min >= avail {
        let mut over = total_min - avail;
        while over > 0 {
            let Some((i, _)) = w.iter().enumerate().max_by_key(|(_, v)| **v) else {
                break;
            };
            if w[i] <= 4 {
                break;
            }
            w[i] -= 1;
            over -= 1;
        }
        return w;
    }
    let mut extra = avail - total_min;
    let mut order: Vec<usize> = (0..w.len()).collect();
    order.sort_by_key(|&i| nat[i] - min[i].min(nat[i]));
    let mut left = order.len();
    for i in order {
        let need = nat[i].saturating_sub(w[i]);
        let give = need.min(extra / left.max(1));
        w[i] += give;
        extra -= give;
        left -= 1;
    }
    w
}

/// Make `t` fit `term_width` columns: decide each visible column's width,
/// wrap every cell (and the header) to it, and turn comfy-table's own
/// wrapping off.
pub fn fit(t: &mut Table, term_width: usize) {
    fit_keeping_whole(t, term_width, &[]);
}

/// As [`fit`], with the columns in `whole` (a mount point, a path someone
/// will copy) kept on one line when the others can give way for them: the
/// others wrap first.
pub fn fit_keeping_whole(t: &mut Table, term_width: usize, whole: &[usize]) {
    let n = t.column_count();
    let hidden: Vec<bool> = (0..n)
        .map(|i| {
            t.column(i)
                .is_some_and(|c| matches!(c.constraint(), Some(ColumnConstraint::Hidden)))
        })
        .collect();
    let mut cells: Vec<Vec<String>> = Vec::with_capacity(t.row_count() + 1);
    let header: Option<Vec<String>> = t
        .header()
        .map(|h| h.cell_iter().map(|c| c.content()).collect());
    if let Some(h) = &header {
        cells.push(h.clone());
    }
    for row in t.row_iter() {
        cells.push(row.cell_iter().map(|c| c.content()).collect());
    }
    let (mut min, mut nat) = wants(&cells, n);
    let visible = hidden.iter().filter(|h| !**h).count();
    for i in (0..n).filter(|&i| hidden[i]) {
        min[i] = 0;
        nat[i] = 0;
    }
    let padding = |t: &Table| -> usize {
        (0..n)
            .filter(|&i| !hidden[i])
            .filter_map(|i| t.column(i))
            .map(|c| usize::from(c.padding_width()))
            .sum()
    };
    let mut overhead = padding(t) + borders(t, visible);
    if nat.iter().sum::<usize>() + overhead > term_width {
        // Cramped: two spaces between columns instead of three, and no
        // trailing border, buy a column's worth of width on a wide table.
        for c in t.column_iter_mut() {
            c.set_padding((0, 1));
        }
        let st = t.style_mut();
        for line in rules(st) {
            line.right = None;
        }
        st.header_lines.right = None;
        st.content_lines.right = None;
        overhead = padding(t) + borders(t, visible);
    }
    if min.iter().sum::<usize>() + overhead > term_width {
        // Still too wide for its words: one space between columns and no
        // indent before cutting any word.
        let st = t.style_mut();
        for line in rules(st) {
            line.left = None;
            line.junction = None;
        }
        for line in [&mut st.header_lines, &mut st.content_lines] {
            line.left = None;
            line.junction = None;
        }
        overhead = padding(t) + borders(t, visible);
    }
    let avail = term_width.saturating_sub(overhead);
    let mut kept = min.clone();
    for &i in whole.iter().filter(|&&i| i < n) {
        kept[i] = nat[i];
    }
    if kept.iter().sum::<usize>() <= avail {
        min = kept;
    }
    let widths = allot(&min, &nat, avail);
    let wrapped = |row: &[String]| -> Vec<Cell> {
        row.iter()
            .enumerate()
            .map(|(i, c)| Cell::new(wrap(c, widths.get(i).copied().unwrap_or(1))))
            .collect()
    };
    if let Some(h) = &header {
        t.set_header(wrapped(h));
    }
    for (row, content) in t
        .row_iter_mut()
        .zip(cells.iter().skip(usize::from(header.is_some())))
    {
        *row = Row::from(wrapped(content));
    }
    for c in t.column_iter_mut() {
        if !matches!(c.constraint(), Some(ColumnConstraint::Hidden)) {
            c.remove_constraint();
        }
    }
    t.set_content_arrangement(ContentArrangement::Disabled);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_stay_with_their_units() {
        assert_eq!(longest_piece("23.5 GiB"), 8);
        assert_eq!(longest_piece("a b c"), 1);
        assert_eq!(longest_piece("size=24684084k,nr_inodes=1m"), 15);
        assert_eq!(longest_piece("used 1.2 MiB of 4 GiB"), 7);
        assert_eq!(longest_piece("12 ms/op"), 8);
        assert_eq!(longest_piece("/run/user/1000"), 5);
        // After a bracket or a sign too.
        assert_eq!(wrap("none (2 MiB pages", 8), "none\n(2 MiB\npages");
        assert_eq!(longest_piece("<4.80 GiB"), 9);
    }

    #[test]
    fn wrapping_breaks_at_spaces_slashes_and_commas_only() {
        assert_eq!(wrap("used 23.5 GiB", 9), "used\n23.5 GiB");
        assert_eq!(
            wrap("/sys/fs/cgroup/memory", 10),
            "/sys/fs/\ncgroup/\nmemory"
        );
        assert_eq!(
            wrap("size=16384k,huge=always", 12),
            "size=16384k,\nhuge=always"
        );
        assert_eq!(wrap("short", 80), "short");
        assert_eq!(wrap("abcdefgh", 3), "abc\ndef\ngh");
        // A path too long for any line, broken after its first segments on
        // the line it starts on, keeps the space before it.
        assert_eq!(
            wrap("holds 0 B: /tmp/abcdefgh/ijklmnop/qrstuvwx", 20),
            "holds 0 B: /tmp/\nabcdefgh/ijklmnop/\nqrstuvwx"
        );
        for l in wrap("/tmp/st/a-very-long-component-name/x", 12).lines() {
            assert!(width(l) <= 12, "{l:?}");
        }
    }

    #[test]
    fn widths_share_out_what_is_left() {
        assert_eq!(allot(&[3, 3], &[5, 5], 20), vec![5, 5]);
        assert_eq!(allot(&[3, 3], &[4, 30], 20), vec![4, 16]);
        let w = allot(&[10, 10], &[40, 40], 12);
        assert_eq!(w.iter().sum::<usize>(), 12);
    }

    #[test]
    fn a_fitted_table_keeps_within_the_width() {
        let mut t = Table::new();
        t.set_header(vec!["mount point", "size", "options"]);
        t.add_row(vec![
            "/tmp/some/deep/mount/point/here",
            "23.5 GiB",
            "rw nosuid nodev size=24684084k,nr_inodes=1m mode=1777",
        ]);
        fit(&mut t, 40);
        let out = t.to_string();
        for l in out.lines() {
            assert!(width(l) <= 40, "{l:?}\n{out}");
        }
        assert!(out.contains("23.5 GiB"), "{out}");
    }

    #[test]
    fn a_column_kept_whole_makes_the_others_wrap() {
        let mut t = Table::new();
        t.set_header(vec!["mount", "inodes", "full in"]);
        t.add_row(vec!["/tmp/tmpfsctl-it-abcdef/many", "292 / 300", "-"]);
        fit_keeping_whole(&mut t, 46, &[0]);
        let out = t.to_string();
        assert!(out.contains("/tmp/tmpfsctl-it-abcdef/many"), "{out}");
        for l in out.lines() {
            assert!(width(l) <= 46, "{l:?}\n{out}");
        }
    }

    #[test]
    fn colour_codes_take_no_width() {
        assert_eq!(width("\x1b[32myes\x1b[0m"), 3);
    }
}
