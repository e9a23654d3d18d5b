//! Reading fleet data: JSON lines from `collect`, seed 001's Kirkland TSV (KiB),
//! CSV with a header. Files of different formats can be mixed; `-` is stdin.
//!
//! Built to stream: input is read in blocks that are parsed on all cores, and
//! each host is kept as one 56-byte numeric [`Row`] plus its name in a shared
//! byte arena and its timestamp until deduplication, so 10 million hosts peak
//! under 0.9 GiB and never near the size of the input.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

/// One host's figures, owned. What [`Fleet::push`] takes and [`Fleet::record`] gives back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRecord {
    pub host: String,
    pub timestamp_unix_s: Option<i64>,
    pub tmp_used_bytes: u64,
    pub tmp_inodes: Option<u64>,
    pub mem_total_bytes: u64,
    pub mem_available_bytes: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub swap_free_bytes: Option<u64>,
}

const NONE: u64 = u64::MAX;
const NO_TS: i64 = i64::MIN;

fn opt(v: u64) -> Option<u64> {
    (v != NONE).then_some(v)
}

/// A name is packed into a [`Row`] as `offset << NAME_LEN_BITS | length`: names up
/// to 16 MiB each, 1 TiB of names in all (both far beyond a real fleet; over
/// them ingest stops with an error rather than wrap).
const NAME_LEN_BITS: u32 = 24;
pub(crate) const MAX_NAME_LEN: usize = (1 << NAME_LEN_BITS) - 1;
const MAX_NAMES_BYTES: u64 = 1 << (64 - NAME_LEN_BITS);

/// Compact storage of one host's figures (56 bytes); absent values are `u64::MAX`.
/// What only deduplication needs (timestamps, where a row was read) lives
/// apart and is freed once duplicates are gone: at 10 million hosts every
/// byte a row takes is 10 MB.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row {
    pub tmp_used: u64,
    pub inodes: u64,
    pub mem_total: u64,
    pub mem_avail: u64,
    pub swap_total: u64,
    pub swap_free: u64,
    /// Offset into [`Fleet::names`] and length, packed (see [`NAME_LEN_BITS`]).
    name: u64,
}

/// Where rows were read, run-length coded: rows from `row` up to the next
/// anchor are consecutive lines of input `file` starting at `line`, or all
/// line 0 when `line` is 0 (Prometheus). A file of data lines needs one, not
/// 16 bytes per row.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    row: usize,
    line: u64,
    file: usize,
}

fn check_names_len(total: u64) -> Result<()> {
    anyhow::ensure!(
        total <= MAX_NAMES_BYTES,
        "more than {MAX_NAMES_BYTES} bytes of host names: analyze the fleet in parts"
    );
    Ok(())
}

/// All hosts read so far.
#[derive(Debug, Default)]
pub struct Fleet {
    pub(crate) rows: Vec<Row>,
    /// Each row's timestamp (or `NO_TS`), parallel to `rows` until [`Fleet::dedup`], which frees it.
    ts: Vec<i64>,
    /// Where each row was read, until [`Fleet::dedup`].
    anchors: Vec<Anchor>,
    names: Vec<u8>,
    /// Input names, indexed by a row's file.
    pub sources: Vec<String>,
}

impl Fleet {
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub(crate) fn name(&self, r: &Row) -> &str {
        let off = (r.name >> NAME_LEN_BITS) as usize;
        let len = (r.name & MAX_NAME_LEN as u64) as usize;
        // Names only enter through &str.
        std::str::from_utf8(&self.names[off..off + len]).unwrap_or("?")
    }

    /// `file:line` of row `i`, before [`Fleet::dedup`].
    fn location(&self, i: usize) -> String {
        let (file, line) = match self.anchors.partition_point(|a| a.row <= i) {
            0 => (None, 0),
            k => {
                let a = &self.anchors[k - 1];
                let line = if a.line == 0 {
                    0
                } else {
                    a.line + (i - a.row) as u64
                };
                (self.sources.get(a.file), line)
            }
        };
        format!("{}:{line}", file.map(String::as_str).unwrap_or("?"))
    }

    /// Record where the next row comes from; an anchor only where the run breaks.
    fn note_location(&mut self, file: usize, line: u64) {
        let i = self.rows.len();
        if let Some(a) = self.anchors.last() {
            let expect = if a.line == 0 {
                0
            } else {
                a.line + (i - a.row) as u64
            };
            if a.file == file && expect == line {
                return;
            }
        }
        self.anchors.push(Anchor { row: i, line, file });
    }

    /// Append a parsed host; fails only past the packing limits above.
    fn add(&mut self, p: Parsed<'_>, file: usize, line: u64) -> Result<()> {
        check_names_len(self.names.len() as u64 + p.host.len() as u64)?;
        self.note_location(file, line);
        let (row, ts) = p.into_row(&mut self.names);
        self.rows.push(row);
        self.ts.push(ts);
        Ok(())
    }

