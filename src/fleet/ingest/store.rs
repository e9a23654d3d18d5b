//! The host store: every host read so far, packed small (one 64-byte [`Row`]
//! plus its name in a shared byte arena), where each row was read, and the
//! deduplication that keeps one snapshot per host.

use std::borrow::Cow;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::parsed::{MAX_NAME_LEN, NAME_LEN_BITS, NONE, Parsed};

/// One host's figures, owned. What [`Fleet::push`] takes and [`Fleet::record`] gives back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRecord {
    pub host: String,
    pub timestamp_unix_s: Option<i64>,
    pub tmp_used_bytes: u64,
    pub tmp_inodes: Option<u64>,
    pub mem_total_bytes: u64,
    pub mem_available_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_free_bytes: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub swap_free_bytes: Option<u64>,
}

/// A row without a timestamp.
pub(super) const NO_TS: i64 = i64::MIN;

fn opt(v: u64) -> Option<u64> {
    (v != NONE).then_some(v)
}

/// All names together: the offset's bits (see [`NAME_LEN_BITS`]).
const MAX_NAMES_BYTES: u64 = 1 << (64 - NAME_LEN_BITS);

/// Compact storage of one host's figures (64 bytes); absent values are `u64::MAX`.
/// What only deduplication needs (timestamps, where a row was read) lives
/// apart and is freed once duplicates are gone: at 10 million hosts every
/// byte a row takes is 10 MB.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row {
    pub tmp_used: u64,
    pub inodes: u64,
    pub mem_total: u64,
    pub mem_avail: u64,
    pub mem_free: u64,
    pub swap_total: u64,
    pub swap_free: u64,
    /// Offset into [`Fleet::names`] and length, packed (see [`NAME_LEN_BITS`]).
    pub(super) name: u64,
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

/// Pack `p` into a row, the name appended to `names`; also gives the timestamp.
/// The caller checks that `names` stays within [`MAX_NAMES_BYTES`].
pub(super) fn pack(p: Parsed<'_>, names: &mut Vec<u8>) -> (Row, i64) {
    let off = names.len() as u64;
    let h = p.host.as_bytes();
    debug_assert!(h.len() <= MAX_NAME_LEN, "Parsed::validate bounds names");
    let h = &h[..h.len().min(MAX_NAME_LEN)];
    names.extend_from_slice(h);
    let row = Row {
        tmp_used: p.tmp,
        inodes: p.inodes.unwrap_or(NONE),
        mem_total: p.mem_total,
        mem_avail: p.mem_avail.unwrap_or(NONE),
        mem_free: p.mem_free.unwrap_or(NONE),
        swap_total: p.swap_total.unwrap_or(NONE),
        swap_free: p.swap_free.unwrap_or(NONE),
        name: (off << NAME_LEN_BITS) | h.len() as u64,
    };
    (row, p.ts.unwrap_or(NO_TS))
}

/// All hosts read so far.
#[derive(Debug, Default)]
pub struct Fleet {
    pub(crate) rows: Vec<Row>,
    /// Each row's timestamp (or `NO_TS`), parallel to `rows` until
    /// [`Fleet::dedup`], which frees it; empty while no row has one.
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

    /// Timestamp of row `i`, before [`Fleet::dedup`].
    fn ts_of(&self, i: usize) -> i64 {
        self.ts.get(i).copied().unwrap_or(NO_TS)
    }

    /// Record where row `i`, the next one, comes from; an anchor only where the run breaks.
    fn note_location(&mut self, i: usize, file: usize, line: u64) {
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
    pub(super) fn add(&mut self, p: Parsed<'_>, file: usize, line: u64) -> Result<()> {
        check_names_len(self.names.len() as u64 + p.host.len() as u64)?;
        self.note_location(self.rows.len(), file, line);
        let (row, ts) = pack(p, &mut self.names);
        if ts != NO_TS || !self.ts.is_empty() {
            self.ts.resize(self.rows.len(), NO_TS);
            self.ts.push(ts);
        }
        self.rows.push(row);
        Ok(())
    }

    /// Append the rows one block of input gave (names in their own arena,
    /// offsets from 0; timestamps, if any, and runs of lines as in
    /// `ChunkOut`), read from lines `line_base + l` of input `file`. Leaves
    /// `rows` empty, its buffer kept for the next block.
    pub(super) fn append_block(
        &mut self,
        names: &[u8],
        rows: &mut Vec<Row>,
        ts: &[i64],
        runs: &[(usize, u64)],
        file: usize,
        line_base: u64,
    ) -> Result<()> {
        let base_off = self.names.len() as u64;
        check_names_len(base_off + names.len() as u64)?;
        self.names.extend_from_slice(names);
        let first = self.rows.len();
        for &(r, l) in runs {
            self.note_location(first + r, file, line_base + l);
        }
        if !ts.is_empty() || !self.ts.is_empty() {
            self.ts.resize(first, NO_TS);
            self.ts.extend_from_slice(ts);
            self.ts.resize(first + rows.len(), NO_TS);
        }
        for row in rows.iter_mut() {
            row.name += base_off << NAME_LEN_BITS;
        }
        self.rows.extend_from_slice(rows);
        rows.clear();
        Ok(())
    }

    /// Room for `rows` more rows and `name_bytes` more bytes of names, asked
    /// for before they come: they are then written once, not copied at every
    /// doubling into fresh pages (each page of a copy is faulted in and zeroed,
    /// which costs more than the copy itself).
    pub(super) fn reserve(&mut self, rows: usize, name_bytes: usize) {
        self.rows.reserve(rows);
        self.names.reserve(name_bytes);
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
            mem_free: rec.mem_free_bytes,
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
            mem_free_bytes: opt(r.mem_free),
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
        // Fleets are often listed in name order (an inventory, `sort`ed
        // output): strictly rising names cannot repeat, and one pass over
        // them costs far less than hashing and sorting every name.
        if self
            .rows
            .windows(2)
            .all(|w| self.name_bytes(&w[0]) < self.name_bytes(&w[1]))
        {
            self.ts = Vec::new();
            self.anchors = Vec::new();
            return (0, Vec::new());
        }
        // Up to ~2 Mi keys (32 MB) per slice.
        self.dedup_sliced(examples, 1 << 21)
    }

    fn name_bytes(&self, r: &Row) -> &[u8] {
        let off = (r.name >> NAME_LEN_BITS) as usize;
        let len = (r.name & MAX_NAME_LEN as u64) as usize;
        &self.names[off..off + len]
    }

    pub(super) fn dedup_sliced(
        &mut self,
        examples: usize,
        slice_keys: usize,
    ) -> (u64, Vec<String>) {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let bh = BuildHasherDefault::<DefaultHasher>::default();
        let n = self.rows.len();
        debug_assert!(self.ts.is_empty() || self.ts.len() == n);
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
                    let (ta, tb) = (self.ts_of(a.1 as usize), self.ts_of(b.1 as usize));
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
                        let tb = self.ts_of(ib);
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
