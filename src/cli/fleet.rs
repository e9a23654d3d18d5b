//! `tmpfsctl collect` and `tmpfsctl fleet analyze` arguments: parsed and
//! checked here, then handed to the library as a [`CollectRequest`] or an
//! [`AnalyzeRequest`].

use std::path::PathBuf;

use anyhow::{Result, bail};

use super::output::{Structured, json_help};
use crate::command::{Format, Output};
use crate::fleet::analyze::{AnalyzeOptions, DEFAULT_BUCKETS};
use crate::fleet::collect::{self, HostName};
use crate::fleet::prom::PromOptions;
use crate::fleet::{AnalyzeRequest, AnalyzeSource, CollectRequest, FitParams};
use crate::units::{self, Size};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CollectFormatArg {
    /// One JSON object per line (what `fleet analyze` reads)
    Json,
    /// The 12-column /tmp survey TSV (Kirkland, 2016), sizes in KiB
    Kirkland,
    /// node_exporter textfile-collector metrics
    Prom,
}

impl CollectFormatArg {
    /// The report format each choice names: the one place collect's
    /// formats are told apart (the snapshot renders each in
    /// `fleet/collect.rs`).
    fn format(self) -> Format {
        match self {
            CollectFormatArg::Json => Format::JSON,
            CollectFormatArg::Kirkland => collect::KIRKLAND,
            CollectFormatArg::Prom => Format::PROM,
        }
    }
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  tmpfsctl collect >> fleet.jsonl\n  tmpfsctl collect --format kirkland\n  \
tmpfsctl collect --format prom --output /var/lib/prometheus/node-exporter/tmpfsctl.prom\n  \
tmpfsctl collect --anonymize --path /tmp --path /var/tmp\n\n\
Usage is counted like `du -s -x -B1` (allocated blocks, hard links once, other mounts not crossed); \
when the path is its own mount point, from statfs (which also sees files in unreadable directories). \
Runs unprivileged: unreadable directories are counted and reported, not fatal.\n\
examples/systemd/ has a service and timer that refresh the textfile every 5 minutes.",
    mut_args(json_help("The snapshot as one JSON line (what `fleet analyze` reads); the same as `--format json`, the default, spelled as on every other command", &["format"])),
)]
pub struct CollectArgs {
    /// Directory to measure (repeat for several)
    #[arg(long = "path", value_name = "DIR", default_value = "/tmp")]
    pub paths: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = CollectFormatArg::Json)]
    pub format: CollectFormatArg,
    #[command(flatten)]
    pub structured: Structured,
    /// Write the snapshot to FILE, - (stdout) or fd:N (a FILE is replaced atomically: temp file, fsync, rename)
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the host name with a stable salted hash (anon-<16 hex>)
    #[arg(long)]
    pub anonymize: bool,
    /// Salt for --anonymize; keep it secret and the same across the fleet
    #[arg(
        long,
        env = "TMPFSCTL_ANON_SALT",
        default_value = "",
        hide_env_values = true
    )]
    pub salt: String,
    /// Use NAME as the host name (default: the kernel's; with --sysroot DIR, DIR/proc/sys/kernel/hostname or DIR/etc/hostname)
    #[arg(long, value_name = "NAME", conflicts_with = "anonymize")]
    pub host: Option<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  tmpfsctl fleet analyze fleet.jsonl\n  \
tmpfsctl fleet analyze --prometheus http://prometheus:9090 --html fleet.html")]
pub struct FleetArgs {
    #[command(subcommand)]
    pub command: FleetCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum FleetCommand {
    /// Statistics, fit models and a tmpfs size recommendation for many hosts
    Analyze(AnalyzeArgs),
}

/// A bare number up to 1 (`0.99`) reads as that many per cent, which is
/// rarely what was meant: it must be written with `%` (`0.99%`, or `99%`).
fn not_a_fraction(s: &str, v: f64) -> Result<(), String> {
    if !s.trim().ends_with('%') && v > 0.0 && v <= 1.0 {
        return Err(format!(
            "{s:?} would read as {v}%, not {}%: write the share with %, e.g. {}% (or {v}% if that is meant)",
            v * 100.0,
            v * 100.0
        ));
    }
    Ok(())
}

fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage; write e.g. 99% or 99.5"))?;
    not_a_fraction(s, v)?;
    if !(v > 0.0 && v <= 100.0) {
        return Err(format!("{s:?} must be more than 0% and at most 100%"));
    }
    Ok(v)
}

fn parse_headroom(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage; write e.g. 25%"))?;
    not_a_fraction(s, v)?;
    if !(0.0..=1000.0).contains(&v) {
        return Err(format!("{s:?} must be between 0% and 1000%"));
    }
    Ok(v)
}

fn parse_size_arg(s: &str) -> Result<Size, String> {
    units::parse_size(s).map_err(|e| e.to_string())
}

fn parse_count_arg(s: &str) -> Result<u64, String> {
    units::parse_count(s).map_err(|e| e.to_string())
}

