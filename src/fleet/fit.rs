//! Would /tmp fit? The per-host test (reused by `advise`) and the fleet-wide
//! models and recommendation built on it.

use serde::Serialize;

use super::ingest::{Fleet, HostRecord, Row};
use super::stats::pct;
use crate::units::Size;

/// Page size assumed for tmpfs's default inode limit (x86-64, arm64 with 4 KiB pages).
pub const PAGE_SIZE: u64 = 4096;

/// What a tmpfs for /tmp would be given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitParams {
    /// tmpfs `size=`; tmpfs's own default is 50 % of RAM.
    pub size: Size,
    /// tmpfs `nr_inodes=`; None = the kernel default (half the RAM pages).
    pub nr_inodes: Option<u64>,
}

impl Default for FitParams {
    fn default() -> Self {
        FitParams {
            size: Size::PercentOfRam(50.0),
            nr_inodes: None,
        }
    }
}

/// tmpfs's default `nr_inodes` for a host with this much RAM: half its pages
/// (mm/shmem.c, shmem_default_max_inodes, on 64-bit without highmem).
pub fn default_nr_inodes(mem_total_bytes: u64) -> u64 {
    mem_total_bytes / PAGE_SIZE / 2
}

/// One host against each model. `None` = the input lacked the figure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostFit {
    pub tmp_used_bytes: u64,
    pub tmpfs_size_bytes: u64,
    pub fits_size: bool,
    /// MemFree: memory nothing uses, so /tmp fits without evicting any cache.
    pub mem_free_bytes: Option<u64>,
    pub fits_mem_free: Option<bool>,
    /// MemFree + SwapFree.
    pub mem_free_plus_swap_bytes: Option<u64>,
    pub fits_mem_free_plus_swap: Option<bool>,
    /// MemAvailable counts page cache the kernel may evict to make room.
    pub mem_available_bytes: Option<u64>,
    pub fits_mem_available: Option<bool>,
    /// MemAvailable + SwapFree.
    pub mem_available_plus_swap_bytes: Option<u64>,
    pub fits_mem_available_plus_swap: Option<bool>,
    pub nr_inodes: u64,
    pub fits_inodes: Option<bool>,
}

impl HostFit {
    /// Fits every model that could be evaluated.
    #[cfg(test)]
    pub fn fits_all(&self) -> bool {
        self.fits_size
            && self.fits_mem_free != Some(false)
            && self.fits_mem_free_plus_swap != Some(false)
            && self.fits_mem_available != Some(false)
            && self.fits_mem_available_plus_swap != Some(false)
            && self.fits_inodes != Some(false)
    }
}

/// Evaluate one host: usage vs the tmpfs size; vs MemFree (fits without
/// evicting anything, the Kirkland study's model) and MemFree + SwapFree; vs
/// MemAvailable (fits if the kernel may evict cache) and MemAvailable +
/// SwapFree (and may swap); and inodes vs nr_inodes.
pub fn host_fit(h: &HostRecord, p: &FitParams) -> HostFit {
    let size = p.size.resolve(h.mem_total_bytes);
    let nr = p
        .nr_inodes
        .unwrap_or_else(|| default_nr_inodes(h.mem_total_bytes));
    let swap_free = h.swap_free_bytes.unwrap_or(0);
    let avail_swap = h.mem_available_bytes.map(|a| a.saturating_add(swap_free));
    let free_swap = h.mem_free_bytes.map(|a| a.saturating_add(swap_free));
    HostFit {
        tmp_used_bytes: h.tmp_used_bytes,
        tmpfs_size_bytes: size,
        fits_size: h.tmp_used_bytes <= size,
        mem_free_bytes: h.mem_free_bytes,
        fits_mem_free: h.mem_free_bytes.map(|a| h.tmp_used_bytes <= a),
        mem_free_plus_swap_bytes: free_swap,
        fits_mem_free_plus_swap: free_swap.map(|a| h.tmp_used_bytes <= a),
        mem_available_bytes: h.mem_available_bytes,
        fits_mem_available: h.mem_available_bytes.map(|a| h.tmp_used_bytes <= a),
        mem_available_plus_swap_bytes: avail_swap,
        fits_mem_available_plus_swap: avail_swap.map(|a| h.tmp_used_bytes <= a),
        nr_inodes: nr,
        fits_inodes: (nr > 0).then_some(()).and(h.tmp_inodes).map(|i| i <= nr),
    }
}

