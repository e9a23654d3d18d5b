//! CSV with a header row naming the columns.

use std::borrow::Cow;
use std::io::Read;

use anyhow::{Context as _, Result};

use super::chunk::{ChunkOut, line_ends};
use super::parsed::{Bad, Parsed, bad, bad_line_message, estimate_available, parse_u64};
use super::store::{Fleet, Row};
use super::{FileReport, IngestOptions, IngestReport};
use crate::term::excerpt;

fn csv_u64(
    field: Option<&[u8]>,
    col: Option<(usize, u64)>,
    what: &str,
) -> Result<Option<u64>, Bad> {
    let Some((_, mult)) = col else {
        return Ok(None);
    };
    let f = field.unwrap_or(b"").trim_ascii();
    if f.is_empty() {
        return Ok(None);
    }
    // Plain digits (nearly every field) skip the UTF-8 check and the general parser.
    let v = match super::tsv::digits(f, 0) {
        Some((v, end)) if end == f.len() => v,
        _ => parse_u64(f, what)?,
    };
    v.checked_mul(mult).map(Some).ok_or_else(|| {
        bad(
            "value too large",
            format!("{what} {v} does not fit 64 bits in bytes"),
        )
    })
}

/// Figures a row may carry besides the required ones, in [`Columns::optional`] order.
const OPTIONAL: [&str; 8] = [
    "tmp_inodes",
    "mem_available",
    "mem_free",
    "buffers",
    "cached",
    "swap_total",
    "swap_free",
    "swap_used",
];

/// Where each figure is in a row, found from the header: (column, multiplier).
pub(super) struct Columns {
    host: usize,
    ts: Option<usize>,
    tmp: Option<(usize, u64)>,
    mem_total: Option<(usize, u64)>,
    optional: [Option<(usize, u64)>; 8],
    /// The last column any figure is in: fields after it are not split out.
    last: usize,
}

impl Columns {
    /// Read the header; an error when it lacks a required column.
    pub(super) fn from_header(name: &str, headers: &::csv::ByteRecord) -> Result<Columns> {
        let cells: Vec<String> = headers
            .iter()
            .map(|h| String::from_utf8_lossy(h).trim().to_ascii_lowercase())
            .collect();
        let find = |base: &str| -> Option<(usize, u64)> {
            cells.iter().enumerate().find_map(|(i, h)| {
                if *h == format!("{base}_bytes") || (base == "tmp_inodes" && h == base) {
                    Some((i, 1))
                } else if *h == format!("{base}_kb") || *h == format!("{base}_kib") {
                    Some((i, 1024))
                } else {
                    None
                }
            })
        };
        let host = cells
            .iter()
            .position(|h| matches!(h.as_str(), "host" | "hostname" | "instance"));
        let ts = headers
            .iter()
            .position(|h| String::from_utf8_lossy(h).trim() == "timestamp_unix_s");
        let (tmp, mem_total) = (find("tmp_used"), find("mem_total"));
        let (Some(host), Some(_), Some(_)) = (host, tmp, mem_total) else {
            let has: Vec<Vec<u8>> = headers.iter().map(<[u8]>::to_vec).collect();
            // The header cells are quoted short and escaped: a binary file
            // given by mistake must not be echoed to the terminal.
            anyhow::bail!(
                "{name}:1: the CSV header must name at least `host`, `tmp_used_bytes` and `mem_total_bytes` \
                 (or `_kb` variants); it has: {}",
                excerpt(&has.join(&b","[..]), 120)
            );
        };
        let optional = OPTIONAL.map(find);
        let last = [tmp, mem_total]
            .iter()
            .chain(&optional)
            .flatten()
            .map(|c| c.0)
            .chain([host])
            .chain(ts)
            .max()
            .unwrap_or(host);
        Ok(Columns {
            host,
            ts,
            tmp,
            mem_total,
            optional,
            last,
        })
    }

