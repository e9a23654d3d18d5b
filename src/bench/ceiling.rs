//! The memory-bandwidth ceiling measured in the same run: no file read or write
//! can move bytes faster than memcpy between two buffers that live in RAM, so a
//! result above it measured something else (a cache, a lie, a bug).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Result;

use super::report::Ceiling;
use super::stats;
use crate::sys::signals::Interrupted;

/// Largest CPU cache as /sys reports it (the level with the highest number).
pub fn llc_bytes() -> Option<u64> {
    cache_bytes(None)
}

/// The data or unified cache of one level (`Some(2)`), or of the highest level.
pub fn cache_bytes(want: Option<u32>) -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    let mut best: Option<(u32, u64)> = None;
    for e in dir.flatten() {
        let p = e.path();
        // Skip entries that are not cache levels (`uevent`) or are unreadable.
        let (Ok(level), Ok(size)) = (
            std::fs::read_to_string(p.join("level")),
            std::fs::read_to_string(p.join("size")),
        ) else {
            continue;
        };
        let (Ok(level), Ok(size)) = (
            level.trim().parse::<u32>(),
            crate::units::parse_bytes(size.trim()),
        ) else {
            continue;
        };
        let kind = std::fs::read_to_string(p.join("type")).unwrap_or_default();
        if want.is_some_and(|l| l != level) || kind.trim() == "Instruction" {
            continue;
        }
        if best.is_none_or(|(l, s)| level > l || (level == l && size > s)) {
            best = Some((level, size));
        }
    }
    best.map(|(_, s)| s)
}

/// Buffer size for the ceiling: well beyond the last-level cache, bounded by RAM.
pub fn auto_buffer_bytes(llc: Option<u64>, mem_available: u64) -> u64 {
    let want = (llc.unwrap_or(32 << 20) * 2).max(1 << 30);
    // Two buffers of this size; keep them under a quarter of available memory.
    let cap = (mem_available / 8).max(64 << 20);
    round_mib(want.min(cap))
}

fn round_mib(b: u64) -> u64 {
    (b >> 20).max(1) << 20
}

fn interrupted(flag: &AtomicBool) -> Result<()> {
    if flag.load(Ordering::Relaxed) {
        anyhow::bail!(Interrupted);
    }
    Ok(())
}

/// Single-thread memcpy and all-core copy of `buffer_bytes`, `runs` times each.
pub fn measure(
    buffer_bytes: u64,
    runs: u32,
    llc: Option<u64>,
    stop: &AtomicBool,
) -> Result<Ceiling> {
    let (src, mut dst) = copy_buffers(buffer_bytes)?;
    interrupted(stop)?;

    let runs = runs.max(1);
    let single = single_thread(&src, &mut dst, runs, stop)?;

    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = src.len().div_ceil(threads).max(1);
    let mut multi = Vec::new();
    for i in 0..=runs {
        interrupted(stop)?;
        let t = Instant::now();
        std::thread::scope(|s| {
            for (d, sr) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
                s.spawn(move || d.copy_from_slice(sr));
            }
        });
        let ns = t.elapsed().as_nanos().max(1) as f64;
        std::hint::black_box(&dst);
        if i > 0 {
            multi.push(buffer_bytes as f64 * 1e9 / ns);
        }
    }
    drop((src, dst));
    let (triad, all_core_triad) = stream_triad(buffer_bytes / 2, runs, threads, stop)?;
    Ok(Ceiling {
        stream_triad_bytes_per_s: Some(triad),
        all_core_stream_triad_bytes_per_s: Some(all_core_triad),
        memcpy_end_bytes_per_s: None,
        memcpy_bytes_per_s: stats::summarize(&single).median,
        all_core_copy_bytes_per_s: stats::summarize(&multi).median,
        threads,
        buffer_bytes,
        runs,
        buffer_exceeds_llc: llc.is_none_or(|l| buffer_bytes >= 2 * l),
    })
}

