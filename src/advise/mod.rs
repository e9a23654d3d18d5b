//! `tmpfsctl advise` (issue 7). Not implemented yet.

mod verdict;
pub use verdict::{Facts, Kind, Verdict, decide};

use crate::Context;

#[derive(Debug, clap::Args)]
pub struct AdviseArgs {}

pub fn run(_ctx: &Context, _args: &AdviseArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`advise` is not implemented yet")
}
