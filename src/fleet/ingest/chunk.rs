//! What parsing one block of input gives, shared by the block parsers of
//! every format and the driver that joins the blocks in order.

use super::parsed::{Bad, Parsed};
use super::store::{NO_TS, Row, pack};

/// What one block of input gave.
pub(super) struct ChunkOut {
    pub(super) rows: Vec<Row>,
    /// Each row's timestamp (or `NO_TS`); empty while no row has had one
    /// (survey TSV and most CSV): 8 bytes a row not written for nothing.
    pub(super) ts: Vec<i64>,
    /// Where rows were read, as runs of consecutive lines: (first row, its
    /// line within the chunk). Line 0 (the `csv` reader's "not known yet")
    /// is a run of its own. A block of data lines needs one, not 8 bytes a row.
    pub(super) runs: Vec<(usize, u64)>,
    pub(super) names: Vec<u8>,
    pub(super) bad: Vec<(u64, Bad)>,
    pub(super) lines: u64,
    /// CSV: the `csv` reader's line count after the block's last record, if any.
    pub(super) csv_next: Option<u64>,
}

impl ChunkOut {
    /// Room for `rows` rows: survey lines are ~100 bytes, so a block's length
    /// / 64 holds them all and saves regrowing (pages never written cost nothing).
    /// `recycled` is an earlier block's buffer, used where it is big enough:
    /// its pages are already mapped, where fresh ones are faulted in and zeroed.
    pub(super) fn new(rows: usize, mut recycled: Vec<Row>) -> ChunkOut {
        recycled.clear();
        if recycled.capacity() < rows {
            recycled = Vec::with_capacity(rows);
        }
        ChunkOut {
            rows: recycled,
            ts: Vec::new(),
            runs: Vec::new(),
            names: Vec::new(),
            bad: Vec::new(),
            lines: 0,
            csv_next: None,
        }
    }

    pub(super) fn push(&mut self, p: Parsed<'_>, line: u64) {
        let i = self.rows.len();
        let (row, ts) = pack(p, &mut self.names);
        self.rows.push(row);
        if ts != NO_TS || !self.ts.is_empty() {
            self.ts.resize(i, NO_TS);
            self.ts.push(ts);
        }
        match self.runs.last() {
            Some(&(r, l)) if l != 0 && line != 0 && l + (i - r) as u64 == line => {}
            _ => self.runs.push((i, line)),
        }
    }

    /// The line the last row was read from, if any.
    pub(super) fn last_row_line(&self) -> Option<u64> {
        let &(r, l) = self.runs.last()?;
        Some(if l == 0 {
            0
        } else {
            l + (self.rows.len() - 1 - r) as u64
        })
    }
}

/// Where each line of `chunk` ends: its newlines, and the end of a last line without one.
pub(super) fn line_ends(chunk: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr_iter(b'\n', chunk)
        .chain((!chunk.is_empty() && chunk[chunk.len() - 1] != b'\n').then_some(chunk.len()))
}
