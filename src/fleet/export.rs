//! The per-host CSV `fleet analyze --export-csv` writes.

use anyhow::Result;

use super::fit::{self, FitParams, Recommendation};
use super::ingest::Fleet;

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
