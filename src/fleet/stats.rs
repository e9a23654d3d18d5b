//! Exact order statistics over a sorted column of u64 (bytes or counts).
//! Columns are sorted once at the end; 10 million u64 is 80 MB, so an exact
//! median, mode and p99 cost less than any sketch would save.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Hosts that reported this figure.
    pub count: u64,
    pub max: u64,
    pub min: u64,
    pub mean: f64,
    /// Middle value; for an even count the mean of the two middle values
    /// (the interpolated median, like DuckDB's `median` = `quantile_cont(x, 0.5)`
    /// and numpy's `median`), so it can end in .5.
    pub median: f64,
    /// Most frequent exact value (the smallest one on a tie) and how many hosts have it.
    pub mode: u64,
    pub mode_count: u64,
    /// Nearest-rank percentiles: p90 is the smallest value >= 90 % of hosts'
    /// values, always one host's figure (DuckDB's `quantile_disc`).
    pub p90: u64,
    pub p99: u64,
}

/// Sort a column in place (LSD radix sort): a few linear passes instead
/// of n log n comparisons.
#[cfg(test)]
pub fn sort_column(v: &mut Vec<u64>) {
    sort_column_with(v, &mut Vec::new());
}

/// [`sort_column`] with `other` as the second buffer the passes move values
/// between where one is needed. Only the bits that differ between values
/// are sorted on (sizes in KiB or pages end in ten or more zero bits, and
/// their top bits are zero), in digits of up to 11 bits: a column of byte
/// sizes up to 4 TiB in 4 KiB pages takes 3 passes, not 5.
///
/// Where those bits are 32 or fewer (every size below 4 TiB in KiB), the
/// values are narrowed to 32 bits inside `v`'s own memory, sorted between
/// its two halves and widened back: no second buffer at all (at 10 million
/// hosts each thread sorting a column held 80 MB of one), and half the
/// bytes moved on every pass. `other` is then left as it is.
pub fn sort_column_with(v: &mut Vec<u64>, other: &mut Vec<u64>) {
    let n = v.len();
    if n < 1 << 12 {
        v.sort_unstable();
        return;
    }
    let (mut or, mut and) = (0u64, u64::MAX);
    for &x in v.iter() {
        or |= x;
        and &= x;
    }
    let varying = or ^ and;
    if varying == 0 {
        return;
    }
    let low = varying.trailing_zeros();
    let bits = 64 - varying.leading_zeros() - low;
    if bits <= 32 {
        sort_narrow(v, and, low, bits);
        return;
    }
    let passes = bits.div_ceil(11) as usize;
    let width = bits.div_ceil(passes as u32);
    let mask = (1u64 << width) - 1;
    let buckets = 1usize << width;
    let digit = |x: u64, p: usize| (((x >> low) >> (p as u32 * width)) & mask) as usize;
    let mut counts = vec![0usize; buckets * passes];
    for &x in v.iter() {
        for p in 0..passes {
            counts[p * buckets + digit(x, p)] += 1;
        }
    }
    // The first pass that moves values writes every slot: zeroes only where it is short.
    other.truncate(n);
    other.resize(n, 0);
    for (p, c) in counts.chunks_mut(buckets).enumerate() {
        if c[digit(v[0], p)] == n {
            continue;
        }
        let mut at = 0;
        for slot in c.iter_mut() {
            let k = *slot;
            *slot = at;
            at += k;
        }
        for &x in v.iter() {
            let d = digit(x, p);
            other[c[d]] = x;
            c[d] += 1;
        }
        std::mem::swap(v, other);
    }
}

