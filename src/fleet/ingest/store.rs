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
    /// Some name so far did not sort after the one before it: duplicates
    /// are possible, and [`Fleet::dedup`] (and the passes while reading) must look.
    unordered: bool,
    /// Rows left by the last deduplication pass made while reading (see
    /// [`Fleet::maybe_pass`]), and what the passes dropped so far.
    passed: usize,
    dropped: u64,
    /// Duplicates the passes dropped: (name, where the dropped row was read).
    /// Worded in [`Fleet::dedup`], once the keeper is final.
    early_examples: Vec<(String, String)>,
    /// Threads deduplication hashes and sorts on; 0: the cores available.
    threads: usize,
}

/// Rows read before the first deduplication pass: a pass runs when the rows
/// are 4 times those the last pass kept, and at least this many. So memory
/// follows the hosts kept, not the lines read (10 million lines of one host
/// hold one row between passes of 256 Ki rows), and a fleet without
/// duplicates is hashed about 1.3 times over in all.
const FIRST_PASS_ROWS: usize = 1 << 18;

/// Keys sorted at once by a deduplication pass, per thread: ~2 Mi (32 MB).
const SLICE_KEYS: usize = 1 << 21;

/// Duplicates described while reading, at most (the report shows a few).
const EARLY_EXAMPLES: usize = 100;

