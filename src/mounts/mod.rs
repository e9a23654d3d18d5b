//! `tmpfsctl plan`, `apply`, `revert`: put a directory on tmpfs without
//! hiding its files, live and across reboots, and undo it.
//!
//! Data flows one way: [`facts::gather_facts`] reads the machine,
//! [`plan::plan`] (pure) decides, [`apply`]/[`revert`] act on the plan,
//! `render` prints. The CLI hands in plain request values ([`Target`],
//! [`PlanRequest`], [`ApplyRequest`], [`RevertRequest`]).

pub mod apply;
pub mod boot;
pub mod facts;
pub mod journal;
pub mod live;
mod outcome;
pub mod plan;
mod recover;
mod render;
mod resize;
pub mod revert;
mod ui;

use std::path::PathBuf;

use anyhow::Result;

use crate::command::{self, Context};
use crate::term::shell_path;
use crate::units::Size;

pub use facts::gather_facts;
pub use outcome::ApplyReport;
pub use plan::{Facts, Plan, Request, plan};
pub use revert::RevertReport;

/// The directory to act on and where its configuration lives.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub dir: PathBuf,
    /// Read and edit this file instead of /etc/fstab.
    pub fstab: Option<PathBuf>,
    /// Look for mount units and write drop-ins here instead of /etc/systemd/system.
    pub unit_dir: Option<PathBuf>,
    /// Say nothing on stderr while working (the plan shown before acting,
    /// progress bars): the caller's report holds it all.
    pub quiet: bool,
}

impl Target {
    /// The options that name where configuration lives, for the follow-up
    /// commands printed to the user (so they act on the same files).
    pub fn follow_up(&self) -> String {
        let mut s = String::new();
        if let Some(f) = &self.fstab {
            s.push_str(&format!(" --fstab {}", shell_path(&facts::absolute(f))));
        }
        if let Some(u) = &self.unit_dir {
            s.push_str(&format!(" --unit-dir {}", shell_path(&facts::absolute(u))));
        }
        s
    }

    /// Just a directory, with the system's own fstab and unit directory.
    pub fn dir(dir: impl Into<PathBuf>) -> Target {
        Target {
            dir: dir.into(),
            ..Target::default()
        }
    }
}

#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub target: Target,
    pub opts: Request,
}

#[derive(Debug, Clone)]
pub struct ApplyRequest {
    pub target: Target,
    pub opts: Request,
    /// Change the size of the tmpfs already at DIR, live.
    pub resize: Option<Size>,
    /// Go ahead although processes have files under DIR open for writing.
    pub force: bool,
    /// Do not ask for confirmation.
    pub yes: bool,
}

#[derive(Debug, Clone)]
pub struct RevertRequest {
    pub target: Target,
    /// Copy the tmpfs contents back to the directory on disk first.
    pub keep_data: bool,
    /// Throw away what the tmpfs holds (required, or `keep_data`, when it holds files).
    pub discard: bool,
    /// Detach even when processes still use it.
    pub lazy: bool,
    /// Do not ask for confirmation.
    pub yes: bool,
}

/// An octal mode such as `1777` or `0o755`.
pub fn parse_mode(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s.trim_start_matches("0o"), 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| format!("mode {s:?} is not an octal mode such as 1777 or 0755"))
}

/// `tmpfsctl plan`: the plan; exit 1 when apply would refuse.
impl command::Request for PlanRequest {
    type Report = Plan;

    fn run(&self, ctx: &Context) -> Result<Plan> {
        let facts = gather_facts(ctx, &self.target)?;
        Ok(plan::plan(&facts, &self.opts)?)
    }
}

/// `tmpfsctl apply`.
impl command::Request for ApplyRequest {
    type Report = ApplyReport;

    fn run(&self, ctx: &Context) -> Result<ApplyReport> {
        apply::apply(ctx, self)
    }
}

/// `tmpfsctl revert`.
impl command::Request for RevertRequest {
    type Report = RevertReport;

    fn run(&self, ctx: &Context) -> Result<RevertReport> {
        revert::revert(ctx, self)
    }
}
