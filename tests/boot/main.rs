//! tmpfsctl's promises that come due at boot, at shutdown and at a power
//! cut, proven in a booted Debian 13 guest (systemd as PID 1) that installs
//! the package under test with `dpkg -i`. See guest.rs for how a guest runs.
//! Skipped through `skip!` (tests/support/skip.rs) only where the machine
//! cannot boot one; where CI is set that skip is a failure.

// Tests fail by panicking: unwrap/expect are how they say so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/skip.rs"]
mod skip;

mod apply;
mod guest;
mod package;
mod persist;
mod power;

/// A tree as `md5sum` lines sorted by path, run in the guest.
pub const TREE: &str = "tree() { (cd \"$1\" && find . -type f -exec md5sum {} + | sort -k2); }";
