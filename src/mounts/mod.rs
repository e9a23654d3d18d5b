//! `tmpfsctl plan`, `apply`, `revert` (issue 5). Not implemented yet.

use crate::Context;

#[derive(Debug, clap::Args)]
pub struct PlanArgs {}

#[derive(Debug, clap::Args)]
pub struct ApplyArgs {}

#[derive(Debug, clap::Args)]
pub struct RevertArgs {}

pub fn plan_cmd(_ctx: &Context, _args: &PlanArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`plan` is not implemented yet")
}

pub fn apply_cmd(_ctx: &Context, _args: &ApplyArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`apply` is not implemented yet")
}

pub fn revert_cmd(_ctx: &Context, _args: &RevertArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`revert` is not implemented yet")
}
