//! A damaged store: a missing object, a lost `current`, a damaged manifest.
//! Found by `verify`, repaired by `sync` while the data is in RAM, survived
//! by `restore` (the newest generation that verifies), never wiped.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{World, hex, json, s, says, show, stored};
use crate::require_root;

/// The object file holding `rel` in the current generation.
fn object_of(store: &Path, rel: &str) -> PathBuf {
    let m = std::fs::read_to_string(store.join("current/manifest")).unwrap();
    let want = hex(rel.as_bytes());
    let l = m
        .lines()
        .find(|l| l.starts_with("f ") && l.split(' ').nth(1) == Some(want.as_str()))
        .unwrap();
    let h = l.split(' ').nth(14).unwrap();
    store.join("objects").join(&h[..2]).join(h)
}

fn lose_tmpfs(dir: &Path) {
    assert!(
        Command::new("umount")
            .arg("-l")
            .arg(dir)
            .status()
            .unwrap()
            .success()
    );
}

fn gens(store: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("gen-"))
        .collect();
    v.sort();
    v
}

fn two_generations() -> World {
    let w = World::new();
    std::fs::write(w.dir.join("shared"), b"the same in every generation").unwrap();
    std::fs::write(w.dir.join("b"), b"b, first version").unwrap();
    w.enable();
    std::fs::write(w.dir.join("b"), b"b, second version").unwrap();
    let o = w.sync();
    assert!(o.status.success(), "{}", show(&o));
    w
}

#[test]
fn a_deleted_shared_object_is_copied_again_by_sync_and_reported() {
    require_root!();
    let w = two_generations();
    let obj = object_of(&w.store, "shared");
    std::fs::remove_file(&obj).unwrap();
    let v = w.run(&["persist", "verify", s(&w.dir), "--json"]);
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    let text = String::from_utf8_lossy(&v.stdout).into_owned();
    assert!(
        text.contains(obj.to_str().unwrap()),
        "verify names the object: {text}"
    );
    let o = w.sync();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(obj.to_str().unwrap()),
        "sync names the damaged path: {err}"
    );
    assert!(obj.exists(), "copied again from RAM");
    assert_eq!(stored(&w.store, "shared"), b"the same in every generation");
    let v = w.run(&["persist", "verify", s(&w.dir)]);
    assert_eq!(v.status.code(), Some(0), "{}", show(&v));
}

