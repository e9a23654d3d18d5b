//! `tmpfsctl collect` and `tmpfsctl fleet` (issue 4). Not implemented yet.

use crate::Context;

#[derive(Debug, clap::Args)]
pub struct CollectArgs {}

#[derive(Debug, clap::Args)]
pub struct FleetArgs {}

pub fn collect_cmd(_ctx: &Context, _args: &CollectArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`collect` is not implemented yet")
}

pub fn fleet_cmd(_ctx: &Context, _args: &FleetArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`fleet` is not implemented yet")
}
