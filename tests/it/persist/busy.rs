//! Files that never stop changing during syncs: an appender (stored as a
//! growing prefix), a held-open writer growing a new file by 4 KiB pwrites
//! (stored, never left out), an in-place rewriter (stored, marked torn,
//! exit 1) and a journal journald has open (never marked whole).

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{World, json, s, show, stored};
use crate::require_root;

/// Lines `00000001\n`…: every line is 9 bytes, so a prefix is easy to check.
fn line(n: u64) -> Vec<u8> {
    format!("{n:08}\n").into_bytes()
}

fn check_prefix(got: &[u8], now: &[u8], at_least: usize, what: &str) {
    assert!(
        got.len() >= at_least,
        "{what}: stored {} bytes, the file had {at_least} when the sync began",
        got.len()
    );
    assert!(
        now.len() >= got.len() && &now[..got.len()] == got,
        "{what}: the stored bytes are not a prefix of the file"
    );
}

fn writer(
    stop: Arc<AtomicBool>,
    mut body: impl FnMut() + Send + 'static,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            body();
        }
    })
}

#[test]
fn appender_every_5ms_is_stored_as_a_prefix_at_least_as_long_as_at_sync_start() {
    require_root!();
    let w = World::new();
    let log = w.dir.join("syslog");
    // 4 MiB to start with, so a copy takes long enough to see appends.
    let mut start = Vec::new();
    for n in 0..(4 << 20) / 9 {
        start.extend(line(n));
    }
    std::fs::write(&log, &start).unwrap();
    w.enable();
    let stop = Arc::new(AtomicBool::new(false));
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let mut n = (4u64 << 20) / 9;
    let h = writer(stop.clone(), move || {
        f.write_all(&line(n)).unwrap();
        n += 1;
        std::thread::sleep(Duration::from_millis(5));
    });
    for i in 0..6 {
        let at_start = std::fs::metadata(&log).unwrap().len() as usize;
        let o = w.sync();
        assert_eq!(o.status.code(), Some(0), "sync {i}: {}", show(&o));
        let got = stored(&w.store, "syslog");
        check_prefix(
            &got,
            &std::fs::read(&log).unwrap(),
            at_start,
            &format!("sync {i}"),
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let last_start = stored(&w.store, "syslog").len();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    let final_content = std::fs::read(&log).unwrap();
    // Power loss: the tmpfs goes, the store comes back.
    w.unmount(&["-l"]);
    w.ok(&["persist", "restore", s(&w.dir)]);
    let back = std::fs::read(&log).unwrap();
    check_prefix(&back, &final_content, last_start, "after restore");
    assert!(
        back.len() > start.len(),
        "restore gave the enable-time version back"
    );
}

#[test]
fn held_open_writer_growing_a_new_file_by_4k_pwrites_is_stored_every_sync() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("old"), b"old").unwrap();
    w.enable();
    let path: PathBuf = w.dir.join("new.bin");
    let f = std::fs::File::create(&path).unwrap();
    // A first MiB before the first sync, then 32 KiB (8 pwrites of 4 KiB)
    // every 5 ms, the descriptor held open throughout.
    let block = |k: u64| -> Vec<u8> { vec![(k % 251) as u8; 4096] };
    for k in 0..256 {
        f.write_all_at(&block(k), k * 4096).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut k = 256u64;
    let h = writer(stop.clone(), move || {
        for _ in 0..8 {
            f.write_all_at(&block(k), k * 4096).unwrap();
            k += 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    });
    let t0 = Instant::now();
    let mut syncs = 0;
    while syncs < 10 && t0.elapsed() < Duration::from_secs(20) {
        let at_start = std::fs::metadata(&path).unwrap().len() as usize;
        let o = w.sync();
        assert_eq!(o.status.code(), Some(0), "sync {syncs}: {}", show(&o));
        let got = stored(&w.store, "new.bin");
        // Read only what the stored length covers: the file keeps growing.
        let mut now = vec![0u8; got.len()];
        std::fs::File::open(&path)
            .unwrap()
            .read_exact_at(&mut now, 0)
            .unwrap();
        check_prefix(&got, &now, at_start, &format!("sync {syncs}"));
        assert_eq!(stored(&w.store, "old"), b"old");
        syncs += 1;
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert_eq!(syncs, 10);
}

#[test]
fn in_place_rewriter_is_stored_marked_torn_and_status_says_so() {
    require_root!();
    let w = World::new();
    const LEN: usize = 4 << 20;
    std::fs::write(w.dir.join("db"), vec![b'a'; LEN]).unwrap();
    w.enable();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(w.dir.join("db"))
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut v = 0u8;
    let mut niced = false;
    let h = writer(stop.clone(), move || {
        if !niced {
            // Ahead of everything else on a loaded machine (both cores
            // busy): a writer descheduled through a whole copy lets the
            // sync rightly store the file whole.
            // SAFETY: setpriority(2) on this thread (who 0 is the caller).
            let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -15) };
            assert_eq!(r, 0, "setpriority: {}", std::io::Error::last_os_error());
            niced = true;
        }
        v = v.wrapping_add(1);
        for off in (0..LEN).step_by(65536) {
            f.write_all_at(&[b'a' + v % 26; 65536], off as u64).unwrap();
        }
    });
    // The writer under way before the sync starts (a loaded machine may
    // not have run it yet).
    let before = std::fs::metadata(w.dir.join("db"))
        .unwrap()
        .modified()
        .unwrap();
    let t0 = Instant::now();
    while std::fs::metadata(w.dir.join("db"))
        .unwrap()
        .modified()
        .unwrap()
        == before
        && t0.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    // A torn copy needs the writer to change the file during every one of
    // the sync's copies; should it still sit descheduled through one, the
    // file is rightly stored whole (exit 0). Sync again until one sees it
    // torn: what is asserted is how a torn file is stored, not how soon.
    let mut o = w.run(&["persist", "sync", s(&w.dir), "--json"]);
    for _ in 0..20 {
        if o.status.code() != Some(0) {
            break;
        }
        o = w.run(&["persist", "sync", s(&w.dir), "--json"]);
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "a torn file is a problem: {}",
        show(&o)
    );
    let j = json(&o);
    assert_eq!(j["torn"][0]["path"], "db", "{j}");
    assert_eq!(stored(&w.store, "db").len(), LEN, "stored, not skipped");
    let m = std::fs::read_to_string(w.store.join("current/manifest")).unwrap();
    let hexname: String = b"db".iter().map(|c| format!("{c:02x}")).collect();
    let l = m
        .lines()
        .find(|l| l.split(' ').nth(1) == Some(hexname.as_str()))
        .unwrap();
    assert!(l.ends_with(" torn"), "marked torn in the manifest: {l}");
    let st = w.run(&["persist", "status", s(&w.dir), "--json"]);
    assert_eq!(st.status.code(), Some(1), "{}", show(&st));
    let d = &json(&st)["dirs"][0];
    assert_eq!(d["torn_files"], 1, "{d}");
    assert_eq!(d["last_sync_complete"], false, "{d}");
    assert_eq!(d["state"], "partial", "{d}");
    // Quiet again: the next sync stores it whole and all is well.
    let o = w.sync();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let st = w.run(&["persist", "status", s(&w.dir), "--json"]);
    assert_eq!(st.status.code(), Some(0), "{}", show(&st));
    assert_eq!(json(&st)["dirs"][0]["last_sync_complete"], true);
}

#[test]
fn an_online_journal_file_is_never_stored_as_whole() {
    require_root!();
    let w = World::new();
    std::fs::create_dir(w.dir.join("journal")).unwrap();
    let mut head = b"LPKSHHRH".to_vec();
    head.extend([0u8; 8]);
    head.push(1); // state: online (journald is writing it)
    head.resize(4096, 0);
    std::fs::write(w.dir.join("journal/system.journal"), &head).unwrap();
    head[16] = 0; // offline: closed cleanly
    std::fs::write(w.dir.join("journal/user-1000.journal"), &head).unwrap();
    w.enable();
    std::fs::write(w.dir.join("journal/system.journal"), {
        let mut h = head.clone();
        h[16] = 1;
        h.extend(b"more");
        h
    })
    .unwrap();
    std::fs::write(w.dir.join("journal/user-1000.journal"), {
        let mut h = head.clone();
        h.extend(b"more");
        h
    })
    .unwrap();
    let o = w.run(&["persist", "sync", s(&w.dir), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let torn: Vec<String> = json(&o)["torn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(torn, ["journal/system.journal"]);
}
