//! CSV with a header row naming the columns.

use std::borrow::Cow;
use std::io::Read;

use anyhow::{Context as _, Result};

use super::parsed::{Bad, Parsed, bad, bad_line_message, estimate_available, parse_u64};
use super::store::Fleet;
use super::{FileReport, IngestOptions, IngestReport};
use crate::render::term::excerpt;

fn csv_u64(
    rec: &::csv::ByteRecord,
    col: Option<(usize, u64)>,
    what: &str,
) -> Result<Option<u64>, Bad> {
    let Some((i, mult)) = col else {
        return Ok(None);
    };
    let f = rec.get(i).unwrap_or(b"").trim_ascii();
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
struct Columns {
    host: usize,
    ts: Option<usize>,
    tmp: Option<(usize, u64)>,
    mem_total: Option<(usize, u64)>,
    optional: [Option<(usize, u64)>; 8],
}

impl Columns {
    /// Read the header; an error when it lacks a required column.
    fn from_header(name: &str, headers: &::csv::ByteRecord) -> Result<Columns> {
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
        Ok(Columns {
            host,
            ts,
            tmp,
            mem_total,
            optional: OPTIONAL.map(find),
        })
    }

    /// One record's host, or why the record is bad.
    fn parse<'r>(&self, rec: &'r ::csv::ByteRecord) -> Result<Parsed<'r>, Bad> {
        let host = std::str::from_utf8(rec.get(self.host).unwrap_or(b""))
            .map_err(|_| bad("host name not UTF-8", "the host column is not UTF-8 text"))?;
        let ts = match self.ts.and_then(|i| rec.get(i)).map(|f| f.trim_ascii()) {
            Some(f) if !f.is_empty() => Some(
                std::str::from_utf8(f)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .ok_or_else(|| bad("not a number", "timestamp_unix_s is not a whole number"))?,
            ),
            _ => None,
        };
        let tmp = csv_u64(rec, self.tmp, "tmp_used")?
            .ok_or_else(|| bad("missing value", "tmp_used is empty"))?;
        let mem_total = csv_u64(rec, self.mem_total, "mem_total")?
            .ok_or_else(|| bad("missing value", "mem_total is empty"))?;
        let mut v = [None; 8];
        for (i, (c, w)) in self.optional.iter().zip(OPTIONAL).enumerate() {
            v[i] = csv_u64(rec, *c, w)?;
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
}

/// CSV with a header naming the columns (any order, extra columns ignored):
/// `host` (or `hostname`, `instance`), `tmp_used_bytes` (or `tmp_used_kb`),
/// `mem_total_bytes` (or `_kb`), optional `timestamp_unix_s`, `tmp_inodes`,
/// `mem_available_bytes`, `mem_free_bytes`, `buffers_bytes`, `cached_bytes`,
/// `swap_total_bytes`, `swap_free_bytes`, `swap_used_bytes` (each also as `_kb`).
pub(super) fn ingest(
    name: &str,
    file_idx: usize,
    r: impl Read,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
    fr: &mut FileReport,
) -> Result<()> {
    let mut rdr = ::csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .comment(Some(b'#'))
        .from_reader(r);
    let headers = rdr
        .byte_headers()
        .with_context(|| format!("{name}:1: cannot read the CSV header"))?
        .clone();
    let cols = Columns::from_header(name, &headers)?;
    let mut rec = ::csv::ByteRecord::new();
    let mut last_line = 1;
    loop {
        let line;
        let parsed: Result<Parsed<'_>, Bad> = match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {
                line = rec.position().map(|p| p.line()).unwrap_or(last_line + 1);
                cols.parse(&rec)
            }
            Err(e) => {
                line = e.position().map(|p| p.line()).unwrap_or(last_line + 1);
                Err(bad("bad CSV", e.to_string()))
            }
        };
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
    report.records += fr.records;
    Ok(())
}
