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
