//! Unit tests of the pure parts: workloads, arguments, renderers.

use super::*;

#[test]
fn durations_parse() {
    assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
    assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
    assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
    assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
    assert!(parse_duration("fast").is_err());
    assert!(parse_duration("-1").is_err());
}

#[test]
fn sync_modes_parse() {
    assert_eq!(parse_sync("dsync").unwrap(), Sync::Dsync);
    assert_eq!(parse_sync("100").unwrap(), Sync::FsyncEvery(100));
    assert!(parse_sync("0").is_err());
    assert!(parse_sync("sometimes").is_err());
}

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
