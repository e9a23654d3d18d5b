//! How often the scratch is sampled: fast while its usage moves or it is
//! nearly full, backing off while it sits idle, so a long-lived `tmpfsctl
//! shell` does not wake the machine 100 times a second for nothing.
//!
//! The wait itself stays the `poll` timeout on the signalfd (see
//! `supervise`); this module only decides that timeout.

use std::time::Duration;

use super::Usage;

/// The fast rate: while usage changes, and whenever the scratch is nearly
/// full. One fstatfs (about a microsecond) per sample on a private tmpfs.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// The slowest rate, reached after a few samples that saw no change (10, 20,
/// 40, 80, 160, 250 ms).
///
/// Why 250 ms: idle, that is 4 wake-ups a second instead of 100 (25x fewer),
/// which is in the range of the background wake-ups of an idle system, so
/// going slower (500 ms: 2/s) would save little. What it costs: after an idle
/// spell the first change is seen up to 250 ms late, so
/// - data written and deleted again within 250 ms while usage was otherwise
///   idle can be missed by the peak (while usage keeps moving, the window is
///   10 ms as before);
/// - a scratch filled in one burst from idle is reported full up to 250 ms
///   late (CMD gets its ENOSPC from the kernel at once either way).
///
/// 250 ms stays well below human reaction to the "workspace full" line, and
/// below the 1 s a file lives in the peak test.
pub const SAMPLE_INTERVAL_MAX: Duration = Duration::from_millis(250);

/// What the latest sample showed, compared with the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trend {
    /// Used bytes or inodes moved.
    Changed,
    Unchanged,
    /// Over 90% of the cap (or of the inodes): stay fast so "workspace full"
    /// is said as soon as it happens.
    NearFull,
}

/// The wait before the next sample. `floor` is the fast rate (it can be
/// higher than [`SAMPLE_INTERVAL`] for a plain directory, where a sample is a
/// tree walk), `max` the slowest; a `max` below `floor` counts as `floor`.
pub fn next_interval(current: Duration, floor: Duration, max: Duration, trend: Trend) -> Duration {
    match trend {
        Trend::Changed | Trend::NearFull => floor,
        Trend::Unchanged => current.saturating_mul(2).clamp(floor, max.max(floor)),
    }
}

/// More than 90% of the cap used, less than 10% of it left (a plain
/// directory on a filesystem that is itself filling up), or less than 10% of
/// the inodes left (`base_ifree` = free inodes of the empty scratch; 0 means
/// no inode limit).
pub fn near_full(cap_bytes: u64, base_ifree: u64, u: &Usage) -> bool {
    let tenth = cap_bytes / 10;
    u.used_bytes > cap_bytes - tenth
        || u.avail_bytes < tenth
        || (base_ifree > 0 && u.inodes_free < base_ifree / 10)
}

/// The sampling pace of one run.
#[derive(Debug, Clone)]
pub struct Pace {
    floor: Duration,
    max: Duration,
    current: Duration,
    /// (used bytes, inodes) at the last sample; the empty scratch to start.
    last: (u64, u64),
}

impl Pace {
    pub fn new(floor: Duration, max: Duration) -> Pace {
        Pace {
            floor,
            max,
            current: floor,
            last: (0, 0),
        }
    }

    /// The wait before the next sample.
    pub fn interval(&self) -> Duration {
        self.current
    }

    /// A plain directory's fast rate follows the cost of its tree walk.
    pub fn set_floor(&mut self, floor: Duration) {
        self.floor = floor;
        self.current = self.current.clamp(floor, self.max.max(floor));
    }