#[test]
fn restore_falls_back_past_a_damaged_generation_and_generation_n_picks_one() {
    require_root!();
    let w = two_generations();
    // Only the newest generation holds this object.
    let obj = object_of(&w.store, "b");
    std::fs::write(&obj, b"bit rot").unwrap();
    let v = w.run(&["persist", "verify", s(&w.dir), "--json"]);
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    let j = json(&v);
    assert_eq!(
        j["stores"][0]["sound_generations"],
        serde_json::json!([1]),
        "{j}"
    );
    assert_eq!(
        j["stores"][0]["damaged"][0]["store_path"],
        obj.to_str().unwrap()
    );
    lose_tmpfs(&w.dir);
    let o = w.ok(&["persist", "restore", s(&w.dir)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("gen-000002") && err.contains(obj.to_str().unwrap()),
        "{err}"
    );
    says(&o.stdout, "gen-000001", &o);
    assert_eq!(std::fs::read(w.dir.join("b")).unwrap(), b"b, first version");
    lose_tmpfs(&w.dir);
    let o = w.run(&["persist", "restore", s(&w.dir), "--generation", "2"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "asked for the damaged one: {}",
        show(&o)
    );
    let o = w.ok(&["persist", "restore", s(&w.dir), "--generation", "1"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("gen-000001"));
}

#[test]
fn a_lost_current_is_never_treated_as_an_empty_store() {
    require_root!();
    let w = two_generations();
    std::fs::remove_file(w.store.join("current")).unwrap();
    // verify calls it a problem, and the generations still sound.
    let v = w.run(&["persist", "verify", s(&w.dir), "--json"]);
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    let j = &json(&v)["stores"][0];
    assert!(
        j["problems"][0]
            .as_str()
            .unwrap()
            .contains("current: missing"),
        "{j}"
    );
    assert_eq!(j["sound_generations"], serde_json::json!([1, 2]), "{j}");
    lose_tmpfs(&w.dir);
    // An empty tmpfs (a failed boot) synced over the store: refused.
    assert!(
        Command::new("mount")
            .args(["-t", "tmpfs", "tmpfs"])
            .arg(&w.dir)
            .status()
            .unwrap()
            .success()
    );
    let o = w.sync();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert_eq!(gens(&w.store), ["gen-000001", "gen-000002"]);
    lose_tmpfs(&w.dir);
    let o = w.ok(&["persist", "restore", s(&w.dir)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`current` is missing"), "{}", show(&o));
    assert_eq!(
        std::fs::read(w.dir.join("b")).unwrap(),
        b"b, second version"
    );
    let o = w.sync();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(gens(&w.store), ["gen-000002", "gen-000003"]);
    assert_eq!(stored(&w.store, "b"), b"b, second version");
}

/// A `current` that names no generation (a name that is not a generation's,
/// or one that is not there) is said by verify, restore and sync, which use
/// the newest generation that verifies; that sync's switch repairs it.
#[test]
fn a_current_that_names_no_generation_is_said_and_the_newest_sound_one_used() {
    require_root!();
    for (target, said, next) in [
        ("not-a-generation", "not a generation", "gen-000003"),
        (
            "gen-000009",
            "`current` names gen-000009, which is not there",
            "gen-000010",
        ),
    ] {
        let w = two_generations();
        let cur = w.store.join("current");
        std::fs::remove_file(&cur).unwrap();
        std::os::unix::fs::symlink(target, &cur).unwrap();
        let v = w.run(&["persist", "verify", s(&w.dir), "--json"]);
        assert_eq!(v.status.code(), Some(1), "{target}: {}", show(&v));
        let j = &json(&v)["stores"][0];
        assert!(
            j["problems"][0].as_str().unwrap().contains("current"),
            "{target}: {j}"
        );
        assert_eq!(j["sound_generations"], serde_json::json!([1, 2]), "{j}");
        lose_tmpfs(&w.dir);
        let o = w.ok(&["persist", "restore", s(&w.dir)]);
        says(&o.stderr, said, &o);
        says(&o.stdout, "gen-000002", &o);
        assert_eq!(
            std::fs::read(w.dir.join("b")).unwrap(),
            b"b, second version"
        );
        std::fs::write(w.dir.join("c"), b"after the restore").unwrap();
        let o = w.sync();
        assert_eq!(o.status.code(), Some(0), "{target}: {}", show(&o));
        says(&o.stderr, said, &o);
        says(&o.stderr, "using gen-000002", &o);
        assert_eq!(
            std::fs::read_link(&cur).unwrap().to_str(),
            Some(next),
            "{target}: the switch replaced the pointer"
        );
        assert_eq!(stored(&w.store, "b"), b"b, second version");
        assert_eq!(stored(&w.store, "c"), b"after the restore");
        // Repaired: the next sync builds on the pointer and says nothing.
        let o = w.sync();
        assert_eq!(o.status.code(), Some(0), "{target}: {}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("current") && !err.contains("using gen-"),
            "{target}: {}",
            show(&o)
        );
        let v = w.run(&["persist", "verify", s(&w.dir)]);
        assert_eq!(v.status.code(), Some(0), "{target}: {}", show(&v));
    }
}

#[test]
fn a_damaged_current_manifest_falls_back_to_the_previous_generation() {
    require_root!();
    let w = two_generations();
    let m = w.store.join("gen-000002/manifest");
    let mut bytes = std::fs::read(&m).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&m, &bytes).unwrap();
    lose_tmpfs(&w.dir);
    let o = w.ok(&["persist", "restore", s(&w.dir)]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(m.to_str().unwrap()),
        "{}",
        show(&o)
    );
    assert_eq!(std::fs::read(w.dir.join("b")).unwrap(), b"b, first version");
    std::fs::write(w.dir.join("c"), b"new").unwrap();
    let o = w.sync();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(stored(&w.store, "c"), b"new");
    assert!(
        w.store.join("damaged-gen-000002/manifest").exists(),
        "kept aside for inspection"
    );
    let v = w.run(&["persist", "verify", s(&w.dir)]);
    assert_eq!(v.status.code(), Some(0), "{}", show(&v));
}

/// Flip one byte of `obj` in place: same size, same mtime, other content,
/// so only the content hash can tell.
fn flip_a_byte(obj: &Path) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .open(obj)
        .unwrap();
    let mtime = f.metadata().unwrap().modified().unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, 3).unwrap();
    b[0] ^= 0x01;
    f.write_all_at(&b, 3).unwrap();
    f.set_modified(mtime).unwrap();
}

#[test]
fn a_byte_flipped_in_a_shared_object_is_copied_again_by_sync() {
    require_root!();
    let w = two_generations();
    let obj = object_of(&w.store, "shared");
    let len = std::fs::metadata(&obj).unwrap().len();
    // A write into the store (its mtime moves, as any write's does): the
    // seal sync checks before sharing breaks. A flip that also puts the
    // mtime back is found by verify and survived by restore (below).
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .read(true)
            .open(&obj)
            .unwrap();
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, 3).unwrap();
        b[0] ^= 0x01;
        f.write_all_at(&b, 3).unwrap();
    }
    assert_eq!(std::fs::metadata(&obj).unwrap().len(), len, "same size");
    let o = w.sync();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    says(&o.stderr, obj.to_str().unwrap(), &o);
    assert_eq!(stored(&w.store, "shared"), b"the same in every generation");
    let v = w.run(&["persist", "verify", s(&w.dir)]);
    assert_eq!(v.status.code(), Some(0), "{}", show(&v));
}

