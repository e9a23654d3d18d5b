//! A host as parsed from one input line, before it is packed into a
//! store row; the checks every format shares; why a line is rejected.

use std::borrow::Cow;

use crate::term::{excerpt, safe};

/// The store's mark for an absent figure: a value no line may carry.
pub(super) const NONE: u64 = u64::MAX;

/// A name is packed into a store row as `offset << NAME_LEN_BITS | length`:
/// names up to 16 MiB each, 1 TiB of names in all (both far beyond a real
/// fleet; over them ingest stops with an error rather than wrap). A line
/// with a longer name is bad.
pub(super) const NAME_LEN_BITS: u32 = 24;
pub(super) const MAX_NAME_LEN: usize = (1 << NAME_LEN_BITS) - 1;

/// A host as parsed from one line, before the store packs it into a row.
#[derive(Debug)]
pub(super) struct Parsed<'a> {
    pub host: Cow<'a, str>,
    pub ts: Option<i64>,
    pub tmp: u64,
    pub inodes: Option<u64>,
    pub mem_total: u64,
    pub mem_avail: Option<u64>,
    /// MemFree: memory used for nothing at all, the Kirkland study's "free".
    pub mem_free: Option<u64>,
    pub swap_total: Option<u64>,
    pub swap_free: Option<u64>,
}

/// Why a line was rejected: a short kind (for counting) and the specifics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad {
    pub kind: &'static str,
    pub detail: String,
}

pub(super) fn bad(kind: &'static str, detail: impl Into<String>) -> Bad {
    Bad {
        kind,
        detail: detail.into(),
    }
}

/// The error that stops a run at a bad line (without `--skip-bad`). The
/// detail can quote the input (serde_json repeats a bad string value):
/// shown short and escaped, never raw on the terminal.
pub(super) fn bad_line_message(file: &str, line: u64, b: &Bad) -> String {
    format!(
        "{}:{line}: {}: {}; fix the line, or pass --skip-bad to skip such lines and count them",
        safe(file),
        b.kind,
        excerpt(b.detail.as_bytes(), 300)
    )
}

impl Parsed<'_> {
    pub(super) fn validate(self) -> Result<Self, Bad> {
        if self.host.trim().is_empty() {
            return Err(bad("empty host name", "the host name is empty"));
        }
        if self.host.len() > MAX_NAME_LEN {
            return Err(bad(
                "host name too long",
                format!(
                    "the host name is {} bytes, more than {MAX_NAME_LEN}",
                    self.host.len()
                ),
            ));
        }
        if self.mem_total == 0 {
            return Err(bad(
                "zero RAM",
                "total memory is 0: not a real host's figures",
            ));
        }
        if let Some(a) = self.mem_avail.filter(|&a| a != NONE && a > self.mem_total) {
            return Err(bad(
                "inconsistent memory",
                format!(
                    "available memory {a} B is more than total {} B",
                    self.mem_total
                ),
            ));
        }
        if let Some(f) = self.mem_free.filter(|&f| f != NONE && f > self.mem_total) {
            return Err(bad(
                "inconsistent memory",
                format!("free memory {f} B is more than total {} B", self.mem_total),
            ));
        }
        if let (Some(t), Some(f)) = (self.swap_total, self.swap_free)
            && f > t
        {
            return Err(bad(
                "inconsistent swap",
                format!("free swap {f} B is more than total swap {t} B"),
            ));
        }
        for v in [self.tmp, self.mem_total] {
            if v == NONE {
                return Err(bad(
                    "value too large",
                    "a value is 2^64-1, which cannot be a size",
                ));
            }
        }
        Ok(self)
    }
}

/// Old kernels and Kirkland's `free` output have no MemAvailable: estimate it
/// the way the kernel did before 3.14 (free + buffers + cache).
pub(super) fn estimate_available(
    free: Option<u64>,
    buffers: Option<u64>,
    cached: Option<u64>,
) -> Option<u64> {
    free.map(|f| {
        f.saturating_add(buffers.unwrap_or(0))
            .saturating_add(cached.unwrap_or(0))
    })
}

pub(super) fn parse_u64(field: &[u8], what: &str) -> Result<u64, Bad> {
    std::str::from_utf8(field)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| {
            bad(
                "not a number",
                // Quoted short and escaped: the field may be binary garbage.
                format!(
                    "{what} \"{}\" is not a whole non-negative number",
                    excerpt(field, 40)
                ),
            )
        })
}

pub(super) fn kib(v: u64, what: &str) -> Result<u64, Bad> {
    v.checked_mul(1024).ok_or_else(|| {
        bad(
            "value too large",
            format!("{what} {v} KiB does not fit 64 bits in bytes"),
        )
    })
}
