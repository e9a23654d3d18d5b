//! The parallel driver: reads an input in blocks cut at line ends, parses
//! the blocks on all cores (JSON lines and TSV are one record a line), and
//! appends the results in input order. CSV goes the same way while its
//! blocks hold no quote (a quoted field may span lines); from the first
//! block with one, the `csv` crate's streaming reader takes over.

use std::io::Read;

use anyhow::{Context as _, Result};

use super::chunk::{ChunkOut, line_ends};
use super::map::Map;
use super::parsed::{bad, bad_line_message};
use super::store::{Fleet, Row};
use super::{FileReport, Format, IngestOptions, IngestReport, csv, detect, jsonl, tsv};
use crate::term::{excerpt, safe};

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

fn parse_chunk(
    chunk: &[u8],
    format: Format,
    path: &str,
    first_line_is_file_start: bool,
    recycled: Vec<Row>,
) -> ChunkOut {
    let mut out = ChunkOut::new(chunk.len() / 64, recycled);
    let mut start = 0;
    let mut seen_data = false;
    let chunk_text = if format == Format::Jsonl {
        std::str::from_utf8(chunk).ok()
    } else {
        None
    };
    for end in line_ends(chunk) {
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
            Format::Csv => Err(bad("internal", "CSV is parsed by csv::Columns")),
        };
        match parsed {
            Ok(p) => out.push(p, out.lines),
            Err(b) => out.bad.push((out.lines, b)),
        }
    }
    out
}

/// How the blocks of one input are parsed.
#[derive(Clone, Copy)]
enum Parser<'a> {
    /// One record a line; whether the next block starts the file.
    Lines(Format, &'a str, bool),
    Csv(&'a csv::Columns),
}

impl Parser<'_> {
    /// None: a CSV block the fast reader cannot take. `recycled`: see [`ChunkOut::new`].
    fn parse(self, chunk: &[u8], first: bool, recycled: Vec<Row>) -> Option<ChunkOut> {
        match self {
            Parser::Lines(format, path, file_start) => Some(parse_chunk(
                chunk,
                format,
                path,
                file_start && first,
                recycled,
            )),
            Parser::Csv(cols) => cols.parse_chunk(chunk, recycled),
        }
    }
}

/// A block of input cut at a line end: read into memory, or a slice of the mapped file.
enum Block<'a> {
    Owned(Vec<u8>),
    Mapped(&'a [u8]),
}

impl Block<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Block::Owned(v) => v,
            Block::Mapped(s) => s,
        }
    }
}