/// [`sort_column_with`] for values that differ only in the `bits` (at most
/// 32) bits from bit `low` up, and share every other bit with `and`.
fn sort_narrow(v: &mut [u64], and: u64, low: u32, bits: u32) {
    let n = v.len();
    let span = ((1u64 << bits) - 1) << low;
    let fixed = and & !span;
    let passes = bits.div_ceil(11) as usize;
    let width = bits.div_ceil(passes as u32);
    let mask = (1u32 << width) - 1;
    let buckets = 1usize << width;
    let digit = |x: u32, p: usize| ((x >> (p as u32 * width)) & mask) as usize;
    // Each u64 as its two u32 halves, in memory order.
    let join = |a: u32, b: u32| {
        if cfg!(target_endian = "little") {
            u64::from(a) | u64::from(b) << 32
        } else {
            u64::from(b) | u64::from(a) << 32
        }
    };
    let split = |x: u64| {
        let (lo, hi) = (x as u32, (x >> 32) as u32);
        if cfg!(target_endian = "little") {
            (lo, hi)
        } else {
            (hi, lo)
        }
    };
    // SAFETY: a u64 slice is a valid u32 slice of twice the length (u32's
    // alignment divides u64's, and every bit pattern is a valid u32), so
    // the prefix and suffix are empty; `v` stays borrowed meanwhile.
    let (pre, w, post) = unsafe { v.align_to_mut::<u32>() };
    debug_assert!(pre.is_empty() && post.is_empty() && w.len() == 2 * n);
    // Narrow front to back: value i goes to w[i], from w[2i] and w[2i + 1],
    // which lie at or after it, so nothing is overwritten before it is read.
    let mut counts = vec![0usize; buckets * passes];
    for i in 0..n {
        let d = ((join(w[2 * i], w[2 * i + 1]) & span) >> low) as u32;
        w[i] = d;
        for p in 0..passes {
            counts[p * buckets + digit(d, p)] += 1;
        }
    }
    let (a, b) = w.split_at_mut(n);
    let mut in_a = true;
    for (p, c) in counts.chunks_mut(buckets).enumerate() {
        let (src, dst) = if in_a { (&*a, &mut *b) } else { (&*b, &mut *a) };
        if c[digit(src[0], p)] == n {
            continue;
        }
        let mut at = 0;
        for slot in c.iter_mut() {
            let k = *slot;
            *slot = at;
            at += k;
        }
        for &x in src.iter() {
            let d = digit(x, p);
            dst[c[d]] = x;
            c[d] += 1;
        }
        in_a = !in_a;
    }
    // Widen back in place: value i is written to w[2i] and w[2i + 1]. From
    // the first half, back to front (those slots hold values already
    // widened); from the second half (w[n + i]), front to back (they lie at
    // or before w[n + i], among values already widened).
    let wide = |d: u32| fixed | (u64::from(d) << low);
    if in_a {
        for i in (0..n).rev() {
            let (x, y) = split(wide(w[i]));
            (w[2 * i], w[2 * i + 1]) = (x, y);
        }
    } else {
        for i in 0..n {
            let (x, y) = split(wide(w[n + i]));
            (w[2 * i], w[2 * i + 1]) = (x, y);
        }
    }
}

/// Nearest-rank percentile of a sorted, non-empty slice.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

pub fn summarize(sorted: &[u64]) -> Option<Summary> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
    let sum: u128 = sorted.iter().map(|&v| v as u128).sum();
    let median = if n % 2 == 1 {
        sorted[n / 2] as f64
    } else {
        // Halved before adding: two values near u64::MAX do not overflow.
        sorted[n / 2 - 1] as f64 / 2.0 + sorted[n / 2] as f64 / 2.0
    };
    let (mut mode, mut mode_count) = (sorted[0], 0u64);
    let mut run = 0u64;
    for (i, &v) in sorted.iter().enumerate() {
        run = if i > 0 && sorted[i - 1] == v {
            run + 1
        } else {
            1
        };
        if run > mode_count {
            mode = v;
            mode_count = run;
        }
    }
    Some(Summary {
        count: n as u64,
        max: sorted[n - 1],
        min: sorted[0],
        mean: (sum as f64) / n as f64,
        median,
        mode,
        mode_count,
        p90: percentile(sorted, 90.0),
        p99: percentile(sorted, 99.0),
    })
}

/// At most this many distinct values are counted by [`distinct_counts`].
const FEW: usize = 1 << 12;

