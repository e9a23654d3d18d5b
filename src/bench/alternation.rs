//! How a suite's workloads take turns. The targets of one workload alternate
//! run by run (A B B A ...); the workloads themselves take turns round by
//! round when every target has room for all their files at once, so each
//! workload's runs spread over the whole suite instead of one short stretch
//! of it. A disk that switches between two speeds every few seconds (this
//! project's VM: ~200 and ~15,000 O_DSYNC IOPS) is then seen at both speeds
//! by every workload, and a rerun's ratio falls in the interval, rather than
//! each workload seeing the one speed its 0.3 s happened to meet.

use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::ProgressBar;

use super::engine::{self, Plan};
use super::options::{Options, need};
use super::report::{BenchResult, Ceiling, HostInfo, TargetInfo};
use super::result::to_result;
use super::stats;
use super::target::{Scratch, Target, margin_bytes};
use super::workload::Workload;

/// What every workload of a suite is measured with.
pub(super) struct Alternation<'a> {
    /// The suite's one progress bar: workloads done of all, with an ETA.
    pub pb: &'a ProgressBar,
    pub targets: &'a [Target],
    pub scratches: &'a [Scratch],
    pub plan: &'a Plan,
    pub pair: Option<(usize, usize)>,
    pub opts: &'a Options,
    pub ceiling: &'a Ceiling,
    pub host: &'a HostInfo,
}

/// One workload's sessions (one per target) and how far its rounds got.
struct Turns<'a> {
    sessions: Vec<engine::Session<'a>>,
    rounds: u32,
    /// Wall time of this workload's own rounds: its --max-time budget, which
    /// the other workloads' rounds in between do not spend.
    spent: Duration,
    counted: bool,
}

impl<'a> Alternation<'a> {
    /// Every workload on every target, results in the workloads' order:
    /// round-robin over the workloads when `interleave`, else each to its
    /// end before the next one's files are written.
    pub fn run(&self, workloads: &[Workload], interleave: bool) -> Result<Vec<BenchResult>> {
        let mut results = Vec::new();
        if !interleave {
            for w in workloads {
                let mut t = [self.start(w)?];
                turns(&mut t, |t| self.done(t), |_, t| self.round(w, t))?;
                let [t] = t;
                results.extend(self.finish(w, t)?);
            }
            return Ok(results);
        }
        let mut all = Vec::new();
        for w in workloads {
            all.push(self.start(w)?);
        }
        turns(
            &mut all,
            |t| self.done(t),
            |k, t| self.round(&workloads[k], t),
        )?;
        for (w, t) in workloads.iter().zip(all) {
            results.extend(self.finish(w, t)?);
        }
        Ok(results)
    }

    /// A session per target: files written, runs sized, warm-up done.
    fn start(&self, w: &Workload) -> Result<Turns<'a>> {
        let opts: &'a Options = self.opts;
        let mut sessions = Vec::new();
        for (t, s) in self.targets.iter().zip(self.scratches) {
            self.pb
                .set_message(format!("{} on {}: preparing", w.label, t.shown));
            sessions.push(engine::Session::start(
                w,
                s.path(),
                t.info.ram_backed,
                self.plan,
                &opts.stop,
            )?);
        }
        Ok(Turns {
            sessions,
            rounds: 0,
            spent: Duration::ZERO,
            counted: false,
        })
    }

    /// See [`done`]; a workload that is done counts on the progress bar.
    fn done(&self, t: &mut Turns) -> bool {
        let d = done(&t.sessions, t.rounds, self.pair, self.opts, t.spent);
        if d && !t.counted {
            t.counted = true;
            self.pb.inc(1);
        }
        d
    }

    /// One round: every target once. The targets take turns run by run,
    /// A B B A A B ...: both are measured across the same stretch of time, so
    /// a burst of other activity hits both (and the per-run ratio), and
    /// neither always runs right after the other.
    fn round(&self, w: &Workload, t: &mut Turns) -> Result<()> {
        let began = Instant::now();
        let n = t.sessions.len();
        let order: Vec<usize> = if t.rounds.is_multiple_of(2) {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for i in order {
            self.pb.set_message(format!(
                "{} on {}: run {}",
                w.label,
                self.targets[i].shown,
                t.rounds + 1
            ));
            t.sessions[i].run_once()?;
        }
        t.rounds += 1;
        t.spent += began.elapsed();
        Ok(())
    }

    /// The latency pass and the results, one per target.
    fn finish(&self, w: &Workload, t: Turns) -> Result<Vec<BenchResult>> {
        let mut results = Vec::new();
        for ((tg, sess), s) in self.targets.iter().zip(t.sessions).zip(self.scratches) {
            // Before finish, which removes the workload's files.
            let zram = tg
                .info
                .zram
                .as_ref()
                .and_then(|_| super::zram::cost_at(s.path()));
            self.pb
                .set_message(format!("{} on {}: latency pass", w.label, tg.shown));
            let m = sess.finish()?;
            results.push(BenchResult {
                zram,
                ..to_result(w, tg, &m, self.ceiling, self.host)
            });
        }
        Ok(results)
    }
}