#[test]
fn a_flipped_byte_costs_restore_only_its_own_file() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("shared"), b"the same in every generation").unwrap();
    std::fs::write(w.dir.join("b"), b"b, first version").unwrap();
    std::fs::write(w.dir.join("c"), b"c, never damaged").unwrap();
    w.enable();
    std::fs::write(w.dir.join("b"), b"b, other version").unwrap();
    let o = w.sync();
    assert!(o.status.success(), "{}", show(&o));
    // In both generations: no generation holds it sound.
    flip_a_byte(&object_of(&w.store, "shared"));
    // Only in gen-000002: gen-000001 holds b's first version, sound.
    flip_a_byte(&object_of(&w.store, "b"));
    lose_tmpfs(&w.dir);
    let o = w.run(&["persist", "restore", s(&w.dir)]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    says(&o.stdout, "gen-000002 restored", &o);
    says(&o.stdout, "b taken from gen-000001", &o);
    says(&o.stderr, "not restored: shared", &o);
    assert_eq!(std::fs::read(w.dir.join("c")).unwrap(), b"c, never damaged");
    assert_eq!(std::fs::read(w.dir.join("b")).unwrap(), b"b, first version");
    assert!(!w.dir.join("shared").exists(), "no damaged bytes loaded");
}

#[test]
fn a_flipped_byte_of_the_same_size_is_named_by_verify_and_never_restored() {
    require_root!();
    let w = two_generations();
    // Only the newest generation holds this one: restore has an older one.
    let newest = object_of(&w.store, "b");
    flip_a_byte(&newest);
    let rotten_b = std::fs::read(&newest).unwrap();
    let v = w.run(&["persist", "verify", s(&w.dir), "--json"]);
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    let j = json(&v);
    assert_eq!(
        j["stores"][0]["damaged"][0]["store_path"],
        newest.to_str().unwrap(),
        "{j}"
    );
    lose_tmpfs(&w.dir);
    // Falls back to the older sound copy (for the whole generation or this
    // file alone): which, the restore tests above say; here, never the rot.
    let o = w.run(&["persist", "restore", s(&w.dir)]);
    let got = std::fs::read(w.dir.join("b")).unwrap();
    assert_ne!(got, rotten_b, "restore loaded the rotten object");
    assert_eq!(got, b"b, first version", "{}", show(&o));

    // Every generation holds this one: there is no sound copy to fall back
    // to, so restore refuses or leaves the file out, and never loads it.
    let w = two_generations();
    let shared = object_of(&w.store, "shared");
    flip_a_byte(&shared);
    let rotten = std::fs::read(&shared).unwrap();
    let v = w.run(&["persist", "verify", s(&w.dir), "--json"]);
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    assert!(
        String::from_utf8_lossy(&v.stdout).contains(shared.to_str().unwrap()),
        "verify names the object: {}",
        show(&v)
    );
    lose_tmpfs(&w.dir);
    let o = w.run(&["persist", "restore", s(&w.dir)]);
    match std::fs::read(w.dir.join("shared")) {
        Ok(got) => assert_ne!(
            got,
            rotten,
            "restore loaded the rotten object: {}",
            show(&o)
        ),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}"),
    }
}