    /// One record's host, or why the record is bad; `field(i)` is the
    /// record's column `i`, None past its end.
    fn parse<'r>(&self, field: impl Fn(usize) -> Option<&'r [u8]>) -> Result<Parsed<'r>, Bad> {
        let host = std::str::from_utf8(field(self.host).unwrap_or(b""))
            .map_err(|_| bad("host name not UTF-8", "the host column is not UTF-8 text"))?;
        let ts = match self.ts.and_then(&field).map(|f| f.trim_ascii()) {
            Some(f) if !f.is_empty() => Some(
                std::str::from_utf8(f)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .ok_or_else(|| bad("not a number", "timestamp_unix_s is not a whole number"))?,
            ),
            _ => None,
        };
        let num = |col: Option<(usize, u64)>, what: &str| {
            csv_u64(col.and_then(|c| field(c.0)), col, what)
        };
        let tmp =
            num(self.tmp, "tmp_used")?.ok_or_else(|| bad("missing value", "tmp_used is empty"))?;
        let mem_total = num(self.mem_total, "mem_total")?
            .ok_or_else(|| bad("missing value", "mem_total is empty"))?;
        let mut v = [None; 8];
        for (i, (c, w)) in self.optional.iter().zip(OPTIONAL).enumerate() {
            v[i] = num(*c, w)?;
        }
        Parsed {
            host: Cow::Borrowed(host.trim()),
            ts,
            tmp,
            inodes: v[0],
            mem_total,
            mem_avail: v[1].or_else(|| estimate_available(v[2], v[3], v[4])),
            mem_free: v[2],
            swap_total: v[5],
            swap_free: v[6].or_else(|| v[7].zip(v[5]).map(|(u, t)| t.saturating_sub(u))),
        }
        .validate()
    }

    /// Parse a block of whole lines the way the `csv` reader would, on any
    /// thread; None when the block holds a quote or a carriage return that
    /// does not end a line, which only the `csv` reader reads right.
    ///
    /// Each record's line is what the `csv` reader reports: its count of
    /// newlines read when the record begins, i.e. just after the record
    /// before (blank and comment lines between them are not counted yet; a
    /// record ended by CR LF leaves its LF for the next). The block's first
    /// record gets line 0, to be replaced by the block before's
    /// [`ChunkOut::csv_next`].
    pub(super) fn parse_chunk(&self, chunk: &[u8], recycled: Vec<Row>) -> Option<ChunkOut> {
        let tricky = memchr::memchr2_iter(b'"', b'\r', chunk)
            .any(|i| chunk[i] == b'"' || chunk.get(i + 1) != Some(&b'\n'));
        if tricky {
            return None;
        }
        let mut out = ChunkOut::new(chunk.len() / 64, recycled);
        let mut starts: Vec<usize> = Vec::with_capacity(self.last + 2);
        let mut next = 0;
        let mut start = 0;
        for end in line_ends(chunk) {
            out.lines += 1;
            let mut line_end = end;
            let crlf = line_end > start && chunk[line_end - 1] == b'\r';
            if crlf {
                line_end -= 1;
            }
            let line = &chunk[start..line_end];
            start = end + 1;
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            let at = next;
            next = if end < chunk.len() && !crlf {
                out.lines + 1
            } else {
                out.lines
            };
            starts.clear();
            starts.push(0);
            starts.extend(
                memchr::memchr_iter(b',', line)
                    .take(self.last + 1)
                    .map(|c| c + 1),
            );
            let field = |i: usize| {
                let from = *starts.get(i)?;
                Some(&line[from..starts.get(i + 1).map_or(line.len(), |e| e - 1)])
            };
            match self.parse(field) {
                Ok(p) => out.push(p, at),
                Err(b) => out.bad.push((at, b)),
            }
        }
        out.csv_next = (next > 0).then_some(next);
        Some(out)
    }
}

/// Where the header of a CSV starting with `buf` ends, when the fast
/// reader can take it: no quote and no stray carriage return before the
/// header's end, and its line complete in `buf` (or `buf` is all there is).
#[derive(Debug)]
pub(super) struct PlainHeader {
    pub record: ::csv::ByteRecord,
    /// Bytes up to and with the header's line end.
    pub len: usize,
    /// Lines in those bytes.
    pub lines: u64,
    /// The `csv` reader's line count after the header (see [`Columns::parse_chunk`]).
    pub next: u64,
}