    /// Add a host read from `source` (e.g. `prometheus`) at `line`.
    pub fn push(&mut self, rec: &HostRecord, source: &str, line: u64) -> Result<()> {
        let file = match self.sources.iter().position(|s| s == source) {
            Some(i) => i,
            None => {
                self.sources.push(source.to_string());
                self.sources.len() - 1
            }
        };
        // A label is not a line that could be skipped: cut an absurd one short.
        let mut host = rec.host.as_str();
        if host.len() > MAX_NAME_LEN {
            let mut end = MAX_NAME_LEN;
            while !host.is_char_boundary(end) {
                end -= 1;
            }
            host = &host[..end];
        }
        let p = Parsed {
            host: Cow::Borrowed(host),
            ts: rec.timestamp_unix_s,
            tmp: rec.tmp_used_bytes,
            inodes: rec.tmp_inodes,
            mem_total: rec.mem_total_bytes,
            mem_avail: rec.mem_available_bytes,
            swap_total: rec.swap_total_bytes,
            swap_free: rec.swap_free_bytes,
        };
        self.add(p, file, line)
    }

    /// The host at `i`. `timestamp_unix_s` is None after [`Fleet::dedup`]:
    /// timestamps only serve to pick the newest snapshot and are freed then.
    pub fn record(&self, i: usize) -> HostRecord {
        let r = &self.rows[i];
        let ts = self.ts.get(i).copied().unwrap_or(NO_TS);
        HostRecord {
            host: self.name(r).to_string(),
            timestamp_unix_s: (ts != NO_TS).then_some(ts),
            tmp_used_bytes: r.tmp_used,
            tmp_inodes: opt(r.inodes),
            mem_total_bytes: r.mem_total,
            mem_available_bytes: opt(r.mem_avail),
            swap_total_bytes: opt(r.swap_total),
            swap_free_bytes: opt(r.swap_free),
        }
    }

    /// Keep one row per host name: the newest timestamp, and on a tie (or
    /// without timestamps) the one read last. Returns how many were dropped
    /// and up to `examples` descriptions of them. Frees the timestamps and
    /// locations afterwards.
    ///
    /// Rows are ordered by (name hash, name, timestamp, read order), so each
    /// run of equal names ends with its keeper. That order is built one slice
    /// of the hash range at a time: at 10 million hosts a (hash, index) key per
    /// row at once would be 160 MB, more than anything else dedup holds.
    pub fn dedup(&mut self, examples: usize) -> (u64, Vec<String>) {
        // Up to ~2 Mi keys (32 MB) per slice.
        self.dedup_sliced(examples, 1 << 21)
    }

    fn dedup_sliced(&mut self, examples: usize, slice_keys: usize) -> (u64, Vec<String>) {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let bh = BuildHasherDefault::<DefaultHasher>::default();
        let n = self.rows.len();
        debug_assert_eq!(self.ts.len(), n);
        // Slices are the top `bits` of the hash, at most 256 of them.
        let bits = n
            .div_ceil(slice_keys.max(1))
            .next_power_of_two()
            .trailing_zeros()
            .min(8);
        let slice_of = |h: u64| {
            if bits == 0 {
                0
            } else {
                (h >> (64 - bits)) as u8
            }
        };
        // Each row's slice (1 byte) saves hashing every name once per slice.
        let slices: Vec<u8> = if bits == 0 {
            Vec::new()
        } else {
            self.rows
                .iter()
                .map(|r| slice_of(bh.hash_one(self.name(r).as_bytes())))
                .collect()
        };
        let mut drop = vec![0u64; n.div_ceil(64)];
        let mut dropped = 0u64;
        let mut ex = Vec::new();
        let mut keys: Vec<(u64, u32)> = Vec::new();
        for s in 0..1u32 << bits {
            keys.clear();
            for (i, r) in self.rows.iter().enumerate() {
                if bits == 0 || slices[i] as u32 == s {
                    keys.push((bh.hash_one(self.name(r).as_bytes()), i as u32));
                }
            }
            keys.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0).then_with(|| {
                    let (ra, rb) = (&self.rows[a.1 as usize], &self.rows[b.1 as usize]);
                    let (ta, tb) = (self.ts[a.1 as usize], self.ts[b.1 as usize]);
                    self.name(ra)
                        .cmp(self.name(rb))
                        .then(ta.cmp(&tb))
                        .then(a.1.cmp(&b.1))
                })
            });
            for w in keys.windows(2) {
                let (ia, ib) = (w[0].1 as usize, w[1].1 as usize);
                let (a, b) = (&self.rows[ia], &self.rows[ib]);
                if w[0].0 == w[1].0 && self.name(a) == self.name(b) {
                    drop[ia / 64] |= 1 << (ia % 64);
                    dropped += 1;
                    if ex.len() < examples {
                        let tb = self.ts[ib];
                        ex.push(format!(
                            "{}: kept {}{}, dropped older {}",
                            self.name(b),
                            self.location(ib),
                            if tb != NO_TS {
                                format!(" (t={tb})")
                            } else {
                                String::new()
                            },
                            self.location(ia)
                        ));
                    }
                }
            }
        }
        std::mem::drop((keys, slices));
        self.ts = Vec::new();
        self.anchors = Vec::new();
        if dropped > 0 {
            let mut i = 0;
            self.rows.retain(|_| {
                let keep = drop[i / 64] & (1 << (i % 64)) == 0;
                i += 1;
                keep
            });
            self.rows.shrink_to_fit();
        }
        (dropped, ex)
    }
}

