//! Sizes as people and tmpfs write them (`512M`, `2G`, `50%`) and as we print them.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SizeError {
    #[error("size {0:?} is empty; write e.g. 512M, 2G or 50%")]
    Empty(String),
    #[error("size {0:?} is not a number with an optional unit; write e.g. 512M, 2G or 50%")]
    Syntax(String),
    #[error("size {0:?} is too large")]
    Overflow(String),
    #[error("size {0:?} is a percentage of RAM, which is not allowed here; give bytes, e.g. 2G")]
    PercentNotAllowed(String),
    #[error("size {0:?} is more than 100% of RAM")]
    PercentTooLarge(String),
    #[error(
        "size {size} is more than this machine's RAM + swap ({limit}): a tmpfs that large is no cap \
         at all (tmpfs would take pages the machine does not have); give at most {limit}, or pass \
         --force if that is really meant"
    )]
    AboveMemory { size: String, limit: String },
    /// `0`, `0%`, or a share of RAM that rounds to no bytes: tmpfs reads
    /// `size=0` as "no limit", the opposite of what a size asks for.
    #[error(
        "size {0:?} would mean \"no limit\" to tmpfs (size=0 turns the cap off); give a positive \
         size such as 512M or 10%"
    )]
    Zero(String),
}

/// What one inode of a tmpfs may cost, in bytes of the cap: a tmpfs made by
/// tmpfsctl gets `nr_inodes` = its size / this (at least [`MIN_TMPFS_INODES`]).
/// An empty file pins about 1 KiB of unswappable kernel memory that `size=`
/// does not count (measured: 200,000 empty files took 1,076 B each of slab,
/// shmem_inode_cache 752 B + dentry 192 B, kernel 6.18), so inodes can pin at
/// most about 27% of the size on top of it.
pub const TMPFS_BYTES_PER_INODE: u64 = 4096;
/// The fewest inodes a tmpfs made by tmpfsctl gets, so a tiny cap still
/// holds a few files (64 empty inodes pin about 68 KiB).
pub const MIN_TMPFS_INODES: u64 = 64;

/// `nr_inodes` for a tmpfs of `size_bytes`: one per [`TMPFS_BYTES_PER_INODE`]
/// (the root directory takes one), at least [`MIN_TMPFS_INODES`].
pub fn tmpfs_inodes_for(size_bytes: u64) -> u64 {
    (size_bytes / TMPFS_BYTES_PER_INODE).max(MIN_TMPFS_INODES)
}

/// The one rule for a tmpfs cap, on every command that takes one (`plan`,
/// `apply`, `run`, `persist enable`): positive, and no more than RAM + swap
/// (which also keeps it far below what the kernel's `size=` can express; a
/// larger value wraps to 0, which tmpfs reads as "no limit"). `force` lets a
/// cap above RAM + swap through (an overcommit on purpose), never a zero one.
/// `given` is the size as the user wrote it, named in the error.
pub fn check_tmpfs_cap(
    given: &str,
    bytes: u64,
    mem_total_bytes: u64,
    swap_total_bytes: u64,
    force: bool,
) -> Result<(), SizeError> {
    if bytes == 0 {
        return Err(SizeError::Zero(given.to_string()));
    }
    let limit = mem_total_bytes.saturating_add(swap_total_bytes);
    if bytes > limit && !force {
        return Err(SizeError::AboveMemory {
            size: format!("{given} ({})", fmt_bytes(bytes)),
            limit: fmt_bytes(limit),
        });
    }
    Ok(())
}

/// A size as given by the user: either absolute bytes or a share of RAM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Size {
    Bytes(u64),
    PercentOfRam(f64),
}

impl Size {
    /// Resolve against the machine's RAM (MemTotal), the way tmpfs resolves `size=50%`.
    pub fn resolve(self, mem_total_bytes: u64) -> u64 {
        match self {
            Size::Bytes(b) => b,
            Size::PercentOfRam(p) => ((mem_total_bytes as f64) * p / 100.0) as u64,
        }
    }
}

