//! Around the syncs: the tmpfs lost under a persisted DIR, disable with a
//! writer, entries that vanish mid-walk, a kill during the prune, and
//! enable --size with a sparse file.

use std::collections::HashSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{LOGGER_LINES, World, json, logged, logger, objects, s, says, show};
use crate::require_root;

#[test]
fn a_lost_tmpfs_is_not_ok_and_status_says_what_to_run() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    w.enable();
    w.unmount(&["-l"]);
    let o = w.run(&["persist", "status", s(&w.dir), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let d = &json(&o)["dirs"][0];
    assert_eq!(d["state"], "not_mounted", "{d}");
    assert!(
        d["fix"].as_str().unwrap().contains("persist restore"),
        "{d}"
    );
    let o = w.run(&["persist", "status", s(&w.dir)]);
    assert_eq!(o.status.code(), Some(1));
    says(&o.stdout, "tmpfsctl persist restore", &o);
}

#[test]
fn disable_with_a_writer_loses_no_line() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("app.log"), b"").unwrap();
    w.enable();
    // A logger: the file held open, a line every millisecond, 1500 lines.
    let path = w.dir.join("app.log");
    let h = logger(&path);
    std::thread::sleep(Duration::from_millis(200));
    let o = w.run(&["persist", "disable", s(&w.dir), "--yes"]);
    h.join().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(
        super::findmnt_fstype(&w.dir).unwrap_or_default(),
        "",
        "unmounted"
    );
    let got = logged(&path);
    let want: Vec<u64> = (0..LOGGER_LINES).collect();
    assert_eq!(
        got.len(),
        want.len(),
        "lines lost: {}",
        LOGGER_LINES as usize - got.len()
    );
    assert_eq!(got, want);
}

