//! The parallel driver: reads an input in blocks cut at line ends, parses
//! the blocks on all cores (JSON lines and TSV are one record a line), and
//! appends the results in input order. CSV, whose quoted fields may span
//! lines, is read by its own streaming parser.

use std::io::Read;

use anyhow::{Context as _, Result};

use super::parsed::{Bad, bad, bad_line_message};
use super::store::{Fleet, Row, pack};
use super::{FileReport, Format, IngestOptions, IngestReport, csv, detect, jsonl, tsv};
use crate::render::term::{excerpt, safe};

const BLOCK: usize = 4 << 20;

/// Read until `buf` holds at least `want` bytes or the reader is done. Returns false at EOF.
fn fill(r: &mut dyn Read, buf: &mut Vec<u8>, want: usize) -> std::io::Result<bool> {
    while buf.len() < want {
        let old = buf.len();
        buf.resize(want, 0);
        match r.read(&mut buf[old..]) {
            Ok(0) => {
                buf.truncate(old);
                return Ok(false);
            }
            Ok(n) => buf.truncate(old + n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(old),
            Err(e) => {
                buf.truncate(old);
                return Err(e);
            }
        }
    }
    Ok(true)
}

struct ChunkOut {
    rows: Vec<Row>,
    /// Per row: timestamp and line within the chunk.
    ts_lines: Vec<(i64, u64)>,
    names: Vec<u8>,
    bad: Vec<(u64, Bad)>,
    lines: u64,
}

fn parse_chunk(
    chunk: &[u8],
    format: Format,
    path: &str,
    first_line_is_file_start: bool,
) -> ChunkOut {
    let mut out = ChunkOut {
        // Survey lines are ~100 bytes: room for them all up front saves regrowing
        // (pages never written cost nothing).
        rows: Vec::with_capacity(chunk.len() / 64),
        ts_lines: Vec::with_capacity(chunk.len() / 64),
        names: Vec::new(),
        bad: Vec::new(),
        lines: 0,
    };
    let mut start = 0;
    let mut seen_data = false;
    let chunk_text = if format == Format::Jsonl {
        std::str::from_utf8(chunk).ok()
    } else {
        None
    };
    let ends = memchr::memchr_iter(b'\n', chunk)
        .chain((!chunk.is_empty() && chunk[chunk.len() - 1] != b'\n').then_some(chunk.len()));
    for end in ends {
        out.lines += 1;
        let mut line_end = end;
        if line_end > start && chunk[line_end - 1] == b'\r' {
            line_end -= 1;
        }
        let line = &chunk[start..line_end];
        // '\n' and '\r' are ASCII, so these are char boundaries.
        let line_text = chunk_text.and_then(|t| t.get(start..line_end));
        start = end + 1;
        let t = line.trim_ascii();
        if t.is_empty() || t[0] == b'#' {
            continue;
        }
        let first = !seen_data && first_line_is_file_start;
        seen_data = true;
        let parsed = match format {
            Format::Jsonl => jsonl::parse(line, line_text, path),
            // A header row may open the file, and only the file.
            Format::Kirkland if first && tsv::is_header(line) => continue,
            Format::Kirkland => tsv::parse(line),
            Format::Csv => Err(bad("internal", "CSV is not line-parsed")),
        };
        match parsed {
            Ok(p) => {
                let (row, ts) = pack(p, &mut out.names);
                out.rows.push(row);
                out.ts_lines.push((ts, out.lines));
            }
            Err(b) => out.bad.push((out.lines, b)),
        }
    }
    out
}

/// Parse `chunks` (consecutive blocks of one input), one thread each;
/// results in input order.
fn parse_blocks(
    chunks: &[Vec<u8>],
    format: Format,
    path: &str,
    first_chunk: bool,
) -> Vec<ChunkOut> {
    if chunks.len() == 1 {
        return vec![parse_chunk(&chunks[0], format, path, first_chunk)];
    }
    std::thread::scope(|s| {
        let hs: Vec<_> = chunks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let fc = first_chunk && i == 0;
                s.spawn(move || parse_chunk(c, format, path, fc))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// Read one input (a file or stdin) into `fleet`.
pub fn ingest(
    name: &str,
    mut r: Box<dyn Read + '_>,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
) -> Result<()> {
    let file_idx = fleet.sources.len();
    fleet.sources.push(name.to_string());
    let mut buf = Vec::with_capacity(BLOCK + 4096);
    let mut more = fill(&mut *r, &mut buf, BLOCK).with_context(|| format!("reading {name}"))?;
    let first_line = buf
        .split(|b| *b == b'\n')
        .find(|l| {
            let t = l.trim_ascii();
            !t.is_empty() && t[0] != b'#'
        })
        .unwrap_or(b"");
    if first_line.is_empty() && !more {
        report.files.push(FileReport {
            name: name.into(),
            format: Format::Jsonl,
            lines: 0,
            records: 0,
            skipped: 0,
        });
        return Ok(());
    }
    let Some(format) = detect(first_line) else {
        anyhow::bail!(
            "{}: cannot tell the format from its first line \"{}\"; give JSON lines from `tmpfsctl collect`, \
             Kirkland's 12 tab-separated columns, or CSV with a header row",
            safe(name),
            excerpt(first_line, 80)
        );
    };
    let mut fr = FileReport {
        name: name.into(),
        format,
        lines: 0,
        records: 0,
        skipped: 0,
    };
    if format == Format::Csv {
        let rest = std::io::Cursor::new(buf).chain(r);
        csv::ingest(name, file_idx, rest, opts, fleet, report, &mut fr)?;
        report.files.push(fr);
        return Ok(());
    }
    let threads = opts.threads.max(1);
    let mut carry: Vec<u8> = Vec::new();
    let mut first_chunk = true;
    let mut line_base = 0u64;
    loop {
        // Cut up to `threads` blocks at line ends.
        let mut chunks: Vec<Vec<u8>> = Vec::with_capacity(threads);
        while chunks.len() < threads && (more || !buf.is_empty()) {
            if buf.is_empty() {
                more = fill(&mut *r, &mut buf, BLOCK).with_context(|| format!("reading {name}"))?;
                continue;
            }
            let cut = if more {
                match memchr::memrchr(b'\n', &buf) {
                    Some(i) => i + 1,
                    None => {
                        // A line longer than a block: read on until it ends.
                        let want = buf.len() + BLOCK;
                        more = fill(&mut *r, &mut buf, want)
                            .with_context(|| format!("reading {name}"))?;
                        continue;
                    }
                }
            } else {
                buf.len()
            };
            carry.clear();
            carry.extend_from_slice(&buf[cut..]);
            buf.truncate(cut);
            chunks.push(std::mem::replace(&mut buf, std::mem::take(&mut carry)));
            buf.reserve(BLOCK + 4096);
            if more {
                more = fill(&mut *r, &mut buf, BLOCK).with_context(|| format!("reading {name}"))?;
            }
        }
        if chunks.is_empty() {
            break;
        }
        let outs = parse_blocks(&chunks, format, &opts.path, first_chunk);
        first_chunk = false;
        for o in outs {
            if let Some((l, b)) = o.bad.first()
                && !opts.skip_bad
            {
                anyhow::bail!(bad_line_message(name, line_base + l, b));
            }
            for (l, b) in &o.bad {
                report.note_bad(name, line_base + l, b);
            }
            fr.skipped += o.bad.len() as u64;
            fr.records += o.rows.len() as u64;
            fleet.append_block(&o.names, o.rows, o.ts_lines, file_idx, line_base)?;
            line_base += o.lines;
        }
    }
    fr.lines = line_base;
    report.records += fr.records;
    report.files.push(fr);
    Ok(())
}
