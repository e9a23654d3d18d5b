//! Unit tests of how reports mark what their figures are worth: `--quick`
//! runs, uncertain ratios, target names.

use super::render::QUICK_NOTE;
use super::tests::fake_report;
use super::*;

#[test]
fn quick_reports_say_so_in_every_output() {
    let mut r = fake_report();
    let plain = render::table(&r);
    assert!(!plain.contains(QUICK_NOTE), "{plain}");
    r.quick = true;
    let t = render::table(&r);
    assert!(t.starts_with(QUICK_NOTE), "{t}");
    assert!(!t.contains(">= 0.0 s"), "{t}");
    assert!(render::markdown(&r).contains(QUICK_NOTE));
    let h = html::html(&r);
    assert!(h.contains(QUICK_NOTE) && h.contains("id=\"quick\""), "{h}");
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["quick"], true);
    let text = serde_json::to_string_pretty(&r).unwrap();
    let second = text.lines().nth(2).unwrap_or_default();
    assert_eq!(second.trim(), "\"quick\": true,", "at the top: {text:.80}");
}

#[test]
fn buffered_dd_where_ext4_beats_small_page_tmpfs_is_explained() {
    use super::workload::{Scale, Sync};
    let mut r = fake_report();
    r.workloads = preset(Preset::Dd, Scale::QUICK);
    r.results.clear();
    r.targets[0].huge = Some("never".into());
    for w in &r.workloads {
        for (i, t) in r.targets.clone().iter().enumerate() {
            let mut x = tests::fake_result(w, &t.path, 1e9);
            // ext4 twice as fast at buffered writes only.
            if i == 1 && w.sync == Sync::None && w.op == Op::SeqWrite {
                x.median = 2e9;
            }
            r.results.push(x);
        }
    }
    let notes = notes::notes(&r);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0]
            .message
            .contains("dd-1m-buffered: /dev/shm is 2.0× slower than ext4"),
        "{}",
        notes[0].message
    );
    assert!(notes[0].message.contains("huge=within_size"));
    r.warnings = notes;
    let t = render::table(&r);
    assert!(
        t.contains("\nwhy: buffered writes to the disk beat tmpfs"),
        "{t}"
    );
    // A tmpfs already on 2 MiB pages gets no such note.
    r.targets[0].huge = Some("within_size".into());
    assert!(notes::notes(&r).is_empty());
}

#[test]
fn iozone_html_has_a_bar_chart_per_operation_with_bars() {
    let mut r = fake_report();
    r.workloads = preset(Preset::Iozone, workload::Scale::QUICK);
    r.results.clear();
    for w in &r.workloads {
        for (i, t) in r.targets.clone().iter().enumerate() {
            // Figures far apart (small files in cache, big ones not): the axis goes log.
            let v = 1e6 * (w.size_bytes as f64 / 65536.0) / (i + 1) as f64;
            r.results.push(tests::fake_result(w, &t.path, v));
        }
    }
    let bars = html::iozone_bars(&r);
    assert_eq!(
        bars.len(),
        6,
        "write rewrite read reread randread randwrite"
    );
    let h = html::html(&r);
    let section = h.split("<h2>iozone bar charts</h2>").nth(1).unwrap();
    let section = section.split("<h2>").next().unwrap();
    assert_eq!(section.matches("<svg").count(), 6);
    assert_eq!(section.matches("class=\"bar\"").count(), r.results.len());
    assert!(section.contains("data-scale=\"log\""), "figures span > 10x");
}

#[test]
fn all_cores_below_one_thread_is_a_warning_and_triad_is_shown() {
    let mut r = fake_report();
    assert!(notes::notes(&r).is_empty());
    let t = render::table(&r);
    assert!(
        t.contains("STREAM Triad") && t.contains("24 bytes per element"),
        "{t}"
    );
    r.ceiling.all_core_copy_bytes_per_s = 4.7 * (1u64 << 30) as f64;
    r.ceiling.memcpy_bytes_per_s = 10.1 * (1u64 << 30) as f64;
    let n = notes::notes(&r);
    assert_eq!(n.len(), 1, "{n:?}");
    assert_eq!(n[0].code, "all_core_below_single");
    assert!(
        n[0].message.contains("4.70 GiB/s") && n[0].message.contains("10.1 GiB/s"),
        "{}",
        n[0].message
    );
}

#[test]
fn html_has_a_results_table_with_warnings_folded_under_it() {
    let mut r = fake_report();
    r.warnings = suite::warnings(&r);
    assert!(!r.warnings.is_empty());
    let h = html::html(&r);
    let table = h.find("<table class=\"results\">").unwrap();
    let folded = h.find("<details class=\"warnings\">").unwrap();
    let first_warning = h.find("class=\"warn\"").unwrap();
    assert!(
        table < folded && folded < first_warning,
        "warnings under the results"
    );
    assert!(h.contains("2.0× faster ("), "ratio with its interval: {h}");
    assert!(
        h.contains("data-flags=\"above_memory_ceiling\""),
        "affected rows marked"
    );
    assert_eq!(
        h.matches("<tr class=\"flagged\"").count(),
        1,
        "only the byte-rate row"
    );
}

#[test]
fn bar_charts_go_log_where_figures_span_more_than_ten_times() {
    let mut r = fake_report();
    let w = r.workloads[1].clone();
    assert!(html::bar_chart(&r, &w).contains("data-scale=\"linear\""));
    for x in r
        .results
        .iter_mut()
        .filter(|x| x.workload == w.id && x.target == "/var/tmp")
    {
        *x = tests::fake_result(&w, "/var/tmp", x.median / 60.0);
    }
    let svg = html::bar_chart(&r, &w);
    assert!(
        svg.contains("data-scale=\"log\"") && svg.contains("(log scale)"),
        "{svg}"
    );
}

#[test]
fn the_small_pages_note_follows_the_ratio_column() {
    use super::workload::{Scale, Sync};
    let mut r = fake_report();
    r.workloads = preset(Preset::Dd, Scale::QUICK);
    r.results.clear();
    r.targets[0].huge = Some("never".into());
    for w in &r.workloads {
        for t in r.targets.clone() {
            r.results.push(tests::fake_result(w, &t.path, 1e9));
        }
    }
    // Medians say ext4 wins, the paired per-run ratio says tmpfs does.
    let id = r
        .workloads
        .iter()
        .find(|w| w.sync == Sync::None && w.op == Op::SeqWrite)
        .unwrap()
        .id
        .clone();
    for x in r
        .results
        .iter_mut()
        .filter(|x| x.workload == id && x.target == "/var/tmp")
    {
        x.median = 1.5e9;
    }
    r.ratios = suite::ratios(&r);
    let x = r.ratios.iter_mut().find(|x| x.workload == id).unwrap();
    x.ratio = 1.2;
    assert!(
        notes::notes(&r).is_empty(),
        "no note against the table's 1.2× faster"
    );
    r.ratios
        .iter_mut()
        .find(|x| x.workload == id)
        .unwrap()
        .ratio = 0.5;
    assert!(
        notes::notes(&r)[0]
            .message
            .contains("2.0× slower than ext4")
    );
}
