//! The 12-column /tmp survey TSV (Kirkland, 2016): host, du KiB, free's six
//! columns, swap's three, inodes.

use std::borrow::Cow;

use super::parsed::{Bad, Parsed, bad, kib, parse_u64};

const KIRKLAND_COLUMNS: [&str; 12] = [
    "host",
    "/tmp KiB",
    "mem total KiB",
    "mem used KiB",
    "mem free KiB",
    "mem shared KiB",
    "buffers KiB",
    "cached KiB",
    "swap total KiB",
    "swap used KiB",
    "swap free KiB",
    "/tmp inodes",
];

/// The survey's columns (whitespace-separated; tabs in the original). Sizes are
/// KiB. MemAvailable is not in old `free` output: estimated as free + buffers + cached.
pub(super) fn parse(line: &[u8]) -> Result<Parsed<'_>, Bad> {
    // Nearly every line is plain digits: scanned once, byte by byte. Anything
    // else (a sign, a bad number, a wrong column count) goes the general way,
    // which also words the error.
    let (host, v) = match scan(line) {
        Some(x) => x,
        None => split_and_parse(line)?,
    };
    let host = std::str::from_utf8(host)
        .map_err(|_| bad("host name not UTF-8", "the host column is not UTF-8 text"))?;
    Parsed {
        host: Cow::Borrowed(host),
        ts: None,
        tmp: kib(v[1], KIRKLAND_COLUMNS[1])?,
        inodes: Some(v[11]),
        mem_total: kib(v[2], KIRKLAND_COLUMNS[2])?,
        mem_avail: Some(kib(
            v[4].saturating_add(v[6]).saturating_add(v[7]),
            "free+buffers+cached",
        )?),
        mem_free: Some(kib(v[4], KIRKLAND_COLUMNS[4])?),
        swap_total: Some(kib(v[8], KIRKLAND_COLUMNS[8])?),
        swap_free: Some(kib(v[10], KIRKLAND_COLUMNS[10])?),
    }
    .validate()
}

fn is_sep(b: u8) -> bool {
    b == b'\t' || b == b' '
}

/// The common case in one pass: a host and eleven runs of 1 to 19 ASCII
/// digits (19 digits cannot overflow u64), separated by tabs or spaces.
/// None for anything else, which [`split_and_parse`] then judges.
fn scan(line: &[u8]) -> Option<(&[u8], [u64; 12])> {
    let n = line.len();
    let mut i = 0;
    while i < n && is_sep(line[i]) {
        i += 1;
    }
    let start = i;
    while i < n && !is_sep(line[i]) {
        i += 1;
    }
    let host = &line[start..i];
    let mut v = [0u64; 12];
    for slot in v.iter_mut().skip(1) {
        while i < n && is_sep(line[i]) {
            i += 1;
        }
        let (x, end) = digits(line, i)?;
        i = end;
        if i < n && !is_sep(line[i]) {
            return None;
        }
        *slot = x;
    }
    while i < n && is_sep(line[i]) {
        i += 1;
    }
    (i == n && !host.is_empty()).then_some((host, v))
}

const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The run of 1 to 19 ASCII digits at `line[i..]` as a number, and where it
/// ends; None for no digit or more than 19. Eight bytes are looked at a time
/// where the line has them: the parse is most of `fleet analyze`'s time.
pub(super) fn digits(line: &[u8], mut i: usize) -> Option<(u64, usize)> {
    let from = i;
    let mut x = 0u64;
    while let Some(w) = line.get(i..i + 8) {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let w = u64::from_le_bytes(b);
        // A byte is a digit iff its high nibble is 3 and adding 6 keeps it 3.
        // A carry only moves up to later bytes, after the first non-digit.
        let hi = 0xF0F0_F0F0_F0F0_F0F0u64;
        let not_digit = ((w & hi) | ((w.wrapping_add(0x0606_0606_0606_0606) & hi) >> 4))
            ^ 0x3333_3333_3333_3333;
        let k = (not_digit.trailing_zeros() / 8) as usize;
        if k == 0 {
            break;
        }
        // The k digits moved to the top bytes; the zero bytes below read as leading zeros.
        let mut v = w << (8 * (8 - k));
        v = (v & 0x0F0F_0F0F_0F0F_0F0F).wrapping_mul(2561) >> 8;
        v = (v & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601) >> 16;
        v = (v & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001) >> 32;
        x = x.wrapping_mul(POW10[k]).wrapping_add(v);
        i += k;
        if k < 8 {
            break;
        }
    }
    // The last few bytes of the line, one at a time.
    while i < line.len() && line[i].is_ascii_digit() {
        x = x.wrapping_mul(10).wrapping_add(u64::from(line[i] - b'0'));
        i += 1;
    }
    (i > from && i - from <= 19).then_some((x, i))
}