/// Parse `chunks` (consecutive blocks of one input), one thread each;
/// results in input order.
fn parse_blocks(chunks: &[Block<'_>], parser: Parser<'_>) -> Vec<Option<ChunkOut>> {
    if chunks.len() == 1 {
        return vec![parser.parse(chunks[0].bytes(), true, Vec::new())];
    }
    std::thread::scope(|s| {
        let hs: Vec<_> = chunks
            .iter()
            .enumerate()
            .map(|(i, c)| s.spawn(move || parser.parse(c.bytes(), i == 0, Vec::new())))
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// The input being read: what is buffered, and whether more follows.
struct Input<'r> {
    r: Box<dyn Read + 'r>,
    name: &'r str,
    buf: Vec<u8>,
    more: bool,
    /// The file, when it is mapped: blocks are slices of it, `buf` stays empty.
    map: Option<&'r Map>,
    /// Mapped: the first byte not yet handed out.
    at: usize,
    block: usize,
    progress: &'r indicatif::ProgressBar,
}

impl<'r> Input<'r> {
    /// What the next block would hold at most (where the format is told from).
    fn head(&self) -> &[u8] {
        match self.map {
            Some(m) => {
                let b = m.bytes();
                &b[self.at..(self.at + self.block).min(b.len())]
            }
            None => &self.buf,
        }
    }

    /// Whether input follows [`Input::head`].
    fn more(&self) -> bool {
        match self.map {
            Some(m) => self.at + self.block < m.bytes().len(),
            None => self.more,
        }
    }

    /// Skip `n` bytes at the start of [`Input::head`] (a header already read).
    fn consume(&mut self, n: usize) {
        match self.map {
            Some(_) => {
                self.at += n;
                self.progress.inc(n as u64);
            }
            None => {
                self.buf.drain(..n);
            }
        }
    }

    /// All the input from the start of `unparsed` (the last blocks handed out) on.
    fn rest_from(&mut self, unparsed: &[Block<'_>]) -> Box<dyn Read + '_> {
        match self.map {
            Some(m) => {
                let back: usize = unparsed.iter().map(|c| c.bytes().len()).sum();
                Box::new(std::io::Cursor::new(&m.bytes()[self.at - back..]))
            }
            None => {
                let mut rest: Vec<u8> = unparsed.iter().flat_map(|c| c.bytes()).copied().collect();
                rest.extend_from_slice(&self.buf);
                Box::new(std::io::Cursor::new(rest).chain(&mut self.r))
            }
        }
    }

    /// Up to `n` next blocks of the mapped file, each cut at a line end.
    fn mapped_blocks(&mut self, m: &'r Map, n: usize) -> Vec<Block<'r>> {
        let data = m.bytes();
        let mut out = Vec::with_capacity(n.min((data.len() - self.at) / self.block.max(1) + 1));
        while out.len() < n && self.at < data.len() {
            let end = (self.at + self.block).min(data.len());
            let cut = if end == data.len() {
                end
            } else {
                match memchr::memrchr(b'\n', &data[self.at..end]) {
                    Some(i) => self.at + i + 1,
                    // A line longer than a block: the block runs to its end.
                    None => memchr::memchr(b'\n', &data[end..]).map_or(data.len(), |i| end + i + 1),
                }
            };
            out.push(Block::Mapped(&data[self.at..cut]));
            self.at = cut;
        }
        out
    }

    fn fill(&mut self, want: usize) -> Result<()> {
        if self.map.is_some() {
            return Ok(());
        }
        let had = self.buf.len();
        self.more = fill(&mut *self.r, &mut self.buf, want)
            .with_context(|| format!("reading {}", self.name))?;
        self.progress.inc(self.buf.len().saturating_sub(had) as u64);
        Ok(())
    }

    /// Up to `n` next blocks, each cut at a line end.
    fn blocks(&mut self, n: usize) -> Result<Vec<Block<'r>>> {
        if let Some(m) = self.map {
            return Ok(self.mapped_blocks(m, n));
        }
        let mut chunks: Vec<Block<'r>> = Vec::with_capacity(n);
        let mut carry: Vec<u8> = Vec::new();
        while chunks.len() < n && (self.more || !self.buf.is_empty()) {
            if self.buf.is_empty() {
                self.fill(self.block)?;
                continue;
            }
            let cut = if self.more {
                match memchr::memrchr(b'\n', &self.buf) {
                    Some(i) => i + 1,
                    None => {
                        // A line longer than a block: read on until it ends.
                        self.fill(self.buf.len() + self.block)?;
                        continue;
                    }
                }
            } else {
                self.buf.len()
            };
            carry.clear();
            carry.extend_from_slice(&self.buf[cut..]);
            self.buf.truncate(cut);
            chunks.push(Block::Owned(std::mem::replace(
                &mut self.buf,
                std::mem::take(&mut carry),
            )));
            self.buf.reserve(self.block + 4096);
            if self.more {
                self.fill(self.block)?;
            }
        }
        Ok(chunks)
    }
}

/// Read one input (a file or stdin) into `fleet`.
pub fn ingest(
    name: &str,
    r: Box<dyn Read + '_>,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
) -> Result<()> {
    ingest_blocks(name, r, opts, fleet, report, BLOCK)
}

/// [`ingest`] for an opened file: mapped where it can be (see [`Map`]), else read.
pub fn ingest_file(
    name: &str,
    file: std::fs::File,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
) -> Result<()> {
    ingest_file_blocks(name, file, opts, fleet, report, BLOCK)
}

/// [`ingest_file`] in blocks of `block` bytes.
pub(super) fn ingest_file_blocks(
    name: &str,
    file: std::fs::File,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
    block: usize,
) -> Result<()> {
    let map = Map::new(&file);
    ingest_source(
        name,
        Box::new(file),
        map.as_ref(),
        opts,
        fleet,
        report,
        block,
    )
}

/// [`ingest`] in blocks of `block` bytes (tests use small ones to cut lines anywhere).
pub(super) fn ingest_blocks(
    name: &str,
    r: Box<dyn Read + '_>,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
    block: usize,
) -> Result<()> {
    ingest_source(name, r, None, opts, fleet, report, block)
}

/// [`ingest_blocks`] from `map` when given (then `r` is not read), else from `r`.
fn ingest_source(
    name: &str,
    r: Box<dyn Read + '_>,
    map: Option<&Map>,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
    block: usize,
) -> Result<()> {
    let file_idx = fleet.sources.len();
    fleet.sources.push(name.to_string());
    let mut input = Input {
        r,
        name,
        buf: if map.is_some() {
            Vec::new()
        } else {
            Vec::with_capacity(block + 4096)
        },
        more: true,
        map,
        at: 0,
        block,
        progress: &opts.progress,
    };
    input.fill(block)?;
    let first_line = input
        .head()
        .split(|b| *b == b'\n')
        .find(|l| {
            let t = l.trim_ascii();
            !t.is_empty() && t[0] != b'#'
        })
        .unwrap_or(b"");
    if first_line.is_empty() && !input.more() {
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
    let mut pos = Position::default();
    let cols;
    let parser = if format == Format::Csv {
        let Some(h) = csv::plain_header(input.head(), !input.more()) else {
            // Quotes or stray carriage returns from the start: the `csv` reader reads it all.
            let rest = input.rest_from(&[]);
            csv::ingest(name, file_idx, rest, opts, fleet, report, &mut fr, None)?;
            report.records += fr.records;
            report.files.push(fr);
            return Ok(());
        };
        cols = csv::Columns::from_header(name, &h.record)?;
        input.consume(h.len);
        pos.line_base = h.lines;
        pos.csv_next = h.next;
        fr.lines = 1;
        Parser::Csv(&cols)
    } else {
        Parser::Lines(format, &opts.path, true)
    };
    match input.map {
        Some(m) => read_mapped(
            &mut input, m, parser, file_idx, opts, fleet, report, &mut fr, pos,
        )?,
        None => read_blocks(
            &mut input, parser, file_idx, opts, fleet, report, &mut fr, pos,
        )?,
    }
    report.records += fr.records;
    report.files.push(fr);
    Ok(())
}

/// Where reading is: lines before the next block; for CSV, the `csv`
/// reader's line count after the last record (see `csv::Columns::parse_chunk`).
#[derive(Default)]
struct Position {
    line_base: u64,
    csv_next: u64,
}

/// Keep what one parsed block gave, in input order; gives back the block's
/// emptied row buffer. Ok(None): a CSV block the fast reader declined; the
/// `csv` reader must take over from it.
#[allow(clippy::too_many_arguments)]
fn absorb(
    o: Option<ChunkOut>,
    parser: Parser<'_>,
    name: &str,
    file_idx: usize,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
    fr: &mut FileReport,
    pos: &mut Position,
) -> Result<Option<Vec<Row>>> {
    let mut o = match (o, parser) {
        (Some(o), _) => o,
        (None, Parser::Csv(_)) => return Ok(None),
        (None, Parser::Lines(..)) => anyhow::bail!("{name}: a block of lines was not read"),
    };
    let mut base = pos.line_base;
    if let Parser::Csv(_) = parser {
        // Lines as the `csv` reader counts them (it reports where a record
        // begins after skipped lines), made absolute here.
        let abs = |l: u64| if l == 0 { pos.csv_next } else { base + l };
        o.runs.iter_mut().for_each(|x| x.1 = abs(x.1));
        o.bad.iter_mut().for_each(|x| x.0 = abs(x.0));
        let last = [o.last_row_line(), o.bad.last().map(|x| x.0)];
        fr.lines = last.into_iter().flatten().max().unwrap_or(fr.lines);
        if let Some(n) = o.csv_next {
            pos.csv_next = base + n;
        }
        base = 0;
    }
    if let Some((l, b)) = o.bad.first()
        && !opts.skip_bad
    {
        anyhow::bail!(bad_line_message(name, base + l, b));
    }
    for (l, b) in &o.bad {
        report.note_bad(name, base + l, b);
    }
    fr.skipped += o.bad.len() as u64;
    fr.records += o.rows.len() as u64;
    fleet.append_block(&o.names, &mut o.rows, &o.ts, &o.runs, file_idx, base)?;
    pos.line_base += o.lines;
    Ok(Some(o.rows))
}

/// The `csv` reader, from where the fast reader stopped to the end of `rest`.
#[allow(clippy::too_many_arguments)]
fn csv_rest(
    rest: Box<dyn Read + '_>,
    cols: &csv::Columns,
    name: &str,
    file_idx: usize,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
    fr: &mut FileReport,
    pos: &Position,
) -> Result<()> {
    let resume = csv::Resume {
        cols,
        line_base: pos.line_base,
        first: pos.csv_next,
    };
    csv::ingest(name, file_idx, rest, opts, fleet, report, fr, Some(resume))
}

/// A mapped input, parsed by `opts.threads` workers that each take the next
/// block as they finish one, while this thread keeps the results in input
/// order as they come. Nothing waits for a round's slowest block, and the
/// copying of rows into the store overlaps the parsing (it was a tenth of
/// the run with nothing else going on).
#[allow(clippy::too_many_arguments)]
fn read_mapped<'r>(
    input: &mut Input<'r>,
    m: &'r Map,
    parser: Parser<'_>,
    file_idx: usize,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
    fr: &mut FileReport,
    mut pos: Position,
) -> Result<()> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
    let name = input.name;
    let blocks = input.mapped_blocks(m, usize::MAX);
    let data_start = m.bytes().as_ptr() as usize;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // Row buffers of blocks already kept, for the workers to fill again.
    let pool = std::sync::Mutex::new(Vec::<Vec<Row>>::new());
    // Blocks kept so far. A worker parses no block more than `ahead` past
    // it: while this thread is busy (a deduplication pass over the store),
    // parsed blocks would otherwise pile up, and memory follow the input.
    let kept = (std::sync::Mutex::new(0usize), std::sync::Condvar::new());
    let ahead = opts.threads.max(1) * 2;
    let declined = std::thread::scope(|s| -> Result<Option<usize>> {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Option<ChunkOut>)>();
        for _ in 0..opts.threads.max(1).min(blocks.len()) {
            let (tx, blocks, next, stop, pool, kept) =
                (tx.clone(), &blocks, &next, &stop, &pool, &kept);
            s.spawn(move || {
                while !stop.load(Relaxed) {
                    let i = next.fetch_add(1, Relaxed);
                    let Some(b) = blocks.get(i) else { break };
                    let Ok(mut k) = kept.0.lock() else { break };
                    while i >= *k + ahead && !stop.load(Relaxed) {
                        let Ok(g) = kept.1.wait(k) else { return };
                        k = g;
                    }
                    drop(k);
                    let recycled = pool.lock().ok().and_then(|mut p| p.pop());
                    let o = parser.parse(b.bytes(), i == 0, recycled.unwrap_or_default());
                    if tx.send((i, o)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        // Blocks that arrived ahead of their turn.
        let mut early: std::collections::BTreeMap<usize, Option<ChunkOut>> = Default::default();
        let mut want = 0;
        let result = (|| {
            while want < blocks.len() {
                let o = match early.remove(&want) {
                    Some(o) => o,
                    None => match rx.recv() {
                        Ok((i, o)) if i == want => o,
                        Ok((i, o)) => {
                            early.insert(i, o);
                            continue;
                        }
                        Err(_) => anyhow::bail!("{name}: a block of input was not parsed"),
                    },
                };
                if want == 0
                    && let Some(o) = &o
                {
                    // The whole file's rows and names, judged from the first block's, plus a twentieth.
                    let all: usize = blocks.iter().map(|b| b.bytes().len()).sum();
                    let scale = all as f64 / blocks[0].bytes().len().max(1) as f64 * 1.05;
                    fleet.reserve(
                        (o.rows.len() as f64 * scale) as usize,
                        (o.names.len() as f64 * scale) as usize,
                    );
                }
                let Some(rows) =
                    absorb(o, parser, name, file_idx, opts, fleet, report, fr, &mut pos)?
                else {
                    return Ok(Some(want));
                };
                if let Ok(mut p) = pool.lock() {
                    p.push(rows);
                }
                let b = blocks[want].bytes();
                opts.progress.inc(b.len() as u64);
                m.release(b.as_ptr() as usize - data_start + b.len());
                want += 1;
                if let Ok(mut k) = kept.0.lock() {
                    *k = want;
                }
                kept.1.notify_all();
            }
            Ok(None)
        })();
        stop.store(true, Relaxed);
        // Workers waiting for their turn see the stop.
        drop(kept.0.lock());
        kept.1.notify_all();
        result
    })?;
    if let Some(k) = declined {
        let Parser::Csv(cols) = parser else {
            anyhow::bail!("{name}: a block of lines was not read");
        };
        // The bar counts bytes handed to a reader: the `csv` reader gets the rest.
        opts.progress
            .inc(blocks[k..].iter().map(|b| b.bytes().len() as u64).sum());
        let rest = input.rest_from(&blocks[k..]);
        return csv_rest(rest, cols, name, file_idx, opts, fleet, report, fr, &pos);
    }
    if let Parser::Lines(..) = parser {
        fr.lines = pos.line_base;
    }
    Ok(())
}

/// Parse the rest of `input` in blocks on all cores, appending to `fleet` in input order.
#[allow(clippy::too_many_arguments)]
fn read_blocks(
    input: &mut Input<'_>,
    mut parser: Parser<'_>,
    file_idx: usize,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
    fr: &mut FileReport,
    mut pos: Position,
) -> Result<()> {
    let name = input.name;
    loop {
        let chunks = input.blocks(opts.threads.max(1))?;
        if chunks.is_empty() {
            break;
        }
        let outs = parse_blocks(&chunks, parser);
        for (k, o) in outs.into_iter().enumerate() {
            if absorb(o, parser, name, file_idx, opts, fleet, report, fr, &mut pos)?.is_none() {
                // A quote: the `csv` reader takes over from this block on.
                let Parser::Csv(cols) = parser else {
                    anyhow::bail!("{name}: a block of lines was not read");
                };
                let rest = input.rest_from(&chunks[k..]);
                return csv_rest(rest, cols, name, file_idx, opts, fleet, report, fr, &pos);
            }
        }
        if let Parser::Lines(format, path, _) = parser {
            parser = Parser::Lines(format, path, false);
        }
    }
    if let Parser::Lines(..) = parser {
        fr.lines = pos.line_base;
    }
    Ok(())
}