/// Every object file under STORE/objects, with its size.
fn objects(store: &Path) -> Vec<(PathBuf, u64)> {
    let mut v = Vec::new();
    for sub in std::fs::read_dir(store.join("objects")).unwrap() {
        for o in std::fs::read_dir(sub.unwrap().path()).unwrap() {
            let o = o.unwrap();
            v.push((o.path(), o.metadata().unwrap().len()));
        }
    }
    v
}

#[test]
fn verify_reads_each_object_once_and_counts_strays_apart_from_damage() {
    require_root!();
    let w = two_generations();
    // Three contents (shared, both versions of b): `shared` is in both
    // generations and read once.
    let objs = objects(&w.store);
    assert_eq!(objs.len(), 3, "{objs:?}");
    let bytes: u64 = objs.iter().map(|(_, n)| n).sum();
    let v = w.run(&["persist", "verify", s(&w.dir), "--json"]);
    assert_eq!(v.status.code(), Some(0), "{}", show(&v));
    let j = &json(&v)["stores"][0];
    assert_eq!(j["objects_checked"], 3, "{j}");
    assert_eq!(j["bytes_checked"], bytes, "{j}");
    assert_eq!(j["unreferenced_objects"], 0, "{j}");
    assert_eq!(j["sound_generations"], serde_json::json!([1, 2]), "{j}");
    let t = w.run(&["persist", "verify", s(&w.dir)]);
    says(&t.stdout, ": sound: 2 generation(s)", &t);

    // An object no generation names (an interrupted prune leaves them) is
    // counted, not damage.
    let stray = w.store.join("objects/00").join("00".repeat(16));
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    std::fs::write(&stray, b"left by a prune").unwrap();
    let v = w.run(&["persist", "verify", s(&w.dir), "--json"]);
    assert_eq!(v.status.code(), Some(0), "{}", show(&v));
    let j = &json(&v)["stores"][0];
    assert_eq!(j["unreferenced_objects"], 1, "{j}");
    assert_eq!(j["objects_checked"], 3, "{j}");
    let t = w.run(&["persist", "verify", s(&w.dir)]);
    says(&t.stdout, "1 unreferenced", &t);

    // A damaged object makes the text say so, and the exit 1.
    flip_a_byte(&object_of(&w.store, "b"));
    let t = w.run(&["persist", "verify", s(&w.dir)]);
    assert_eq!(t.status.code(), Some(1), "{}", show(&t));
    says(&t.stdout, ": DAMAGED: 2 generation(s)", &t);
}

