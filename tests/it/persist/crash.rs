//! The long persist tests: kill -9 of a sync at random moments followed by
//! the loss of the tmpfs, and a writer rewriting files during syncs.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{World, bin, s, show, stored, tree};
use crate::require_root;

#[test]
fn concurrent_writer_each_file_is_old_new_or_marked_torn() {
    require_root!();
    let w = World::new();
    const N: usize = 8;
    const LEN: usize = 1 << 20;
    for i in 0..N {
        std::fs::write(w.dir.join(format!("f{i}")), vec![b'a'; LEN]).unwrap();
    }
    w.enable();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dir = w.dir.clone();
    let st = stop.clone();
    // In-place rewrites (no truncate, one pwrite of the whole file): every
    // version is one byte repeated, so a torn copy shows two bytes. Files
    // f1.. are opened for each write (a read lease protects their copies);
    // f0 stays open for writing the whole time, like a log (no lease: the
    // write barrier and the stat checks protect it).
    let writer = std::thread::spawn(move || {
        let held = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("f0"))
            .unwrap();
        let mut v = 0u8;
        let mut n = 0u64;
        while !st.load(std::sync::atomic::Ordering::Relaxed) {
            v = v.wrapping_add(1);
            let i = v as usize % N;
            let data = vec![b'a' + v % 26; LEN];
            if i == 0 {
                rustix::io::pwrite(&held, &data, 0).unwrap();
            } else {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.join(format!("f{i}")))
                    .unwrap();
                rustix::io::pwrite(&f, &data, 0).unwrap();
            }
            n += 1;
        }
        n
    });
    let t0 = Instant::now();
    let mut syncs = 0;
    let mut torn_marked = 0;
    while t0.elapsed() < Duration::from_secs(8) {
        let o = w.sync();
        // Exit 1: a file never held still and was stored marked torn.
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", show(&o));
        syncs += 1;
        let cur = std::fs::read_link(w.store.join("current")).unwrap();
        let manifest = std::fs::read_to_string(w.store.join(&cur).join("manifest")).unwrap();
        for i in 0..N {
            let data = stored(&w.store, &format!("f{i}"));
            assert_eq!(data.len(), LEN);
            let hexname: String = format!("f{i}")
                .bytes()
                .map(|c| format!("{c:02x}"))
                .collect();
            let marked = manifest
                .lines()
                .any(|l| l.split(' ').nth(1) == Some(hexname.as_str()) && l.ends_with(" torn"));
            if marked {
                torn_marked += 1;
                continue;
            }
            if !data.iter().all(|&b| b == data[0]) {
                let mut runs = vec![(0usize, data[0])];
                for (k, &b) in data.iter().enumerate() {
                    if b != runs.last().unwrap().1 {
                        runs.push((k, b));
                    }
                }
                let m = std::fs::read_to_string(w.store.join(&cur).join("manifest")).unwrap();
                panic!(
                    "f{i} torn in {cur:?}: runs {:?}\n{m}",
                    &runs[..runs.len().min(10)]
                );
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.join().unwrap();
    eprintln!(
        "concurrent writer: {writes} rewrites during {syncs} syncs, no unmarked torn file \
         ({torn_marked} copies marked torn)"
    );
}

/// Rewrite about a third of the files (content and size) and add or remove
/// one, so two consecutive trees differ in many places at once.
fn mutate(dir: &Path, round: u64, rng: &mut u64) {
    let mut next = || {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng
    };
    for i in 0..24u64 {
        if next() % 3 == 0 {
            let len = (next() % 200_000) as usize;
            let byte = (round % 250) as u8 + 1;
            std::fs::write(dir.join(format!("d{}/f{i}", i % 4)), vec![byte; len]).unwrap();
        }
    }
    let extra = dir.join(format!("d0/extra{}", round % 3));
    if extra.exists() {
        std::fs::remove_file(&extra).unwrap();
    } else {
        std::fs::write(&extra, round.to_le_bytes()).unwrap();
    }
}

#[test]
fn crash_loop_kill9_then_power_loss_restores_old_or_new_tree() {
    require_root!();
    let w = World::new();
    for d in 0..4 {
        std::fs::create_dir(w.dir.join(format!("d{d}"))).unwrap();
    }
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    mutate(&w.dir, 0, &mut rng);
    w.enable();
    // How long a whole sync of one round's change takes here (process start
    // included), to spread the kills over it and a little past its end.
    mutate(&w.dir, 1000, &mut rng);
    let t = Instant::now();
    assert!(w.sync().status.success());
    let full = t.elapsed();
    let mut old = tree(&w.dir, false);
    let budget = Duration::from_secs(40);
    let t0 = Instant::now();
    let (mut iters, mut got_old, mut got_new, mut exited_ok) = (0u64, 0u64, 0u64, 0u64);
    // Kills spread over 0..window; widened when the machine is slower than
    // the calibration said and no kill has missed a sync for a while.
    let mut window = full * 2;
    let mut since_new = 0;
    while t0.elapsed() < budget && iters < 200 {
        iters += 1;
        mutate(&w.dir, iters, &mut rng);
        let new = tree(&w.dir, false);
        let mut child = bin()
            .env("TMPFSCTL_PERSIST_REGISTRY", &w.registry)
            .args(["persist", "sync", s(&w.dir)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let wait = rng % (window.as_micros() as u64 + 1);
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        std::thread::sleep(Duration::from_micros(wait));
        let _ = child.kill();
        // Exit 0 when the sync finished before the kill (a zombie ignores it).
        let finished = child.wait().unwrap().success();
        exited_ok += u64::from(finished);
        // Power loss: the tmpfs and everything in it are gone.
        w.unmount(&["-l"]);
        let o = w.run(&["persist", "restore", s(&w.dir)]);
        assert!(o.status.success(), "iteration {iters}: {}", show(&o));
        let got = tree(&w.dir, false);
        assert!(
            !finished || got == new,
            "iteration {iters}: the sync exited 0, yet restore brought back {} tree",
            if got == old { "the old" } else { "a mixed" }
        );
        if got == new {
            got_new += 1;
            since_new = 0;
            old = new;
        } else if got == old {
            got_old += 1;
            since_new += 1;
            if since_new >= 8 {
                window = window * 3 / 2;
                since_new = 0;
            }
        } else {
            let diff: Vec<_> = got
                .iter()
                .filter(|(k, v)| old.get(*k) != Some(v) && new.get(*k) != Some(v))
                .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                .collect();
            panic!("iteration {iters}: restored tree is neither old nor new: {diff:?}");
        }
    }
    eprintln!(
        "crash loop: {iters} kill -9 + power-loss iterations in {:.1} s (full sync {:.1} ms, kills over 0..{:.1} ms): {exited_ok} syncs exited 0 before the kill; {got_old} restored the old tree, {got_new} the new one, 0 mixed",
        t0.elapsed().as_secs_f64(),
        full.as_secs_f64() * 1e3,
        window.as_secs_f64() * 1e3
    );
    assert!(iters >= 10);
    assert!(
        exited_ok > 0 && exited_ok < iters,
        "{exited_ok} of {iters} syncs exited 0 before the kill: the kills never {} a sync",
        if exited_ok == 0 { "missed" } else { "hit" }
    );
}
