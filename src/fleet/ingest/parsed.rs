//! A host as parsed from one input line, before it is packed into a
//! [`Row`]; the checks every format shares; why a line is rejected.

use std::borrow::Cow;

use super::store::{MAX_NAME_LEN, NAME_LEN_BITS, NO_TS, NONE, Row};
use crate::render::term::{excerpt, safe};

/// A host as parsed from one line, before it is packed into a [`Row`].
#[derive(Debug)]
pub(super) struct Parsed<'a> {
    pub host: Cow<'a, str>,
    pub ts: Option<i64>,
    pub tmp: u64,
    pub inodes: Option<u64>,
    pub mem_total: u64,
    pub mem_avail: Option<u64>,
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

    /// Pack into a row, the name appended to `names`; also gives the timestamp.
    /// The caller checks that `names` stays within [`MAX_NAMES_BYTES`].
    pub(super) fn into_row(self, names: &mut Vec<u8>) -> (Row, i64) {
        let off = names.len() as u64;
        let h = self.host.as_bytes();
        debug_assert!(h.len() <= MAX_NAME_LEN, "validate() bounds names");
        let h = &h[..h.len().min(MAX_NAME_LEN)];
        names.extend_from_slice(h);
        let row = Row {
            tmp_used: self.tmp,
            inodes: self.inodes.unwrap_or(NONE),
            mem_total: self.mem_total,
            mem_avail: self.mem_avail.unwrap_or(NONE),
            swap_total: self.swap_total.unwrap_or(NONE),
            swap_free: self.swap_free.unwrap_or(NONE),
            name: (off << NAME_LEN_BITS) | h.len() as u64,
        };
        (row, self.ts.unwrap_or(NO_TS))
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