fn parse_bytes_arg(s: &str) -> Result<u64, String> {
    units::parse_bytes(s).map_err(|e| e.to_string())
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  tmpfsctl fleet analyze fleet.jsonl\n  \
tmpfsctl fleet analyze kirkland-tmpfs.txt --size 25% --target 99%\n  \
cat */snap.jsonl | tmpfsctl fleet analyze - --json | jq .recommendation\n  \
tmpfsctl fleet analyze --prometheus http://prometheus:9090 --window 14d --html report.html\n  \
tmpfsctl fleet analyze fleet.jsonl --export-json fleet.json --export-csv hosts.csv\n\n\
Input: JSON lines from `tmpfsctl collect`, the 12-column /tmp survey TSV (Kirkland, 2016): host, du KiB, \
free's six columns, swap's three, inodes; or CSV with a header (host, tmp_used_bytes, mem_total_bytes, optional tmp_inodes, mem_available_bytes, \
swap_total_bytes, swap_free_bytes, timestamp_unix_s; `_kb` variants accepted). A host seen twice \
keeps its newest snapshot.\n\
Exit codes: 0 the tmpfs size fits at least --target of the hosts, 1 it fits fewer, 2 error.",
    mut_args(json_help("Print the JSON document (schema_version 2) on stdout instead of the text report", &["markdown"])))]
pub struct AnalyzeArgs {
    /// Input files (`-` for stdin); formats may be mixed
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Read peak /tmp usage and memory from this Prometheus (or Thanos, Mimir, VictoriaMetrics) URL
    #[arg(long, value_name = "URL", conflicts_with = "files")]
    pub prometheus: Option<String>,
    /// Window for the peak (max_over_time) with --prometheus
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = units::parse_seconds)]
    pub window: u64,
    /// With --prometheus: use the latest value instead of the peak over --window
    #[arg(long, requires = "prometheus")]
    pub instant: bool,
    /// Label that names a host in Prometheus
    #[arg(long, value_name = "LABEL", default_value = "instance")]
    pub host_label: String,
    /// HTTP timeout for --prometheus
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = units::parse_seconds)]
    pub timeout: u64,
    /// Print the PromQL queries (to stderr) as they run
    #[arg(long, short)]
    pub verbose: bool,
    /// Which collected path is /tmp (JSON input and Prometheus labels)
    #[arg(long, value_name = "DIR", default_value = "/tmp")]
    pub path: String,
    /// Skip malformed lines (counted and reported) instead of stopping at the first
    #[arg(long)]
    pub skip_bad: bool,
    /// tmpfs size to test against: a share of each host's RAM or bytes
    #[arg(long, value_name = "SIZE", default_value = "50%", value_parser = parse_size_arg)]
    pub size: Size,
    /// tmpfs nr_inodes to test against (default: the kernel's, RAM pages / 2)
    #[arg(long, value_name = "N", value_parser = parse_count_arg)]
    pub nr_inodes: Option<u64>,
    /// Share of hosts the recommended size must fit
    #[arg(long, value_name = "PERCENT", default_value = "99%", value_parser = parse_percent)]
    pub target: f64,
    /// Room added on top of observed usage for the recommendation
    #[arg(long, value_name = "PERCENT", default_value = "25%", value_parser = parse_headroom)]
    pub headroom: f64,
    /// Extra usage thresholds for the "hosts under" table, e.g. 512M,2G
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = parse_bytes_arg)]
    pub buckets: Vec<u64>,
    /// At most this many host names per list (each fit model's misfits, outliers)
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub list: usize,
    /// Threads to read and analyze on (default: the cores this process may use); the report is the same for any count
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub structured: Structured,
    /// Print the report as Markdown instead of text
    #[arg(long)]
    pub markdown: bool,
    /// Also write the JSON document to FILE, - (stdout) or fd:N
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write one CSV row per host (its figures and whether it fits each model; readable by `fleet analyze`) to FILE, - (stdout) or fd:N
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write the Markdown report to FILE, - (stdout) or fd:N
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also write an HTML report with charts to FILE, - (stdout) or fd:N
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl CollectArgs {
    /// The format `--format` or a structured format's flag names.
    fn format(&self) -> Format {
        self.structured
            .chosen()
            .map_or_else(|| self.format.format(), |(_, f)| f)
    }

    /// The request, once the paths and the host name suit the format.
    pub fn request(&self) -> Result<CollectRequest> {
        let format = self.format();
        if format == collect::KIRKLAND && self.paths.len() != 1 {
            bail!("--format kirkland has a single /tmp column; give exactly one --path");
        }
        if format == Format::PROM && (self.anonymize || self.host.is_some()) {
            // Silently ignoring these would let someone believe the metrics hide
            // or rename the host, while Prometheus labels them with the scrape
            // target's `instance`.
            bail!(
                "--{} has no effect with --format prom: the textfile carries no host name, Prometheus labels the samples with the scrape target (`instance`); \
                 rename or hash that label in Prometheus (relabel_configs), or use --format json / kirkland",
                if self.anonymize { "anonymize" } else { "host" }
            );
        }
        let host = match (&self.host, self.anonymize) {
            (Some(h), _) => HostName::Fixed(h.clone()),
            // The metrics carry no host name: do not fail for want of one (a
            // sysroot with neither hostname file) when nothing would print it.
            (None, _) if format == Format::PROM => HostName::Unused,
            (None, true) => HostName::Anonymized {
                salt: self.salt.clone(),
            },
            (None, false) => HostName::Real,
        };
        Ok(CollectRequest {
            paths: self.paths.clone(),
            host,
        })
    }

    /// The snapshot in its format, on stdout or (`--output FILE`) only in FILE.
    pub fn output(&self) -> Output {
        let format = self.format();
        match &self.output {
            Some(f) => Output::nothing().export("--output", format, Some(f)),
            None => Output::stdout(format),
        }
    }
}

