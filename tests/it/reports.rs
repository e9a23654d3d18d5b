//! The HTML reports as a reader sees them: each is laid out in headless
//! Chromium at a desktop (1280 px) and a narrow (800 px) width, and every
//! chart label is measured: none clipped, none on another, none on the
//! curve, charts and tables present, text still legible when scaled.

use std::fmt::Write as _;
use std::path::Path;

use crate::common::{TestMount, chromium_layout, chromium_screenshot, layout_faults, tmpfsctl};
use crate::require_root;

const WIDTHS: [u32; 2] = [1280, 800];
/// Text boxes are ~1.2× the font size: 10 px is a 8.5 px font, still legible.
const MIN_TEXT_PX: f64 = 10.0;

/// A fleet host as `tmpfsctl collect` writes it.
fn host(i: usize, used: u64, ram: u64) -> String {
    format!(
        r#"{{"schema_version":1,"host":"h{i}.example.net","timestamp_unix_s":{ts},"kernel":"6.1.0","paths":[{{"path":"/tmp","used_bytes":{used},"inodes":10,"source":"du","oldest_age_s":100,"unreadable_dirs":0,"fstype":"ext4","mountpoint":"/","own_mount":false,"tmpfs_size_bytes":null}}],"mem_total_bytes":{ram},"mem_free_bytes":{half},"mem_available_bytes":{half},"buffers_bytes":0,"cached_bytes":0,"shmem_bytes":0,"swap_total_bytes":0,"swap_free_bytes":0}}"#,
        ts = 1_700_000_000 + i,
        half = ram / 2
    )
}

/// Deterministic pseudo-random numbers (a 64-bit LCG), so every run draws the same fleet.
struct Lcg(u64);
impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Fleets that stress the charts differently: (name, JSON lines).
fn fleets() -> Vec<(&'static str, String)> {
    let mut rng = Lcg(7);
    let mut typical = String::new();
    for i in 0..500 {
        // Most /tmp small (KiB to MiB), a tail up to GiB; RAM 1 to 256 GiB.
        let used = 10f64.powf(3.0 + 4.0 * rng.unit().powi(2) + 2.5 * rng.unit().powi(6)) as u64;
        let ram = 1u64 << (30 + (rng.unit() * 9.0) as u32);
        let _ = writeln!(typical, "{}", host(i, used, ram));
    }
    let mut spread = String::new();
    for i in 0..200 {
        let used = 10f64.powf(13.0 * rng.unit()) as u64;
        let ram = 1u64 << (29 + (rng.unit() * 14.0) as u32);
        let _ = writeln!(spread, "{}", host(i, used, ram));
    }
    let _ = writeln!(spread, "{}", host(900, 0, 1 << 29));
    let _ = writeln!(spread, "{}", host(901, 3 << 40, 1 << 42));
    let equal: String = (0..40)
        .map(|i| host(i, 100 << 20, 16 << 30) + "\n")
        .collect();
    vec![
        ("typical", typical),
        ("one-host", host(0, 5 << 20, 8 << 30) + "\n"),
        ("all-equal", equal),
        ("bytes-to-TiB", spread),
    ]
}

/// Lays `html` out at each width; panics naming every fault. Returns the
/// findings at each width for report-specific checks.
fn assert_clean_layout(html: &Path, what: &str) -> Option<Vec<serde_json::Value>> {
    let mut all = Vec::new();
    let mut faults = Vec::new();
    for w in WIDTHS {
        let f = chromium_layout(html, w)?;
        faults.extend(layout_faults(&f, MIN_TEXT_PX));
        all.push(f);
    }
    assert!(faults.is_empty(), "{what}:\n{}", faults.join("\n"));
    Some(all)
}

#[test]
fn fleet_report_labels_are_never_clipped_or_overprinted() {
    let dir = tempfile::tempdir().unwrap();
    for (name, lines) in fleets() {
        let input = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&input, lines).unwrap();
        let html = dir.path().join(format!("{name}.html"));
        let out = tmpfsctl(&[
            "fleet",
            "analyze",
            input.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ]);
        // 1 = the recommendation misses the target: still a full report.
        assert!(
            out.status.code().is_some_and(|c| c < 2),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Both axes titled, and the byte axes say they are bytes.
        let page = std::fs::read_to_string(&html).unwrap();
        for (i, svg) in page.split("<svg").skip(1).enumerate() {
            let titles: Vec<&str> = svg
                .split("<text")
                .filter(|t| t.contains("axis-title") || t.contains("text-anchor=\"middle\">"))
                .filter_map(|t| t.split('>').nth(1))
                .map(|t| t.trim_end_matches("</text"))
                .collect();
            assert!(
                svg.contains("class=\"axis-title\"") && svg.contains("rotate(-90"),
                "{name}: chart {i} has no y axis title: {titles:?}"
            );
            assert!(
                titles.iter().filter(|t| t.contains("bytes")).count() >= 1,
                "{name}: chart {i} names no unit on its byte axis: {titles:?}"
            );
        }
        let Some(findings) = assert_clean_layout(&html, &format!("fleet report, {name} fleet"))
        else {
            return;
        };
        for (f, w) in findings.iter().zip(WIDTHS) {
            let charts = f["charts"].as_array().unwrap();
            assert_eq!(charts.len(), 3, "{name}: CDF, scatter, histogram: {f}");
            // Full width: the chart spans the page column (1200 px at most,
            // less the margins), not a fixed 720 px.
            let column = (f64::from(w) - 24.0).min(1200.0);
            for c in charts {
                let cw = c["width"].as_f64().unwrap();
                assert!(
                    cw >= column - 30.0,
                    "{name} at {w}px: {} is {cw}px wide",
                    c["name"]
                );
            }
            // Every bucket threshold of the "hosts under" table is drawn.
            assert!(
                charts[0]["texts"].as_u64().unwrap() >= 6 + 2,
                "{name}: CDF labels {}",
                charts[0]
            );
            assert!(
                !f["tables"].as_array().unwrap().is_empty(),
                "{name}: tables"
            );
        }
    }
}