/// One model across the fleet.
#[derive(Debug, Clone, Serialize)]
pub struct FitModel {
    /// What was compared, in words.
    pub model: String,
    /// Hosts that fit.
    pub count: u64,
    /// Hosts the model could be evaluated for (the input had the figure).
    pub evaluated: u64,
    /// count / evaluated.
    pub percent: f64,
    /// Hosts that do not fit, largest /tmp first (at most `--list` names).
    pub misfits: Vec<String>,
    pub misfits_total: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Fits {
    /// Usage <= the tmpfs size (`--size`, default 50 % of RAM, tmpfs's default).
    pub half_ram: FitModel,
    /// Usage <= MemFree: fits in memory nothing uses, evicting no cache (the
    /// Kirkland study's "free memory" model).
    pub mem_free: FitModel,
    /// Usage <= MemFree + SwapFree.
    pub mem_free_plus_swap: FitModel,
    /// Usage <= MemAvailable: fits if the kernel may evict page cache.
    pub mem_available: FitModel,
    pub mem_available_plus_swap: FitModel,
    pub inodes: FitModel,
}

/// Models in [`Fits`] order; the last one counts inodes.
pub(crate) const MODELS: usize = 6;
const INODES: usize = MODELS - 1;

pub(crate) fn row_fit(r: &Row, p: &FitParams) -> [Option<bool>; MODELS] {
    let size = p.size.resolve(r.mem_total);
    let none = u64::MAX;
    let free = (r.mem_free != none).then_some(r.mem_free);
    let avail = (r.mem_avail != none).then_some(r.mem_avail);
    let swap_free = if r.swap_free != none { r.swap_free } else { 0 };
    let nr = p
        .nr_inodes
        .unwrap_or_else(|| default_nr_inodes(r.mem_total));
    [
        Some(r.tmp_used <= size),
        free.map(|a| r.tmp_used <= a),
        free.map(|a| r.tmp_used <= a.saturating_add(swap_free)),
        avail.map(|a| r.tmp_used <= a),
        avail.map(|a| r.tmp_used <= a.saturating_add(swap_free)),
        (r.inodes != none && nr > 0).then_some(r.inodes <= nr),
    ]
}

pub fn fleet_fits(f: &Fleet, p: &FitParams, list: usize) -> Fits {
    let mut count = [0u64; MODELS];
    let mut evaluated = [0u64; MODELS];
    // Keep only the `list` largest misfits per model: a bounded top-k, not a list of millions.
    let mut mis: [Vec<(u64, u32)>; MODELS] = Default::default();
    let mut mis_total = [0u64; MODELS];
    for (i, r) in f.rows.iter().enumerate() {
        for (m, fit) in row_fit(r, p).into_iter().enumerate() {
            let Some(ok) = fit else { continue };
            evaluated[m] += 1;
            if ok {
                count[m] += 1;
            } else {
                mis_total[m] += 1;
                let key = if m == INODES { r.inodes } else { r.tmp_used };
                mis[m].push((key, i as u32));
                if mis[m].len() >= list.max(1) * 4 {
                    trim_top(&mut mis[m], list);
                }
            }
        }
    }
    let size_label = match p.size {
        Size::PercentOfRam(x) => format!("{x}% of RAM"),
        Size::Bytes(b) => crate::units::fmt_bytes(b),
    };
    let nr_label = match p.nr_inodes {
        Some(n) => format!("nr_inodes={n}"),
        None => "nr_inodes (RAM pages / 2)".into(),
    };
    // Short enough for a table at 80 columns; the report's note and the docs
    // spell out what each memory figure means.
    let labels = [
        format!("/tmp <= tmpfs size ({size_label})"),
        "/tmp <= MemFree (evicts no cache)".to_string(),
        "/tmp <= MemFree + SwapFree".to_string(),
        "/tmp <= MemAvailable (may evict cache)".to_string(),
        "/tmp <= MemAvailable + SwapFree".to_string(),
        format!("inodes <= {nr_label}"),
    ];
    let mut models: Vec<FitModel> = Vec::with_capacity(MODELS);
    for m in 0..MODELS {
        trim_top(&mut mis[m], list);
        models.push(FitModel {
            model: labels[m].clone(),
            count: count[m],
            evaluated: evaluated[m],
            percent: pct(count[m], evaluated[m]),
            misfits: mis[m]
                .iter()
                .map(|(_, i)| f.name(&f.rows[*i as usize]).to_string())
                .collect(),
            misfits_total: mis_total[m],
        });
    }
    let mut it = models.into_iter();
    let mut next = || it.next().unwrap_or_else(|| unreachable!());
    Fits {
        half_ram: next(),
        mem_free: next(),
        mem_free_plus_swap: next(),
        mem_available: next(),
        mem_available_plus_swap: next(),
        inodes: next(),
    }
}

fn trim_top(v: &mut Vec<(u64, u32)>, k: usize) {
    v.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    v.truncate(k);
}

#[derive(Debug, Clone, Serialize)]
pub struct Recommendation {
    /// Share of hosts the size must fit (`--target`).
    pub target_percent: f64,
    /// Extra room on top of the observed usage (`--headroom`).
    pub headroom_percent: f64,
    /// Recommended `size=` as a share of each host's RAM, rounded up to a common step.
    pub size_percent_of_ram: f64,
    /// Share of hosts whose /tmp grown by the headroom fits that size
    /// (/tmp x (1 + headroom) <= size): the share the recommendation claims.
    pub fits_percent: f64,
    /// Share of hosts whose /tmp as observed fits that size.
    pub fits_without_headroom_percent: f64,
    /// A fixed `size=` in bytes (a power of two, at least 16 MiB) that fits the target share.
    pub size_bytes: u64,
    /// Share of hosts whose /tmp grown by the headroom fits `size_bytes`.
    pub size_bytes_fits_percent: f64,
    pub size_bytes_fits_without_headroom_percent: f64,
    /// Hosts where that fixed size is more than half their RAM (risky there).
    pub size_bytes_over_half_ram_hosts: u64,
    /// False when the fixed size is over half the RAM of more hosts than the
    /// target leaves out: use the share of RAM instead.
    pub size_bytes_advisable: bool,
    /// The fstab line to roll out.
    pub fstab_line: String,
    /// False when even 50 % of RAM does not reach the target.
    pub target_reached: bool,
}

/// Sizes offered, as % of RAM. Nothing above 50 % (tmpfs's default): beyond
/// it a full /tmp competes with the applications for RAM, and hosts that need
/// more are outliers to handle by hand, not a reason to raise the fleet's size.
const PERCENT_STEPS: [f64; 11] = [1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0];
pub const MAX_PERCENT_OF_RAM: f64 = 50.0;

/// k-th smallest (1-based nearest rank for `target`) of an unsorted column, in place.
fn rank_value<T: Copy + PartialOrd>(v: &mut [T], target_percent: f64) -> Option<T> {
    if v.is_empty() {
        return None;
    }
    let k = ((target_percent / 100.0) * v.len() as f64).ceil() as usize;
    let k = k.clamp(1, v.len()) - 1;
    let (_, x, _) = v.select_nth_unstable_by(k, |a, b| {
        a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)
    });
    Some(*x)
}