    /// Take a sample into account and return the next wait.
    pub fn observe(&mut self, u: &Usage, near_full: bool) -> Duration {
        let now = (u.used_bytes, u.inodes);
        let trend = if near_full {
            Trend::NearFull
        } else if now != self.last {
            Trend::Changed
        } else {
            Trend::Unchanged
        };
        self.last = now;
        self.current = next_interval(self.current, self.floor, self.max, trend);
        self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn usage(used: u64, inodes: u64) -> Usage {
        Usage {
            used_bytes: used,
            inodes,
            avail_bytes: (64 << 20) - used,
            inodes_free: 1000 - inodes,
        }
    }

    fn ms(d: Duration) -> u64 {
        d.as_millis() as u64
    }

    #[test]
    fn idle_backs_off_by_doubling_to_the_max() {
        let mut seq = vec![SAMPLE_INTERVAL];
        let mut d = SAMPLE_INTERVAL;
        for _ in 0..8 {
            d = next_interval(d, SAMPLE_INTERVAL, SAMPLE_INTERVAL_MAX, Trend::Unchanged);
            seq.push(d);
        }
        let seq: Vec<u64> = seq.into_iter().map(ms).collect();
        assert_eq!(seq, [10, 20, 40, 80, 160, 250, 250, 250, 250]);
    }

    #[test]
    fn change_or_near_full_returns_to_the_fast_rate() {
        for t in [Trend::Changed, Trend::NearFull] {
            assert_eq!(
                next_interval(SAMPLE_INTERVAL_MAX, SAMPLE_INTERVAL, SAMPLE_INTERVAL_MAX, t),
                SAMPLE_INTERVAL,
                "{t:?}"
            );
        }
        // A floor above the max (a slow tree walk) wins.
        assert_eq!(
            next_interval(400 * MS, 400 * MS, SAMPLE_INTERVAL_MAX, Trend::Unchanged),
            400 * MS
        );
        assert_eq!(
            next_interval(100 * MS, 100 * MS, SAMPLE_INTERVAL_MAX, Trend::Unchanged),
            200 * MS
        );
    }

    #[test]
    fn pace_follows_usage() {
        let mut p = Pace::new(SAMPLE_INTERVAL, SAMPLE_INTERVAL_MAX);
        assert_eq!(p.interval(), SAMPLE_INTERVAL);
        let mut seq = Vec::new();
        // Empty and idle: back off.
        for _ in 0..6 {
            seq.push(ms(p.observe(&usage(0, 0), false)));
        }
        // Writing: fast at once, and as long as it keeps changing.
        for i in 1..=3 {
            seq.push(ms(p.observe(&usage(i << 20, 1), false)));
        }
        // Only an inode more (an empty file) is a change too.
        seq.push(ms(p.observe(&usage(3 << 20, 2), false)));
        // Idle again.
        for _ in 0..3 {
            seq.push(ms(p.observe(&usage(3 << 20, 2), false)));
        }
        // Nearly full and unchanged: stays fast.
        for _ in 0..3 {
            seq.push(ms(p.observe(&usage(60 << 20, 2), true)));
        }
        assert_eq!(
            seq,
            [
                20, 40, 80, 160, 250, 250, 10, 10, 10, 10, 20, 40, 80, 10, 10, 10
            ]
        );
    }

    #[test]
    fn near_full_thresholds() {
        let cap = 100 << 20;
        let u = |used: u64, avail: u64, ifree: u64| Usage {
            used_bytes: used,
            inodes: 1,
            avail_bytes: avail,
            inodes_free: ifree,
        };
        assert!(!near_full(cap, 1000, &u(80 << 20, 20 << 20, 999)));
        assert!(!near_full(cap, 1000, &u(90 << 20, 10 << 20, 999)));
        assert!(near_full(cap, 1000, &u(91 << 20, 9 << 20, 999)));
        // Little left on the filesystem under a plain directory.
        assert!(near_full(cap, 0, &u(1 << 20, 5 << 20, 0)));
        // Inodes nearly gone; no inode limit (base 0) never counts.
        assert!(near_full(cap, 1000, &u(1 << 20, 99 << 20, 99)));
        assert!(!near_full(cap, 0, &u(1 << 20, 99 << 20, 0)));
        // Full is near full.
        assert!(near_full(cap, 1000, &u(cap, 0, 900)));
    }
}