#[test]
fn fleet_report_screenshots_show_the_charts() {
    let dir = tempfile::tempdir().unwrap();
    let (name, lines) = fleets().swap_remove(0);
    let input = dir.path().join("fleet.jsonl");
    std::fs::write(&input, lines).unwrap();
    let html = dir.path().join("fleet.html");
    let out = tmpfsctl(&[
        "fleet",
        "analyze",
        input.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.code().is_some_and(|c| c < 2), "{name}");
    for w in WIDTHS {
        let Some(png) = chromium_screenshot(&html, w, 2600, &format!("fleet-{w}")) else {
            return;
        };
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG at {w}px");
        // A blank page compresses to a few KiB; charts and tables do not.
        assert!(
            png.len() > 50_000,
            "screenshot at {w}px is {} bytes",
            png.len()
        );
    }
}

#[test]
fn bench_report_labels_are_never_clipped_or_overprinted() {
    require_root!();
    let a = TestMount::tmpfs("size=64M");
    let b = TestMount::new("tmpfs", "second", "size=64M");
    let dir = tempfile::tempdir().unwrap();
    // The iozone preset draws heat maps and per-operation bars; the default
    // suite one chart per workload with the memcpy ceiling.
    for preset in [Some("iozone"), None] {
        let html = dir.path().join("bench.html");
        let mut args = vec!["bench", "--quick", "--html", html.to_str().unwrap()];
        if let Some(p) = preset {
            args.extend(["--preset", p, "--no-latency"]);
        }
        args.extend([a.path.to_str().unwrap(), b.path.to_str().unwrap()]);
        let out = tmpfsctl(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let what = format!("bench report, preset {}", preset.unwrap_or("default"));
        let Some(findings) = assert_clean_layout(&html, &what) else {
            return;
        };
        let f = &findings[0];
        let results = f["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["class"] == "results")
            .unwrap_or_else(|| panic!("{what}: no results table"));
        assert!(results["rows"].as_u64().unwrap() >= 5, "{what}: {results}");
        let charts = f["charts"].as_array().unwrap();
        assert!(charts.len() >= 5, "{what}: {} charts", charts.len());
        if preset.is_some() {
            // 6 operations × 2 targets heat maps + 6 bar charts.
            assert_eq!(charts.len(), 12 + 6, "{what}");
        }
    }
}

/// A saved `bench --quick` run from the shared test VM (load ~15): figures
/// above the memcpy ceiling, whiskers wider than their bars, a 3000× ratio.
/// Rendered by `bench --show` as `bench --html` renders a run, so the layout
/// is the same on every machine; advise draws the same bar charts.
const BENCH_FIXTURE: &str = "tests/fixtures/bench-quick-report.json";

#[test]
fn bench_report_from_a_saved_run_has_no_label_crossed_by_a_line() {
    let saved = Path::new(env!("CARGO_MANIFEST_DIR")).join(BENCH_FIXTURE);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("bench.html");
    let out = tmpfsctl(&[
        "bench",
        "--show",
        saved.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Some(findings) = assert_clean_layout(&html, "bench report from the saved run") else {
        return;
    };
    let workloads = r["workloads"].as_array().unwrap().len();
    for f in &findings {
        // One chart per workload: none may be lost while labels are moved.
        let bars = f["charts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["shapes"].as_u64().unwrap_or(0) >= 2 * 4)
            .count();
        assert!(bars >= workloads, "{bars} bar charts: {f}");
    }
}

#[test]
fn advise_report_passes_the_layout_check_with_copyable_commands() {
    require_root!();
    // nosuid,nodev like every tmpfs apply makes: a hand-made tmpfs without
    // them is one apply refuses to take over, and advise then shows that
    // refusal instead of commands.
    let m = TestMount::tmpfs("nosuid,nodev,size=256M");
    let d = tempfile::tempdir().unwrap();
    let html = d.path().join("advice.html");
    let out = tmpfsctl(&[
        "advise",
        "--quick",
        "--html",
        html.to_str().unwrap(),
        m.path.to_str().unwrap(),
    ]);
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Some(findings) = assert_clean_layout(&html, "advise report") else {
        return;
    };
    for f in &findings {
        assert_eq!(
            f["charts"].as_array().unwrap().len(),
            4,
            "measured charts: {f}"
        );
        let codes = f["codes"].as_array().unwrap();
        assert!(
            codes
                .iter()
                .any(|c| c.as_str().unwrap().contains("tmpfsctl apply")),
            "commands in a code block: {codes:?}"
        );
    }
}

#[test]
fn every_report_uses_the_one_page_shell() {
    // Only render::html writes the document head and the stylesheet.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![src.clone()];
    let mut own = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("render/html.rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                if text.contains("<!DOCTYPE") || text.contains("<head>") || text.contains("<body") {
                    own.push(p.display().to_string());
                }
            }
        }
    }
    assert!(
        own.is_empty(),
        "pages built outside render::html::page: {own:?}"
    );
}