/// A host as parsed from one line, before it is packed into a [`Row`].
#[derive(Debug)]
struct Parsed<'a> {
    host: Cow<'a, str>,
    ts: Option<i64>,
    tmp: u64,
    inodes: Option<u64>,
    mem_total: u64,
    mem_avail: Option<u64>,
    swap_total: Option<u64>,
    swap_free: Option<u64>,
}

/// Why a line was rejected: a short kind (for counting) and the specifics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad {
    pub kind: &'static str,
    pub detail: String,
}

fn bad(kind: &'static str, detail: impl Into<String>) -> Bad {
    Bad {
        kind,
        detail: detail.into(),
    }
}

impl Parsed<'_> {
    fn validate(self) -> Result<Self, Bad> {
        if self.host.trim().is_empty() {
            return Err(bad("empty host name", "the host name is empty"));
        }
        if self.host.len() > MAX_NAME_LEN {
            return Err(bad(
                "host name too long",
                format!(
                    "the host name is {} bytes, more than {MAX_NAME_LEN}",
                    self.host.len()
                ),
            ));
        }
        if self.mem_total == 0 {
            return Err(bad(
                "zero RAM",
                "total memory is 0: not a real host's figures",
            ));
        }
        if let Some(a) = self.mem_avail.filter(|&a| a != NONE && a > self.mem_total) {
            return Err(bad(
                "inconsistent memory",
                format!(
                    "available memory {a} B is more than total {} B",
                    self.mem_total
                ),
            ));
        }
        if let (Some(t), Some(f)) = (self.swap_total, self.swap_free)
            && f > t
        {
            return Err(bad(
                "inconsistent swap",
                format!("free swap {f} B is more than total swap {t} B"),
            ));
        }
        for v in [self.tmp, self.mem_total] {
            if v == NONE {
                return Err(bad(
                    "value too large",
                    "a value is 2^64-1, which cannot be a size",
                ));
            }
        }
        Ok(self)
    }

    /// Pack into a row, the name appended to `names`; also gives the timestamp.
    /// The caller checks that `names` stays within [`MAX_NAMES_BYTES`].
    fn into_row(self, names: &mut Vec<u8>) -> (Row, i64) {
        let off = names.len() as u64;
        let h = self.host.as_bytes();
        debug_assert!(h.len() <= MAX_NAME_LEN, "validate() bounds names");
        let h = &h[..h.len().min(MAX_NAME_LEN)];
        names.extend_from_slice(h);
        let row = Row {
            tmp_used: self.tmp,
            inodes: self.inodes.unwrap_or(NONE),
            mem_total: self.mem_total,
            mem_avail: self.mem_avail.unwrap_or(NONE),
            swap_total: self.swap_total.unwrap_or(NONE),
            swap_free: self.swap_free.unwrap_or(NONE),
            name: (off << NAME_LEN_BITS) | h.len() as u64,
        };
        (row, self.ts.unwrap_or(NO_TS))
    }
}

/// Old kernels and Kirkland's `free` output have no MemAvailable: estimate it
/// the way the kernel did before 3.14 (free + buffers + cache).
fn estimate_available(free: Option<u64>, buffers: Option<u64>, cached: Option<u64>) -> Option<u64> {
    free.map(|f| {
        f.saturating_add(buffers.unwrap_or(0))
            .saturating_add(cached.unwrap_or(0))
    })
}

#[derive(Deserialize)]
struct JPath<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
    used_bytes: u64,
    #[serde(default)]
    inodes: Option<u64>,
}

/// A `collect` JSON line; a flat form (`tmp_used_bytes` at the top) is also
/// accepted so other tools can produce input without nesting.
#[derive(Deserialize)]
struct JLine<'a> {
    #[serde(default)]
    schema_version: Option<u32>,
    #[serde(borrow)]
    host: Cow<'a, str>,
    #[serde(default)]
    timestamp_unix_s: Option<i64>,
    #[serde(borrow, default)]
    paths: Vec<JPath<'a>>,
    #[serde(default)]
    tmp_used_bytes: Option<u64>,
    #[serde(default)]
    tmp_inodes: Option<u64>,
    #[serde(default)]
    mem_total_bytes: Option<u64>,
    #[serde(default)]
    mem_available_bytes: Option<u64>,
    #[serde(default)]
    mem_free_bytes: Option<u64>,
    #[serde(default)]
    buffers_bytes: Option<u64>,
    #[serde(default)]
    cached_bytes: Option<u64>,
    #[serde(default)]
    swap_total_bytes: Option<u64>,
    #[serde(default)]
    swap_free_bytes: Option<u64>,
    #[serde(default)]
    swap_used_bytes: Option<u64>,
}

fn json_error(e: serde_json::Error) -> Bad {
    use serde_json::error::Category;
    let msg = e.to_string();
    // serde_json counts lines inside our single line: the column is what helps.
    let msg = match msg.rfind(" at line 1 column ") {
        Some(i) => format!(
            "{} (column {})",
            &msg[..i],
            &msg[i + " at line 1 column ".len()..]
        ),
        None => msg,
    };
    match e.classify() {
        Category::Data => bad("wrong or missing JSON field", msg),
        _ => bad("not valid JSON", msg),
    }
}

