//! Sizes as people and tmpfs write them (`512M`, `2G`, `50%`) and as we print them;
//! durations as every command takes them (`30s`, `10min`, `1h30m`, `0.5s`, `500ms`, `90`).

use std::time::Duration;

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

/// The word for `n` things: `noun(1, "dir", "dirs")` is "dir", any other
/// count "dirs" (so a sentence never says "1 dirs" or "file(s)").
pub fn noun(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
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

/// ` (42%)`: `part` as a share of `whole`, to follow a figure in a sentence;
/// nothing when `whole` is 0 (no share to give).
pub fn fmt_share(part: u64, whole: u64) -> String {
    if whole > 0 {
        format!(" ({:.0}%)", part as f64 * 100.0 / whole as f64)
    } else {
        String::new()
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

/// Why a duration was refused; each names the input and how to write it.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum DurationError {
    #[error(
        "duration {0:?} is not a duration; write a number with a unit, e.g. 30s, 10min, 1h30m, \
         0.5s or 500ms (a number alone is seconds)"
    )]
    Syntax(String),
    #[error(
        "duration {input:?}: unknown unit {unit:?}; use ms, s, m (or min), h, d, w or y, \
         e.g. 10min or 1h30m"
    )]
    UnknownUnit { input: String, unit: String },
    #[error(
        "duration {input:?}: {number} has no unit; give every part one, e.g. 1h30m (only a \
         number alone, like 90, is seconds)"
    )]
    MissingUnit { input: String, number: String },
    #[error("duration {0:?} is too long")]
    Overflow(String),
    #[error("duration {0:?} is zero; give a positive duration, e.g. 30s or 10min")]
    Zero(String),
    #[error("duration {0:?} is not a whole number of seconds; give e.g. 1s, 90s or 2min")]
    NotWhole(String),
}

const NS_PER_S: u128 = 1_000_000_000;

/// Nanoseconds in one of a unit; the words are those persist, bench and
/// fleet accepted before they shared this grammar. `y` is 365 days (what
/// `fleet --window` always meant; systemd's year, 365.25 days, is read by
/// `sys::tmpfiles` for its own files).
fn unit_ns(unit: &str) -> Option<u128> {
    Some(match unit {
        "ms" | "msec" | "millisecond" | "milliseconds" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => NS_PER_S,
        "m" | "min" | "mins" | "minute" | "minutes" => 60 * NS_PER_S,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600 * NS_PER_S,
        "d" | "day" | "days" => 86_400 * NS_PER_S,
        "w" | "week" | "weeks" => 7 * 86_400 * NS_PER_S,
        "y" | "year" | "years" => 365 * 86_400 * NS_PER_S,
        _ => return None,
    })
}

/// One number of a duration as written: its text, and whether it carries
/// an exponent (`1e3`, read as a float; else read exactly).
fn scan_number(b: &[u8], mut i: usize, first: bool) -> (usize, bool) {
    if first && b.get(i) == Some(&b'+') {
        i += 1;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    let mut j = i;
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
            return (j, true);
        }
    }
    (i, false)
}

/// `number` (digits, an optional fraction) times `unit` nanoseconds,
/// exactly (to the nanosecond) unless it has an exponent.
fn term_ns(number: &str, exponent: bool, unit: u128) -> Option<u128> {
    let number = number.strip_prefix('+').unwrap_or(number);
    if exponent {
        let v: f64 = number.parse().ok()?;
        let ns = v * unit as f64;
        return (0.0..1e38).contains(&ns).then_some(ns as u128);
    }
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let whole = if int.is_empty() {
        0
    } else {
        int.parse::<u128>().ok()?.checked_mul(unit)?
    };
    // Digits beyond the 18th are below a nanosecond for every unit.
    let frac = &frac[..frac.len().min(18)];
    let part = if frac.is_empty() {
        0
    } else {
        frac.parse::<u128>().ok()? * unit / 10u128.pow(frac.len() as u32)
    };
    whole.checked_add(part)
}

/// A duration as every command takes it: one or more parts, each a number
/// and a unit (`30s`, `10min`, `1h30m`, `1h 30m`, `2 hours`, `0.5s`,
/// `500ms`, `1.5m`, `7d`, `2w`), or a number alone, which is seconds (`90`,
/// `0.5`). Units: ms, s, m, h, d, w, y and their words (sec, min, hour,
/// day, week, year, with plurals); lower case.
///
/// Written here, not taken from humantime: humantime wants a whole number
/// and a unit in every part, so it refuses what the commands have always
/// taken (`90` and top's `-d 2` as seconds, `0.5s`, `1.5m`), and its year
/// is 365.25 days where `fleet --window 1y` means 365.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let syntax = || DurationError::Syntax(input.to_string());
    let s = input.trim();
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(syntax());
    }
    let mut total: u128 = 0;
    let mut i = 0;
    let mut first = true;
    while i < b.len() {
        let start = i;
        let (end, exponent) = scan_number(b, i, first);
        let number = &s[start..end];
        if !number.bytes().any(|c| c.is_ascii_digit()) {
            return Err(syntax());
        }
        i = end;
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let u0 = i;
        while b.get(i).is_some_and(u8::is_ascii_alphabetic) {
            i += 1;
        }
        let unit = &s[u0..i];
        let ns = if unit.is_empty() {
            if !(first && i == b.len()) {
                return Err(match b.get(i) {
                    Some(c) if !c.is_ascii_digit() => syntax(),
                    _ => DurationError::MissingUnit {
                        input: input.to_string(),
                        number: number.to_string(),
                    },
                });
            }
            NS_PER_S
        } else {
            unit_ns(unit).ok_or_else(|| DurationError::UnknownUnit {
                input: input.to_string(),
                unit: unit.to_string(),
            })?
        };
        let overflow = || DurationError::Overflow(input.to_string());
        total = term_ns(number, exponent, ns)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(overflow)?;
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        first = false;
    }
    let secs =
        u64::try_from(total / NS_PER_S).map_err(|_| DurationError::Overflow(input.into()))?;
    Ok(Duration::new(secs, (total % NS_PER_S) as u32))
}