impl AnalyzeArgs {
    pub fn request(&self) -> AnalyzeRequest {
        let mut buckets = DEFAULT_BUCKETS.to_vec();
        buckets.extend(self.buckets.iter().copied());
        let source = match &self.prometheus {
            Some(url) => AnalyzeSource::Prometheus(PromOptions {
                url: url.clone(),
                window_s: (!self.instant).then_some(self.window),
                host_label: self.host_label.clone(),
                path: self.path.clone(),
                timeout_s: self.timeout,
                verbose: self.verbose,
            }),
            None => AnalyzeSource::Files {
                files: self.files.clone(),
                skip_bad: self.skip_bad,
            },
        };
        AnalyzeRequest {
            source,
            path: self.path.clone(),
            options: AnalyzeOptions {
                fit: FitParams {
                    size: self.size,
                    nr_inodes: self.nr_inodes,
                },
                target_percent: self.target,
                headroom_percent: self.headroom,
                buckets,
                list: self.list,
                threads: self.threads.map_or(0, usize::from),
            },
        }
    }

    /// The report (text, `--json` or `--markdown`) on stdout, and the files
    /// named besides.
    pub fn output(&self) -> Output {
        self.structured
            .on(Output::stdout(Format::TEXT))
            .or_when(self.markdown, "--markdown", Format::MARKDOWN)
            .report_files(
                self.export_json.as_ref(),
                self.export_csv.as_ref(),
                self.export_markdown.as_ref(),
                self.html.as_ref(),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn percent_arguments() {
        assert_eq!(parse_percent("99%"), Ok(99.0));
        assert_eq!(parse_percent("99.5"), Ok(99.5));
        assert!(parse_percent("0").is_err());
        assert!(parse_percent("101%").is_err());
        assert_eq!(parse_bytes_arg("512M"), Ok(512 << 20));
        assert!(parse_bytes_arg("50%").is_err());
    }

    #[test]
    fn help_names_the_survey_format_by_what_it_is() {
        use clap::CommandFactory;
        let mut c = Cli::command();
        c.build();
        let help = c
            .find_subcommand_mut("fleet")
            .and_then(|f| f.find_subcommand_mut("analyze"))
            .map(|a| a.render_long_help().to_string())
            .unwrap();
        assert!(help.contains("(Kirkland, 2016)"), "{help}");
        assert!(!help.to_lowercase().contains("seed"), "{help}");
    }

    fn collect(args: &[&str]) -> Result<CollectRequest> {
        use clap::Parser;
        let mut v = vec!["tmpfsctl", "collect"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).unwrap().command {
            Command::Collect(a) => a.request(),
            _ => unreachable!(),
        }
    }

    /// The format is checked against the paths and the host name before
    /// anything is measured, and the request says only how to name the host.
    #[test]
    fn collect_checks_its_format_against_paths_and_host_name() {
        let e = collect(&["--format", "kirkland", "--path", "/a", "--path", "/b"]).unwrap_err();
        assert!(e.to_string().contains("exactly one --path"), "{e}");
        for flag in [&["--anonymize"][..], &["--host", "web-1"][..]] {
            let mut a = vec!["--format", "prom"];
            a.extend_from_slice(flag);
            let e = collect(&a).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("{} has no effect with --format prom", flag[0])),
                "{e}"
            );
        }
        let r = |a: &[&str]| collect(a).unwrap().host;
        assert!(matches!(r(&["--format", "prom"]), HostName::Unused));
        assert!(matches!(r(&[]), HostName::Real));
        assert!(matches!(r(&["--json"]), HostName::Real));
        assert!(matches!(r(&["--host", "h"]), HostName::Fixed(h) if h == "h"));
        assert!(
            matches!(r(&["--anonymize", "--salt", "s"]), HostName::Anonymized { salt } if salt == "s")
        );
        assert_eq!(collect(&["--format", "kirkland"]).unwrap().paths.len(), 1);
    }
}