/// `text` is the line as &str when its block was validated as UTF-8 in one go:
/// serde_json then need not re-validate every string it meets.
fn parse_json<'a>(line: &'a [u8], text: Option<&'a str>, path: &str) -> Result<Parsed<'a>, Bad> {
    let j: JLine = match text {
        Some(t) => serde_json::from_str(t).map_err(json_error)?,
        None => serde_json::from_slice(line).map_err(json_error)?,
    };
    if let Some(v) = j
        .schema_version
        .filter(|&v| v > super::collect::SNAPSHOT_SCHEMA_VERSION)
    {
        return Err(bad(
            "newer schema",
            format!("schema_version {v} is newer than this tmpfsctl understands; upgrade tmpfsctl"),
        ));
    }
    let (tmp, inodes) = if j.paths.is_empty() {
        match j.tmp_used_bytes {
            Some(t) => (t, j.tmp_inodes),
            None => {
                return Err(bad(
                    "no usage figure",
                    "neither `paths` nor `tmp_used_bytes` is present",
                ));
            }
        }
    } else {
        match j.paths.iter().find(|p| p.path == path) {
            Some(p) => (p.used_bytes, p.inodes),
            None => {
                let has: Vec<&str> = j.paths.iter().map(|p| p.path.as_ref()).collect();
                return Err(bad(
                    "path not collected",
                    format!(
                        "no entry for path {path} (it has {}); choose one with --path",
                        has.join(", ")
                    ),
                ));
            }
        }
    };
    let Some(mem_total) = j.mem_total_bytes else {
        return Err(bad(
            "wrong or missing JSON field",
            "missing field `mem_total_bytes`",
        ));
    };
    let swap_free = j.swap_free_bytes.or_else(|| {
        j.swap_used_bytes
            .zip(j.swap_total_bytes)
            .map(|(u, t)| t.saturating_sub(u))
    });
    Parsed {
        host: j.host,
        ts: j.timestamp_unix_s,
        tmp,
        inodes,
        mem_total,
        mem_avail: j
            .mem_available_bytes
            .or_else(|| estimate_available(j.mem_free_bytes, j.buffers_bytes, j.cached_bytes)),
        swap_total: j.swap_total_bytes,
        swap_free,
    }
    .validate()
}

fn parse_u64(field: &[u8], what: &str) -> Result<u64, Bad> {
    std::str::from_utf8(field)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| {
            bad(
                "not a number",
                format!(
                    "{what} {:?} is not a whole non-negative number",
                    String::from_utf8_lossy(field)
                ),
            )
        })
}

fn kib(v: u64, what: &str) -> Result<u64, Bad> {
    v.checked_mul(1024).ok_or_else(|| {
        bad(
            "value too large",
            format!("{what} {v} KiB does not fit 64 bits in bytes"),
        )
    })
}

const KIRKLAND_COLUMNS: [&str; 12] = [
    "host",
    "/tmp KiB",
    "mem total KiB",
    "mem used KiB",
    "mem free KiB",
    "mem shared KiB",
    "buffers KiB",
    "cached KiB",
    "swap total KiB",
    "swap used KiB",
    "swap free KiB",
    "/tmp inodes",
];

/// Seed 001's columns (whitespace-separated; tabs in the original). Sizes are
/// KiB. MemAvailable is not in old `free` output: estimated as free + buffers + cached.
fn parse_kirkland(line: &[u8]) -> Result<Parsed<'_>, Bad> {
    let mut f: [&[u8]; 12] = [b""; 12];
    let mut n = 0;
    for part in line
        .split(|b| *b == b'\t' || *b == b' ')
        .filter(|p| !p.is_empty())
    {
        if n < 12 {
            f[n] = part;
        }
        n += 1;
    }
    if n != 12 {
        return Err(bad(
            "wrong column count",
            format!(
                "{n} columns, Kirkland format has 12 (host, /tmp KiB, free's 6 memory and 3 swap columns, inodes)"
            ),
        ));
    }
    let mut v = [0u64; 12];
    for i in 1..12 {
        v[i] = parse_u64(f[i], KIRKLAND_COLUMNS[i])?;
    }
    let host = std::str::from_utf8(f[0])
        .map_err(|_| bad("host name not UTF-8", "the host column is not UTF-8 text"))?;
    Parsed {
        host: Cow::Borrowed(host),
        ts: None,
        tmp: kib(v[1], KIRKLAND_COLUMNS[1])?,
        inodes: Some(v[11]),
        mem_total: kib(v[2], KIRKLAND_COLUMNS[2])?,
        mem_avail: Some(kib(
            v[4].saturating_add(v[6]).saturating_add(v[7]),
            "free+buffers+cached",
        )?),
        swap_total: Some(kib(v[8], KIRKLAND_COLUMNS[8])?),
        swap_free: Some(kib(v[10], KIRKLAND_COLUMNS[10])?),
    }
    .validate()
}

