//! `tmpfsctl bench` (issue 3). Not implemented yet.

use crate::Context;

#[derive(Debug, clap::Args)]
pub struct BenchArgs {}

pub fn run(_ctx: &Context, _args: &BenchArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`bench` is not implemented yet")
}