#[cfg(test)]
pub fn recommend(f: &Fleet, target_percent: f64, headroom_percent: f64) -> Recommendation {
    let mut used: Vec<u64> = f.rows.iter().map(|r| r.tmp_used).collect();
    used.sort_unstable();
    let at_target = (!used.is_empty()).then(|| super::stats::percentile(&used, target_percent));
    recommend_with(f, at_target, &mut used, target_percent, headroom_percent)
}

/// [`recommend`] given the /tmp figure at the target's rank
/// (`percentile(tmp_sorted, target_percent)`, None for no host) and a
/// buffer to reuse for the shares of RAM (the sorted /tmp column's own,
/// once that figure is taken from it: no second column-sized buffer).
pub(crate) fn recommend_with(
    f: &Fleet,
    tmp_at_target: Option<u64>,
    scratch: &mut Vec<u64>,
    target_percent: f64,
    headroom_percent: f64,
) -> Recommendation {
    let n = f.rows.len() as u64;
    let grow = 1.0 + headroom_percent / 100.0;
    // The shares are finite and not negative: their bits order as they do.
    scratch.clear();
    scratch.extend(
        f.rows
            .iter()
            .map(|r| (r.tmp_used as f64 / r.mem_total as f64).to_bits()),
    );
    let need = rank_value(scratch, target_percent)
        .map(f64::from_bits)
        .unwrap_or(0.0)
        * 100.0
        * grow;
    let step = PERCENT_STEPS.iter().copied().find(|&s| s >= need - 1e-9);
    let pct_size = step.unwrap_or(MAX_PERCENT_OF_RAM);

    let need_b = tmp_at_target.map_or(0, |t| (t as f64 * grow).ceil() as u64);
    let size_b = need_b
        .max(16 << 20)
        .checked_next_power_of_two()
        .unwrap_or(u64::MAX);
    // The shares the text states are "fits ... with H% headroom": a host
    // counts when its /tmp grown by the headroom fits, not merely its /tmp.
    let mut c = RecCounts::default();
    for r in &f.rows {
        c.fits += fits_share(r, pct_size, grow) as u64;
        c.fits_bare += fits_share(r, pct_size, 1.0) as u64;
        c.fits_b += ((r.tmp_used as f64 * grow).ceil() as u64 <= size_b) as u64;
        c.fits_b_bare += (r.tmp_used <= size_b) as u64;
        c.over_half += (size_b > r.mem_total / 2) as u64;
    }
    Recommendation {
        target_percent,
        headroom_percent,
        size_percent_of_ram: pct_size,
        fits_percent: pct(c.fits, n),
        fits_without_headroom_percent: pct(c.fits_bare, n),
        size_bytes: size_b,
        size_bytes_fits_percent: pct(c.fits_b, n),
        size_bytes_fits_without_headroom_percent: pct(c.fits_b_bare, n),
        size_bytes_over_half_ram_hosts: c.over_half,
        size_bytes_advisable: (c.over_half as f64) <= n as f64 * (1.0 - target_percent / 100.0),
        fstab_line: format!("tmpfs /tmp tmpfs rw,nosuid,nodev,size={pct_size}% 0 0"),
        target_reached: step.is_some() && pct(c.fits, n) >= target_percent.min(100.0) - 0.05,
    }
}