/// The distinct values of a column (absent ones, `u64::MAX`, skipped) with
/// how many hosts have each, ascending; None once there are more than
/// [`FEW`]. One pass into a small hash table that stays in cache, with no
/// copy of the column and no sort: RAM sizes and swap sizes take a few
/// hundred values across a whole fleet.
pub fn distinct_counts(values: impl Iterator<Item = u64>) -> Option<Vec<(u64, u64)>> {
    // Twice the values it may hold: probe runs stay short.
    const SLOTS: usize = FEW * 2;
    let mut keys = vec![u64::MAX; SLOTS];
    let mut counts = vec![0u64; SLOTS];
    let mut used = 0;
    for x in values.filter(|&x| x != u64::MAX) {
        let mut i =
            (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize;
        loop {
            if keys[i] == x {
                counts[i] += 1;
                break;
            }
            if keys[i] == u64::MAX {
                if used == FEW {
                    return None;
                }
                (keys[i], counts[i], used) = (x, 1, used + 1);
                break;
            }
            i = (i + 1) % SLOTS;
        }
    }
    let mut d: Vec<(u64, u64)> = keys
        .into_iter()
        .zip(counts)
        .filter(|&(k, _)| k != u64::MAX)
        .collect();
    d.sort_unstable();
    Some(d)
}

/// [`summarize`] of the column that [`distinct_counts`] gave `d` for: the same figures.
pub fn summarize_counts(d: &[(u64, u64)]) -> Option<Summary> {
    let (&(min, _), &(max, _)) = (d.first()?, d.last()?);
    let n: u64 = d.iter().map(|&(_, c)| c).sum();
    let sum: u128 = d.iter().map(|&(v, c)| v as u128 * c as u128).sum();
    // The value at 0-based rank `r` of the sorted column.
    let at = |r: u64| {
        let mut seen = 0;
        d.iter()
            .find(|&&(_, c)| {
                seen += c;
                r < seen
            })
            .map_or(max, |&(v, _)| v)
    };
    let median = if n % 2 == 1 {
        at(n / 2) as f64
    } else {
        at(n / 2 - 1) as f64 / 2.0 + at(n / 2) as f64 / 2.0
    };
    // Ascending, a later value only wins with more hosts: the smallest on a tie.
    let (mut mode, mut mode_count) = (min, 0);
    for &(v, c) in d {
        if c > mode_count {
            (mode, mode_count) = (v, c);
        }
    }
    // As [`percentile`] reckons the rank.
    let nearest_rank = |p: f64| at((((p / 100.0) * n as f64).ceil() as u64).clamp(1, n) - 1);
    Some(Summary {
        count: n,
        max,
        min,
        mean: (sum as f64) / n as f64,
        median,
        mode,
        mode_count,
        p90: nearest_rank(90.0),
        p99: nearest_rank(99.0),
    })
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bucket {
    /// Hosts strictly below this many bytes.
    pub under_bytes: u64,
    pub count: u64,
    pub percent: f64,
}

pub fn buckets(sorted: &[u64], limits: &[u64]) -> Vec<Bucket> {
    limits
        .iter()
        .map(|&l| {
            let c = sorted.partition_point(|&v| v < l) as u64;
            Bucket {
                under_bytes: l,
                count: c,
                percent: pct(c, sorted.len() as u64),
            }
        })
        .collect()
}

/// Percent rounded to 0.1, 0 for an empty set.
pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 1000.0 / whole as f64).round() / 10.0
    }
}