/// [`parse_duration`] for what counts whole seconds and cannot be zero
/// (persist's sync interval, fleet's window and timeout).
pub fn parse_seconds(input: &str) -> Result<u64, DurationError> {
    let d = parse_duration(input)?;
    if d.is_zero() {
        return Err(DurationError::Zero(input.to_string()));
    }
    if d.subsec_nanos() != 0 {
        return Err(DurationError::NotWhole(input.to_string()));
    }
    Ok(d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thing_is_singular_every_other_count_plural() {
        assert_eq!(noun(1, "dir", "dirs"), "dir");
        assert_eq!(noun(0, "dir", "dirs"), "dirs");
        assert_eq!(noun(2, "entry", "entries"), "entries");
    }

    #[test]
    fn a_share_is_whole_percent_and_nothing_of_zero() {
        assert_eq!(fmt_share(1, 3), " (33%)");
        assert_eq!(fmt_share(2, 3), " (67%)");
        assert_eq!(fmt_share(5, 0), "");
    }

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

    fn d(s: &str) -> Result<Duration, DurationError> {
        parse_duration(s)
    }

    /// Every form one of the four parsers this grammar replaced accepted
    /// keeps its meaning: persist (`10min`, `600`, `2h30m`, `1d`, words,
    /// spaces), bench (`500ms`, `2s`, `1.5`, `1m`, `0`, `1e3`), top (`2`,
    /// `0.5`) and fleet (`7d`, `1h30m`, `90s`, `1w`, `1y`).
    #[test]
    fn durations_keep_every_form_the_old_parsers_took() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        for (text, want) in [
            ("30s", s(30)),
            ("10min", s(600)),
            ("600", s(600)),
            ("2h30m", s(9000)),
            ("1d", s(86_400)),
            ("10 min", s(600)),
            ("1h 30m", s(5400)),
            ("3 hours 2 minutes", s(10_920)),
            ("30secs", s(30)),
            ("2hr", s(7200)),
            ("500ms", ms(500)),
            ("2s", s(2)),
            ("1.5", ms(1500)),
            ("1m", s(60)),
            ("1.5m", s(90)),
            ("0.2s", ms(200)),
            ("0", s(0)),
            ("2 s", s(2)),
            (" 2s ", s(2)),
            ("1e3", s(1000)),
            ("1e-3s", ms(1)),
            ("+2", s(2)),
            (".5", ms(500)),
            ("5.", s(5)),
            ("2", s(2)),
            ("0.5", ms(500)),
            ("0.1", ms(100)),
            ("7d", s(7 * 86_400)),
            ("1h30m", s(5400)),
            ("90s", s(90)),
            ("1w", s(7 * 86_400)),
            ("1y", s(365 * 86_400)),
            ("30m1h", s(5400)),
            ("18446744073709551615", s(u64::MAX)),
        ] {
            assert_eq!(d(text), Ok(want), "{text:?}");
        }
    }

    #[test]
    fn bad_durations_name_the_input_and_the_fix() {
        for bad in [
            "", "soon", "-1", "fast", ".", "inf", "nan", "1h+30m", "1.2.3",
        ] {
            assert!(
                matches!(d(bad), Err(DurationError::Syntax(_))),
                "{bad:?}: {:?}",
                d(bad)
            );
        }
        for bad in ["3x", "10MIN", "1e", "2sm", "5 parsecs"] {
            assert!(
                matches!(d(bad), Err(DurationError::UnknownUnit { .. })),
                "{bad:?}: {:?}",
                d(bad)
            );
        }
        for bad in ["1h30", "10min30", "1 2"] {
            assert!(
                matches!(d(bad), Err(DurationError::MissingUnit { .. })),
                "{bad:?}: {:?}",
                d(bad)
            );
        }
        assert!(matches!(
            d("99999999999999999999y"),
            Err(DurationError::Overflow(_))
        ));
        assert!(matches!(d("1e400"), Err(DurationError::Overflow(_))));
        let e = d("1h30").unwrap_err().to_string();
        assert!(e.contains("\"1h30\"") && e.contains("1h30m"), "{e}");
        let e = d("soon").unwrap_err().to_string();
        assert!(e.contains("\"soon\"") && e.contains("10min"), "{e}");
    }

    #[test]
    fn whole_positive_seconds() {
        assert_eq!(parse_seconds("10min"), Ok(600));
        assert_eq!(parse_seconds("1.5m"), Ok(90));
        assert_eq!(parse_seconds("7"), Ok(7));
        assert_eq!(parse_seconds("0s"), Err(DurationError::Zero("0s".into())));
        assert_eq!(parse_seconds("0d"), Err(DurationError::Zero("0d".into())));
        assert_eq!(
            parse_seconds("0.5s"),
            Err(DurationError::NotWhole("0.5s".into()))
        );
    }
}