/// Does this host's /tmp, grown by `grow`, fit `percent` of its RAM? The same
/// arithmetic as the search in [`recommend`], so the host that set the size
/// counts as fitting it.
pub(crate) fn fits_share(r: &Row, percent: f64, grow: f64) -> bool {
    (r.tmp_used as f64 / r.mem_total as f64) * 100.0 * grow <= percent + 1e-9
}

/// Hosts that fit the recommended sizes, with and without the headroom.
#[derive(Default)]
struct RecCounts {
    fits: u64,
    fits_bare: u64,
    fits_b: u64,
    fits_b_bare: u64,
    over_half: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Outlier {
    pub host: String,
    pub tmp_used_bytes: u64,
    pub mem_total_bytes: u64,
    pub tmp_percent_of_ram: f64,
    pub fits_mem_available_plus_swap: Option<bool>,
}

/// Hosts whose /tmp does not fit the recommended share of RAM: to be handled
/// by hand (the Kirkland survey found four in 502 hosts). Largest first, at most `list`; also returns the total.
pub fn outliers(f: &Fleet, rec: &Recommendation, list: usize) -> (Vec<Outlier>, u64) {
    let mut v: Vec<(u64, u32)> = Vec::new();
    let mut total = 0;
    for (i, r) in f.rows.iter().enumerate() {
        if r.tmp_used as f64 > r.mem_total as f64 * rec.size_percent_of_ram / 100.0 {
            total += 1;
            v.push((r.tmp_used, i as u32));
            if v.len() >= list.max(1) * 4 {
                trim_top(&mut v, list);
            }
        }
    }
    trim_top(&mut v, list);
    let out = v
        .into_iter()
        .map(|(_, i)| {
            let h = f.record(i as usize);
            let fit = host_fit(&h, &FitParams::default());
            Outlier {
                tmp_percent_of_ram: (h.tmp_used_bytes as f64 * 1000.0 / h.mem_total_bytes as f64)
                    .round()
                    / 10.0,
                host: h.host,
                tmp_used_bytes: h.tmp_used_bytes,
                mem_total_bytes: h.mem_total_bytes,
                fits_mem_available_plus_swap: fit.fits_mem_available_plus_swap,
            }
        })
        .collect();
    (out, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(
        name: &str,
        tmp: u64,
        ram: u64,
        avail: Option<u64>,
        swap_free: Option<u64>,
    ) -> HostRecord {
        HostRecord {
            host: name.into(),
            timestamp_unix_s: None,
            tmp_used_bytes: tmp,
            tmp_inodes: Some(10),
            mem_total_bytes: ram,
            mem_available_bytes: avail,
            mem_free_bytes: None,
            swap_total_bytes: swap_free,
            swap_free_bytes: swap_free,
        }
    }

    const G: u64 = 1 << 30;

    #[test]
    fn single_host_models() {
        let h = host("a", 3 * G, 8 * G, Some(2 * G), Some(2 * G));
        let f = host_fit(&h, &FitParams::default());
        assert!(f.fits_size);
        assert_eq!(f.tmpfs_size_bytes, 4 * G);
        assert_eq!(f.fits_mem_available, Some(false));
        assert_eq!(f.fits_mem_available_plus_swap, Some(true));
        assert_eq!(f.nr_inodes, 8 * G / 4096 / 2);
        assert_eq!(f.fits_inodes, Some(true));
        assert!(!f.fits_all());
        let small = FitParams {
            size: Size::Bytes(2 * G),
            nr_inodes: Some(5),
        };
        let f = host_fit(&h, &small);
        assert!(!f.fits_size);
        assert_eq!(f.fits_inodes, Some(false));
        let f = host_fit(&host("b", 1, G, None, None), &FitParams::default());
        assert_eq!(
            (f.fits_mem_available, f.fits_mem_available_plus_swap),
            (None, None)
        );
    }

    fn fleet(hosts: &[HostRecord]) -> Fleet {
        let mut f = Fleet::default();
        for (i, h) in hosts.iter().enumerate() {
            f.push(h, "t", i as u64 + 1).unwrap();
        }
        f
    }

    #[test]
    fn fleet_models_count_and_name_misfits_largest_first() {
        let mut hs: Vec<HostRecord> = (0..96)
            .map(|i| host(&format!("ok{i}"), 1 << 20, 8 * G, Some(6 * G), Some(0)))
            .collect();
        hs.push(host("big", 101 * G, 64 * G, Some(60 * G), Some(8 * G)));
        hs.push(host("mid", 42 * G, 64 * G, Some(40 * G), Some(8 * G)));
        hs.push(host("small-ram", 3 * G, 4 * G, Some(3 * G), Some(2 * G)));
        hs.push(host("noinfo", 1, 4 * G, None, None));
        let f = fleet(&hs);
        let fits = fleet_fits(&f, &FitParams::default(), 2);
        assert_eq!((fits.half_ram.count, fits.half_ram.evaluated), (97, 100));
        assert_eq!(fits.half_ram.misfits, ["big", "mid"]);
        assert_eq!(fits.half_ram.misfits_total, 3);
        assert_eq!(fits.half_ram.percent, 97.0);
        assert_eq!(fits.mem_available.evaluated, 99);
        assert_eq!(fits.mem_available.misfits_total, 2); // big, mid; small-ram fits 3G <= 3G
        assert_eq!(fits.mem_available_plus_swap.misfits, ["big"]);
    }

    #[test]
    fn recommendation_rounds_up_with_headroom_and_names_outliers() {
        // 98 hosts use 1% of RAM, 2 use 60%: 98 % target -> 1% * 1.25 -> step 2%.
        let mut hs: Vec<HostRecord> = (0..98)
            .map(|i| host(&format!("h{i}"), 80 << 20, 8 << 30, None, None))
            .collect();
        hs.push(host("x1", 6 * G, 10 * G, Some(5 * G), Some(0)));
        hs.push(host("x2", 12 * G, 20 * G, Some(15 * G), Some(0)));
        let f = fleet(&hs);
        let r = recommend(&f, 98.0, 25.0);
        assert_eq!(r.size_percent_of_ram, 2.0);
        assert_eq!(r.fits_percent, 98.0);
        assert!(r.target_reached);
        assert_eq!(r.size_bytes, 128 << 20); // 80 MiB * 1.25 = 100 MiB -> 128 MiB
        assert_eq!(r.size_bytes_fits_percent, 98.0);
        assert!(r.size_bytes_advisable, "128 MiB is far below half of 8 GiB");
        assert!(r.fstab_line.contains("size=2%"));
        let (o, total) = outliers(&f, &r, 10);
        assert_eq!(total, 2);
        assert_eq!(o[0].host, "x2");
        assert_eq!(o[0].tmp_percent_of_ram, 60.0);
        assert_eq!(o[1].fits_mem_available_plus_swap, Some(false));
        let r = recommend(&f, 100.0, 0.0);
        assert!(!r.target_reached);
        assert_eq!(r.size_percent_of_ram, 50.0);
        assert_eq!(r.fits_percent, 98.0);
    }
}
