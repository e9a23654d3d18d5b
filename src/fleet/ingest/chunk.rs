//! What parsing one block of input gives, shared by the block parsers of
//! every format and the driver that joins the blocks in order.

use super::parsed::{Bad, Parsed};
use super::store::{Row, pack};

/// What one block of input gave.
pub(super) struct ChunkOut {
    pub(super) rows: Vec<Row>,
    /// Per row: timestamp and line within the chunk.
    pub(super) ts_lines: Vec<(i64, u64)>,
    pub(super) names: Vec<u8>,
    pub(super) bad: Vec<(u64, Bad)>,
    pub(super) lines: u64,
    /// CSV: the `csv` reader's line count after the block's last record, if any.
    pub(super) csv_next: Option<u64>,
}

impl ChunkOut {
    /// Room for `rows` rows: survey lines are ~100 bytes, so a block's length
    /// / 64 holds them all and saves regrowing (pages never written cost nothing).
    pub(super) fn with_capacity(rows: usize) -> ChunkOut {
        ChunkOut {
            rows: Vec::with_capacity(rows),
            ts_lines: Vec::with_capacity(rows),
            names: Vec::new(),
            bad: Vec::new(),
            lines: 0,
            csv_next: None,
        }
    }

    pub(super) fn push(&mut self, p: Parsed<'_>, line: u64) {
        let (row, ts) = pack(p, &mut self.names);
        self.rows.push(row);
        self.ts_lines.push((ts, line));
    }
}

/// Where each line of `chunk` ends: its newlines, and the end of a last line without one.
pub(super) fn line_ends(chunk: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr_iter(b'\n', chunk)
        .chain((!chunk.is_empty() && chunk[chunk.len() - 1] != b'\n').then_some(chunk.len()))
}
