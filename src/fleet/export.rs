//! The files `fleet analyze` writes besides its report (`--export-*`,
//! hyperfine-style): every output path is checked before any input is read,
//! so a typo costs nothing but the error.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use super::analyze::FleetReport;
use super::fit::{self, FitParams, Recommendation};
use super::ingest::Fleet;
use crate::render::term::safe_path;
use crate::sys::atomic::{AtomicWrite, check_writable};

/// Files to write, each optional.
#[derive(Debug, Clone, Default)]
pub struct Exports {
    /// The JSON document (what `--json` prints).
    pub json: Option<PathBuf>,
    /// One row per host: its figures and whether it fits each model.
    pub csv: Option<PathBuf>,
    /// The Markdown report (what `--markdown` prints).
    pub markdown: Option<PathBuf>,
    /// The HTML report with charts.
    pub html: Option<PathBuf>,
}

impl Exports {
    fn named(&self) -> Vec<(&'static str, &Path)> {
        [
            ("--export-json", &self.json),
            ("--export-csv", &self.csv),
            ("--export-markdown", &self.markdown),
            ("--html", &self.html),
        ]
        .into_iter()
        .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
        .collect()
    }

    /// Fail (exit 2) now, not after reading millions of lines, when a file
    /// could not be written: a missing directory, a directory given as the
    /// file, no write permission, or one file named by two options.
    pub fn check(&self) -> Result<()> {
        let named = self.named();
        for (i, (flag, p)) in named.iter().enumerate() {
            check_writable(flag, p)?;
            if let Some((other, _)) = named[..i].iter().find(|(_, q)| q == p) {
                anyhow::bail!(
                    "{other} and {flag} both name {}; give each output its own file",
                    safe_path(p)
                );
            }
        }
        Ok(())
    }

    /// Write every file asked for; `fleet` is the deduplicated input of `report`.
    pub fn write(&self, report: &FleetReport, fleet: &Fleet, fit: &FitParams) -> Result<()> {
        let write = |flag: &str, p: &Path, data: &[u8]| {
            AtomicWrite::report(flag)
                .write(p, data)
                .with_context(|| format!("{flag} {}", safe_path(p)))
        };
        if let Some(p) = &self.json {
            let mut data = serde_json::to_vec_pretty(report)?;
            data.push(b'\n');
            write("--export-json", p, &data)?;
        }
        if let Some(p) = &self.csv {
            write(
                "--export-csv",
                p,
                &hosts_csv(fleet, fit, &report.recommendation)?,
            )?;
        }
        if let Some(p) = &self.markdown {
            write(
                "--export-markdown",
                p,
                super::render::markdown(report).as_bytes(),
            )?;
        }
        if let Some(p) = &self.html {
            write("--html", p, super::render::html(report).as_bytes())?;
        }
        Ok(())
    }
}

/// The CSV header: the input figures first, under the names `fleet analyze`
/// reads back, so the file is itself a valid input.
pub const CSV_HEADER: [&str; 16] = [
    "host",
    "tmp_used_bytes",
    "tmp_inodes",
    "mem_total_bytes",
    "mem_free_bytes",
    "mem_available_bytes",
    "swap_total_bytes",
    "swap_free_bytes",
    "tmpfs_size_bytes",
    "fits_size",
    "fits_mem_free",
    "fits_mem_free_plus_swap",
    "fits_mem_available",
    "fits_mem_available_plus_swap",
    "fits_inodes",
    "fits_recommended_with_headroom",
];

/// One row per host: figures (empty when the input lacked one) and, per fit
/// model, `true`/`false` (empty: not evaluated). The statistics are in the
/// JSON; this is what a spreadsheet or a join with an inventory needs.
pub fn hosts_csv(f: &Fleet, p: &FitParams, rec: &Recommendation) -> Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::with_capacity(f.rows.len() * 128));
    w.write_record(CSV_HEADER)?;
    let grow = 1.0 + rec.headroom_percent / 100.0;
    let num = |v: u64| {
        if v == u64::MAX {
            String::new()
        } else {
            v.to_string()
        }
    };
    let yes = |b: Option<bool>| match b {
        Some(true) => "true",
        Some(false) => "false",
        None => "",
    };
    for r in &f.rows {
        let fits = fit::row_fit(r, p);
        let mut rec_row = vec![
            f.name(r).to_string(),
            num(r.tmp_used),
            num(r.inodes),
            num(r.mem_total),
            num(r.mem_free),
            num(r.mem_avail),
            num(r.swap_total),
            num(r.swap_free),
            num(p.size.resolve(r.mem_total)),
        ];
        rec_row.extend(fits.iter().map(|&b| yes(b).to_string()));
        rec_row.push(yes(Some(fit::fits_share(r, rec.size_percent_of_ram, grow))).into());
        w.write_record(&rec_row)?;
    }
    w.into_inner()
        .map_err(|e| anyhow::anyhow!("writing the CSV: {}", e.error()))
}