/// "1 host", "2 hosts".
pub fn hosts(n: u64) -> String {
    if n == 1 {
        "1 host".into()
    } else {
        format!("{n} hosts")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut v = vec![4, 4, 4, 16, 100, 8, 16, 1_000_000, 4, 20];
        v.sort();
        let s = summarize(&v).unwrap();
        assert_eq!((s.max, s.min, s.mode, s.mode_count), (1_000_000, 4, 4, 4));
        assert_eq!(s.median, 12.0); // (8 + 16) / 2
        assert_eq!(s.p90, 100); // 9th of 10
        assert_eq!(s.p99, 1_000_000);
        assert!((s.mean - 100_017.6).abs() < 1e-6);
        assert!(summarize(&[]).is_none());
        assert_eq!(summarize(&[7]).unwrap().median, 7.0);
        // An even count's median is the mean of the middle two, not rounded.
        assert_eq!(summarize(&[1, 64, 65, 100]).unwrap().median, 64.5);
    }

    #[test]
    fn radix_sort_sorts_like_the_standard_sort() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for (n, mask) in [
            (10, u64::MAX),
            (5000, u64::MAX),
            (70_000, 0xFFFF_0000),
            (9000, 7),
            (50_000, 0xFFFF_F000_0000_0000),
            (50_000, 0x0000_0FFF_FFFF_F000),
            (20_000, 0),
            // 33 bits: the two-buffer sort; 32 and fewer: narrowed in place.
            (50_001, 0x0000_0001_FFFF_FFFF),
            (50_001, 0xFFFF_FFFF),
            (4097, 0x7FF),
            (60_003, 0x3F_FFFF),
            // Bits 0 and 30 vary, the digit between is the same for all:
            // its pass is skipped.
            (40_001, 0x4000_0001),
        ] {
            let v: Vec<u64> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed & mask
                })
                .collect();
            let (mut a, mut b) = (v.clone(), v);
            sort_column(&mut a);
            b.sort_unstable();
            assert_eq!(a, b, "{n} values under {mask:#x}");
        }
        // Bits every value shares above and below the varying ones.
        let v: Vec<u64> = (0..30_000u64)
            .map(|i| (1 << 62) | ((i * 0x9E37_79B9 % 5003) << 20) | 0x1F)
            .collect();
        let (mut a, mut b) = (v.clone(), v);
        sort_column_with(&mut a, &mut vec![7; 3]);
        b.sort_unstable();
        assert_eq!(a, b);
    }

    #[test]
    fn counted_summary_equals_sorted_summary() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for (n, distinct) in [
            (1, 1),
            (2, 2),
            (10, 3),
            (1001, 7),
            (5000, 600),
            (4000, 4096),
        ] {
            let v: Vec<u64> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed % distinct) << 30 | 7
                })
                .chain([u64::MAX])
                .collect();
            let d = distinct_counts(v.iter().copied()).unwrap();
            let mut sorted: Vec<u64> = v.into_iter().filter(|&x| x != u64::MAX).collect();
            sorted.sort_unstable();
            assert_eq!(summarize_counts(&d), summarize(&sorted), "{n} values");
            assert_eq!(d.iter().map(|x| x.1).sum::<u64>(), n);
        }
        assert_eq!(distinct_counts(0..=FEW as u64), None);
        assert!(distinct_counts(0..FEW as u64).is_some());
        assert_eq!(summarize_counts(&[]), None);
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&v, 90.0), 900);
        assert_eq!(percentile(&v, 99.0), 990);
        assert_eq!(percentile(&v, 0.0), 1);
        assert_eq!(percentile(&v, 100.0), 1000);
    }

    #[test]
    fn mode_tie_takes_smallest_and_huge_values_do_not_overflow() {
        let v = vec![1, 1, 5, 5, u64::MAX, u64::MAX];
        let s = summarize(&v).unwrap();
        assert_eq!((s.mode, s.mode_count), (1, 2));
        assert_eq!(s.median, 5.0);
        let v = vec![u64::MAX - 1, u64::MAX];
        assert_eq!(summarize(&v).unwrap().median, (u64::MAX - 1) as f64);
    }

    #[test]
    fn buckets_count_strictly_below() {
        let v = vec![0, 1023, 1024, 5000];
        let b = buckets(&v, &[1024, 10_000]);
        assert_eq!((b[0].count, b[0].percent), (2, 50.0));
        assert_eq!((b[1].count, b[1].percent), (4, 100.0));
    }
}
