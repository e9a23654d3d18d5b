//! Fleet figures from Prometheus (or anything speaking its HTTP query API:
//! Thanos, Mimir, VictoriaMetrics).
//!
//! /tmp usage per host is `node_filesystem_size_bytes - node_filesystem_avail_bytes`
//! where /tmp is a mount, else the `tmpfsctl_path_used_bytes` textfile metric
//! that `tmpfsctl collect --format prom` writes. By default every figure is the
//! worst case over the window: the peak usage (`max_over_time`) against the
//! lowest MemAvailable and SwapFree (`min_over_time`).

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Result;

use super::ingest::{Fleet, HostRecord, IngestReport};
use super::prom_answer::{self, Fold};
use crate::command;
use crate::term::{excerpt, safe};

#[derive(Debug, Clone)]
pub struct PromOptions {
    /// Base URL, e.g. http://prometheus:9090 (without /api/v1).
    pub url: String,
    /// Peak over this many seconds; None = instant (latest value).
    pub window_s: Option<u64>,
    pub host_label: String,
    /// The directory whose usage is wanted (`mountpoint=` / `path=` label value).
    pub path: String,
    pub timeout_s: u64,
    pub verbose: bool,
}

/// PromQL string literal (double-quoted, Go escapes).
fn lit(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The queries, in order: fs used, textfile used, fs inodes, textfile inodes,
/// MemTotal, MemAvailable, SwapTotal, SwapFree, MemFree.
pub fn queries(o: &PromOptions) -> [String; 9] {
    let mp = format!("{{mountpoint={}}}", lit(&o.path));
    let pl = format!("{{path={}}}", lit(&o.path));
    match o.window_s {
        Some(w) => {
            let r = format!("[{w}s]");
            [
                format!(
                    "max_over_time(node_filesystem_size_bytes{mp}{r}) - min_over_time(node_filesystem_avail_bytes{mp}{r})"
                ),
                format!("max_over_time(tmpfsctl_path_used_bytes{pl}{r})"),
                format!(
                    "max_over_time(node_filesystem_files{mp}{r}) - min_over_time(node_filesystem_files_free{mp}{r})"
                ),
                format!("max_over_time(tmpfsctl_path_inodes{pl}{r})"),
                format!("last_over_time(node_memory_MemTotal_bytes{r})"),
                format!("min_over_time(node_memory_MemAvailable_bytes{r})"),
                format!("last_over_time(node_memory_SwapTotal_bytes{r})"),
                format!("min_over_time(node_memory_SwapFree_bytes{r})"),
                format!("min_over_time(node_memory_MemFree_bytes{r})"),
            ]
        }
        None => [
            format!("node_filesystem_size_bytes{mp} - node_filesystem_avail_bytes{mp}"),
            format!("tmpfsctl_path_used_bytes{pl}"),
            format!("node_filesystem_files{mp} - node_filesystem_files_free{mp}"),
            format!("tmpfsctl_path_inodes{pl}"),
            "node_memory_MemTotal_bytes".into(),
            "node_memory_MemAvailable_bytes".into(),
            "node_memory_SwapTotal_bytes".into(),
            "node_memory_SwapFree_bytes".into(),
            "node_memory_MemFree_bytes".into(),
        ],
    }
}

struct Client {
    agent: ureq::Agent,
    base: String,
    verbose: bool,
}

impl Client {
    fn new(o: &PromOptions) -> Result<Client> {
        let base = o.url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            anyhow::bail!(
                "--prometheus {}: give an http:// or https:// URL, e.g. http://prometheus:9090",
                o.url
            );
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(o.timeout_s)))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(Client {
            agent,
            base,
            verbose: o.verbose,
        })
    }

    /// Run one instant query; its series folded per host (see [`Fold`]) as
    /// the answer is read.
    fn query(&self, q: &str, fold: &mut Fold<'_>) -> Result<()> {
        if self.verbose {
            command::say(&format!("PromQL: {}", safe(q)));
        }
        let url = format!("{}/api/v1/query", self.base);
        let mut resp = self.agent.get(&url).query("query", q).call().map_err(|e| {
            anyhow::anyhow!(
                "cannot reach Prometheus at {}: {e}; check the URL and that it is up (`curl {}/-/ready`)",
                self.base,
                self.base
            )
        })?;
        let status = resp.status().as_u16();
        let mut body = std::io::BufReader::with_capacity(
            64 << 10,
            Bounded {
                inner: resp.body_mut().with_config().reader(),
                read: 0,
                start: Vec::new(),
            },
        );
        let parsed = prom_answer::parse(&mut body, fold);
        let body = body.into_inner();
        if body.read > MAX_ANSWER_BYTES {
            anyhow::bail!(
                "the answer of {} is larger than {} once decompressed; stopped reading \
                 (an instant query over 500 000 hosts answers less): check what answers at that URL",
                safe(&url),
                crate::units::fmt_bytes(MAX_ANSWER_BYTES)
            );
        }
        // The body is shown short and escaped: any server (or a proxy's
        // binary error page) can be at that URL.
        let snippet = excerpt(&body.start, 200);
        let api = match parsed {
            Ok(a) => a,
            Err(_) if !(200..300).contains(&status) => anyhow::bail!(
                "Prometheus at {} answered HTTP {status} to {url}: {snippet}; give the server's base URL \
                 (without /api/v1), e.g. http://prometheus:9090",
                self.base
            ),
            Err(e) if e.is_io() => anyhow::bail!("reading the answer of {}: {e}", safe(&url)),
            Err(e) => anyhow::bail!(
                "{url} did not answer with Prometheus API JSON ({e}): {snippet}; is {} a Prometheus-compatible server?",
                self.base
            ),
        };
        if api.status.as_deref() != Some("success") {
            anyhow::bail!(
                "Prometheus at {} rejected the query (HTTP {status}, {}): {}\n  query: {q}",
                self.base,
                safe(&api.error_type.unwrap_or_default()),
                safe(&api.error.unwrap_or_default())
            );
        }
        if !api.has_data {
            anyhow::bail!("Prometheus at {} answered without data to: {q}", self.base);
        }
        let rt = api.result_type.unwrap_or_default();
        if rt != "vector" {
            anyhow::bail!(
                "Prometheus at {} answered a {} to an instant query, expected a vector: {q}",
                self.base,
                safe(&rt)
            );
        }
        if fold.not_series > 0 {
            anyhow::bail!(
                "unexpected result shape from {url}: {} elements of its vector are not {{metric, value}} series",
                fold.not_series
            );
        }
        Ok(())
    }
}

