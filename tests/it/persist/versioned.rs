//! Every persist subcommand's `--json` is a versioned document like every
//! other command's: `schema_version` first.

use super::{World, s, show};
use crate::require_root;

fn first_key_is_schema_version(o: &std::process::Output, what: &str) {
    assert!(o.status.success(), "{what}: {}", show(o));
    let text = String::from_utf8_lossy(&o.stdout);
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(j["schema_version"], 1, "{what}: {text}");
    assert!(
        text.trim_start().starts_with("{\n  \"schema_version\": 1,"),
        "{what}: schema_version comes first: {text}"
    );
}

#[test]
fn enable_sync_restore_and_disable_json_carry_schema_version() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("a"), b"kept").unwrap();
    let o = w.enable_at(
        &w.dir,
        &w.store,
        &["--size", "64M", "--boot", "none", "--json"],
    );
    first_key_is_schema_version(&o, "enable");
    std::fs::write(w.dir.join("b"), b"new").unwrap();
    let o = w.run(&["persist", "sync", s(&w.dir), "--json"]);
    first_key_is_schema_version(&o, "sync");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["copied_files"], 1, "the report's own fields follow: {j}");
    let o = w.run(&["persist", "restore", s(&w.dir), "--json"]);
    first_key_is_schema_version(&o, "restore");
    let o = w.run(&["persist", "disable", s(&w.dir), "--yes", "--json"]);
    first_key_is_schema_version(&o, "disable");
    assert_eq!(std::fs::read(w.dir.join("b")).unwrap(), b"new");
}