impl Fleet {
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Deduplicate on `threads` threads (0: the cores available). The rows
    /// kept are the same for any count.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads;
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
        self.note_order(self.rows.len() - 1);
        self.maybe_pass();
        Ok(())
    }

    /// Whether the names from row `from` on still each sort after the one before.
    fn note_order(&mut self, from: usize) {
        if self.unordered {
            return;
        }
        let from = from.max(1);
        self.unordered = (from..self.rows.len())
            .any(|i| self.name_bytes(&self.rows[i - 1]) >= self.name_bytes(&self.rows[i]));
    }

    /// A deduplication pass while reading, when the rows since the last one
    /// make it due (see [`FIRST_PASS_ROWS`]).
    fn maybe_pass(&mut self) {
        if self.unordered && self.rows.len() >= (self.passed * 4).max(FIRST_PASS_ROWS) {
            let room = EARLY_EXAMPLES - self.early_examples.len();
            let (dropped, ex) = self.find_duplicates(room, SLICE_KEYS);
            for (_, d) in ex {
                let name = self.name(&self.rows[d]).to_string();
                let at = self.location(d);
                self.early_examples.push((name, at));
            }
            self.dropped += dropped
                .iter()
                .map(|w| u64::from(w.count_ones()))
                .sum::<u64>();
            self.compact(&dropped);
            self.passed = self.rows.len();
        }
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
        self.note_order(first);
        self.maybe_pass();
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
    /// of the hash range at a time, the slices on all cores: at 10 million
    /// hosts a (hash, index) key per row at once would be 160 MB, more than
    /// anything else dedup holds. Passes made while reading (see
    /// [`FIRST_PASS_ROWS`]) keep the same rows: the newest of a name's
    /// newest-so-far is its newest.
    pub fn dedup(&mut self, examples: usize) -> (u64, Vec<String>) {
        self.dedup_sliced(examples, SLICE_KEYS)
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
        // Fleets are often listed in name order (an inventory, `sort`ed
        // output): strictly rising names cannot repeat, and one pass over
        // them (made as they were read) costs far less than hashing and
        // sorting every name.
        let mut ex = Vec::new();
        if self.unordered {
            let room = examples.saturating_sub(self.early_examples.len());
            let (dropped, pairs) = if self.passed == self.rows.len() {
                (Vec::new(), Vec::new())
            } else {
                self.find_duplicates(room, slice_keys)
            };
            // Duplicates dropped while reading: their keeper is known only now.
            for (name, at) in self.early_examples.iter().take(examples) {
                let Some(k) = (0..self.rows.len()).rev().find(|&i| {
                    dropped.get(i / 64).is_none_or(|w| w & (1 << (i % 64)) == 0)
                        && self.name(&self.rows[i]) == name
                }) else {
                    continue;
                };
                ex.push(self.example(k, at));
            }
            for (k, d) in pairs {
                ex.push(self.example(k, &self.location(d)));
            }
            ex.truncate(examples);
            self.dropped += dropped
                .iter()
                .map(|w| u64::from(w.count_ones()))
                .sum::<u64>();
            self.compact(&dropped);
        }
        self.ts = Vec::new();
        self.anchors = Vec::new();
        self.early_examples = Vec::new();
        self.passed = self.rows.len();
        self.rows.shrink_to_fit();
        (self.dropped, ex)
    }

    /// "NAME: kept WHERE (t=TS), dropped older AT" for keeper row `k`.
    fn example(&self, k: usize, at: &str) -> String {
        let tk = self.ts_of(k);
        format!(
            "{}: kept {}{}, dropped older {at}",
            self.name(&self.rows[k]),
            self.location(k),
            if tk != NO_TS {
                format!(" (t={tk})")
            } else {
                String::new()
            },
        )
    }

    /// The rows to drop, as a bitmap (bit `i` of word `i / 64`; empty for
    /// none), and up to `examples` (keeper, dropped) pairs, in hash order.
    fn find_duplicates(
        &self,
        examples: usize,
        slice_keys: usize,
    ) -> (Vec<u64>, Vec<(usize, usize)>) {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
        let bh = BuildHasherDefault::<DefaultHasher>::default();
        let n = self.rows.len();
        debug_assert!(self.ts.is_empty() || self.ts.len() == n);
        let threads = if n < 1 << 16 {
            1
        } else {
            crate::fleet::threads_or_cores(self.threads)
        };
        // Slices are the top `bits` of the hash, at most 256 of them, and
        // enough for every core to have a few.
        let want = n
            .div_ceil(slice_keys.max(1))
            .max(if threads > 1 { threads * 4 } else { 1 });
        let bits = want.next_power_of_two().trailing_zeros().min(8);
        let slice_of = |h: u64| {
            if bits == 0 {
                0
            } else {
                (h >> (64 - bits)) as u8
            }
        };
        // By bytes: the same hash as the name's, without checking its UTF-8 again.
        let hash = |r: &Row| bh.hash_one(self.name_bytes(r));
        // Every name hashed once, in read order: rows and names are then
        // read front to back (visited slice by slice, each row's name was a
        // cache miss: three quarters of the time deduplication took).
        let mut hashes: Vec<u64> = vec![0; n];
        let per = n.div_ceil(threads).max(1);
        std::thread::scope(|s| {
            for (rows, out) in self.rows.chunks(per).zip(hashes.chunks_mut(per)) {
                s.spawn(move || {
                    for (r, o) in rows.iter().zip(out) {
                        *o = hash(r);
                    }
                });
            }
        });
        // The rows of each slice, in read order (a counting sort by slice).
        let count = 1usize << bits;
        let mut starts = vec![0usize; count + 1];
        for &h in &hashes {
            starts[slice_of(h) as usize + 1] += 1;
        }
        for k in 0..count {
            starts[k + 1] += starts[k];
        }
        let mut order = vec![0u32; n];
        let mut at = starts.clone();
        for (i, &h) in hashes.iter().enumerate() {
            let sl = slice_of(h) as usize;
            order[at[sl]] = i as u32;
            at[sl] += 1;
        }
        drop(at);
        // One slice: the rows to drop and the (keeper, dropped) pairs, in key order.
        let slice = |s: u32, keys: &mut Vec<(u64, u32)>| {
            keys.clear();
            let s = s as usize;
            keys.extend(
                order[starts[s]..starts[s + 1]]
                    .iter()
                    .map(|&i| (hashes[i as usize], i)),
            );
            // By (hash, read order) first: plain integers, no name looked
            // at (the comparison sort that read names on every tie of a
            // closure was most of deduplication's time). Only where hashes
            // tie (the same name, or rarely a collision) is that run put in
            // full order: name, timestamp, read order. The result is the
            // order the full comparison gives.
            keys.sort_unstable();
            let mut a = 0;
            while a < keys.len() {
                let h = keys[a].0;
                let b = a + keys[a..].iter().take_while(|k| k.0 == h).count();
                if b - a > 1 {
                    keys[a..b].sort_unstable_by(|x, y| {
                        let (rx, ry) = (&self.rows[x.1 as usize], &self.rows[y.1 as usize]);
                        let (tx, ty) = (self.ts_of(x.1 as usize), self.ts_of(y.1 as usize));
                        self.name_bytes(rx)
                            .cmp(self.name_bytes(ry))
                            .then(tx.cmp(&ty))
                            .then(x.1.cmp(&y.1))
                    });
                }
                a = b;
            }
            // Each run of equal names ends with its keeper.
            let mut pairs = Vec::new();
            let mut run = 0;
            for j in 1..=keys.len() {
                let same = keys.get(j).is_some_and(|b| {
                    let a = keys[j - 1];
                    a.0 == b.0
                        && self.name_bytes(&self.rows[a.1 as usize])
                            == self.name_bytes(&self.rows[b.1 as usize])
                });
                if !same {
                    let k = keys[j - 1].1 as usize;
                    pairs.extend(keys[run..j - 1].iter().map(|d| (k, d.1 as usize)));
                    run = j;
                }
            }
            pairs
        };
        let next = AtomicUsize::new(0);
        let mut found: Vec<(usize, Vec<(usize, usize)>)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads.min(count))
                .map(|_| {
                    s.spawn(|| {
                        let mut keys = Vec::new();
                        let mut mine = Vec::new();
                        loop {
                            let k = next.fetch_add(1, Relaxed);
                            if k >= count {
                                break mine;
                            }
                            mine.push((k, slice(k as u32, &mut keys)));
                        }
                    })
                })
                .collect();
            hs.into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        found.sort_unstable_by_key(|x| x.0);
        let mut drop = Vec::new();
        let mut ex = Vec::new();
        for (_, pairs) in found {
            for (k, d) in pairs {
                if drop.is_empty() {
                    drop = vec![0u64; n.div_ceil(64)];
                }
                drop[d / 64] |= 1 << (d % 64);
                if ex.len() < examples {
                    ex.push((k, d));
                }
            }
        }
        (drop, ex)
    }

    /// Remove the rows marked in `drop` (see [`Fleet::find_duplicates`]),
    /// with their timestamps, locations and names; the rest keep their order.
    fn compact(&mut self, drop: &[u64]) {
        if drop.is_empty() {
            return;
        }
        let dropped = |i: usize| drop[i / 64] & (1 << (i % 64)) != 0;
        let n = self.rows.len();
        let old_anchors = std::mem::take(&mut self.anchors);
        let old_names = std::mem::take(&mut self.names);
        let keep_ts = !self.ts.is_empty();
        let (mut a, mut kept) = (0, 0);
        for i in 0..n {
            while a + 1 < old_anchors.len() && old_anchors[a + 1].row <= i {
                a += 1;
            }
            if dropped(i) {
                continue;
            }
            if let Some(an) = old_anchors.get(a).filter(|an| an.row <= i) {
                let line = if an.line == 0 {
                    0
                } else {
                    an.line + (i - an.row) as u64
                };
                self.note_location(kept, an.file, line);
            }
            let mut r = self.rows[i];
            let off = (r.name >> NAME_LEN_BITS) as usize;
            let len = (r.name & MAX_NAME_LEN as u64) as usize;
            r.name = ((self.names.len() as u64) << NAME_LEN_BITS) | len as u64;
            self.names.extend_from_slice(&old_names[off..off + len]);
            self.rows[kept] = r;
            if keep_ts {
                self.ts[kept] = self.ts[i];
            }
            kept += 1;
        }
        self.rows.truncate(kept);
        if keep_ts {
            self.ts.truncate(kept);
        }
    }
}
