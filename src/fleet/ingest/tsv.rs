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
    let mut f: [&[u8]; 12] = [b""; 12];
    let mut n = 0;
    for part in line
        .split(|b| *b == b'\t' || *b == b' ')
        .filter(|p| !p.is_empty())
    {
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
    let host = std::str::from_utf8(f[0])
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
        swap_total: Some(kib(v[8], KIRKLAND_COLUMNS[8])?),
        swap_free: Some(kib(v[10], KIRKLAND_COLUMNS[10])?),
    }
    .validate()
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
}
