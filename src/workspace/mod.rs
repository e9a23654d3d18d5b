//! `tmpfsctl run` and `tmpfsctl shell` (issue 6). Not implemented yet.

use crate::Context;

#[derive(Debug, clap::Args)]
pub struct RunArgs {}

#[derive(Debug, clap::Args)]
pub struct ShellArgs {}

pub fn run_cmd(_ctx: &Context, _args: &RunArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`run` is not implemented yet")
}

pub fn shell_cmd(_ctx: &Context, _args: &ShellArgs) -> anyhow::Result<u8> {
    anyhow::bail!("`shell` is not implemented yet")
}
