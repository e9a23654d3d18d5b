//! Unit tests of the pure parts: workloads, arguments, renderers.

use std::path::Path;

use super::*;
use crate::bench::report::BenchResult;

#[test]
fn presets_are_valid_and_labelled() {
    for p in [
        Preset::Default,
        Preset::TempFile,
        Preset::Dd,
        Preset::Sysbench,
        Preset::Iozone,
        Preset::Smallfiles,
        Preset::Crystal,
    ] {
        for scale in [Scale::DEFAULT, Scale::QUICK] {
            let ws = preset(p, scale);
            assert!(!ws.is_empty(), "{p:?}");
            let mut ids: Vec<_> = ws.iter().map(|w| w.id.clone()).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), ws.len(), "{p:?}: ids must be unique");
            for w in &ws {
                w.validate().unwrap();
                assert!(!w.label.is_empty());
            }
        }
    }
    let d = preset(Preset::Default, Scale::DEFAULT);
    assert_eq!(d[0].label, "seq write 1 MiB, fsync at end, 512 MiB file");
    assert!(d.iter().any(|w| w.label.contains("O_DSYNC")));
    assert!(
        d.iter()
            .any(|w| w.op == Op::SeqRead && w.label.contains("cold"))
    );
    assert!(
        d.iter()
            .any(|w| w.op == Op::SeqRead && w.label.contains("warm"))
    );
}

#[test]
fn need_counts_peak_not_sum() {
    let ws = preset(Preset::Default, Scale::DEFAULT);
    let (b, i) = need(&ws);
    assert_eq!(b, 512 << 20);
    assert!(i >= 10_000);
}

/// One result of `v` per second in the workload's unit, 3 runs, ±10%.
pub(super) fn fake_result(w: &Workload, target: &str, v: f64) -> BenchResult {
    BenchResult {
        workload: w.id.clone(),
        label: w.label.clone(),
        target: target.to_string(),
        unit: if w.reports_bytes() {
            "bytes_per_s"
        } else {
            "ops_per_s"
        }
        .into(),
        throughput_bytes_per_s: Some(v),
        ops_per_s: (!w.reports_bytes()).then_some(v),
        median: v,
        min: v * 0.9,
        max: v * 1.1,
        spread_percent: 20.0,
        rsd_percent: 5.0,
        outliers: 0,
        runs: 3,
        samples: vec![v * 0.9, v, v * 1.1],
        bytes_per_run: 1,
        ops_per_run: 1,
        latency_ns: None,
        cache_state: "n/a".into(),
        cache_method: String::new(),
        tier: "ram".into(),
        engine: "psync".into(),
        ceiling_fraction: None,
        cpu_wait_percent: Some(1.0),
        flags: vec![],
        zram: None,
    }
}

pub(super) fn fake_report() -> BenchReport {
    use report::*;
    let ws = preset(Preset::TempFile, Scale::QUICK);
    let shm = TargetInfo {
        path: "/dev/shm".into(),
        fstype: "tmpfs".into(),
        mountpoint: "/dev/shm".into(),
        ram_backed: true,
        private_mount: false,
        options: None,
        huge: None,
        free_bytes: 1 << 30,
        free_inodes: Some(1000),
        need_bytes: 1 << 20,
        need_inodes: 10,
        ext4_journal: None,
        zram: None,
    };
    // The disk differs from the tmpfs only in what makes it a disk.
    let disk = TargetInfo {
        path: "/var/tmp".into(),
        fstype: "ext4".into(),
        mountpoint: "/".into(),
        ram_backed: false,
        ext4_journal: Some(false),
        ..shm.clone()
    };
    let targets = vec![shm, disk];
    let mut results = Vec::new();
    for w in &ws {
        for (i, t) in targets.iter().enumerate() {
            // RAM target twice as fast; the first workload's RAM figure is above the ceiling.
            let v =
                if i == 0 { 2000.0 } else { 1000.0 } * if w.reports_bytes() { 1e6 } else { 1.0 };
            let mut flags = vec![];
            if i == 0 && w.reports_bytes() {
                flags.push("above_memory_ceiling".to_string());
            }
            let mut x = fake_result(w, &t.path, v);
            x.flags = flags;
            results.push(x);
        }
    }
    let mut r = BenchReport {
        schema_version: SCHEMA_VERSION,
        quick: false,
        tool_version: "test".into(),
        host: HostInfo {
            kernel: "6.18".into(),
            cpus: 2,
            mem_total_bytes: 1 << 34,
            llc_bytes: Some(32 << 20),
            l2_bytes: Some(2 << 20),
        },
        elapsed_ns: 1,
        clock_overhead_ns: 20,
        min_runs: 3,
        min_time_ns: 0,
        targets,
        ceiling: Ceiling {
            memcpy_bytes_per_s: 1.5e9,
            all_core_copy_bytes_per_s: 3e9,
            stream_triad_bytes_per_s: Some(2e9),
            all_core_stream_triad_bytes_per_s: Some(3.5e9),
            threads: 2,
            buffer_bytes: 1 << 30,
            runs: 3,
            buffer_exceeds_llc: true,
            memcpy_end_bytes_per_s: None,
        },
        workloads: ws,
        results,
        ratios: vec![],
        warnings: vec![],
    };
    r.ratios = suite::ratios(&r);
    r
}