/// The most of one answer read, counted after decompression: ureq's own
/// limit counts the bytes on the wire, so a 2 MiB gzip answer could grow to
/// gigabytes. Memory does not follow this figure (the answer is folded per
/// host as it is read); it bounds the time a server can keep us reading. An
/// instant vector for 500 000 hosts is under 150 MiB.
pub const MAX_ANSWER_BYTES: u64 = 256 << 20;

/// The decoded body (gzip, brotli), which ends early once more than
/// [`MAX_ANSWER_BYTES`] came; it keeps its first bytes for error messages.
struct Bounded<R> {
    inner: R,
    read: u64,
    start: Vec<u8>,
}

impl<R: std::io::Read> std::io::Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.read > MAX_ANSWER_BYTES {
            return Err(std::io::Error::other("answer too large"));
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        let keep = 256usize.saturating_sub(self.start.len()).min(n);
        self.start.extend_from_slice(&buf[..keep]);
        Ok(n)
    }
}

/// Fetch every host's figures. Returns the fleet, an input report (hosts
/// dropped and why) and the PromQL that ran.
pub fn fetch(o: &PromOptions) -> Result<(Fleet, IngestReport, Vec<String>)> {
    let c = Client::new(o)?;
    let qs = queries(o);
    let mut unlabeled = 0u64;
    let mut res: Vec<HashMap<String, u64>> = Vec::with_capacity(qs.len());
    for (i, q) in qs.iter().enumerate() {
        let pick: fn(u64, u64) -> u64 = if i == 5 || i == 7 || i == 8 {
            u64::min
        } else {
            u64::max
        };
        let mut fold = Fold::new(&o.host_label, pick);
        c.query(q, &mut fold)?;
        unlabeled += fold.unlabeled;
        res.push(fold.hosts);
    }
    let what = if o.window_s.is_some() {
        "peak"
    } else {
        "latest"
    };
    let (fs_used, tf_used) = (&res[0], &res[1]);
    if fs_used.is_empty() && tf_used.is_empty() {
        anyhow::bail!(
            "Prometheus at {} has no {what} usage for {} under label `{}`{}: neither node_filesystem_*{{mountpoint=\"{}\"}} \
             (it is not a mount) nor tmpfsctl_path_used_bytes{{path=\"{}\"}} (install `tmpfsctl collect --format prom` \
             with node_exporter's textfile collector, see examples/systemd){}",
            c.base,
            o.path,
            o.host_label,
            if unlabeled > 0 {
                format!(" ({unlabeled} series lack that label; see --host-label)")
            } else {
                String::new()
            },
            o.path,
            o.path,
            match o.window_s {
                Some(w) => format!(", or widen --window (now {})", super::render::fmt_secs(w)),
                None => String::new(),
            }
        );
    }
    let mut hosts: Vec<&String> = fs_used.keys().chain(tf_used.keys()).collect();
    hosts.sort();
    hosts.dedup();
    let mut fleet = Fleet::default();
    let mut report = IngestReport::default();
    let mut no_mem = Vec::new();
    for h in hosts {
        // A real mount's figure wins: it also sees what the walk could not read.
        let (used, inodes) = match fs_used.get(h) {
            Some(u) => (*u, res[2].get(h).copied()),
            None => (tf_used[h], res[3].get(h).copied()),
        };
        let Some(&mem_total) = res[4].get(h).filter(|&&m| m > 0) else {
            no_mem.push(h.clone());
            continue;
        };
        let rec = HostRecord {
            host: h.clone(),
            timestamp_unix_s: None,
            tmp_used_bytes: used,
            tmp_inodes: inodes,
            mem_total_bytes: mem_total,
            mem_available_bytes: res[5].get(h).copied().map(|a| a.min(mem_total)),
            mem_free_bytes: res[8].get(h).copied().map(|f| f.min(mem_total)),
            swap_total_bytes: res[6].get(h).copied(),
            swap_free_bytes: res[7]
                .get(h)
                .copied()
                .map(|f| f.min(res[6].get(h).copied().unwrap_or(f))),
        };
        fleet.push(&rec, "prometheus", 0)?;
    }
    if !no_mem.is_empty() {
        report.note_skipped(
            "no node_memory_MemTotal_bytes",
            no_mem.len() as u64,
            format!(
                "host {} has /tmp usage but no memory figures; is node_exporter's meminfo collector on?",
                no_mem[0]
            ),
        );
    }
    if fleet.is_empty() {
        anyhow::bail!(
            "Prometheus at {} has /tmp usage for {} hosts but none of them has node_memory_MemTotal_bytes; \
             enable node_exporter's meminfo collector",
            c.base,
            no_mem.len()
        );
    }
    report.records = fleet.len() as u64;
    Ok((fleet, report, qs.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_queries_use_the_window_and_escape_the_path() {
        let o = PromOptions {
            url: "http://x".into(),
            window_s: Some(7 * 86400),
            host_label: "instance".into(),
            path: "/t\"mp".into(),
            timeout_s: 1,
            verbose: false,
        };
        let q = queries(&o);
        assert_eq!(
            q[0],
            "max_over_time(node_filesystem_size_bytes{mountpoint=\"/t\\\"mp\"}[604800s]) - \
             min_over_time(node_filesystem_avail_bytes{mountpoint=\"/t\\\"mp\"}[604800s])"
        );
        assert_eq!(
            q[1],
            "max_over_time(tmpfsctl_path_used_bytes{path=\"/t\\\"mp\"}[604800s])"
        );
        assert_eq!(
            q[5],
            "min_over_time(node_memory_MemAvailable_bytes[604800s])"
        );
        let i = queries(&PromOptions {
            window_s: None,
            ..o
        });
        assert_eq!(i[4], "node_memory_MemTotal_bytes");
    }

    #[test]
    fn bad_url_scheme_is_refused_before_any_request() {
        let o = PromOptions {
            url: "localhost:9090".into(),
            window_s: None,
            host_label: "instance".into(),
            path: "/tmp".into(),
            timeout_s: 1,
            verbose: false,
        };
        let e = fetch(&o).unwrap_err().to_string();
        assert!(e.contains("give an http:// or https:// URL"), "{e}");
    }
}
