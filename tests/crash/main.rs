//! Every crash point, checked: the guest runs persist, apply and revert on
//! a disk whose every write, flush and FUA QEMU logs (`blklogwrites`); the
//! host rebuilds the disk as a power cut could leave it — at every flush,
//! and between two flushes a prefix or any subset of the writes not yet
//! flushed — mounts it (the journal replays as at boot) and checks it with
//! its own build of tmpfsctl against the trees the guest acknowledged.
//!
//! The rule: `persist restore` brings back the tree of the last ACK before
//! the crash point or the tree of the step then in flight, never a mix,
//! never older; `persist verify` names any generation restore passes over,
//! and restore never loads one it names. After disable's ACK, DIR on disk
//! holds the tree; after revert's, DIR on disk holds the tmpfs's files; the
//! fstab is always the old or the new file, whole.
//!
//! A test of its own (no libtest harness): the same binary, copied into the
//! guest, lists the trees there (`crash tree DIR`), so both sides list a
//! tree with the same code. TMPFSCTL_CRASH_FULL=1 checks every prefix and 50
//! subsets between every two flushes (long); TMPFSCTL_CRASH_FS names the file
//! systems, a comma-separated list of ext4, xfs and btrfs (default ext4,xfs).
//! TMPFSCTL_CRASH_KNOCKOUT (with a build that has the crash-knockout
//! feature, see bench/crash-mutants.sh) names durability calls the guest's
//! tmpfsctl skips; TMPFSCTL_CRASH_ACKS=N-M,K checks only the states whose
//! last ACK is one of those steps.

// Tests fail by panicking: unwrap/expect are how they say so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod check;
#[allow(dead_code)]
#[path = "../boot/guest.rs"]
mod guest;
mod host;
mod log;
mod scenario;
#[path = "../support/skip.rs"]
mod skip;
mod states;
mod tree;

use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("tree") => {
            print!("{}", tree::listing(Path::new(&args[2])));
            return;
        }
        Some("setxattr") => {
            rustix::fs::setxattr(
                args[2].as_str(),
                args[3].as_str(),
                args[4].as_bytes(),
                rustix::fs::XattrFlags::empty(),
            )
            .unwrap();
            return;
        }
        _ => {}
    }
    // `cargo test -- NAME` passes NAME to every test binary: run only when
    // it names this suite (or nothing).
    let filters: Vec<&String> = args[1..].iter().filter(|a| !a.starts_with('-')).collect();
    if !filters.is_empty() && !filters.iter().any(|f| "crash_states".contains(f.as_str())) {
        return;
    }
    if let Some(why) = guest::cannot_boot(true) {
        // Fails where CI is set (tests/support/skip.rs).
        skip::skip("crash_states", &why);
        return;
    }
    let t0 = Instant::now();
    // btrfs only when named: with ext4 and xfs it would take the suite
    // past its share of CI's time.
    let only = std::env::var("TMPFSCTL_CRASH_FS").unwrap_or_else(|_| "ext4,xfs".into());
    let named: Vec<&str> = only.split(',').map(str::trim).collect();
    for n in &named {
        assert!(
            ["ext4", "xfs", "btrfs"].contains(n),
            "TMPFSCTL_CRASH_FS={only}: {n:?} is not one of ext4, xfs, btrfs (a comma-separated list)"
        );
    }
    let mut rows = Vec::new();
    for fs in ["ext4", "xfs", "btrfs"] {
        if !named.contains(&fs) {
            continue;
        }
        let row = check::run_fs(fs);
        eprintln!("{}", check::table(std::slice::from_ref(&row)));
        rows.push(row);
    }
    println!(
        "\ncrash states checked (suite time {:.0} s):",
        t0.elapsed().as_secs_f64()
    );
    println!("{}", check::table(&rows));
    let bad: Vec<&String> = rows.iter().flat_map(|r| &r.violations).collect();
    for v in &bad {
        println!("VIOLATION {v}");
    }
    assert!(
        bad.is_empty(),
        "{} crash states break the rule (listed above)",
        bad.len()
    );
    println!("test crash_states ... ok");
}