/// Input format of one file, decided from its first non-blank line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Jsonl,
    Kirkland,
    Csv,
}

fn detect(first: &[u8]) -> Option<Format> {
    let t = first.trim_ascii();
    if t.starts_with(b"{") {
        return Some(Format::Jsonl);
    }
    let ws = t
        .split(|b| *b == b'\t' || *b == b' ')
        .filter(|p| !p.is_empty())
        .count();
    if !t.contains(&b',') && ws == 12 {
        return Some(Format::Kirkland);
    }
    if t.contains(&b',') {
        return Some(Format::Csv);
    }
    None
}

#[derive(Debug, Clone)]
pub struct IngestOptions {
    pub skip_bad: bool,
    /// Which collected path is "/tmp" in JSON input.
    pub path: String,
    pub threads: usize,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            skip_bad: false,
            path: "/tmp".into(),
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub name: String,
    pub format: Format,
    pub lines: u64,
    pub records: u64,
    pub skipped: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SkipReason {
    pub reason: String,
    pub count: u64,
    /// The first place it happened and the specifics there.
    pub first: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestReport {
    pub files: Vec<FileReport>,
    pub records: u64,
    pub skipped: u64,
    pub skip_reasons: Vec<SkipReason>,
    pub duplicates_dropped: u64,
    pub duplicate_examples: Vec<String>,
    #[serde(skip)]
    reasons: BTreeMap<&'static str, (u64, String)>,
}

impl IngestReport {
    fn note_bad(&mut self, file: &str, line: u64, b: &Bad) {
        self.skipped += 1;
        let e = self
            .reasons
            .entry(b.kind)
            .or_insert_with(|| (0, format!("{file}:{line}: {}", b.detail)));
        e.0 += 1;
    }

    /// Count `count` inputs dropped for `kind` (sources other than lines, e.g. Prometheus).
    pub fn note_skipped(&mut self, kind: &'static str, count: u64, first: String) {
        self.skipped += count;
        let e = self.reasons.entry(kind).or_insert_with(|| (0, first));
        e.0 += count;
    }

    pub fn finish(&mut self) {
        let mut v: Vec<SkipReason> = self
            .reasons
            .iter()
            .map(|(k, (c, f))| SkipReason {
                reason: k.to_string(),
                count: *c,
                first: f.clone(),
            })
            .collect();
        v.sort_by_key(|r| std::cmp::Reverse(r.count));
        self.skip_reasons = v;
    }
}

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
        rows: Vec::with_capacity(chunk.len() / 200),
        ts_lines: Vec::with_capacity(chunk.len() / 200),
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
            Format::Jsonl => parse_json(line, line_text, path),
            Format::Kirkland => {
                let r = parse_kirkland(line);
                // A header row (non-numeric second column) may open the file.
                if first && matches!(&r, Err(b) if b.kind == "not a number") {
                    continue;
                }
                r
            }
            Format::Csv => Err(bad("internal", "CSV is not line-parsed")),
        };
        match parsed {
            Ok(p) => {
                let (row, ts) = p.into_row(&mut out.names);
                out.rows.push(row);
                out.ts_lines.push((ts, out.lines));
            }
            Err(b) => out.bad.push((out.lines, b)),
        }
    }
    out
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
            "{name}: cannot tell the format from its first line {:?}; give JSON lines from `tmpfsctl collect`, \
             Kirkland's 12 tab-separated columns, or CSV with a header row",
            String::from_utf8_lossy(&first_line[..first_line.len().min(80)])
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
        ingest_csv(name, file_idx, rest, opts, fleet, report, &mut fr)?;
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
        let path = opts.path.as_str();
        let outs: Vec<ChunkOut> = if chunks.len() == 1 {
            vec![parse_chunk(&chunks[0], format, path, first_chunk)]
        } else {
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
        };
        first_chunk = false;
        for o in outs {
            if let Some((l, b)) = o.bad.first()
                && !opts.skip_bad
            {
                anyhow::bail!(
                    "{name}:{}: {}: {}; fix the line, or pass --skip-bad to skip such lines and count them",
                    line_base + l,
                    b.kind,
                    b.detail
                );
            }
            for (l, b) in &o.bad {
                report.note_bad(name, line_base + l, b);
            }
            fr.skipped += o.bad.len() as u64;
            fr.records += o.rows.len() as u64;
            let base_off = fleet.names.len() as u64;
            check_names_len(base_off + o.names.len() as u64)?;
            fleet.names.extend_from_slice(&o.names);
            fleet.rows.reserve(o.rows.len());
            fleet.ts.reserve(o.rows.len());
            for (mut row, (ts, l)) in o.rows.into_iter().zip(o.ts_lines) {
                row.name += base_off << NAME_LEN_BITS;
                fleet.note_location(file_idx, line_base + l);
                fleet.rows.push(row);
                fleet.ts.push(ts);
            }
            line_base += o.lines;
        }
    }
    fr.lines = line_base;
    report.records += fr.records;
    report.files.push(fr);
    Ok(())
}

