//! `tmpfsctl top` arguments.

use std::path::PathBuf;
use std::time::Duration;

use super::output::{Structured, json_help};
use crate::command::{Format, Output};
use crate::top::{Mode, TopQuery};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  tmpfsctl top\n  tmpfsctl top --once /tmp\n  tmpfsctl top --json | jq '.mounts[] | {mountpoint, deleted_open}'\n  tmpfsctl top --prom /var/lib/prometheus/node-exporter/tmpfsctl-top.prom\n\n\
used_bytes, size_bytes and the inode counts agree with `df -B1` and `df -i`. deleted_open lists files that were \
deleted but are still held open (the bytes `du` cannot see). accounted_bytes is what the report attributes of \
meminfo's Shmem; the rest is stated as unattributed.\n\n\
--prom FILE writes the tmpfsctl_* metrics (docs/metrics.md) for node_exporter's textfile collector: one snapshot, \
written aside in FILE's directory, fsynced and renamed over FILE. Run it from a systemd timer \
(examples/systemd/tmpfsctl-top.service and .timer):\n  \
ExecStart=/usr/bin/tmpfsctl top --prom /var/lib/prometheus/node-exporter/tmpfsctl-top.prom\n  \
OnUnitActiveSec=1min\n\
with node_exporter started with --collector.textfile.directory=/var/lib/prometheus/node-exporter. Growth is not \
written (one snapshot has no rate): Prometheus has it as deriv(tmpfsctl_mount_used_bytes[15m]). Alerting rules: \
examples/prometheus/tmpfsctl-alerts.yml.",
    mut_args(json_help("Print one snapshot as JSON (schema_version 3); implies --once", &["prom"])),
)]
pub struct TopArgs {
    /// Only the mounts holding these paths (default: every tmpfs and ramfs)
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print one snapshot and exit (the default when output is not a terminal)
    #[arg(long)]
    pub once: bool,
    #[command(flatten)]
    pub structured: Structured,
    /// Write one snapshot as node_exporter textfile-collector metrics to FILE, - (stdout) or fd:N
    /// (a FILE is replaced atomically) and exit
    #[arg(long, value_name = "FILE")]
    pub prom: Option<PathBuf>,
    /// Time between refreshes: seconds (2, 0.5) or with a unit (500ms, 1m); 0.1 s to 1 h
    #[arg(short = 'd', long = "delay", value_name = "SECS", default_value = "2", value_parser = parse_interval)]
    pub delay: Duration,
    /// Rows per list (largest directories, processes)
    #[arg(short = 'n', long = "top", value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub top: u16,
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = crate::units::parse_duration(s).map_err(|e| e.to_string())?;
    if !(Duration::from_millis(100)..=Duration::from_secs(3600)).contains(&d) {
        return Err(format!(
            "{s:?} is out of range; give 0.1 to 3600 seconds (e.g. 2, 0.5 or 500ms)"
        ));
    }
    Ok(d)
}

impl TopArgs {
    pub fn query(&self) -> TopQuery {
        TopQuery {
            paths: self.paths.clone(),
            top_n: usize::from(self.top),
            interval: self.delay,
            mode: if self.structured.any() || self.once || self.prom.is_some() {
                Mode::Once
            } else {
                Mode::Live
            },
        }
    }

    /// The snapshot's table, `--json`, or with `--prom FILE` only the
    /// metrics file (`-` or `fd:1`: on stdout).
    pub fn output(&self) -> Output {
        match &self.prom {
            Some(p) => Output::nothing().export("--prom", Format::PROM, Some(p)),
            None => self.structured.on(Output::stdout(Format::TEXT)),
        }
    }
}