#[test]
fn table_has_targets_ratio_and_ceiling() {
    let t = render::table(&fake_report());
    assert!(
        t.contains("/dev/shm (tmpfs, RAM)") && t.contains("/var/tmp (ext4)"),
        "{t}"
    );
    assert!(t.contains("tmpfs vs /var/tmp"), "{t}");
    assert!(t.contains("2.0× faster"), "{t}");
    assert!(t.contains(">ceiling!"), "{t}");
    assert!(t.contains("memory ceiling: memcpy, bytes copied"), "{t}");
    assert!(t.contains("1.40 GiB/s / 2.79 GiB/s"), "{t}");
    assert!(t.contains("2000 files/s ±5%"), "{t}");
}

#[test]
fn csv_quotes_labels_and_markdown_is_a_table() {
    let r = fake_report();
    let c = render::csv(&r);
    let lines: Vec<&str> = c.lines().collect();
    assert_eq!(lines.len(), 1 + r.results.len());
    assert!(lines[1].starts_with("seq-write-1m-fsync,\"seq write 1 MiB, fsync at end, 8 MiB file\",/dev/shm,tmpfs,true,bytes_per_s,2000000000.000"), "{}", lines[1]);
    assert!(lines[1].ends_with(",above_memory_ceiling"), "{}", lines[1]);
    let md = render::markdown(&r);
    let first = md.lines().next().unwrap();
    assert_eq!(
        first.matches('|').count(),
        5,
        "workload, 2 targets, ratio: {first}"
    );
    assert!(md.lines().nth(1).unwrap().starts_with("|---|"));
}

#[test]
fn html_has_a_chart_per_workload_and_the_ceiling() {
    let r = fake_report();
    let h = html::html(&r);
    assert_eq!(h.matches("<svg").count(), r.workloads.len());
    assert_eq!(h.matches("class=\"bar\"").count(), r.results.len());
    // Byte-rate charts draw the ceiling as a line when it is on scale.
    assert!(h.contains("class=\"ceiling\""), "ceiling line");
    assert!(!h.contains("<script"));
    assert!(
        html::heatmaps(&r).is_empty(),
        "no iozone cells, no heat map"
    );
}

#[test]
fn compare_matches_by_target_kind_when_paths_differ() {
    let a = fake_report();
    let mut b = fake_report();
    for t in &mut b.targets {
        if t.ram_backed {
            t.path = "/tmp".into();
        }
    }
    for x in &mut b.results {
        if x.target == "/dev/shm" {
            x.target = "/tmp".into();
            x.median *= 2.0;
            x.samples.iter_mut().for_each(|v| *v *= 2.0);
        }
    }
    let out = compare::text(&a, &b, Path::new("a.json"), Path::new("b.json"));
    assert!(out.contains("(/tmp on tmpfs)"), "{out}");
    assert!(out.contains("/var/tmp on ext4"), "{out}");
    assert!(out.contains("2.0× faster (1.64..2.44)"), "{out}");
    assert!(out.contains("same"), "{out}");
    assert!(!out.contains("1.0× faster"), "{out}");
    let same = compare::text(&a, &a, Path::new("a.json"), Path::new("a.json"));
    assert!(
        !same.contains('×'),
        "a run compared with itself is the same: {same}"
    );
    let h = compare::html(&a, &b, Path::new("a.json"), Path::new("b.json"));
    assert!(
        h.contains("<table class=\"compare\">") && h.contains("2.0× faster"),
        "{h}"
    );
}

#[test]
fn tiers_follow_cache_sizes_and_durability() {
    let host = report::HostInfo {
        kernel: String::new(),
        cpus: 1,
        mem_total_bytes: 0,
        llc_bytes: Some(32 << 20),
        l2_bytes: Some(1 << 20),
    };
    let ws = preset(Preset::Iozone, Scale::DEFAULT);
    let get = |id: &str| ws.iter().find(|w| w.id == id).unwrap();
    for (id, ram_backed, cache_state, want) in [
        ("iozone-read-64k-4k", true, "n/a", "cpu-cache"),
        ("iozone-read-16M-4k", true, "n/a", "llc"),
        ("iozone-read-128M-4k", true, "n/a", "ram"),
        ("iozone-read-128M-4k", false, "cold", "device"),
        ("iozone-reread-128M-4k", false, "warm", "page-cache"),
        ("iozone-write-64k-4k", false, "n/a", "device"),
        // A small file reread from a disk sat in the page cache, not "cpu-cache".
        ("iozone-reread-64k-4k", false, "warm", "page-cache"),
    ] {
        assert_eq!(
            result::tier(get(id), ram_backed, cache_state, &host),
            want,
            "{id}, ram-backed {ram_backed}, {cache_state}"
        );
    }
}

