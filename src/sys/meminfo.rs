//! /proc/meminfo: `Key:   value kB` lines; values are converted to bytes.

use super::ParseWarning;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemInfo {
    pub mem_total_bytes: u64,
    pub mem_free_bytes: u64,
    pub mem_available_bytes: u64,
    pub buffers_bytes: u64,
    pub cached_bytes: u64,
    /// tmpfs and shared-memory pages: where tmpfs data is counted.
    pub shmem_bytes: u64,
    pub swap_total_bytes: u64,
    pub swap_free_bytes: u64,
}

impl MemInfo {
    /// The most one tmpfs may still take before memory runs out, so that a
    /// writer filling it meets ENOSPC before the OOM killer: RAM + swap less what
    /// RAM filesystems `held` already, and no more than MemAvailable + SwapFree
    /// (what processes leave) where the kernel reports MemAvailable (non-zero).
    /// One rule for `status` and `plan` (their `tmpfs_overcommit`).
    pub fn left_for_tmpfs(&self, held: u64) -> u64 {
        let left = self
            .mem_total_bytes
            .saturating_add(self.swap_total_bytes)
            .saturating_sub(held);
        if self.mem_available_bytes == 0 {
            return left;
        }
        left.min(
            self.mem_available_bytes
                .saturating_add(self.swap_free_bytes),
        )
    }

    pub fn swap_used_bytes(&self) -> u64 {
        self.swap_total_bytes.saturating_sub(self.swap_free_bytes)
    }
}

/// Parse the file. Lines that are not `Key: number [kB]`, or whose value would
/// overflow, are skipped with a warning. A kernel older than 3.14 has no
/// MemAvailable: it is then estimated as MemFree + Buffers + Cached.
pub fn parse(text: &[u8]) -> (MemInfo, Vec<ParseWarning>) {
    let mut m = MemInfo::default();
    let mut warnings = Vec::new();
    let mut have_available = false;
    for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
        if raw.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let warn = |reason: String| ParseWarning {
            line: i + 1,
            reason: format!("meminfo: {reason}"),
        };
        let Ok(line) = std::str::from_utf8(raw) else {
            warnings.push(warn("line is not text".into()));
            continue;
        };
        let Some((key, rest)) = line.split_once(':') else {
            warnings.push(warn(format!("no ':' in {line:?}")));
            continue;
        };
        let mut parts = rest.split_whitespace();
        let Some(num) = parts.next() else {
            warnings.push(warn(format!("{key} has no value")));
            continue;
        };
        let Ok(n) = num.parse::<u64>() else {
            warnings.push(warn(format!(
                "{key} value {num:?} is not a number that fits 64 bits"
            )));
            continue;
        };
        let mult = match parts.next() {
            None => 1,
            Some(u) if u.eq_ignore_ascii_case("kb") => 1024,
            Some(u) => {
                warnings.push(warn(format!("{key} has unknown unit {u:?}")));
                continue;
            }
        };
        let Some(bytes) = n.checked_mul(mult) else {
            warnings.push(warn(format!("{key} value {n} kB overflows bytes")));
            continue;
        };
        match key.trim() {
            "MemTotal" => m.mem_total_bytes = bytes,
            "MemFree" => m.mem_free_bytes = bytes,
            "MemAvailable" => {
                m.mem_available_bytes = bytes;
                have_available = true;
            }
            "Buffers" => m.buffers_bytes = bytes,
            "Cached" => m.cached_bytes = bytes,
            "Shmem" => m.shmem_bytes = bytes,
            "SwapTotal" => m.swap_total_bytes = bytes,
            "SwapFree" => m.swap_free_bytes = bytes,
            _ => {}
        }
    }
    if !have_available {
        m.mem_available_bytes = m
            .mem_free_bytes
            .saturating_add(m.buffers_bytes)
            .saturating_add(m.cached_bytes);
    }
    (m, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"MemTotal:       24684084 kB\n\
MemFree:        23000000 kB\n\
MemAvailable:   23500000 kB\n\
Buffers:            2048 kB\n\
Cached:           600000 kB\n\
SwapCached:            0 kB\n\
Shmem:             16384 kB\n\
SwapTotal:       2097148 kB\n\
SwapFree:        2000000 kB\n\
HugePages_Total:       0\n";

    #[test]
    fn parses_kb_to_bytes() {
        let (m, w) = parse(SAMPLE);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(m.mem_total_bytes, 24684084 * 1024);
        assert_eq!(m.mem_available_bytes, 23500000 * 1024);
        assert_eq!(m.shmem_bytes, 16384 * 1024);
        assert_eq!(m.swap_used_bytes(), 97148 * 1024);
    }

    #[test]
    fn estimates_available_on_old_kernels() {
        let (m, _) = parse(b"MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 10 kB\nCached: 50 kB\n");
        assert_eq!(m.mem_available_bytes, 160 * 1024);
    }

    #[test]
    fn hostile_input_is_skipped_not_fatal() {
        let text = b"MemTotal: 1000 kB\nMemFree 5 kB\nShmem: 99999999999999999999999 kB\n\
SwapTotal: 18446744073709551615 kB\nCached: \xff\xfe kB\nBuffers:\nMemAvailable: 7 MB\nSwapFree: 12";
        let (m, w) = parse(text);
        assert_eq!(m.mem_total_bytes, 1000 * 1024);
        assert_eq!(m.swap_free_bytes, 12);
        assert_eq!(m.shmem_bytes, 0);
        assert_eq!(w.len(), 6, "{w:?}");
        assert!(w.iter().any(|x| x.reason.contains("overflows")));
    }
}
