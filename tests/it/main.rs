//! One integration-test binary (faster to link than one per file). Tests that
//! need root or a real mount skip with a printed reason elsewhere; CI runs as root.

mod common;

mod advise;
mod bench;
mod fleet;
mod mounts;
mod status;
mod workspace;