/// Round-robin: each state not yet done gets one round in turn, until every
/// one is done. One state alone is the plain loop.
fn turns<S>(
    states: &mut [S],
    mut done: impl FnMut(&mut S) -> bool,
    mut round: impl FnMut(usize, &mut S) -> Result<()>,
) -> Result<()> {
    loop {
        let mut ran = false;
        for (k, s) in states.iter_mut().enumerate() {
            if !done(s) {
                round(k, s)?;
                ran = true;
            }
        }
        if !ran {
            return Ok(());
        }
    }
}

/// Bytes and inodes all `workloads` hold at once.
pub(super) fn need_all(workloads: &[Workload]) -> (u64, u64) {
    (
        workloads.iter().map(|w| w.footprint_bytes()).sum(),
        workloads.iter().map(|w| w.footprint_inodes()).sum(),
    )
}

/// The size of a tmpfs or zram device made for the run: room for every
/// workload's files at once when that fits in half the available RAM (so
/// the workloads can take turns), else for the largest.
pub(super) fn private_bytes(workloads: &[Workload], mem_available: u64) -> u64 {
    let (one, _) = need(workloads);
    let (all, _) = need_all(workloads);
    let nb = if workloads.len() > 1 && all + margin_bytes(all) <= mem_available / 2 {
        all
    } else {
        one
    };
    nb + margin_bytes(nb) + (8 << 20)
}

/// Whether every target has room for every workload's files at once (and
/// a RAM-backed one the RAM for them): then the workloads take turns.
/// Otherwise they run one after another, as the free-space check allowed.
pub(super) fn interleave_fits(
    targets: &[TargetInfo],
    workloads: &[Workload],
    mem_available: u64,
) -> bool {
    let (b, i) = need_all(workloads);
    let want = b + margin_bytes(b);
    workloads.len() > 1
        && targets.iter().all(|t| {
            t.free_bytes >= want
                && t.free_inodes.is_none_or(|f| f >= i + 16)
                && (!t.ram_backed || want <= mem_available / 2)
        })
}

/// Whether a workload's alternation may stop: the minimums are met (see
/// [`minimums_met`]); then, for the compared pair, only after an even number
/// of rounds (as many A-first as B-first) and once the ratio is as precise
/// as asked, max_time has passed, or a session reached max_runs.
fn done(
    sessions: &[engine::Session],
    rounds: u32,
    pair: Option<(usize, usize)>,
    opts: &Options,
    elapsed: Duration,
) -> bool {
    let progress: Vec<(u32, Duration)> =
        sessions.iter().map(|s| (s.runs(), s.measured())).collect();
    if !minimums_met(&progress, opts) {
        return false;
    }
    let Some((a, b)) = pair else { return true };
    precise_enough(
        sessions[a].run_ns(),
        sessions[b].run_ns(),
        rounds,
        opts,
        elapsed,
    )
}