/// STREAM's Triad, a[i] = b[i] + q * c[i] over f64 arrays of `array_bytes`
/// each, on one thread and on `threads` (disjoint slices), median of `runs`
/// after one untimed pass. Bytes are counted the STREAM way: 24 per element
/// (two 8-byte reads and one 8-byte write; the write-allocate read of `a` is
/// not counted), so the figure can be held against a published STREAM Triad.
fn stream_triad(
    array_bytes: u64,
    runs: u32,
    threads: usize,
    stop: &AtomicBool,
) -> Result<(f64, f64)> {
    let n = usize::try_from(array_bytes / 8)?.max(1);
    let b = vec![1.0f64; n];
    let c = vec![2.0f64; n];
    let mut a = vec![0.0f64; n];
    let q = std::hint::black_box(3.0f64);
    let triad = |a: &mut [f64], b: &[f64], c: &[f64]| {
        for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
            *x = y + q * z;
        }
    };
    let counted = (n * 24) as f64;
    let chunk = n.div_ceil(threads.max(1)).max(1);
    let (mut one, mut all) = (Vec::new(), Vec::new());
    for i in 0..=runs {
        interrupted(stop)?;
        let t = Instant::now();
        triad(&mut a, &b, &c);
        let ns = t.elapsed().as_nanos().max(1) as f64;
        std::hint::black_box(&a);
        let t = Instant::now();
        std::thread::scope(|s| {
            for ((x, y), z) in a
                .chunks_mut(chunk)
                .zip(b.chunks(chunk))
                .zip(c.chunks(chunk))
            {
                s.spawn(move || triad(x, y, z));
            }
        });
        let ns_all = t.elapsed().as_nanos().max(1) as f64;
        std::hint::black_box(&a);
        if i > 0 {
            one.push(counted * 1e9 / ns);
            all.push(counted * 1e9 / ns_all);
        }
    }
    Ok((stats::summarize(&one).median, stats::summarize(&all).median))
}

/// Source and destination of `bytes` each, both written before timing:
/// untouched pages all map the shared zero page, and reading those would be
/// served from cache.
fn copy_buffers(bytes: u64) -> Result<(Vec<u8>, Vec<u8>)> {
    let n = usize::try_from(bytes)?;
    let mut src = vec![0u8; n];
    for (i, chunk) in src.chunks_mut(4096).enumerate() {
        chunk.fill((i as u8) | 1);
    }
    let mut dst = vec![0u8; n];
    dst.fill(0x5a);
    Ok((src, dst))
}

/// Single-thread copies of `src` into `dst` after one untimed (TLB,
/// frequency ramp), in bytes copied per second.
fn single_thread(src: &[u8], dst: &mut [u8], runs: u32, stop: &AtomicBool) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    dst.copy_from_slice(src);
    for _ in 0..runs {
        interrupted(stop)?;
        let t = Instant::now();
        dst.copy_from_slice(src);
        let ns = t.elapsed().as_nanos().max(1) as f64;
        std::hint::black_box(&dst);
        out.push(src.len() as f64 * 1e9 / ns);
    }
    Ok(out)
}

/// The single-thread memcpy figure again, at the end of a suite: on a shared
/// host another guest can halve the memory bandwidth for tens of seconds
/// (seen here: 5.7 GiB/s at the start of a suite, 11 GiB/s otherwise), and
/// every RAM-side figure of that stretch with it.
pub fn recheck(buffer_bytes: u64, runs: u32, stop: &AtomicBool) -> Result<f64> {
    let (src, mut dst) = copy_buffers(buffer_bytes)?;
    let v = single_thread(&src, &mut dst, runs.max(1), stop)?;
    Ok(stats::summarize(&v).median)
}

/// The recheck's buffer: smaller than the first (allocating and faulting in
/// 2 GiB again cost about a second) but still at least 4x the last-level
/// cache, so it is still a memory figure.
pub fn recheck_buffer_bytes(first: u64, llc: Option<u64>) -> u64 {
    let want = (llc.unwrap_or(32 << 20) * 4).max(256 << 20);
    round_mib(want.min(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_is_beyond_llc_and_bounded_by_ram() {
        assert_eq!(auto_buffer_bytes(Some(32 << 20), 64 << 30), 1 << 30);
        assert_eq!(auto_buffer_bytes(Some(1 << 30), 64 << 30), 2 << 30);
        assert_eq!(auto_buffer_bytes(Some(1 << 30), 4 << 30), 512 << 20);
    }

    #[test]
    fn recheck_buffer_is_smaller_but_beyond_llc() {
        assert_eq!(recheck_buffer_bytes(1 << 30, Some(32 << 20)), 256 << 20);
        assert_eq!(recheck_buffer_bytes(2 << 30, Some(256 << 20)), 1 << 30);
        // Never larger than the first one (a small --ceiling-size).
        assert_eq!(recheck_buffer_bytes(32 << 20, Some(32 << 20)), 32 << 20);
    }

    #[test]
    fn small_ceiling_is_positive() {
        let stop = AtomicBool::new(false);
        let c = measure(4 << 20, 2, None, &stop).unwrap();
        assert!(c.memcpy_bytes_per_s > 0.0 && c.all_core_copy_bytes_per_s > 0.0);
        assert!(recheck(4 << 20, 2, &stop).unwrap() > 0.0);
        stop.store(true, Ordering::Relaxed);
        assert!(measure(4 << 20, 2, None, &stop).is_err());
        assert!(recheck(4 << 20, 2, &stop).is_err());
    }
}