#[test]
fn entries_vanishing_mid_walk_never_fail_a_sync() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("data"), b"d").unwrap();
    w.enable();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (dir, st) = (w.dir.clone(), stop.clone());
    // Lock links as editors and browsers make them: created and removed all
    // the time, plus a FIFO and a socket-like short-lived node.
    let h = std::thread::spawn(move || {
        let mut n = 0u64;
        while !st.load(std::sync::atomic::Ordering::Relaxed) {
            let l = dir.join(format!("lock{}", n % 4));
            let _ = std::os::unix::fs::symlink(format!("host:{n}"), &l);
            let p = dir.join(format!("fifo{}", n % 4));
            let _ = rustix::fs::mknodat(
                rustix::fs::CWD,
                &p,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            );
            let _ = std::fs::remove_file(&l);
            let _ = std::fs::remove_file(&p);
            n += 1;
        }
    });
    let mut failures = Vec::new();
    for i in 0..200 {
        let o = w.sync();
        if !o.status.success() {
            failures.push(format!("sync {i}: {}", String::from_utf8_lossy(&o.stderr)));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    h.join().unwrap();
    assert!(
        failures.is_empty(),
        "{} of 200 syncs failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
}

/// Distinct content identities the kept generations' manifests refer to.
fn referenced(store: &Path) -> HashSet<String> {
    let mut v = HashSet::new();
    for e in std::fs::read_dir(store).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("gen-") {
            for l in std::fs::read_to_string(p.join("manifest")).unwrap().lines() {
                if l.starts_with("f ") {
                    v.insert(l.split(' ').nth(14).unwrap().to_string());
                }
            }
        }
    }
    v
}

fn rewrite_all(dir: &Path, round: u32) {
    for i in 0..1500 {
        std::fs::write(dir.join(format!("f{i}")), format!("{round} {i}")).unwrap();
    }
}

#[test]
fn a_sync_killed_during_its_prune_leaves_nothing_the_next_sync_does_not_reclaim() {
    require_root!();
    let w = World::new();
    rewrite_all(&w.dir, 0);
    w.enable();
    rewrite_all(&w.dir, 1);
    assert!(w.sync().status.success());
    let trash = w.store.join("trash");
    let trash_gen = || {
        std::fs::read_dir(&trash).is_ok_and(|d| {
            d.filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().starts_with("gen-"))
        })
    };
    let t0 = Instant::now();
    while trash_gen() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    rewrite_all(&w.dir, 2);
    // The third sync prunes the first generation: killed as soon as that
    // generation is in the trash, before its 1500 objects follow it.
    let mut child = super::bin()
        .env("TMPFSCTL_PERSIST_REGISTRY", &w.registry)
        .args(["persist", "sync", s(&w.dir)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !trash_gen() && t0.elapsed() < Duration::from_secs(30) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let left = objects(&w.store);
    let want = referenced(&w.store).len();
    eprintln!("after the kill: {left} objects, {want} referenced");
    assert!(w.sync().status.success());
    assert_eq!(
        objects(&w.store),
        referenced(&w.store).len(),
        "orphan objects left"
    );
}

#[test]
fn enable_size_counts_allocated_bytes_and_a_refused_enable_writes_nothing() {
    require_root!();
    let w = World::new();
    let f = std::fs::File::create(w.dir.join("sparse")).unwrap();
    f.set_len(2 << 30).unwrap();
    for off in [0u64, 1 << 30, (2 << 30) - 4096] {
        rustix::io::pwrite(&f, &[7u8; 4096], off).unwrap();
    }
    drop(f);
    w.enable_ok(&["--size", "1G", "--boot", "none"]);
    assert_eq!(
        std::fs::metadata(w.dir.join("sparse")).unwrap().len(),
        2 << 30
    );
    w.ok(&["persist", "disable", s(&w.dir), "--yes"]);
    let w2 = World::new();
    std::fs::write(w2.dir.join("dense"), vec![1u8; 4 << 20]).unwrap();
    let o = w2.enable_at(&w2.dir, &w2.store, &["--size", "1M", "--boot", "none"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let left: Vec<String> = std::fs::read_dir(&w2.store)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        left.iter().all(|n| !n.starts_with("gen-")),
        "a generation was left: {left:?}"
    );
    assert!(
        !std::fs::read_to_string(&w2.registry)
            .unwrap_or_default()
            .contains("dense")
    );
}

/// A process that holds `file` open for writing (append) until killed; its
/// pid is listed in /proc once the descriptor is open.
fn hold_open_for_writing(file: &Path) -> std::process::Child {
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg("exec sleep 60 3>>\"$1\"")
        .arg("sh")
        .arg(file)
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !crate::common::has_open_under(child.id(), file.parent().unwrap()) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "writer never opened"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

#[test]
fn enable_refuses_a_process_writing_in_dir_and_force_says_what_is_lost() {
    require_root!();
    let w = World::new();
    let log = w.dir.join("app.log");
    std::fs::write(&log, b"before\n").unwrap();
    let mut writer = hold_open_for_writing(&log);
    let pid = writer.id().to_string();
    let o = w.enable_at(&w.dir, &w.store, &["--size", "64M", "--boot", "none"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    says(&o.stderr, &pid, &o);
    says(&o.stderr, "app.log", &o);
    assert_ne!(
        super::findmnt_fstype(&w.dir).as_deref(),
        Some("tmpfs"),
        "nothing mounted"
    );
    assert!(!w.store.exists(), "no store made: {}", show(&o));
    let o = w.enable_at(
        &w.dir,
        &w.store,
        &["--size", "64M", "--boot", "none", "--force"],
    );
    assert!(o.status.success(), "{}", show(&o));
    says(&o.stderr, &pid, &o);
    says(&o.stderr, "lost", &o);
    let _ = writer.kill();
    let _ = writer.wait();
}

#[test]
fn verify_calls_a_killed_syncs_generation_unfinished_and_ignores_it() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    w.enable();
    // What a sync killed before its switch leaves: a newer generation
    // directory without a manifest.
    std::fs::create_dir(w.store.join("gen-000002")).unwrap();
    let o = w.run(&["persist", "verify", s(&w.dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    says(&o.stdout, "gen-000002: unfinished, ignored", &o);
    let o = w.run(&["persist", "verify", s(&w.dir), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        json(&o)["stores"][0]["unfinished_generations"],
        serde_json::json!([2])
    );
}

#[test]
fn a_path_too_deep_to_store_is_named_and_the_rest_synced() {
    require_root!();
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    std::fs::set_permissions(w.root.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(&w.dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(w.dir.join("before"), b"b").unwrap();
    w.enable();
    // An unprivileged user in the shared DIR: 2100 levels, one at a time.
    let st = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "perl",
            "-e",
        ])
        .arg(
            "chdir $ARGV[0] or die; mkdir 'deep' or die; chdir 'deep' or die; \
             for (1..2100) { mkdir 'a' or die; chdir 'a' or die } \
             open(my $f, '>', 'f') or die; print $f 'deep'; close $f",
        )
        .arg(&w.dir)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::write(w.dir.join("after"), b"a").unwrap();
    let o = w.sync();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    says(&o.stderr, "too deep", &o);
    says(&o.stderr, "deep/a/a/a", &o);
    assert_eq!(super::stored(&w.store, "after"), b"a");
    assert_eq!(super::stored(&w.store, "before"), b"b");
}

#[test]
fn a_symlink_in_place_of_a_wants_directory_is_never_written_through() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let units = w.root.path().join("units");
    let outside = w.root.path().join("outside");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, units.join("local-fs.target.wants")).unwrap();
    let o = w.enable_units(&[
        "--size",
        "64M",
        "--boot",
        "systemd",
        "--unit-dir",
        s(&units),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    says(&o.stderr, "local-fs.target.wants", &o);
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "wrote through the link"
    );
    assert_ne!(
        super::findmnt_fstype(&w.dir).as_deref(),
        Some("tmpfs"),
        "enable rolled back: {}",
        show(&o)
    );
}

#[test]
fn last_sync_is_replaced_through_the_store_never_through_a_planted_link() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    w.enable();
    let outside = w.root.path().join("outside-record");
    std::os::unix::fs::symlink(&outside, w.store.join(".last-sync.tmp")).unwrap();
    let o = w.sync();
    assert!(o.status.success(), "{}", show(&o));
    assert!(!outside.exists(), "wrote through the planted link");
    let rec = std::fs::symlink_metadata(w.store.join("last-sync")).unwrap();
    assert!(rec.file_type().is_file(), "last-sync is a file");
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(w.store.join("last-sync")).unwrap()).unwrap();
    assert_eq!(j["ok"], true, "{j}");
}

#[test]
fn sync_counts_what_it_copied_and_shared_and_sweeps_what_a_killed_sync_left() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("a"), b"a").unwrap();
    std::fs::write(w.dir.join("b"), b"bb").unwrap();
    std::fs::write(w.dir.join("c"), b"ccc").unwrap();
    std::fs::hard_link(w.dir.join("c"), w.dir.join("c2")).unwrap();
    w.enable();
    // What a sync killed at each step leaves: a generation newer than
    // `current` without a manifest, a partial one, a pointer temp, an
    // object never finished.
    std::fs::create_dir(w.store.join("gen-000009")).unwrap();
    std::fs::create_dir(w.store.join(".partial-gen-000003")).unwrap();
    std::os::unix::fs::symlink("gen-000009", w.store.join(".current.tmp")).unwrap();
    std::fs::write(w.store.join("objects/.tmp-1"), b"half").unwrap();
    std::fs::write(w.dir.join("b"), b"bbbbb").unwrap();
    std::fs::write(w.dir.join("d"), b"dddd").unwrap();
    let o = w.run(&["persist", "sync", s(&w.dir), "--json"]);
    assert!(o.status.success(), "{}", show(&o));
    let j = json(&o);
    assert_eq!(j["swept_partials"], 4, "{j}");
    for left in [
        "gen-000009",
        ".partial-gen-000003",
        ".current.tmp",
        "objects/.tmp-1",
    ] {
        assert!(!w.store.join(left).exists(), "{left} swept: {j}");
    }
    // Numbered after what is there once the leftovers are gone.
    assert_eq!(j["generation"], 2, "{j}");
    assert_eq!(j["previous_generation"], 1, "{j}");
    // b changed and d is new; a and c (one file, two names) are shared.
    assert_eq!(j["copied_files"], 2, "{j}");
    assert_eq!(j["copied_bytes"], 5 + 4, "{j}");
    assert_eq!(j["shared_files"], 2, "{j}");
    assert_eq!(j["files"], 4, "{j}");
    assert_eq!(j["bytes"], 1 + 5 + 3 + 4, "{j}");
    assert_eq!(j["repaired_objects"], serde_json::json!([]), "{j}");
    assert_eq!(
        std::fs::read_link(w.store.join("current")).unwrap(),
        Path::new("gen-000002")
    );
    // Nothing left over: the next sync sweeps nothing and copies nothing.
    let o = w.run(&["persist", "sync", s(&w.dir), "--json"]);
    assert!(o.status.success(), "{}", show(&o));
    let j = json(&o);
    assert_eq!(j["swept_partials"], 0, "{j}");
    assert_eq!(j["copied_files"], 0, "{j}");
    assert_eq!(j["shared_files"], 4, "{j}");
}

#[test]
fn sync_follows_no_symlink_planted_as_one_of_the_stores_lock_files() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    w.enable();
    let target = w.root.path().join("planted");
    for name in ["lock", "trash.lock"] {
        let _ = std::fs::remove_file(w.store.join(name));
        std::os::unix::fs::symlink(&target, w.store.join(name)).unwrap();
        let o = w.sync();
        assert!(!target.exists(), "{name} was followed: {}", show(&o));
        assert_ne!(o.status.code(), Some(0), "{name}: {}", show(&o));
        std::fs::remove_file(w.store.join(name)).unwrap();
    }
    let o = w.sync();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
}