#[test]
fn ratio_is_the_median_of_per_run_ratios() {
    let mut r = fake_report();
    // Same-run noise hits both targets; the fake report's per-run ratios are all 2.
    let x = &r.ratios[0];
    assert!(x.paired);
    assert_eq!(x.pairs, 3);
    assert_eq!(x.ratio, 2.0);
    assert_eq!(
        (x.ratio_ci95_low, x.ratio_ci95_high),
        (Some(2.0), Some(2.0))
    );
    assert!(x.flags.is_empty());
    let t = render::table(&r);
    assert!(t.contains("2.0× faster ±0%"), "{t}");

    // Medians 3000 / 500 = 6, but run by run the RAM target was twice as fast
    // twice and six times once: the paired ratio is 2, with an interval to 6.
    let id = r.workloads[1].id.clone();
    for res in r.results.iter_mut().filter(|x| x.workload == id) {
        res.samples = if res.target == "/dev/shm" {
            vec![1000.0, 3000.0, 3000.0]
        } else {
            vec![500.0, 1500.0, 500.0]
        };
        res.median = if res.target == "/dev/shm" {
            3000.0
        } else {
            500.0
        };
    }
    r.ratios = suite::ratios(&r);
    let x = r.ratios.iter().find(|x| x.workload == id).unwrap();
    assert_eq!(x.ratio, 2.0);
    assert_eq!((x.ratio_min, x.ratio_max), (Some(2.0), Some(6.0)));
    // The rerun interval holds every round (2 to 6) and, from three rounds, more.
    assert!(x.ratio_ci95_low.unwrap() <= 2.0 && x.ratio_ci95_high.unwrap() >= 6.0);
    assert!(x.ratio_uncertainty_percent.unwrap() >= 200.0);
    assert_eq!(x.flags, vec!["ratio_uncertain".to_string()]);
    r.warnings = suite::warnings(&r);
    let w = r
        .warnings
        .iter()
        .find(|w| w.code == "ratio_uncertain")
        .expect("a ratio_uncertain warning");
    assert!(w.message.contains(&id), "{}", w.message);
    // Never a symmetric ± above 100 %: the interval's ends.
    let t = render::table(&r);
    let (lo, hi) = (x_lo_hi(&r, &id).0, x_lo_hi(&r, &id).1);
    assert!(
        t.contains(&format!("{lo:.2}..{hi:.2}")) && !t.contains("±2"),
        "{t}"
    );

    // Runs that were not paired (e.g. a saved report of another tool version):
    // the ratio of the medians, marked unpaired.
    for res in r.results.iter_mut().filter(|x| x.workload == id) {
        if res.target == "/var/tmp" {
            res.samples.pop();
        }
    }
    r.ratios = suite::ratios(&r);
    let x = r.ratios.iter().find(|x| x.workload == id).unwrap();
    assert!(!x.paired);
    assert_eq!(x.ratio, 6.0);
    assert!(x.ratio_ci95_low.is_none() && x.flags.is_empty());
}

#[test]
fn a_ratio_whose_interval_holds_one_is_not_called_faster() {
    let mut r = fake_report();
    // What a real run printed as "1.1× faster ±19% ?".
    let x = &mut r.ratios[0];
    x.ratio = 1.1;
    (x.ratio_ci95_low, x.ratio_ci95_high) = (Some(0.85), Some(1.16));
    x.ratio_uncertainty_percent = Some(19.0);
    x.flags = vec!["ratio_uncertain".into()];
    let t = render::table(&r);
    assert!(t.contains("same within the interval (0.85..1.16)"), "{t}");
    assert!(!t.contains("1.1× faster"), "{t}");
}

#[test]
fn warnings_call_a_private_tmpfs_by_what_it_is() {
    let mut r = fake_report();
    let tmp = "/tmp/tmpfsctl-bench-mnt-AbCdEf".to_string();
    r.targets[0].path = tmp.clone();
    r.targets[0].private_mount = true;
    for res in r.results.iter_mut().filter(|x| x.target == "/dev/shm") {
        res.target = tmp.clone();
        res.flags.push("cpu_contention".into());
    }
    let ws = suite::warnings(&r);
    let w = ws.iter().find(|w| w.code == "cpu_contention").unwrap();
    assert!(
        w.message.contains("on private tmpfs (RAM)"),
        "{}",
        w.message
    );
    assert!(ws.iter().all(|w| !w.message.contains(&tmp)), "{ws:?}");
}