/// Every target has --min-runs runs, and the workload has run --min-time:
/// on its slowest target, since the targets run in lockstep. Asking it of
/// every target made the slow one repeat until the fast one had filled
/// --min-time with its short runs (advise: 34 rounds of a 0.5 s disk run to
/// give tmpfs its 300 ms); the ratio's own precision decides beyond this.
fn minimums_met(progress: &[(u32, Duration)], opts: &Options) -> bool {
    progress.iter().all(|(n, _)| *n >= opts.min_runs.max(1))
        && progress
            .iter()
            .any(|(n, t)| *t >= opts.min_time || *n >= opts.max_runs)
}

/// The precision half of [`done`], on the run times of the two compared targets.
fn precise_enough(a: &[u64], b: &[u64], rounds: u32, opts: &Options, elapsed: Duration) -> bool {
    // --max-runs is a hard bound, even on an odd round count.
    if opts.ratio_precision_percent <= 0.0 || a.len().max(b.len()) >= opts.max_runs as usize {
        return true;
    }
    if !rounds.is_multiple_of(2) {
        return false;
    }
    if elapsed >= opts.max_time {
        return true;
    }
    // Work per run is fixed per session, so 1/time is the rate up to a
    // constant factor, which leaves the relative interval unchanged.
    let rate = |ns: &[u64]| -> Vec<f64> { ns.iter().map(|&n| 1.0 / n.max(1) as f64).collect() };
    stats::PairedRatio::of(&rate(a), &rate(b))
        .is_none_or(|p| p.uncertainty_percent() <= opts.ratio_precision_percent)
}

#[cfg(test)]
mod stop_tests {
    use super::*;

    #[test]
    fn minimums_are_runs_on_every_target_and_time_on_the_slowest() {
        let o = Options::default(); // 5 runs, 500 ms, max 40 runs
        let ms = Duration::from_millis;
        // The disk has its 500 ms, tmpfs only 90 ms: enough.
        assert!(minimums_met(&[(5, ms(90)), (5, ms(600))], &o));
        // Too few runs on one target.
        assert!(!minimums_met(&[(4, ms(900)), (5, ms(600))], &o));
        // Nobody has run 500 ms yet ...
        assert!(!minimums_met(&[(6, ms(90)), (6, ms(400))], &o));
        // ... unless max_runs says stop.
        assert!(minimums_met(&[(40, ms(90)), (40, ms(400))], &o));
        // One target alone: its own figures.
        assert!(minimums_met(&[(5, ms(500))], &o));
        assert!(!minimums_met(&[(5, ms(499))], &o));
    }

    #[test]
    fn alternation_runs_until_the_ratio_is_precise() {
        let o = Options::default();
        let t = Duration::from_millis(100);
        // 10 runs each, ratio exactly 2 in every block: precise, stop.
        let a = [50u64; 10];
        let b = [100u64; 10];
        assert!(precise_enough(&a, &b, 10, &o, t));
        // Only after as many A-first as B-first rounds.
        assert!(!precise_enough(&a[..9], &b[..9], 9, &o, t));
        // Ratio 2 in rounds 0-4, 3 in rounds 5-9: far from 5%, go on ...
        let b2: Vec<u64> = (0..10).map(|i| if i < 5 { 100 } else { 150 }).collect();
        assert!(!precise_enough(&a, &b2, 10, &o, t));
        // ... until max_time ...
        assert!(precise_enough(&a, &b2, 10, &o, o.max_time));
        // ... or max_runs ...
        let many_a = vec![50u64; o.max_runs as usize];
        let many_b: Vec<u64> = (0..o.max_runs)
            .map(|i| if i < o.max_runs / 2 { 100 } else { 150 })
            .collect();
        assert!(precise_enough(&many_a, &many_b, o.max_runs, &o, t));
        // (--max-runs bounds even an odd count) ...
        let odd = Options {
            max_runs: 9,
            ..Options::default()
        };
        assert!(precise_enough(&a[..9], &b2[..9], 9, &odd, t));
        // ... and never with --ratio-precision 0.
        let off = Options {
            ratio_precision_percent: 0.0,
            ..Options::default()
        };
        assert!(precise_enough(&a, &b2, 9, &off, t));
    }
}

