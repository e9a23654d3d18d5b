//! Durability calls that a throwaway build can skip, one at a time, so the
//! crash-state suite (tests/crash) can show that each one matters
//! (`bench/crash-mutants.sh`).
//!
//! Only a build with the `crash-knockout` feature has any of this: without
//! it [`durable!`] expands to the call itself, so the shipped binary holds
//! no trace of it (no feature enables it by default and the package is
//! built without features). With it, `TMPFSCTL_KNOCKOUT` names the calls to
//! skip, comma-separated: `CALL` skips it everywhere, `CALL@WHAT` only
//! where the call is made for `WHAT` (an atomic write's `what`, e.g.
//! `atomic-dir-fsync@--fstab`). Each skip is said on stderr, so a run can
//! show the call was reached; a name that is no call fails the command.

/// The durability calls on persist's, apply's and revert's paths.
#[cfg(feature = "crash-knockout")]
pub(crate) const CALLS: &[&str] = &[
    "store-syncfs",
    "current-dir-fsync",
    "atomic-file-fsync",
    "atomic-dir-fsync",
    "remove-dir-fsync",
    "revert-syncfs-copy",
    "revert-syncfs-end",
    "disable-syncfs-live",
    "disable-syncfs-load",
];

/// Whether `call`, made for `what`, is to be skipped in this run.
#[cfg(feature = "crash-knockout")]
pub(crate) fn off(call: &str, what: &str) -> bool {
    let Some(list) = std::env::var_os("TMPFSCTL_KNOCKOUT") else {
        return false;
    };
    let list = list.to_string_lossy().into_owned();
    let mut hit = false;
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (c, w) = match entry.split_once('@') {
            Some((c, w)) => (c, Some(w)),
            None => (entry, None),
        };
        if !CALLS.contains(&c) {
            eprintln!(
                "tmpfsctl: TMPFSCTL_KNOCKOUT={list}: {c:?} is no durability call (have: {})",
                CALLS.join(", ")
            );
            std::process::exit(2);
        }
        hit |= c == call && w.is_none_or(|w| w == what);
    }
    if hit {
        eprintln!("tmpfsctl: knockout: skipped {call} ({what})");
    }
    hit
}

/// `durable!("CALL", what, expr)`: `expr` (a durability call returning a
/// `Result<()>`-like value), or `Ok(())` where a knockout build is told to
/// skip it.
#[cfg(feature = "crash-knockout")]
macro_rules! durable {
    ($call:literal, $what:expr, $e:expr) => {
        if $crate::sys::knockout::off($call, $what) {
            Ok(())
        } else {
            $e
        }
    };
}

#[cfg(not(feature = "crash-knockout"))]
macro_rules! durable {
    ($call:literal, $what:expr, $e:expr) => {
        $e
    };
}

pub(crate) use durable;
