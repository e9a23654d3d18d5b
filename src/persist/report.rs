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
use crate::command::{ExitCode, Format, Report, json, text};

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
struct Versioned<'a, T: Serialize> {
    schema_version: u32,
    #[serde(flatten)]
    report: &'a T,
}

fn versioned<T: Serialize>(report: &T) -> Result<Vec<u8>> {
    json(&Versioned {
        schema_version: SCHEMA_VERSION,
        report,
    })
}

impl Report for PersistReport {
    fn render(&self, f: Format) -> Option<Result<Vec<u8>>> {
        use PersistReport as R;
        match (self, f) {
            (R::Enabled(r), Format::TEXT) => text(enable_text(r)),
            (R::Enabled(r), Format::JSON) => Some(versioned(r)),
            (R::Synced(s), Format::TEXT) => text(super::sync_text(&s.dir, &s.store, &s.report)),
            (R::Synced(s), Format::JSON) => Some(versioned(&s.report)),
            (R::Restored(r), Format::TEXT) => text(restore::text(r)),
            (R::Restored(r), Format::JSON) => Some(versioned(r)),
            (R::Status(r), Format::TEXT) => text(status::text(r)),
            (R::Status(r), Format::JSON) => Some(json(r)),
            (R::Status(r), Format::PROM) => text(status::prom_text(r)),
            (R::Verified(r), Format::TEXT) => text(verify::text(r)),
            (R::Verified(r), Format::JSON) => Some(json(r)),
            (R::Disabled(r), Format::TEXT) => text(disable_text(r)),
            (R::Disabled(r), Format::JSON) => Some(versioned(r)),
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

    /// A sync's notes follow its line on stderr; the JSON holds them.
    fn after(&self, stdout: Option<Format>) -> String {
        match self {
            PersistReport::Synced(s) if stdout != Some(Format::JSON) => {
                super::sync_after(&s.report)
            }
            _ => String::new(),
        }
    }
}
