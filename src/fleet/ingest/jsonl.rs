//! JSON lines from `tmpfsctl collect` (or a flat form other tools can write).

use std::borrow::Cow;

use serde::Deserialize;

use super::parsed::{Bad, Parsed, bad, estimate_available};
use crate::fleet::collect;

#[derive(Deserialize)]
struct JPath<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
    used_bytes: u64,
    #[serde(default)]
    inodes: Option<u64>,
}

/// A `collect` JSON line; a flat form (`tmp_used_bytes` at the top) is also
/// accepted so other tools can produce input without nesting.
#[derive(Deserialize)]
struct JLine<'a> {
    #[serde(default)]
    schema_version: Option<u32>,
    #[serde(borrow)]
    host: Cow<'a, str>,
    #[serde(default)]
    timestamp_unix_s: Option<i64>,
    #[serde(borrow, default)]
    paths: Vec<JPath<'a>>,
    #[serde(default)]
    tmp_used_bytes: Option<u64>,
    #[serde(default)]
    tmp_inodes: Option<u64>,
    #[serde(default)]
    mem_total_bytes: Option<u64>,
    #[serde(default)]
    mem_available_bytes: Option<u64>,
    #[serde(default)]
    mem_free_bytes: Option<u64>,
    #[serde(default)]
    buffers_bytes: Option<u64>,
    #[serde(default)]
    cached_bytes: Option<u64>,
    #[serde(default)]
    swap_total_bytes: Option<u64>,
    #[serde(default)]
    swap_free_bytes: Option<u64>,
    #[serde(default)]
    swap_used_bytes: Option<u64>,
}

fn json_error(e: serde_json::Error) -> Bad {
    use serde_json::error::Category;
    let msg = e.to_string();
    // serde_json counts lines inside our single line: the column is what helps.
    let msg = match msg.rfind(" at line 1 column ") {
        Some(i) => format!(
            "{} (column {})",
            &msg[..i],
            &msg[i + " at line 1 column ".len()..]
        ),
        None => msg,
    };
    match e.classify() {
        Category::Data => bad("wrong or missing JSON field", msg),
        _ => bad("not valid JSON", msg),
    }
}

/// `text` is the line as &str when its block was validated as UTF-8 in one go:
/// serde_json then need not re-validate every string it meets.
pub(super) fn parse<'a>(
    line: &'a [u8],
    text: Option<&'a str>,
    path: &str,
) -> Result<Parsed<'a>, Bad> {
    let j: JLine = match text {
        Some(t) => serde_json::from_str(t).map_err(json_error)?,
        None => serde_json::from_slice(line).map_err(json_error)?,
    };
    if let Some(v) = j
        .schema_version
        .filter(|&v| v > collect::SNAPSHOT_SCHEMA_VERSION)
    {
        return Err(bad(
            "newer schema",
            format!("schema_version {v} is newer than this tmpfsctl understands; upgrade tmpfsctl"),
        ));
    }
    let (tmp, inodes) = if j.paths.is_empty() {
        match j.tmp_used_bytes {
            Some(t) => (t, j.tmp_inodes),
            None => {
                return Err(bad(
                    "no usage figure",
                    "neither `paths` nor `tmp_used_bytes` is present",
                ));
            }
        }
    } else {
        match j.paths.iter().find(|p| p.path == path) {
            Some(p) => (p.used_bytes, p.inodes),
            None => {
                let has: Vec<&str> = j.paths.iter().map(|p| p.path.as_ref()).collect();
                return Err(bad(
                    "path not collected",
                    format!(
                        "no entry for path {path} (it has {}); choose one with --path",
                        has.join(", ")
                    ),
                ));
            }
        }
    };
    let Some(mem_total) = j.mem_total_bytes else {
        return Err(bad(
            "wrong or missing JSON field",
            "missing field `mem_total_bytes`",
        ));
    };
    let swap_free = j.swap_free_bytes.or_else(|| {
        j.swap_used_bytes
            .zip(j.swap_total_bytes)
            .map(|(u, t)| t.saturating_sub(u))
    });
    Parsed {
        host: j.host,
        ts: j.timestamp_unix_s,
        tmp,
        inodes,
        mem_total,
        mem_avail: j
            .mem_available_bytes
            .or_else(|| estimate_available(j.mem_free_bytes, j.buffers_bytes, j.cached_bytes)),
        mem_free: j.mem_free_bytes,
        swap_total: j.swap_total_bytes,
        swap_free,
    }
    .validate()
}