impl std::str::FromStr for Size {
    type Err = SizeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_size(s)
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Size::Bytes(b) => write!(f, "{}", tmpfs_size_option(*b)),
            Size::PercentOfRam(p) => write!(f, "{p}%"),
        }
    }
}

/// Parse `123`, `4k`, `512M`, `2G`, `1T`, `1.5G`, `50%`, `2GiB`, `2GB`.
/// Units are binary (k = 1024) as in tmpfs(5) and `mount -o size=`.
pub fn parse_size(input: &str) -> Result<Size, SizeError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(SizeError::Empty(input.to_string()));
    }
    if let Some(num) = s.strip_suffix('%') {
        let p: f64 = num
            .trim()
            .parse()
            .map_err(|_| SizeError::Syntax(input.to_string()))?;
        if !p.is_finite() || p < 0.0 {
            return Err(SizeError::Syntax(input.to_string()));
        }
        if p == 0.0 {
            return Err(SizeError::Zero(input.to_string()));
        }
        if p > 100.0 {
            return Err(SizeError::PercentTooLarge(input.to_string()));
        }
        return Ok(Size::PercentOfRam(p));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return Err(SizeError::Syntax(input.to_string()));
    }
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "p" | "pb" | "pib" => 1 << 50,
        _ => return Err(SizeError::Syntax(input.to_string())),
    };
    if num.contains('.') {
        let v: f64 = num
            .parse()
            .map_err(|_| SizeError::Syntax(input.to_string()))?;
        let b = v * mult as f64;
        if !b.is_finite() || b >= u64::MAX as f64 {
            return Err(SizeError::Overflow(input.to_string()));
        }
        Ok(Size::Bytes(b as u64))
    } else {
        let v: u64 = num
            .parse()
            .map_err(|_| SizeError::Overflow(input.to_string()))?;
        v.checked_mul(mult)
            .map(Size::Bytes)
            .ok_or_else(|| SizeError::Overflow(input.to_string()))
    }
}

/// Parse a size that must be absolute bytes (no `%`).
pub fn parse_bytes(input: &str) -> Result<u64, SizeError> {
    match parse_size(input)? {
        Size::Bytes(b) => Ok(b),
        Size::PercentOfRam(_) => Err(SizeError::PercentNotAllowed(input.to_string())),
    }
}

/// Parse a count such as `10000`, `10k`, `1m` (decimal-free, binary multipliers as tmpfs nr_inodes).
pub fn parse_count(input: &str) -> Result<u64, SizeError> {
    parse_bytes(input)
}

/// Human-readable bytes with binary units (KiB, MiB, GiB), as the design asks.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if v >= 100.0 {
        format!("{v:.0} {}", UNITS[i])
    } else if v >= 10.0 {
        format!("{v:.1} {}", UNITS[i])
    } else {
        format!("{v:.2} {}", UNITS[i])
    }
}

/// Bytes per second with binary units.
pub fn fmt_rate(bytes_per_s: f64) -> String {
    if !bytes_per_s.is_finite() || bytes_per_s < 0.0 {
        return "-".to_string();
    }
    format!("{}/s", fmt_bytes(bytes_per_s as u64))
}

/// Counts like inodes: 1234567 -> "1.23M".
pub fn fmt_count(n: u64) -> String {
    if n < 10_000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else if n < 1_000_000_000 {
        format!("{:.2}M", n as f64 / 1e6)
    } else {
        format!("{:.2}G", n as f64 / 1e9)
    }
}