#[cfg(test)]
mod turn_tests {
    use super::*;
    use crate::bench::workload::{Preset, Scale, preset};

    #[test]
    fn taking_turns_shows_every_workload_both_speeds_of_a_disk_that_switches() {
        // Five workloads of six rounds; the disk is slow for the first half
        // of the suite and fast after it.
        const ROUNDS: u32 = 6;
        #[derive(Default)]
        struct W {
            rounds: u32,
            slow: u32,
            fast: u32,
        }
        let suite = |interleave: bool| {
            let mut ws: Vec<W> = (0..5).map(|_| W::default()).collect();
            let half = ws.len() as u32 * ROUNDS / 2;
            let mut clock = 0;
            let mut round = |_: usize, w: &mut W| {
                if clock < half {
                    w.slow += 1;
                } else {
                    w.fast += 1;
                }
                clock += 1;
                w.rounds += 1;
                Ok(())
            };
            let done = |w: &mut W| w.rounds >= ROUNDS;
            if interleave {
                turns(&mut ws, done, &mut round).unwrap();
            } else {
                for w in ws.iter_mut() {
                    turns(std::slice::from_mut(w), done, &mut round).unwrap();
                }
            }
            ws
        };
        let taking_turns = suite(true);
        for (k, w) in taking_turns.iter().enumerate() {
            assert_eq!(w.rounds, ROUNDS, "workload {k}");
            // Two runs a side at least: what the two-speed rule needs to name both.
            assert!(
                w.slow >= 2 && w.fast >= 2,
                "workload {k}: {} slow, {} fast",
                w.slow,
                w.fast
            );
        }
        // One after another, most workloads meet one speed only.
        let in_a_row = suite(false);
        let one_speed = in_a_row
            .iter()
            .filter(|w| w.slow == 0 || w.fast == 0)
            .count();
        assert!(one_speed >= 4, "{one_speed}");
    }

    fn target(free_bytes: u64, free_inodes: Option<u64>, ram_backed: bool) -> TargetInfo {
        TargetInfo {
            path: "/t".into(),
            fstype: if ram_backed { "tmpfs" } else { "ext4" }.into(),
            mountpoint: "/t".into(),
            ram_backed,
            private_mount: false,
            options: None,
            huge: None,
            free_bytes,
            free_inodes,
            need_bytes: 0,
            need_inodes: 0,
            ext4_journal: None,
            zram: None,
        }
    }

    #[test]
    fn workloads_take_turns_only_where_all_their_files_fit_at_once() {
        let ws = preset(Preset::Default, Scale::QUICK);
        let (all, inodes) = need_all(&ws);
        let (one, _) = need(&ws);
        assert!(all > one, "{all} {one}");
        let room = all + margin_bytes(all);
        let gib = 1 << 30;
        assert!(interleave_fits(
            &[
                target(room, Some(inodes + 16), true),
                target(room, None, false)
            ],
            &ws,
            2 * room
        ));
        // Room for the largest workload only: one after another.
        assert!(!interleave_fits(&[target(room - 1, None, false)], &ws, gib));
        assert!(!interleave_fits(
            &[target(room, Some(inodes), false)],
            &ws,
            gib
        ));
        // A tmpfs may hold them, but not in half of the RAM available.
        assert!(!interleave_fits(&[target(room, None, true)], &ws, room));
        // One workload has nobody to take turns with.
        assert!(!interleave_fits(
            &[target(room, None, false)],
            &ws[..1],
            gib
        ));
        // A run's own tmpfs is sized for all of them where RAM allows.
        assert!(private_bytes(&ws, 2 * room) >= room);
        assert!(private_bytes(&ws, room) < all);
    }
}
