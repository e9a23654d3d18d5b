//! Which crash states to build from a log. A power cut keeps every write
//! completed before the last flush, and any subset of the writes after it
//! (a FUA write is kept once it completed). The log splits into epochs, the
//! writes between two flushes; a state is the disk after epochs 0..j plus
//! some writes of epoch j+1: none or all of them (a flush boundary), a
//! prefix (the cut came mid-way, the disk kept order), or a random subset
//! (it kept some and not others).

use rand::{RngExt, SeedableRng};

use crate::log::{FUA, Log};

pub struct Epoch {
    /// Entry indices of its writes, in log order.
    pub writes: Vec<usize>,
    /// It holds an ACK record, or the writes just before one.
    pub near_ack: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Boundary,
    Prefix,
    Subset,
}

/// Subsets drawn per epoch where every state is wanted.
pub const SUBSETS: usize = 50;

pub fn epochs(log: &Log, ack_from_sector: u64) -> Vec<Epoch> {
    let mut out: Vec<Epoch> = Vec::new();
    let mut cur = Vec::new();
    let mut acked = false;
    for (i, e) in log.entries.iter().enumerate() {
        if e.nr_sectors > 0 {
            acked |= e.is_write() && e.sector >= ack_from_sector;
            cur.push(i);
        }
        if e.is_flush() && !cur.is_empty() {
            if acked && let Some(prev) = out.last_mut() {
                prev.near_ack = true;
            }
            out.push(Epoch {
                writes: std::mem::take(&mut cur),
                near_ack: acked,
            });
            acked = false;
        }
    }
    if !cur.is_empty() {
        out.push(Epoch {
            writes: cur,
            near_ack: acked,
        });
    }
    out
}

/// The subset number `s` of epoch `j`'s writes (the same on every run).
pub fn subset(log: &Log, ep: &Epoch, j: usize, s: usize) -> Vec<usize> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(((j as u64) << 20) ^ s as u64 ^ 0x5eed_c0de);
    ep.writes
        .iter()
        .copied()
        .filter(|&i| log.entries[i].flags & FUA != 0 || rng.random_bool(0.5))
        .collect()
}

/// What to check inside each epoch (boundaries are all checked): every
/// prefix and SUBSETS subsets where `full` or the epoch is next to an ACK
/// (prefixes thinned to `prefix_cap` evenly spaced ones), and `sample`
/// states drawn from all the others. Per epoch: (kind, prefix length or
/// subset number).
pub fn plan(
    eps: &[Epoch],
    full: bool,
    prefix_cap: usize,
    subsets_near_ack: usize,
    sample: usize,
) -> Vec<Vec<(Kind, usize)>> {
    let mut out: Vec<Vec<(Kind, usize)>> = vec![Vec::new(); eps.len()];
    let mut pool = Vec::new();
    for (j, ep) in eps.iter().enumerate() {
        let n = ep.writes.len();
        if n < 2 {
            continue;
        }
        if full || ep.near_ack {
            let step = if full {
                1
            } else {
                (n - 1).div_ceil(prefix_cap).max(1)
            };
            for k in (1..n).step_by(step) {
                out[j].push((Kind::Prefix, k));
            }
            let subs = if full { SUBSETS } else { subsets_near_ack };
            for s in 0..subs {
                out[j].push((Kind::Subset, s));
            }
        } else {
            for k in 1..n {
                pool.push((j, Kind::Prefix, k));
            }
            for s in 0..SUBSETS {
                pool.push((j, Kind::Subset, s));
            }
        }
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x00c0_ffee);
    let take = sample.min(pool.len());
    let mut picked: Vec<usize> = rand::seq::index::sample(&mut rng, pool.len(), take).into_vec();
    picked.sort_unstable();
    for i in picked {
        let (j, kind, k) = pool[i];
        out[j].push((kind, k));
    }
    out
}