/// A size as a tmpfs `size=` option value: the largest exact unit (`2G`, `512M`, `1536k`).
pub fn tmpfs_size_option(b: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "k")] {
        if b >= (1u64 << shift) && b.is_multiple_of(1u64 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

/// Durations in ns, printed in the unit that keeps 3 significant digits.
pub fn fmt_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1_000_000_000.0 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tmpfs_style_sizes() {
        assert_eq!(parse_size("512M"), Ok(Size::Bytes(512 << 20)));
        assert_eq!(parse_size("2G"), Ok(Size::Bytes(2 << 30)));
        assert_eq!(parse_size("2GiB"), Ok(Size::Bytes(2 << 30)));
        assert_eq!(parse_size("4k"), Ok(Size::Bytes(4096)));
        assert_eq!(parse_size("1.5G"), Ok(Size::Bytes(3 << 29)));
        assert_eq!(parse_size("123"), Ok(Size::Bytes(123)));
        assert_eq!(parse_size("50%"), Ok(Size::PercentOfRam(50.0)));
        assert_eq!(Size::PercentOfRam(25.0).resolve(1 << 30), 1 << 28);
    }

    #[test]
    fn rejects_bad_sizes() {
        assert!(matches!(parse_size(""), Err(SizeError::Empty(_))));
        assert!(matches!(parse_size("abc"), Err(SizeError::Syntax(_))));
        assert!(matches!(parse_size("12X"), Err(SizeError::Syntax(_))));
        assert!(matches!(parse_size("-1G"), Err(SizeError::Syntax(_))));
        assert!(matches!(parse_size("0%"), Err(SizeError::Zero(_))));
        assert!(matches!(
            parse_size("150%"),
            Err(SizeError::PercentTooLarge(_))
        ));
        assert!(matches!(
            parse_size("99999999999999999999"),
            Err(SizeError::Overflow(_))
        ));
        assert!(matches!(
            parse_size("99999999P"),
            Err(SizeError::Overflow(_))
        ));
        assert!(matches!(
            parse_bytes("50%"),
            Err(SizeError::PercentNotAllowed(_))
        ));
    }

    #[test]
    fn a_cap_above_ram_and_swap_is_refused_and_inodes_follow_the_size() {
        let g = 1u64 << 30;
        assert_eq!(check_tmpfs_cap("2G", 2 * g, 4 * g, 0, false), Ok(()));
        assert_eq!(check_tmpfs_cap("5G", 5 * g, 4 * g, g, false), Ok(()));
        let e = check_tmpfs_cap("16E", u64::MAX, 4 * g, g, false).unwrap_err();
        assert!(e.to_string().contains("5.00 GiB"), "{e}");
        assert!(
            e.to_string().contains("16E") && e.to_string().contains("--force"),
            "{e}"
        );
        assert!(check_tmpfs_cap("x", 5 * g + 1, 4 * g, g, false).is_err());
        assert_eq!(check_tmpfs_cap("x", 5 * g + 1, 4 * g, g, true), Ok(()));
        assert_eq!(
            check_tmpfs_cap("0", 0, 4 * g, g, true),
            Err(SizeError::Zero("0".into()))
        );
        assert_eq!(tmpfs_inodes_for(1 << 20), 256);
        assert_eq!(tmpfs_inodes_for(2 * g), 524_288);
        assert_eq!(tmpfs_inodes_for(4096), MIN_TMPFS_INODES);
    }

    #[test]
    fn formats_binary_units() {
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(1023), "1023 B");
        assert_eq!(fmt_bytes(1536), "1.50 KiB");
        assert_eq!(fmt_bytes(16 << 20), "16.0 MiB");
        assert_eq!(fmt_bytes(512 << 30), "512 GiB");
        assert_eq!(tmpfs_size_option(2 << 30), "2G");
        assert_eq!(tmpfs_size_option(1536 << 10), "1536k");
        assert_eq!(tmpfs_size_option(1000), "1000");
        assert_eq!(fmt_ns(1240.0), "1.24 µs");
        assert_eq!(fmt_count(9999), "9999");
        assert_eq!(fmt_count(3_085_510), "3.09M");
        assert_eq!(fmt_count(120_500), "120.5k");
    }
}
