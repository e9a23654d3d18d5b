//! Reading fleet data: JSON lines from `collect`, the 12-column /tmp survey
//! TSV (Kirkland, 2016; KiB), CSV with a header. Files of different formats
//! can be mixed; `-` is stdin.
//!
//! Built to stream: input is read in blocks that are parsed on all cores, and
//! each host is kept as one 64-byte numeric [`Row`] plus its name in a shared
//! byte arena and its timestamp until deduplication, so 10 million hosts peak
//! near 1.2 GiB and never near the size of the input. Duplicates are dropped
//! in passes while reading, so memory follows the hosts kept, not the lines
//! read (10 million lines of one host: under 100 MB).
//!
//! One file per input format ([`jsonl`], [`tsv`], [`csv`]; Prometheus is
//! `fleet::prom`), the host store and dedup in [`store`], the checks all
//! formats share in [`parsed`], the block-parallel reader in [`driver`]. A new
//! line-based format is a file like `tsv.rs` (a `parse(line) -> Parsed`), a
//! [`Format`] variant and a case in [`detect`] and `driver::parse_chunk`.

mod chunk;
mod csv;
mod driver;
mod jsonl;
mod map;
mod parsed;
mod store;
mod tsv;

use std::collections::BTreeMap;

use serde::Serialize;

pub use driver::{ingest, ingest_file};
pub use parsed::Bad;
pub(crate) use store::Row;
pub use store::{Fleet, HostRecord};

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
    /// Threads the blocks are parsed on (at least 1).
    pub threads: usize,
    /// Advanced by the bytes read; hidden unless [`read_bar`] made it.
    pub progress: indicatif::ProgressBar,
}

/// Inputs smaller than this are read in well under a second: no bar.
const BAR_MIN_BYTES: u64 = 64 << 20;

/// A bar on stderr for reading `total` bytes of input, with the rate and
/// time left; hidden unless stderr is a terminal and the input is large.
/// It is advanced once per block read, so it costs nothing measurable.
pub fn read_bar(total: u64) -> indicatif::ProgressBar {
    if total < BAR_MIN_BYTES || !crate::render::stderr_is_tty() {
        return indicatif::ProgressBar::hidden();
    }
    // Cleared also when reading stops at an error, before the error is printed.
    let pb = indicatif::ProgressBar::new(total).with_finish(indicatif::ProgressFinish::AndClear);
    if let Ok(st) = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}, {eta} left",
    ) {
        pb.set_style(st.progress_chars("=> "));
    }
    pb.set_message("reading");
    pb
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            skip_bad: false,
            path: "/tmp".into(),
            threads: crate::fleet::threads_or_cores(0),
            progress: indicatif::ProgressBar::hidden(),
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

#[cfg(test)]
mod tests;
