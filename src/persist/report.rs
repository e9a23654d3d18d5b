//! What each `persist` subcommand hands back, and how it shows: text, or
//! JSON with a `schema_version` like every other command's; `status` also
//! as node_exporter metrics (`--prom`).

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::admin::{EnableReport, enable_text};
use super::disable::{DisableReport, disable_text};
use super::restore::{self, RestoreReport};
use super::status::{self, StatusReport};
use super::sync::SyncReport;
use super::verify::{self, VerifyReport};
use crate::command::{ExitCode, Format, Report, text};

/// The version of the JSON documents of enable, sync, restore and disable
/// (status and verify carry theirs in their own reports).
pub const SCHEMA_VERSION: u32 = 1;

/// A sync's report and where it wrote.
#[derive(Debug)]
pub struct Synced {
    pub dir: PathBuf,
    pub store: PathBuf,
    pub report: SyncReport,
}

#[derive(Debug)]
pub enum PersistReport {
    Enabled(EnableReport),
    Synced(Synced),
    Restored(RestoreReport),
    Status(StatusReport),
    Verified(VerifyReport),
    Disabled(DisableReport),
}

/// A report that has no `schema_version` of its own, with it first.
#[derive(Serialize)]
pub struct Versioned<'a, T: Serialize> {
    schema_version: u32,
    #[serde(flatten)]
    report: &'a T,
}

fn versioned<T: Serialize>(report: &T) -> Versioned<'_, T> {
    Versioned {
        schema_version: SCHEMA_VERSION,
        report,
    }
}

/// The document of each subcommand's report, written as the report itself.
#[derive(Serialize)]
#[serde(untagged)]
pub enum PersistDocument<'a> {
    Enabled(Versioned<'a, EnableReport>),
    Synced(Versioned<'a, SyncReport>),
    Restored(Versioned<'a, RestoreReport>),
    Status(&'a StatusReport),
    Verified(&'a VerifyReport),
    Disabled(Versioned<'a, DisableReport>),
}

impl Report for PersistReport {
    type Document<'a> = PersistDocument<'a>;

    fn document(&self) -> Option<PersistDocument<'_>> {
        use PersistDocument as D;
        use PersistReport as R;
        Some(match self {
            R::Enabled(r) => D::Enabled(versioned(r)),
            R::Synced(s) => D::Synced(versioned(&s.report)),
            R::Restored(r) => D::Restored(versioned(r)),
            R::Status(r) => D::Status(r),
            R::Verified(r) => D::Verified(r),
            R::Disabled(r) => D::Disabled(versioned(r)),
        })
    }

    fn render(&self, f: Format) -> Option<Result<Vec<u8>>> {
        use PersistReport as R;
        match (self, f) {
            (R::Enabled(r), Format::TEXT) => text(enable_text(r)),
            (R::Synced(s), Format::TEXT) => text(super::sync_text(&s.dir, &s.store, &s.report)),
            (R::Restored(r), Format::TEXT) => text(restore::text(r)),
            (R::Status(r), Format::TEXT) => text(status::text(r)),
            (R::Status(r), Format::PROM) => text(status::prom_text(r)),
            (R::Verified(r), Format::TEXT) => text(verify::text(r)),
            (R::Disabled(r), Format::TEXT) => text(disable_text(r)),
            _ => None,
        }
    }

    /// 1: a sync stored a file torn (it changed while read), a directory
    /// is not syncing as it should, a store is damaged, or a restore left
    /// out a file no kept generation holds sound.
    fn exit_code(&self) -> ExitCode {
        match self {
            PersistReport::Synced(s) => {
                ExitCode::problem_if(!s.report.torn.is_empty() || !s.report.too_long.is_empty())
            }
            PersistReport::Status(r) => r.exit_code(),
            PersistReport::Verified(r) => r.exit_code(),
            PersistReport::Restored(r) => ExitCode::problem_if(!r.not_restored.is_empty()),
            _ => ExitCode::Ok,
        }
    }

    /// A sync's notes follow its line on stderr; the document holds them.
    fn after(&self, stdout: Option<Format>) -> String {
        match self {
            PersistReport::Synced(s) if !stdout.is_some_and(Format::is_structured) => {
                super::sync_after(&s.report)
            }
            _ => String::new(),
        }
    }
}