pub(super) fn plain_header(buf: &[u8], complete: bool) -> Option<PlainHeader> {
    let mut start = 0;
    let mut lines = 0;
    while start < buf.len() {
        let (end, has_nl) = match memchr::memchr(b'\n', &buf[start..]) {
            Some(i) => (start + i, true),
            None if complete => (buf.len(), false),
            None => return None,
        };
        lines += 1;
        let crlf = end > start && buf[end - 1] == b'\r';
        let line = &buf[start..end - usize::from(crlf)];
        if memchr::memchr2(b'"', b'\r', line).is_some() {
            return None;
        }
        start = end + 1;
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let record = ::csv::ByteRecord::from(line.split(|b| *b == b',').collect::<Vec<_>>());
        return Some(PlainHeader {
            record,
            len: start.min(buf.len()),
            lines,
            next: if has_nl && !crlf { lines + 1 } else { lines },
        });
    }
    None
}

/// Where [`ingest`] takes over from the fast reader: at a block's start,
/// after `line_base` lines, the first record to be given line `first`.
pub(super) struct Resume<'c> {
    pub cols: &'c Columns,
    pub line_base: u64,
    pub first: u64,
}

/// CSV with a header naming the columns (any order, extra columns ignored):
/// `host` (or `hostname`, `instance`), `tmp_used_bytes` (or `tmp_used_kb`),
/// `mem_total_bytes` (or `_kb`), optional `timestamp_unix_s`, `tmp_inodes`,
/// `mem_available_bytes`, `mem_free_bytes`, `buffers_bytes`, `cached_bytes`,
/// `swap_total_bytes`, `swap_free_bytes`, `swap_used_bytes` (each also as `_kb`).
///
/// Read one record at a time by the `csv` reader, which knows quoting;
/// from the start (header included) or, with `resume`, from where the fast
/// reader found a quote. `fr.lines` is the line of the last record so far.
#[allow(clippy::too_many_arguments)]
pub(super) fn ingest(
    name: &str,
    file_idx: usize,
    r: impl Read,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
    fr: &mut FileReport,
    resume: Option<Resume<'_>>,
) -> Result<()> {
    let mut rdr = ::csv::ReaderBuilder::new()
        .has_headers(resume.is_none())
        .flexible(true)
        .comment(Some(b'#'))
        .from_reader(r);
    let owned;
    let (cols, line_base, mut first) = match resume {
        Some(r) => (r.cols, r.line_base, Some(r.first)),
        None => {
            let headers = rdr
                .byte_headers()
                .with_context(|| format!("{name}:1: cannot read the CSV header"))?
                .clone();
            owned = Columns::from_header(name, &headers)?;
            fr.lines = 1;
            (&owned, 0, None)
        }
    };
    let mut rec = ::csv::ByteRecord::new();
    let mut last_line = fr.lines;
    loop {
        let line;
        let parsed: Result<Parsed<'_>, Bad> = match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {
                line = rec
                    .position()
                    .map(|p| line_base + p.line())
                    .unwrap_or(last_line + 1);
                cols.parse(|i| rec.get(i))
            }
            Err(e) => {
                line = e
                    .position()
                    .map(|p| line_base + p.line())
                    .unwrap_or(last_line + 1);
                Err(bad("bad CSV", e.to_string()))
            }
        };
        let line = first.take().unwrap_or(line);
        last_line = line;
        match parsed {
            Ok(p) => {
                fleet
                    .add(p, file_idx, line)
                    .with_context(|| format!("reading {name}"))?;
                fr.records += 1;
            }
            Err(b) => {
                if !opts.skip_bad {
                    anyhow::bail!(bad_line_message(name, line, &b));
                }
                report.note_bad(name, line, &b);
                fr.skipped += 1;
            }
        }
    }
    fr.lines = last_line;
    Ok(())
}
