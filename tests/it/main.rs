//! One integration-test binary (faster to link than one per file). Tests that
//! need root or a real mount skip through `skip!` (tests/support/skip.rs):
//! where CI is set a skip fails unless tests/skip-allow.txt allows it.
// Tests fail by panicking: unwrap/expect are how they say so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/skip.rs"]
mod skip;

mod common;

mod advise;
mod bench;
mod cli;
mod colour;
mod explain;
mod fleet;
mod fleet_models;
mod incident;
mod interface;
mod interface_durations;
mod interface_sizes;
mod interface_warnings;
mod manpages;
mod mounts;
mod mounts_guarded;
mod outputs;
mod outputs_fd;
mod outputs_hostile;
mod outputs_identity;
mod package;
mod persist;
mod readme;
mod reports;
mod run_noshebang;
mod samples;
mod status;
mod status_usage;
mod status_zram;
mod terminal;
mod tmpfiles_boot;
mod tmpfiles_flock;
mod tmpfiles_real;
mod top;
mod top_blind;
mod top_cgroups;
mod top_live;
mod top_prom;
mod unmount_busy;
mod workspace;
mod zram_devices;
