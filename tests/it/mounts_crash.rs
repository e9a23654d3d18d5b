//! kill -9 of `apply` and `revert --keep-data` at random moments while a
//! writer writes, then the same command again: the rerun must finish or
//! undo what the killed run left, losing no acknowledged file and leaving
//! no temp file, stale backup or stray mount. (bench/mounts-kill.py runs
//! the same loop longer and against other binaries.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Cleanup, findmnt_fstype, s, scratch, stderr};
use crate::common::bin;
use crate::require_root;

/// Creates `w-N` in `dir` every 10 ms (open, write, fsync, close); a number
/// is pushed once its file is all done: acknowledged.
struct Writer {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<u64>>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    fn start(dir: &Path) -> Writer {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let (st, ak, d) = (stop.clone(), acked.clone(), dir.to_path_buf());
        let handle = std::thread::spawn(move || {
            use std::io::Write;
            let mut i = 0u64;
            while !st.load(Ordering::Relaxed) {
                let done = std::fs::File::create(d.join(format!("w-{i}"))).and_then(|mut f| {
                    f.write_all(format!("payload {i}").as_bytes())?;
                    f.sync_all()
                });
                if done.is_ok() {
                    ak.lock().unwrap().push(i);
                    i += 1;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Writer {
            stop,
            acked,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.join().unwrap();
        }
        self.acked.lock().unwrap().clone()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn command(op: &str, dir: &Path, fstab: &Path) -> Vec<String> {
    let mut v: Vec<String> = vec![op.into(), s(dir).into(), "--fstab".into(), s(fstab).into()];
    let more: &[&str] = if op == "apply" {
        &["--boot", "fstab", "--size", "64M", "--yes"]
    } else {
        &["--keep-data", "--yes"]
    };
    v.extend(more.iter().map(|m| m.to_string()));
    v
}

/// Run to the end, retrying while it refuses because the writer held its
/// file open at the moment of the check (a refusal changes nothing).
fn run_to_end(args: &[String]) -> Output {
    let mut out = bin().args(args).output().unwrap();
    for _ in 0..50 {
        let e = stderr(&out);
        if out.status.success() || !(e.contains("open for writing") || e.contains("is busy")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        out = bin().args(args).output().unwrap();
    }
    out
}

fn temp_entries(root: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().starts_with(".tmpfsctl-") {
            out.push(e.path());
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            temp_entries(&e.path(), out);
        }
    }
}

/// Where revert stages the tmpfs of `dir` (the note's name, FNV-1a of the
/// path, with `.stage`); other tests' staging mounts are theirs.
fn stage_of(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in dir.as_os_str().as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("/run/tmpfsctl-journal/{h:016x}.stage")
}

fn mounted_at(p: &str) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(p))
}

/// One round: kill `op` after `delay`, run it again; what is wrong after.
fn round(op: &str, files: usize, delay: Option<Duration>) -> (bool, Duration, Vec<String>) {
    let t = scratch("mounts");
    let dir = t.path().join("live");
    std::fs::create_dir(&dir).unwrap();
    let _c = Cleanup(dir.clone());
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"").unwrap();
    let seed = |i: usize| format!("seed {i} ").repeat(3000).into_bytes();
    for i in 0..files {
        std::fs::write(dir.join(format!("seed-{i}")), seed(i)).unwrap();
    }
    if op == "revert" {
        let o = run_to_end(&command("apply", &dir, &fstab));
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let w = Writer::start(&dir);
    std::thread::sleep(Duration::from_millis(30));
    let args = command(op, &dir, &fstab);
    let mut child = bin()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let killed = match delay {
        None => {
            child.wait().unwrap();
            false
        }
        Some(d) => {
            std::thread::sleep(d);
            let running = child.try_wait().unwrap().is_none();
            child.kill().unwrap_or(());
            child.wait().unwrap();
            running
        }
    };
    let took = started.elapsed();
    let rerun = run_to_end(&args);
    std::thread::sleep(Duration::from_millis(30));
    let acked = w.finish();
    let mut wrong = Vec::new();
    if !rerun.status.success() {
        wrong.push(format!("rerun failed: {}", stderr(&rerun)));
    }
    let mounted = findmnt_fstype(&dir).as_deref() == Some("tmpfs");
    let fstab_text = std::fs::read_to_string(&fstab).unwrap();
    let lines = fstab_text
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(s(&dir)))
        .count();
    if mounted != (op == "apply") || lines != usize::from(mounted) {
        wrong.push(format!("mounted: {mounted}, fstab lines: {lines}"));
    }
    let lost: Vec<String> = acked
        .iter()
        .map(|i| (format!("w-{i}"), format!("payload {i}").into_bytes()))
        .chain((0..files).map(|i| (format!("seed-{i}"), seed(i))))
        .filter(|(n, want)| std::fs::read(dir.join(n)).ok().as_ref() != Some(want))
        .map(|(n, _)| n)
        .collect();
    if !lost.is_empty() {
        wrong.push(format!(
            "{} files lost: {:?}",
            lost.len(),
            &lost[..lost.len().min(5)]
        ));
    }
    let mut left = Vec::new();
    temp_entries(t.path(), &mut left);
    if !mounted && Path::new(&format!("{}.tmpfsctl.bak", s(&fstab))).exists() {
        left.push(PathBuf::from("the fstab backup"));
    }
    if !left.is_empty() {
        wrong.push(format!("left behind: {left:?}"));
    }
    let stage = stage_of(&dir);
    if mounted_at(&stage) {
        wrong.push(format!("staging mount left at {stage}"));
        let _ = Command::new("umount").args(["-l", &stage]).status();
    }
    if mounted {
        // Another test's `top` or `status` may be walking this tmpfs (they
        // list every tmpfs): busy for a moment is not this test's failure.
        let mut o = Command::new("umount").arg(&dir).output().unwrap();
        for _ in 0..50 {
            if o.status.success() || !stderr(&o).contains("busy") {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            o = Command::new("umount").arg(&dir).output().unwrap();
        }
        assert!(o.status.success(), "{}", stderr(&o));
        let mut under = Vec::new();
        temp_entries(&dir, &mut under);
        if !under.is_empty() {
            wrong.push(format!("left underneath: {under:?}"));
        }
    }
    (killed, took, wrong)
}

fn kill_loop(op: &str, files: usize) {
    let (_, took, wrong) = round(op, files, None);
    assert!(wrong.is_empty(), "{op} without a kill: {wrong:?}");
    let span = took.as_secs_f64() * 1.2;
    let end = Instant::now() + Duration::from_secs(40);
    let (mut rounds, mut killed, mut bad) = (0, 0, Vec::new());
    let mut seed = u64::from(std::process::id());
    while Instant::now() < end && rounds < 40 {
        // xorshift: spread the kills without a dependency.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let d = Duration::from_secs_f64(span * (seed % 1000) as f64 / 1000.0);
        let (k, _, wrong) = round(op, files, Some(d));
        rounds += 1;
        killed += usize::from(k);
        if !wrong.is_empty() {
            bad.push(format!("round {rounds} (killed after {d:?}): {wrong:?}"));
        }
    }
    eprintln!(
        "{op}: {rounds} rounds, {killed} killed mid-run (kills spread over {span:.2} s), {} inconsistent",
        bad.len()
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(killed > 0, "no round killed {op} before it ended");
}

#[test]
fn kill_9_of_apply_then_apply_again_ends_mounted_with_everything() {
    require_root!();
    kill_loop("apply", 300);
}

#[test]
fn kill_9_of_revert_keep_data_then_revert_again_ends_on_disk_with_everything() {
    require_root!();
    kill_loop("revert", 300);
}

/// `script` runs the command on a pseudo-terminal; what it printed there.
fn on_a_terminal(args: &[String]) -> String {
    let line: Vec<String> =
        std::iter::once(s(Path::new(env!("CARGO_BIN_EXE_tmpfsctl"))).to_string())
            .chain(args.iter().cloned())
            .map(|a| format!("'{a}'"))
            .collect();
    let o = Command::new("script")
        .args(["-qfec", &line.join(" "), "/dev/null"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn copies_show_a_progress_bar_only_on_a_terminal() {
    require_root!();
    if Command::new("script").arg("--version").output().is_err() {
        crate::skip!("no `script` (util-linux) to give the command a terminal");
    }
    let t = scratch("mounts");
    let dir = t.path().join("big");
    std::fs::create_dir(&dir).unwrap();
    let _c = Cleanup(dir.clone());
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"").unwrap();
    // Enough data that the copy outlasts the bar's first refresh.
    for i in 0..32 {
        std::fs::write(dir.join(format!("f-{i}")), vec![i as u8 | 1; 1 << 20]).unwrap();
    }
    let apply = command("apply", &dir, &fstab);
    let shown = on_a_terminal(&apply);
    assert!(
        shown.contains("copying [") && shown.contains("ETA") && shown.contains("MiB"),
        "{shown}"
    );
    let revert = command("revert", &dir, &fstab);
    let piped = run_to_end(&revert);
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert!(!stderr(&piped).contains("ETA"), "{}", stderr(&piped));
    let piped = run_to_end(&apply);
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert!(!stderr(&piped).contains("ETA"), "{}", stderr(&piped));
    let shown = on_a_terminal(&revert);
    assert!(
        shown.contains("copying back [") && shown.contains("ETA"),
        "{shown}"
    );
    assert_eq!(findmnt_fstype(&dir), None);
}
