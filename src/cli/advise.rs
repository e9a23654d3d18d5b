//! `tmpfsctl advise` arguments, handed to [`crate::advise`] as an
//! [`AdviseRequest`].

use std::path::PathBuf;

use super::output::{Structured, json_help};
use crate::advise::AdviseRequest;
use crate::command::{Format, Output};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  tmpfsctl advise                 # about /tmp: ~30 s as root, ~15 s otherwise\n  \
tmpfsctl advise --quick /var/tmp\n  tmpfsctl advise --history /var/log/tmpfsctl/*.jsonl\n  \
tmpfsctl advise --prometheus http://prometheus:9090 --host web1:9100\n\n\
Reads the machine and measures in private scratch directories; it never changes the system.\n\
Exit codes: 0 nothing to change, 1 a change is recommended, 2 error.",
    mut_args(json_help("Print a JSON document (schema_version 1) instead of text", &[])),
)]
pub struct AdviseArgs {
    /// The directory to advise about
    #[arg(value_name = "DIR", default_value = "/tmp")]
    pub dir: PathBuf,
    /// Measure for under 10 s (smaller files, fewer runs)
    #[arg(long, conflicts_with_all = ["thorough", "no_bench"])]
    pub quick: bool,
    /// Run the full default bench suite (about a minute)
    #[arg(long, conflicts_with = "no_bench")]
    pub thorough: bool,
    /// Do not measure; decide from sizes alone
    #[arg(long)]
    pub no_bench: bool,
    /// Earlier `tmpfsctl collect` snapshots of this host: the peak usage in them is used
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub history: Vec<PathBuf>,
    /// Prometheus (or compatible) base URL: the peak usage over --window is used
    #[arg(long, value_name = "URL")]
    pub prometheus: Option<String>,
    /// History window for --prometheus (e.g. 7d, 24h)
    // Checked by the one duration grammar, kept as written for the report.
    #[arg(long, value_name = "DURATION", default_value = "7d",
          value_parser = |s: &str| crate::units::parse_seconds(s).map(|_| s.to_string()))]
    pub window: String,
    /// This host's name in --history / its instance label in --prometheus (default: the hostname)
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    #[command(flatten)]
    pub structured: Structured,
    /// DIR holds secrets: advise noswap where there is swap (never without this flag)
    #[arg(long)]
    pub secrets: bool,
    /// Also write a self-contained HTML report (with the measurement charts) to FILE, - (stdout) or fd:N
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl AdviseArgs {
    pub fn request(&self) -> AdviseRequest {
        AdviseRequest {
            dir: self.dir.clone(),
            quick: self.quick,
            thorough: self.thorough,
            no_bench: self.no_bench,
            history: self.history.clone(),
            prometheus: self.prometheus.clone(),
            window: self.window.clone(),
            host: self.host.clone(),
            secrets: self.secrets,
        }
    }

    /// The answer as text or `--json`; with `--html FILE` the page too.
    pub fn output(&self) -> Output {
        self.structured.on(Output::stdout(Format::TEXT)).export(
            "--html",
            Format::HTML,
            self.html.as_ref(),
        )
    }
}