/// The general reading: split on tabs and spaces, count the columns, parse
/// each number with the standard parser (which words what is wrong).
fn split_and_parse(line: &[u8]) -> Result<(&[u8], [u64; 12]), Bad> {
    let mut f: [&[u8]; 12] = [b""; 12];
    let mut n = 0;
    for part in line.split(|b| is_sep(*b)).filter(|p| !p.is_empty()) {
        if n < 12 {
            f[n] = part;
        }
        n += 1;
    }
    if n != 12 {
        return Err(bad(
            "wrong column count",
            format!(
                "{n} columns, Kirkland format has 12 (host, /tmp KiB, free's 6 memory and 3 swap columns, inodes)"
            ),
        ));
    }
    let mut v = [0u64; 12];
    for i in 1..12 {
        v[i] = parse_u64(f[i], KIRKLAND_COLUMNS[i])?;
    }
    Ok((f[0], v))
}

/// Whether `line` is a header row: recognised by its column names only, so
/// a data row with a bad number (`-1`, `NaN`, `1e400`) is reported as a bad
/// line instead of being dropped as a header. The first column names the
/// host (`host`, `hostname`, `name`, `server`, `instance`), the other eleven
/// are labels: text that starts with a letter or `/` and is no number
/// (`nan`, `inf` are refused too).
pub(super) fn is_header(line: &[u8]) -> bool {
    let cells: Vec<&[u8]> = line
        .split(|b| *b == b'\t' || *b == b' ')
        .filter(|p| !p.is_empty())
        .collect();
    let Some((first, rest)) = cells.split_first() else {
        return false;
    };
    let host = first.to_ascii_lowercase();
    let label = |c: &[u8]| {
        (c[0].is_ascii_alphabetic() || c[0] == b'/')
            && std::str::from_utf8(c).is_ok_and(|s| s.parse::<f64>().is_err())
    };
    cells.len() == KIRKLAND_COLUMNS.len()
        && matches!(
            host.as_slice(),
            b"host" | b"hostname" | b"name" | b"server" | b"instance"
        )
        && rest.iter().all(|c| label(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_known_by_its_names_not_by_a_bad_number() {
        let names = "host\ttmp\ttotal\tused\tfree\tshared\tbuffers\tcached\tst\tsu\tsf\tinodes";
        assert!(is_header(names.as_bytes()));
        assert!(is_header(names.to_uppercase().as_bytes()));
        for bad in ["-1", "NaN", "1e400", "inf", "12"] {
            let l = names.replace("\ttmp\t", &format!("\t{bad}\t"));
            assert!(!is_header(l.as_bytes()), "{l}");
        }
        let data = "web1\t-1\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1";
        assert!(!is_header(data.as_bytes()));
        assert!(!is_header(b"host tmp"));
        assert!(!is_header(names.replace("host", "web1").as_bytes()));
    }

    #[test]
    fn the_one_pass_scan_agrees_with_the_general_reading() {
        let lines = [
            "web1\t4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1",
            "  web1  4 1000 500 500 0 0 0 0 0 0 1  ",
            "web1\t9999999999999999999\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1",
            "web1\t18446744073709551615\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1",
            "web1\t18446744073709551616\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1",
            "web1\t+4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1",
            "web1\t-4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1",
            "web1\t4x\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1",
            "web1\t4\t1000\t500\t500\t0\t0\t0\t0\t0\t0",
            "web1\t4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\t7",
            "h\u{e9}\t4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1",
        ];
        for l in lines {
            let general = split_and_parse(l.as_bytes());
            match scan(l.as_bytes()) {
                Some(fast) => assert_eq!(Ok(fast), general, "{l}"),
                // The scan may decline a valid line (a sign, 20 digits), never accept a bad one.
                None => assert!(
                    general.is_err() || l.contains('+') || l.contains("18446744073709551615"),
                    "{l}"
                ),
            }
        }
        let p = parse(lines[0].as_bytes()).unwrap();
        assert_eq!(
            (p.tmp, p.mem_total, p.mem_avail),
            (4096, 1024000, Some(512000))
        );
    }

    #[test]
    fn digits_eight_at_a_time_equal_one_at_a_time() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for round in 0..20_000u32 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 21) as usize;
            let s: String = format!("{seed:020}{seed:020}")[..len].to_string();
            let tail = ["", "\t", " 7", "x", "\t12345678901"][round as usize % 5];
            let line = format!("{s}{tail}");
            let want =
                (!s.is_empty() && s.len() <= 19).then(|| (s.parse::<u64>().unwrap(), s.len()));
            assert_eq!(digits(line.as_bytes(), 0), want, "{line:?}");
        }
        assert_eq!(digits(b"h\t0\t", 2), Some((0, 3)));
        assert_eq!(digits(b"12345678x", 0), Some((12_345_678, 8)));
        assert_eq!(digits(b"\xff\xfa9", 0), None);
    }
}