fn csv_u64(
    rec: &csv::ByteRecord,
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
    let v = parse_u64(f, what)?;
    v.checked_mul(mult).map(Some).ok_or_else(|| {
        bad(
            "value too large",
            format!("{what} {v} does not fit 64 bits in bytes"),
        )
    })
}

/// CSV with a header naming the columns (any order, extra columns ignored):
/// `host` (or `hostname`, `instance`), `tmp_used_bytes` (or `tmp_used_kb`),
/// `mem_total_bytes` (or `_kb`), optional `timestamp_unix_s`, `tmp_inodes`,
/// `mem_available_bytes`, `mem_free_bytes`, `buffers_bytes`, `cached_bytes`,
/// `swap_total_bytes`, `swap_free_bytes`, `swap_used_bytes` (each also as `_kb`).
fn ingest_csv(
    name: &str,
    file_idx: usize,
    r: impl Read,
    opts: &IngestOptions,
    fleet: &mut Fleet,
    report: &mut IngestReport,
    fr: &mut FileReport,
) -> Result<()> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .comment(Some(b'#'))
        .from_reader(r);
    let headers = rdr
        .byte_headers()
        .with_context(|| format!("{name}:1: cannot read the CSV header"))?
        .clone();
    let find = |base: &str| -> Option<(usize, u64)> {
        headers.iter().enumerate().find_map(|(i, h)| {
            let h = String::from_utf8_lossy(h).trim().to_ascii_lowercase();
            if h == format!("{base}_bytes") || (base == "tmp_inodes" && h == base) {
                Some((i, 1))
            } else if h == format!("{base}_kb") || h == format!("{base}_kib") {
                Some((i, 1024))
            } else {
                None
            }
        })
    };
    let host_col = headers.iter().position(|h| {
        let h = String::from_utf8_lossy(h).trim().to_ascii_lowercase();
        matches!(h.as_str(), "host" | "hostname" | "instance")
    });
    let ts_col = headers
        .iter()
        .position(|h| String::from_utf8_lossy(h).trim() == "timestamp_unix_s");
    let (tmp_c, mem_c) = (find("tmp_used"), find("mem_total"));
    let (Some(host_col), Some(_), Some(_)) = (host_col, tmp_c, mem_c) else {
        anyhow::bail!(
            "{name}:1: the CSV header must name at least `host`, `tmp_used_bytes` and `mem_total_bytes` \
             (or `_kb` variants); it has: {}",
            headers
                .iter()
                .map(|h| String::from_utf8_lossy(h).into_owned())
                .collect::<Vec<_>>()
                .join(",")
        );
    };
    let cols = [
        find("tmp_inodes"),
        find("mem_available"),
        find("mem_free"),
        find("buffers"),
        find("cached"),
        find("swap_total"),
        find("swap_free"),
        find("swap_used"),
    ];
    let mut rec = csv::ByteRecord::new();
    let mut last_line = 1;
    loop {
        let line;
        let parsed: Result<Parsed<'_>, Bad> = match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {
                line = rec.position().map(|p| p.line()).unwrap_or(last_line + 1);
                (|| {
                    let host =
                        std::str::from_utf8(rec.get(host_col).unwrap_or(b"")).map_err(|_| {
                            bad("host name not UTF-8", "the host column is not UTF-8 text")
                        })?;
                    let ts = match ts_col.and_then(|i| rec.get(i)).map(|f| f.trim_ascii()) {
                        Some(f) if !f.is_empty() => Some(
                            std::str::from_utf8(f)
                                .ok()
                                .and_then(|s| s.parse::<i64>().ok())
                                .ok_or_else(|| {
                                    bad("not a number", "timestamp_unix_s is not a whole number")
                                })?,
                        ),
                        _ => None,
                    };
                    let tmp = csv_u64(&rec, tmp_c, "tmp_used")?
                        .ok_or_else(|| bad("missing value", "tmp_used is empty"))?;
                    let mem_total = csv_u64(&rec, mem_c, "mem_total")?
                        .ok_or_else(|| bad("missing value", "mem_total is empty"))?;
                    let v: Vec<Option<u64>> = cols
                        .iter()
                        .zip([
                            "tmp_inodes",
                            "mem_available",
                            "mem_free",
                            "buffers",
                            "cached",
                            "swap_total",
                            "swap_free",
                            "swap_used",
                        ])
                        .map(|(c, w)| csv_u64(&rec, *c, w))
                        .collect::<Result<_, _>>()?;
                    Parsed {
                        host: Cow::Owned(host.trim().to_string()),
                        ts,
                        tmp,
                        inodes: v[0],
                        mem_total,
                        mem_avail: v[1].or_else(|| estimate_available(v[2], v[3], v[4])),
                        swap_total: v[5],
                        swap_free: v[6]
                            .or_else(|| v[7].zip(v[5]).map(|(u, t)| t.saturating_sub(u))),
                    }
                    .validate()
                })()
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
                    anyhow::bail!(
                        "{name}:{line}: {}: {}; fix the line, or pass --skip-bad to skip such lines and count them",
                        b.kind,
                        b.detail
                    );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, text: &str, skip_bad: bool) -> Result<(Fleet, IngestReport)> {
        let mut f = Fleet::default();
        let mut r = IngestReport::default();
        let opts = IngestOptions {
            skip_bad,
            threads: 2,
            ..Default::default()
        };
        ingest(name, Box::new(text.as_bytes()), &opts, &mut f, &mut r)?;
        r.finish();
        Ok((f, r))
    }

    #[test]
    fn kirkland_columns_are_kib_and_available_is_estimated() {
        let (f, r) = read(
            "k.tsv",
            "1\t16\t4000000\t3000000\t1000000\t100\t200\t300\t2000\t0\t2000\t42\n",
            false,
        )
        .unwrap();
        assert_eq!(r.files[0].format, Format::Kirkland);
        let h = f.record(0);
        assert_eq!(h.host, "1");
        assert_eq!(h.tmp_used_bytes, 16 * 1024);
        assert_eq!(h.mem_total_bytes, 4_000_000 * 1024);
        assert_eq!(h.mem_available_bytes, Some((1_000_000 + 200 + 300) * 1024));
        assert_eq!(h.swap_free_bytes, Some(2000 * 1024));
        assert_eq!(h.tmp_inodes, Some(42));
    }

    #[test]
    fn kirkland_header_row_is_skipped_but_not_later_ones() {
        let text = "host\ttmp\ttotal\tused\tfree\tshared\tbuffers\tcached\tst\tsu\tsf\tinodes\n\
                    a\t4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n\
                    host\ttmp\ttotal\tused\tfree\tshared\tbuffers\tcached\tst\tsu\tsf\tinodes\n";
        let e = read("k", text, false).unwrap_err().to_string();
        assert!(e.starts_with("k:3: not a number: /tmp KiB \"tmp\""), "{e}");
    }

    #[test]
    fn json_snapshot_picks_the_chosen_path() {
        let l = r#"{"schema_version":1,"host":"h\u00e9","timestamp_unix_s":5,"kernel":"x","paths":[{"path":"/var/tmp","used_bytes":9,"inodes":1},{"path":"/tmp","used_bytes":4096,"inodes":3}],"mem_total_bytes":1000000,"mem_available_bytes":500000,"swap_total_bytes":0,"swap_free_bytes":0}"#;
        let (f, _) = read("j", l, false).unwrap();
        let h = f.record(0);
        assert_eq!(
            (h.host.as_str(), h.tmp_used_bytes, h.tmp_inodes),
            ("hé", 4096, Some(3))
        );
        assert_eq!(h.timestamp_unix_s, Some(5));
    }

    #[test]
    fn malformed_json_names_file_line_and_problem() {
        let good = r#"{"host":"a","tmp_used_bytes":1,"mem_total_bytes":10}"#;
        let text = format!(
            "{good}\n\n{good}\n{{\"host\":\"b\",\"tmp_used_bytes\":\"x\",\"mem_total_bytes\":10}}\n"
        );
        let e = read("in.jsonl", &text, false).unwrap_err().to_string();
        assert!(
            e.starts_with("in.jsonl:4: wrong or missing JSON field: invalid type"),
            "{e}"
        );
        assert!(e.contains("--skip-bad"));
        let (f, r) = read("in.jsonl", &format!("{text}{{not json\n"), true).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(r.skipped, 2);
        assert_eq!(r.skip_reasons.len(), 2);
        assert!(
            r.skip_reasons
                .iter()
                .any(|s| s.first.starts_with("in.jsonl:5: ")),
            "{:?}",
            r.skip_reasons
        );
    }

    #[test]
    fn line_numbers_survive_block_boundaries() {
        // Enough lines to span several 4 MiB blocks and both threads.
        let good = r#"{"host":"hostname-padding-padding-padding","tmp_used_bytes":1,"mem_total_bytes":10}"#;
        let n = 200_000;
        let mut text = String::new();
        for _ in 0..n {
            text.push_str(good);
            text.push('\n');
        }
        text.push_str("{\"host\":\"z\",\"mem_total_bytes\":10}\n");
        let e = read("big", &text, false).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("big:{}: no usage figure", n + 1)),
            "{e}"
        );
        let (f, r) = read("big", &text, true).unwrap();
        assert_eq!(f.len(), n);
        assert_eq!(r.files[0].lines, n as u64 + 1);
    }

    #[test]
    fn csv_with_header_any_order_and_kb_columns() {
        let text = "mem_total_kb,host,tmp_used_bytes,swap_total_bytes,swap_used_bytes,extra\n\
                    1000,\"web,1\",4096,100,40,zzz\n\
                    1000,web2,,100,40,zzz\n";
        let e = read("c.csv", text, false).unwrap_err().to_string();
        assert!(e.starts_with("c.csv:3: missing value"), "{e}");
        let (f, r) = read("c.csv", text, true).unwrap();
        assert_eq!(r.files[0].format, Format::Csv);
        let h = f.record(0);
        assert_eq!(h.host, "web,1");
        assert_eq!(h.mem_total_bytes, 1_024_000);
        assert_eq!(h.swap_free_bytes, Some(60));
        assert!(
            read("c.csv", "a,b\n1,2\n", false)
                .unwrap_err()
                .to_string()
                .contains("must name at least")
        );
    }

    #[test]
    fn inconsistent_figures_are_rejected() {
        let e = read("j", r#"{"host":"a","tmp_used_bytes":1,"mem_total_bytes":10,"swap_total_bytes":1,"swap_free_bytes":5}"#, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("inconsistent swap"), "{e}");
        let e = read(
            "j",
            r#"{"host":"a","tmp_used_bytes":1,"mem_total_bytes":0}"#,
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("zero RAM"), "{e}");
        let e = read("j", "what is this\n", false).unwrap_err().to_string();
        assert!(e.contains("cannot tell the format"), "{e}");
    }

    #[test]
    fn dedup_in_hash_slices_matches_dedup_in_one_go() {
        let mut text = String::new();
        for i in 0..3000u64 {
            // Names repeat 1..=4 times, timestamps tie or differ, some have none.
            let h = i % 1300;
            let ts = if i % 7 == 0 {
                String::new()
            } else {
                format!(",\"timestamp_unix_s\":{}", (i * 37) % 11)
            };
            text.push_str(&format!(
                "{{\"host\":\"h{h}\"{ts},\"tmp_used_bytes\":{i},\"mem_total_bytes\":10}}\n"
            ));
        }
        let (mut one, _) = read("d", &text, false).unwrap();
        let (n1, ex1) = one.dedup_sliced(50, usize::MAX);
        assert_eq!(n1, 3000 - 1300);
        assert_eq!(ex1.len(), 50);
        for keys in [1, 100, 1000] {
            let (mut sliced, _) = read("d", &text, false).unwrap();
            assert_eq!(sliced.dedup_sliced(50, keys), (n1, ex1.clone()), "{keys}");
            let all = |f: &Fleet| (0..f.len()).map(|i| f.record(i)).collect::<Vec<_>>();
            assert_eq!(all(&sliced), all(&one), "{keys}");
        }
    }

    #[test]
    fn duplicate_examples_name_the_right_lines_across_gaps_and_files() {
        let mut f = Fleet::default();
        let mut r = IngestReport::default();
        let opts = IngestOptions {
            skip_bad: true,
            threads: 2,
            ..Default::default()
        };
        let j = |h: &str, t: u64| {
            format!(
                "{{\"host\":\"{h}\",\"timestamp_unix_s\":{t},\"tmp_used_bytes\":1,\"mem_total_bytes\":10}}\n"
            )
        };
        // Lines 1, 2 (blank), 3 (comment), 4, 5 (bad), 6.
        let a = format!(
            "{}\n# note\n{}not json\n{}",
            j("x", 1),
            j("y", 1),
            j("z", 1)
        );
        ingest("a", Box::new(a.as_bytes()), &opts, &mut f, &mut r).unwrap();
        // A quoted name over two lines: the next record starts on line 4.
        let c = "host,tmp_used_bytes,mem_total_bytes,timestamp_unix_s\n\"multi\nline\",1,10,1\nz,1,10,5\ny,1,10,0\n";
        ingest("c", Box::new(c.as_bytes()), &opts, &mut f, &mut r).unwrap();
        f.push(
            &HostRecord {
                host: "x".into(),
                timestamp_unix_s: Some(9),
                tmp_used_bytes: 1,
                tmp_inodes: None,
                mem_total_bytes: 10,
                mem_available_bytes: None,
                swap_total_bytes: None,
                swap_free_bytes: None,
            },
            "prometheus",
            0,
        )
        .unwrap();
        let (n, mut ex) = f.dedup(10);
        assert_eq!(n, 3);
        ex.sort();
        assert_eq!(
            ex,
            [
                "x: kept prometheus:0 (t=9), dropped older a:1",
                "y: kept a:4 (t=1), dropped older c:5",
                "z: kept c:4 (t=5), dropped older a:6",
            ]
        );
        assert_eq!(f.record(0).timestamp_unix_s, None, "timestamps are freed");
    }

    #[test]
    fn row_stays_small() {
        // 10 million hosts: each byte here is 10 MB of peak memory.
        assert_eq!(std::mem::size_of::<Row>(), 56);
    }

    #[test]
    fn duplicates_keep_the_newest_then_the_last_read() {
        let text = r#"{"host":"a","timestamp_unix_s":20,"tmp_used_bytes":2,"mem_total_bytes":10}
{"host":"b","tmp_used_bytes":1,"mem_total_bytes":10}
{"host":"a","timestamp_unix_s":10,"tmp_used_bytes":1,"mem_total_bytes":10}
{"host":"b","tmp_used_bytes":3,"mem_total_bytes":10}
"#;
        let (mut f, _) = read("d", text, false).unwrap();
        let (n, ex) = f.dedup(10);
        assert_eq!(n, 2);
        assert_eq!(f.len(), 2);
        let mut got: Vec<(String, u64)> = (0..2)
            .map(|i| (f.record(i).host, f.record(i).tmp_used_bytes))
            .collect();
        got.sort();
        assert_eq!(got, [("a".to_string(), 2), ("b".to_string(), 3)]);
        assert!(
            ex.iter()
                .any(|e| e.starts_with("a: kept d:1 (t=20), dropped older d:3")),
            "{ex:?}"
        );
    }
}