#[test]
fn restore_of_a_generation_asked_for_whose_data_fails_its_hash_loads_nothing() {
    require_root!();
    let w = two_generations();
    // Same size: the cheap check passes, and the hash while loading finds it.
    let obj = object_of(&w.store, "b");
    flip_a_byte(&obj);
    let rotten = std::fs::read(&obj).unwrap();
    lose_tmpfs(&w.dir);
    let o = w.run(&["persist", "restore", s(&w.dir), "--generation", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    says(&o.stderr, "holds no generation that verifies", &o);
    says(&o.stderr, "gen-000002:", &o);
    says(&o.stderr, "does not match its manifest", &o);
    // No tmpfs was left on DIR (the disk's copy below shows again), and
    // the rotten bytes are nowhere in it.
    assert_ne!(
        crate::common::findmnt_fstype(&w.dir).as_deref(),
        Some("tmpfs"),
        "{}",
        show(&o)
    );
    assert_ne!(std::fs::read(w.dir.join("b")).ok(), Some(rotten));
    let o = w.ok(&["persist", "restore", s(&w.dir), "--generation", "1"]);
    says(&o.stdout, "gen-000001", &o);
    assert_eq!(std::fs::read(w.dir.join("b")).unwrap(), b"b, first version");
}

#[test]
fn a_restore_of_a_sound_store_says_what_it_loaded_and_warns_of_nothing() {
    require_root!();
    let w = two_generations();
    lose_tmpfs(&w.dir);
    let o = w.ok(&["persist", "restore", s(&w.dir)]);
    assert_eq!(String::from_utf8_lossy(&o.stderr), "", "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("gen-000002 restored from")
            && out.contains("(2 files, ")
            && out.contains("onto a new tmpfs")
            && !out.contains("newest generation that verifies"),
        "{}",
        show(&o)
    );
    assert_eq!(
        std::fs::read(w.dir.join("b")).unwrap(),
        b"b, second version"
    );
    // Into the tmpfs already there, holding that generation: nothing to do.
    let o = w.ok(&["persist", "restore", s(&w.dir), "--json"]);
    let j = json(&o);
    assert_eq!(j["action"], "unchanged", "{j}");
    assert_eq!(j["generation"], 2, "{j}");
    assert_eq!(j["skipped"], serde_json::json!([]), "{j}");
}

/// A file put back with the same size and mtime but a new inode (a copy
/// made with `cp -p`, say) can only be told by its content: status hashes
/// it, and counts it as changed exactly when a byte differs.
#[test]
fn a_file_whose_stat_only_says_maybe_is_compared_by_content() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("same"), b"the stored bytes").unwrap();
    std::fs::write(w.dir.join("other"), b"the stored bytes").unwrap();
    w.enable();
    let changed = || {
        let st = json(&w.run(&["persist", "status", s(&w.dir), "--json"]));
        let d = &st["dirs"][0];
        (d["changed_files"].as_u64(), d["changed_bytes"].as_u64())
    };
    // Each replaced by a new file of its size and mtime: first one with the
    // stored bytes, then one with a byte flipped.
    for (name, bytes, want) in [
        ("same", b"the stored bytes", (Some(0), Some(0))),
        ("other", b"the stored byteS", (Some(1), Some(16))),
    ] {
        let p = w.dir.join(name);
        let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
        let tmp = w.dir.join(format!("{name}.new"));
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&tmp)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        assert_eq!(changed(), want, "after replacing {name}");
    }
}

/// A store emptied by hand (no pointer, no generation) holds nothing to
/// fall back to: the next sync starts it again and claims no lost pointer.
#[test]
fn a_sync_into_a_store_emptied_by_hand_claims_no_lost_current() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"kept in RAM").unwrap();
    w.enable();
    std::fs::remove_file(w.store.join("current")).unwrap();
    for g in gens(&w.store) {
        std::fs::remove_dir_all(w.store.join(g)).unwrap();
    }
    let o = w.sync();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("current"),
        "{}",
        show(&o)
    );
    assert_eq!(stored(&w.store, "f"), b"kept in RAM");
}