#[test]
fn ext4_file_creation_rows_carry_the_recently_deleted_note() {
    let r = fake_report();
    let ws = suite::warnings(&r);
    let w = ws
        .iter()
        .find(|w| w.code == "ext4_recently_deleted")
        .expect("ext4 note");
    assert!(w.message.contains("metadata on /var/tmp"), "{}", w.message);
    assert!(!w.message.contains("/dev/shm"), "{}", w.message);
    // With a journal ext4 reuses deleted inodes at once: no such claim.
    let mut r = fake_report();
    r.targets[1].ext4_journal = Some(true);
    let ws = suite::warnings(&r);
    assert!(
        ws.iter().all(|w| w.code != "ext4_recently_deleted"),
        "{ws:?}"
    );
}

#[test]
fn a_moved_memory_ceiling_is_a_warning() {
    let mut r = fake_report();
    let has = |r: &BenchReport| {
        suite::warnings(r)
            .into_iter()
            .find(|w| w.code == "memory_bandwidth_moved")
    };
    assert!(has(&r).is_none(), "no end figure: no claim");
    r.ceiling.memcpy_end_bytes_per_s = Some(1.5e9 * 1.05);
    assert!(has(&r).is_none(), "5% is noise");
    r.ceiling.memcpy_end_bytes_per_s = Some(0.75e9);
    let w = has(&r).expect("halved");
    assert!(w.message.contains("-50%"), "{}", w.message);
    assert_eq!(r.ceiling.moved_percent().map(f64::round), Some(-50.0));
}

/// The 95 % interval of workload `id`'s ratio in `r`.
fn x_lo_hi(r: &super::report::BenchReport, id: &str) -> (f64, f64) {
    let x = r.ratios.iter().find(|x| x.workload == id).unwrap();
    (x.ratio_ci95_low.unwrap(), x.ratio_ci95_high.unwrap())
}

#[test]
fn a_disk_that_changed_speed_is_called_bimodal_with_both_modes() {
    let mut r = fake_report();
    // The disk at ~200 ops/s in four runs and ~15k in two (an O_DSYNC
    // workload on the shared VM did this), the RAM target steady.
    let w = r
        .workloads
        .iter()
        .find(|w| !w.reports_bytes())
        .expect("an op-counted workload")
        .clone();
    for res in r.results.iter_mut().filter(|x| x.workload == w.id) {
        res.samples = if res.target == "/dev/shm" {
            vec![600e3, 610e3, 605e3, 598e3, 602e3, 600e3]
        } else {
            vec![210.0, 15000.0, 190.0, 200.0, 14800.0, 205.0]
        };
    }
    r.ratios = suite::ratios(&r);
    r.warnings = suite::warnings(&r);
    let x = r.ratios.iter().find(|x| x.workload == w.id).unwrap();
    assert!(x.flags.iter().any(|f| f == "ratio_bimodal"), "{x:?}");
    let b = x.bimodal.as_ref().unwrap();
    assert_eq!(b.target, "/var/tmp");
    assert_eq!((b.slow_runs, b.fast_runs), (4, 2));
    assert_eq!(b.slow_mode_ops_per_s, Some(202.5));
    assert_eq!(b.fast_mode_ops_per_s, Some(14900.0));
    assert_eq!(b.slow_mode_bytes_per_s, None);
    assert!(
        b.ratio_when_slow > 2500.0 && b.ratio_when_fast < 50.0,
        "{b:?}"
    );
    // The JSON names the modes with their unit.
    let j = serde_json::to_value(x).unwrap();
    assert!(j["bimodal"]["slow_mode_ops_per_s"].is_number(), "{j}");
    assert!(j["bimodal"].get("slow_mode_bytes_per_s").is_none(), "{j}");
    // The table says bimodal with both ratios, not one ratio ± an interval.
    let t = render::table(&r);
    let cell = format!(
        "bimodal: {} or {} ?",
        super::ratio::fmt_ratio(b.ratio_when_slow),
        super::ratio::fmt_ratio(b.ratio_when_fast)
    );
    assert!(t.contains(&cell), "{t}");
    let warn = r
        .warnings
        .iter()
        .find(|x| x.code == "ratio_bimodal")
        .expect("a ratio_bimodal warning");
    assert!(
        warn.message
            .contains("/var/tmp ran at 202 IOPS in 4 runs and 14.9k IOPS in 2")
            && warn.message.contains(&w.id),
        "{}",
        warn.message
    );
    // A steady pair is not bimodal.
    assert!(r.ratios.iter().filter(|x| x.bimodal.is_some()).count() == 1);
}
