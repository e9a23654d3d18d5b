//! `persist enable --on zram[:ALG]`: DIR on an ext4 without a journal on a
//! real zram device of this kernel, mounted with `discard`; synced, lost (as
//! at a reboot: unmounted and the device removed), restored onto a new
//! device, filled to the brim with data that does not compress, disabled;
//! and nothing left after SIGTERM or kill -9.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{World, populate, says, show, tree};
use crate::common::{findmnt_fstype, json, s};
use crate::require_root;
use crate::zram_devices::{
    NOTES, PersistDevices, algorithm, diskseq, fs_label, made_by, offered, persist_label,
    zram_devices,
};

fn findmnt(col: &str, p: &Path) -> String {
    let o = Command::new("findmnt")
        .args(["-n", "-o", col, "--mountpoint"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// `zramN` under DIR, which must be one.
fn device_of(dir: &Path) -> String {
    let src = findmnt("SOURCE", dir);
    let n = src
        .strip_prefix("/dev/")
        .filter(|n| n.starts_with("zram"))
        .unwrap_or_else(|| panic!("{} is not on a zram device: {src:?}", dir.display()));
    n.to_string()
}

fn sysfs(dev: &str, file: &str) -> String {
    std::fs::read_to_string(format!("/sys/block/{dev}/{file}"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// `mm_stat`'s mem_used_total: the RAM the device holds.
fn mem_used(dev: &str) -> u64 {
    sysfs(dev, "mm_stat")
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap()
}

/// The device `dev` still is the one made then (its diskseq).
fn still_there(dev: &str, seq: &Option<String>) -> bool {
    seq.is_some() && &diskseq(dev) == seq
}

/// As at a reboot: DIR's file system and its device gone.
fn lose_device(w: &World, dev: &str) {
    w.unmount(&[]);
    let t = Instant::now();
    while std::fs::write(
        "/sys/class/zram-control/hot_remove",
        dev.trim_start_matches("zram"),
    )
    .is_err()
    {
        assert!(t.elapsed() < Duration::from_secs(30), "{dev} stays busy");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A bench run on a zram target: it makes a device, sweeping first.
fn another_zram_run(w: &World) {
    let alg = algorithm();
    w.ok(&[
        "bench",
        "--quick",
        "--rw",
        "seq-write",
        "--size",
        "1M",
        "--no-latency",
        &format!("zram:{alg}"),
    ]);
}

#[test]
fn zram_dir_syncs_restores_onto_a_new_device_and_disable_removes_it() {
    require_root!();
    for alg in offered() {
        let w = World::new();
        let _made = PersistDevices::of(&w.dir);
        populate(&w.dir);
        let before = tree(&w.dir, true);
        let on = format!("zram:{alg}");
        let o = w.enable_ok(&["--on", &on, "--size", "64M", "--boot", "none", "--json"]);
        let j = json(&o);
        let dev = device_of(&w.dir);
        assert_eq!(j["zram"]["device"], dev.as_str(), "{j}");
        assert_eq!(j["zram"]["taken_over"], false, "{j}");
        assert_eq!(
            fs_label(&dev),
            Some(persist_label(&w.dir)),
            "the label that finds DIR's device again"
        );
        assert_eq!(findmnt_fstype(&w.dir).as_deref(), Some("ext4"));
        let opts = findmnt("OPTIONS", &w.dir);
        for o in ["rw", "discard", "nosuid", "nodev"] {
            assert!(opts.split(',').any(|x| x == o), "{alg}: {opts}");
        }
        assert!(
            sysfs(&dev, "comp_algorithm").contains(&format!("[{alg}]")),
            "{alg}: {}",
            sysfs(&dev, "comp_algorithm")
        );
        // No journal: on RAM it only doubles the writes and the RAM.
        let fs = Command::new("dumpe2fs")
            .args(["-h", &format!("/dev/{dev}")])
            .output()
            .unwrap();
        let fs = String::from_utf8_lossy(&fs.stdout);
        let features = fs
            .lines()
            .find(|l| l.starts_with("Filesystem features:"))
            .unwrap();
        assert!(!features.contains("has_journal"), "{features}");
        assert_eq!(
            tree(&w.dir, true),
            before,
            "{alg}: DIR's tree exactly, nothing added"
        );
        // Its RAM cost and ratio, the page cache written out first.
        std::fs::write(w.dir.join("log.txt"), "a line of a log\n".repeat(200_000)).unwrap();
        let st = json(&w.ok(&["persist", "status", s(&w.dir), "--json"]));
        let z = &st["dirs"][0]["zram"];
        assert_eq!(z["device"], dev.as_str(), "{st}");
        assert_eq!(z["algorithm"], alg.as_str(), "{st}");
        let ram = z["mem_used_total_bytes"].as_u64().unwrap();
        let orig = z["orig_data_bytes"].as_u64().unwrap();
        assert!(orig > 3_200_000, "the log is in zram: {st}");
        assert!(ram > 0 && ram < orig, "a log compresses: {st}");
        assert!(z["data_per_ram_ratio"].as_f64().unwrap() > 1.0, "{st}");
        let text = w.ok(&["persist", "status", s(&w.dir)]);
        says(&text.stdout, &format!("on /dev/{dev} ({alg}"), &text);
        says(&text.stdout, "of RAM", &text);
        // Sync, then lose the device as a reboot does.
        std::fs::write(w.dir.join("sub/deeper/c"), b"changed").unwrap();
        w.ok(&["persist", "sync", s(&w.dir)]);
        let synced = tree(&w.dir, true);
        lose_device(&w, &dev);
        let o = w.sync();
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        says(&o.stderr, "persist restore", &o);
        w.ok(&["persist", "restore", s(&w.dir)]);
        let dev2 = device_of(&w.dir);
        assert!(sysfs(&dev2, "comp_algorithm").contains(&format!("[{alg}]")));
        assert_eq!(tree(&w.dir, true), synced, "{alg}: restored onto {dev2}");
        let seq = diskseq(&dev2);
        assert!(
            std::fs::read_to_string(Path::new(NOTES).join(&dev2))
                .unwrap()
                .starts_with("persist "),
            "the device outlives restore: noted as persist's"
        );
        // A later run's sweep leaves a persisted DIR's device alone.
        another_zram_run(&w);
        assert!(still_there(&dev2, &seq), "{dev2} was swept");
        let o = w.ok(&["persist", "disable", s(&w.dir), "--yes", "--json"]);
        assert_eq!(json(&o)["zram_removed"], dev2.as_str(), "{}", show(&o));
        assert!(
            !still_there(&dev2, &seq),
            "{dev2} is still there after disable"
        );
        assert!(!Path::new(NOTES).join(&dev2).exists() || !still_there(&dev2, &seq));
        assert!(findmnt_fstype(&w.dir).is_none());
        assert_eq!(
            tree(&w.dir, true),
            synced,
            "{alg}: the final tree back on disk"
        );
    }
}

#[test]
fn a_full_zram_dir_gives_the_writer_enospc_never_io_errors() {
    require_root!();
    for alg in offered() {
        let w = World::new();
        let _made = PersistDevices::of(&w.dir);
        let on = format!("zram:{alg}");
        w.enable_ok(&["--on", &on, "--size", "32M", "--boot", "none"]);
        let dev = device_of(&w.dir);
        let disksize: u64 = sysfs(&dev, "disksize").parse().unwrap();
        // Random data: the worst case, every page stored whole.
        let mut f = std::fs::File::create(w.dir.join("fill")).unwrap();
        let mut urandom = std::fs::File::open("/dev/urandom").unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut written = 0u64;
        let err = loop {
            std::io::Read::read_exact(&mut urandom, &mut buf).unwrap();
            match f.write_all(&buf).and_then(|()| f.sync_data()) {
                Ok(()) => written += buf.len() as u64,
                Err(e) => break e,
            }
            assert!(written < 2 * disksize, "{alg}: never full");
        };
        assert_eq!(
            err.raw_os_error(),
            Some(libc::ENOSPC),
            "{alg}: the writer gets ENOSPC, not {err}"
        );
        assert!(
            written >= 32 << 20,
            "{alg}: at least --size fits ({written})"
        );
        drop(f);
        let errors = std::fs::read_to_string(format!("/sys/fs/ext4/{dev}/errors_count"))
            .unwrap()
            .trim()
            .to_string();
        assert_eq!(errors, "0", "{alg}: ext4 saw errors");
        let opts = findmnt("OPTIONS", &w.dir);
        assert!(
            opts.split(',').any(|o| o == "rw"),
            "{alg}: remounted? {opts}"
        );
        std::fs::write(w.dir.join("after"), b"still writable").unwrap();
        let full = mem_used(&dev);
        assert!(
            full <= disksize + disksize / 64,
            "{alg}: {full} bytes of RAM for a {disksize}-byte device"
        );
        // discard: deleting frees the RAM at once, not when overwritten.
        std::fs::remove_file(w.dir.join("fill")).unwrap();
        let d = std::fs::File::open(&w.dir).unwrap();
        rustix::fs::syncfs(&d).unwrap();
        let t = Instant::now();
        while mem_used(&dev) > full / 8 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{alg}: deleted data still holds {} bytes of RAM",
                mem_used(&dev)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        w.ok(&["persist", "disable", s(&w.dir), "--yes"]);
    }
}

#[test]
fn zram_enable_refuses_bad_input_before_making_anything() {
    require_root!();
    let w = World::new();
    let _made = PersistDevices::of(&w.dir);
    std::fs::write(w.dir.join("a"), vec![1u8; 64 << 10]).unwrap();
    let devices = || {
        let mut v = zram_devices();
        v.sort();
        v
    };
    let cases: [(&[&str], &str); 5] = [
        (&["--on", "zram:nosuch"], "does not offer it"),
        (&["--on", "zram", "--boot", "fstab"], "--boot systemd"),
        (
            &["--on", "zram", "--size", "100%"],
            "I/O errors instead of ENOSPC",
        ),
        (&["--on", "zram", "--size", "4k"], "give a larger size"),
        (&["--on", "zfs"], "zram:ALGORITHM"),
    ];
    for (args, why) in cases {
        let before = devices();
        let mut a = vec!["--boot", "none"];
        if args.contains(&"--boot") {
            a.clear();
        }
        a.extend(args);
        let o = w.enable_at(&w.dir, &w.store, &a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
        says(&o.stderr, why, &o);
        assert!(findmnt_fstype(&w.dir).is_none(), "{args:?}");
        assert!(!w.registry.exists(), "{args:?}");
        assert!(!w.store.exists(), "{args:?}: a store was made");
        // Other tests make persist devices meanwhile (each labelled for
        // its own DIR): only one labelled for this DIR would be ours.
        let label = persist_label(&w.dir);
        let made: Vec<String> = devices()
            .into_iter()
            .filter(|d| !before.contains(d))
            .filter(|d| {
                std::fs::read_to_string(Path::new(NOTES).join(d)).is_ok_and(|t| t.contains(&label))
            })
            .collect();
        assert!(made.is_empty(), "{args:?}: made {made:?}");
    }
}

#[test]
fn sigterm_or_kill_9_during_a_zram_enable_leaves_no_device() {
    require_root!();
    for sig in [rustix::process::Signal::TERM, rustix::process::Signal::KILL] {
        let w = World::new();
        let _made = PersistDevices::of(&w.dir);
        // Enough files that filling the device takes a while.
        for i in 0..3000 {
            std::fs::write(w.dir.join(format!("f{i}")), vec![i as u8; 8192]).unwrap();
        }
        let mut child = crate::common::bin()
            .env("TMPFSCTL_PERSIST_REGISTRY", &w.registry)
            .args(["persist", "enable", s(&w.dir), "--store", s(&w.store)])
            .args(["--yes", "--on", "zram", "--size", "64M", "--boot", "none"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let (dev, seq) = loop {
            if let Some(d) = made_by(pid).pop() {
                let seq = diskseq(&d);
                break (d, seq);
            }
            assert!(child.try_wait().unwrap().is_none(), "enable ended first");
            std::thread::yield_now();
        };
        rustix::process::kill_process(rustix::process::Pid::from_raw(pid as i32).unwrap(), sig)
            .unwrap();
        let o = child.wait_with_output().unwrap();
        if sig == rustix::process::Signal::TERM {
            // Stopped before the mount (device removed), or finished.
            assert_eq!(crate::common::shell_status(o.status), 143, "{}", show(&o));
            if findmnt_fstype(&w.dir).is_some() {
                says(&o.stderr, "enable finished first", &o);
                w.ok(&["persist", "disable", s(&w.dir), "--yes"]);
            }
            assert!(!still_there(&dev, &seq), "SIGTERM left {dev}: {}", show(&o));
        } else {
            if findmnt_fstype(&w.dir).is_some() {
                // Killed after the attach (a slow fill is rare): as after a
                // reboot, the mount goes and the device with the next run.
                w.unmount(&["-l"]);
            }
            // The next run that makes a device removes the leftover.
            another_zram_run(&w);
            assert!(
                !still_there(&dev, &seq),
                "kill -9 left {dev} after the next run"
            );
        }
        assert!(made_by(pid).is_empty());
    }
}

#[test]
fn zram_units_verify_and_their_restore_makes_the_device_again() {
    require_root!();
    let w = World::new();
    let _made = PersistDevices::of(&w.dir);
    std::fs::write(w.dir.join("a"), b"kept").unwrap();
    let units = w.root.path().join("units");
    let o = w.enable_units(&[
        "--on",
        "zram",
        "--size",
        "32M",
        "--unit-dir",
        s(&units),
        "--json",
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let j = json(&o);
    assert_eq!(j["units_verified"], true, "{j}");
    let main = std::fs::read_dir(&units)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with("tmpfsctl-persist-") && !n.contains("-sync-")
        })
        .unwrap();
    let text = std::fs::read_to_string(&main).unwrap();
    assert!(text.contains("persist restore"), "{text}");
    // At boot the device is gone; the unit's ExecStart makes it again.
    let dev = device_of(&w.dir);
    lose_device(&w, &dev);
    let o = w.run_installed(&["persist", "restore", s(&w.dir), "--store", s(&w.store)]);
    assert!(o.status.success(), "{}", show(&o));
    says(&o.stdout, "onto a new zram device", &o);
    let dev = device_of(&w.dir);
    assert_eq!(std::fs::read(w.dir.join("a")).unwrap(), b"kept");
    let seq = diskseq(&dev);
    let o = w.run_installed(&["persist", "disable", s(&w.dir), "--yes"]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(!still_there(&dev, &seq));
    assert!(!main.exists(), "disable removes the units");
}

/// The tmpfsctl process strace runs (its only child).
fn traced_child(strace: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{strace}/task/{strace}/children"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[test]
fn kill_9_of_enable_just_after_its_mount_leaves_a_device_a_rerun_takes_over() {
    require_root!();
    let w = World::new();
    let _made = PersistDevices::of(&w.dir);
    populate(&w.dir);
    let before = tree(&w.dir, true);
    // strace holds enable for 30 s just after the move_mount that puts the
    // device on DIR, before its note says the device is persist's: the
    // window a kill -9 there hits.
    let mut strace = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-o",
            "/dev/null",
            "-e",
            "trace=move_mount",
            "-e",
        ])
        .arg("inject=move_mount:delay_exit=30000000:when=1")
        .arg(env!("CARGO_BIN_EXE_tmpfsctl"))
        .args(["persist", "enable", s(&w.dir), "--store", s(&w.store)])
        .args(["--yes", "--on", "zram", "--size", "64M", "--boot", "none"])
        .env("TMPFSCTL_PERSIST_REGISTRY", &w.registry)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("strace (scripts/setup installs it)");
    let t = Instant::now();
    let (pid, dev) = loop {
        if findmnt_fstype(&w.dir).is_some()
            && let Some(pid) = traced_child(strace.id())
        {
            break (pid, device_of(&w.dir));
        }
        assert!(strace.try_wait().unwrap().is_none(), "enable ended first");
        assert!(t.elapsed() < Duration::from_secs(60), "DIR never mounted");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(made_by(pid), [dev.as_str()], "the note still names enable");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    strace.wait().unwrap();
    let seq = diskseq(&dev);
    assert_eq!(tree(&w.dir, true), before, "DIR shows generation 1");
    // Something written meanwhile, which a rerun must keep.
    std::fs::write(w.dir.join("written-after-the-kill"), b"kept").unwrap();
    // The next run's sweep leaves a mounted device alone (its files are in
    // use), and quickly.
    let t = Instant::now();
    another_zram_run(&w);
    assert!(still_there(&dev, &seq), "{dev} was removed under DIR");
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "the sweep waited on a mounted device"
    );
    // A rerun of enable takes the device over and finishes.
    let o = w.enable_ok(&["--on", "zram", "--size", "64M", "--boot", "none", "--json"]);
    let j = json(&o);
    assert_eq!(j["zram"]["taken_over"], true, "{j}");
    assert_eq!(j["zram"]["device"], dev.as_str(), "{j}");
    assert!(
        std::fs::read_to_string(Path::new(NOTES).join(&dev))
            .unwrap()
            .starts_with("persist "),
        "noted as persist's now"
    );
    let text = w.ok(&["persist", "status", s(&w.dir)]);
    says(&text.stdout, &format!("on /dev/{dev}"), &text);
    // disable writes DIR back, the file written after the kill with it,
    // and removes the device.
    let o = w.ok(&["persist", "disable", s(&w.dir), "--yes", "--json"]);
    assert_eq!(json(&o)["zram_removed"], dev.as_str(), "{}", show(&o));
    assert!(!still_there(&dev, &seq));
    assert_eq!(
        std::fs::read(w.dir.join("written-after-the-kill")).unwrap(),
        b"kept"
    );
}
