//! A generation's manifest: one line per entry of DIR, in walk order (a
//! directory before what it holds, names sorted), holding everything a
//! restore needs besides file data and everything a sync needs to tell
//! "unchanged" without reading a byte.
//!
//! Text, one entry a line, fields separated by one space; paths, link targets
//! and xattrs hex-encoded because names are bytes, not UTF-8. The last line
//! is `end COUNT SHA256` over every byte before it: a manifest cut short or
//! damaged is refused instead of restoring a partial tree.

use anyhow::{Result, bail};
use sha2::{Digest, Sha256};

pub const MAGIC: &str = "tmpfsctl-persist-manifest 1";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Dir,
    /// A regular file; its data is `data/PATH` in the generation.
    File,
    /// Another name of the regular file at this path (same generation).
    HardLink(Vec<u8>),
    Symlink(Vec<u8>),
    Fifo,
    Socket,
    Char(u64),
    Block(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative to DIR; empty for DIR itself.
    pub path: Vec<u8>,
    pub kind: Kind,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub atime: (i64, u32),
    pub mtime: (i64, u32),
    /// ctime and inode number on the source side at sync time: together with
    /// size and mtime they say "not touched since" without reading data
    /// (ctime cannot be set by a user, unlike mtime).
    pub ctime: (i64, u32),
    pub ino: u64,
    /// SHA-256 (first 16 bytes) of the data extents with their offsets:
    /// the content identity, independent of inode and store.
    pub hash: Option<[u8; 16]>,
    pub xattrs: Vec<(Vec<u8>, Vec<u8>)>,
    /// The file changed in place throughout its copy (or is a journal that
    /// journald still had open): the stored bytes are what was read, which
    /// may mix versions. Never shared into a later generation as whole.
    pub torn: bool,
}

impl Entry {
    pub fn is_file(&self) -> bool {
        matches!(self.kind, Kind::File)
    }

    /// What a restore reproduces, besides data: equal means nothing the user
    /// would notice differs (ctime and inode excluded; they cannot be kept).
    pub fn same_meta(&self, o: &Entry) -> bool {
        self.kind == o.kind
            && self.mode == o.mode
            && self.uid == o.uid
            && self.gid == o.gid
            && self.size == o.size
            && self.mtime == o.mtime
            && self.xattrs == o.xattrs
    }
}

pub fn hex(b: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2 + 1);
    if b.is_empty() {
        // An empty field would be two spaces in a row; "-" is never valid hex.
        s.push('-');
    }
    for &c in b {
        s.push(H[(c >> 4) as usize] as char);
        s.push(H[(c & 15) as usize] as char);
    }
    s
}

pub fn unhex(s: &str) -> Result<Vec<u8>> {
    if s == "-" {
        return Ok(Vec::new());
    }
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        bail!("odd-length hex field");
    }
    let d = |c: u8| -> Result<u8> {
        Ok(match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => bail!("bad hex digit {:?}", c as char),
        })
    };
    b.chunks(2).map(|p| Ok(d(p[0])? << 4 | d(p[1])?)).collect()
}

fn kind_fields(k: &Kind) -> (char, String) {
    match k {
        Kind::Dir => ('d', "-".into()),
        Kind::File => ('f', "-".into()),
        Kind::HardLink(t) => ('h', hex(t)),
        Kind::Symlink(t) => ('l', hex(t)),
        Kind::Fifo => ('p', "-".into()),
        Kind::Socket => ('s', "-".into()),
        Kind::Char(r) => ('c', r.to_string()),
        Kind::Block(r) => ('b', r.to_string()),
    }
}

pub fn encode_line(e: &Entry, out: &mut String) {
    use std::fmt::Write;
    let (k, extra) = kind_fields(&e.kind);
    let hash = e.hash.map_or_else(|| "-".to_string(), |h| hex(&h));
    let xattrs = if e.xattrs.is_empty() {
        "-".to_string()
    } else {
        e.xattrs
            .iter()
            .map(|(n, v)| format!("{}={}", hex(n), hex(v)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let _ = writeln!(
        out,
        "{k} {} {:o} {} {} {} {} {} {} {} {} {} {} {extra} {hash} {xattrs}{}",
        hex(&e.path),
        e.mode,
        e.uid,
        e.gid,
        e.size,
        e.atime.0,
        e.atime.1,
        e.mtime.0,
        e.mtime.1,
        e.ctime.0,
        e.ctime.1,
        e.ino,
        if e.torn { " torn" } else { "" },
    );
}

/// The manifest bytes of `entries`, stamped with the sync's wall-clock time.
pub fn encode(entries: &[Entry], synced_unix_ns: i128) -> Vec<u8> {
    let mut s = String::with_capacity(entries.len() * 160 + 64);
    s.push_str(&format!("{MAGIC} {synced_unix_ns}\n"));
    for e in entries {
        encode_line(e, &mut s);
    }
    let digest = Sha256::digest(s.as_bytes());
    s.push_str(&format!("end {} {}\n", entries.len(), hex(&digest)));
    s.into_bytes()
}

fn parse_line(line: &str) -> Result<Entry> {
    let f: Vec<&str> = line.split(' ').collect();
    // A 17th field marks a torn copy; manifests without it stay readable.
    let torn = match f.get(16) {
        None => false,
        Some(&"torn") if f.len() == 17 => true,
        _ => bail!("{} fields instead of 16 or 17", f.len()),
    };
    if f.len() < 16 {
        bail!("{} fields instead of 16", f.len());
    }
    let n = |i: usize| -> Result<i64> { Ok(f[i].parse::<i64>()?) };
    let u = |i: usize| -> Result<u64> { Ok(f[i].parse::<u64>()?) };
    let kind = match f[0] {
        "d" => Kind::Dir,
        "f" => Kind::File,
        "h" => Kind::HardLink(unhex(f[13])?),
        "l" => Kind::Symlink(unhex(f[13])?),
        "p" => Kind::Fifo,
        "s" => Kind::Socket,
        "c" => Kind::Char(u(13)?),
        "b" => Kind::Block(u(13)?),
        k => bail!("unknown kind {k:?}"),
    };
    let hash = if f[14] == "-" {
        None
    } else {
        let v = unhex(f[14])?;
        Some(<[u8; 16]>::try_from(v.as_slice()).map_err(|_| anyhow::anyhow!("hash length"))?)
    };
    let mut xattrs = Vec::new();
    if f[15] != "-" {
        for kv in f[15].split(',') {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("xattr without ="))?;
            xattrs.push((unhex(k)?, unhex(v)?));
        }
    }
    Ok(Entry {
        path: unhex(f[1])?,
        kind,
        mode: u32::from_str_radix(f[2], 8)?,
        uid: u(3)? as u32,
        gid: u(4)? as u32,
        size: u(5)?,
        atime: (n(6)?, u(7)? as u32),
        mtime: (n(8)?, u(9)? as u32),
        ctime: (n(10)?, u(11)? as u32),
        ino: u(12)?,
        hash,
        xattrs,
        torn,
    })
}

/// Parse a whole manifest (entries and the sync's time in Unix ns), refusing
/// one that is truncated or damaged.
pub fn decode(bytes: &[u8]) -> Result<(Vec<Entry>, i128)> {
    let text = std::str::from_utf8(bytes).map_err(|_| anyhow::anyhow!("not UTF-8"))?;
    let body_end = match text.trim_end_matches('\n').rfind('\n') {
        Some(i) => i + 1,
        None => bail!("no end line: the manifest is incomplete"),
    };
    let (body, trailer) = text.split_at(body_end);
    let t: Vec<&str> = trailer.trim_end().split(' ').collect();
    if t.len() != 3 || t[0] != "end" {
        bail!("no end line: the manifest is incomplete");
    }
    if hex(&Sha256::digest(body.as_bytes())) != t[2] {
        bail!("checksum mismatch: the manifest is damaged");
    }
    let mut lines = body.lines();
    let synced = lines
        .next()
        .and_then(|l| l.strip_prefix(MAGIC))
        .and_then(|t| t.trim().parse::<i128>().ok())
        .ok_or_else(|| anyhow::anyhow!("not a tmpfsctl persist manifest (version 1)"))?;
    let mut v = Vec::new();
    for (i, l) in lines.enumerate() {
        v.push(parse_line(l).map_err(|e| anyhow::anyhow!("manifest line {}: {e}", i + 2))?);
    }
    if v.len().to_string() != t[1] {
        bail!("entry count mismatch: the manifest is damaged");
    }
    Ok((v, synced))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(path: &[u8], kind: Kind) -> Entry {
        Entry {
            path: path.to_vec(),
            kind,
            mode: 0o4755,
            uid: 1000,
            gid: 7,
            size: 12,
            atime: (-5, 999_999_999),
            mtime: (1_700_000_000, 1),
            ctime: (1_700_000_001, 2),
            ino: 42,
            hash: Some([7; 16]),
            xattrs: vec![(b"user.a".to_vec(), b"\x00\xff=,".to_vec())],
            torn: false,
        }
    }

    #[test]
    fn round_trips_odd_names_and_every_kind() {
        let v = vec![
            e(b"", Kind::Dir),
            e(b"a b\n\xff", Kind::File),
            e(b"h", Kind::HardLink(b"a b\n\xff".to_vec())),
            e(b"l", Kind::Symlink(b"../../etc/passwd".to_vec())),
            e(b"p", Kind::Fifo),
            e(b"s", Kind::Socket),
            e(b"c", Kind::Char(0x501)),
            e(b"b", Kind::Block(7)),
            Entry {
                torn: true,
                ..e(b"t", Kind::File)
            },
        ];
        let bytes = encode(&v, 1_700_000_000_123_456_789);
        assert_eq!(decode(&bytes).unwrap(), (v, 1_700_000_000_123_456_789));
    }

    #[test]
    fn truncated_or_damaged_manifest_is_refused() {
        let bytes = encode(&[e(b"x", Kind::File), e(b"y", Kind::File)], 5);
        for cut in [10, bytes.len() / 2, bytes.len() - 3] {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = bytes.clone();
        bad[40] ^= 1;
        assert!(decode(&bad).is_err());
        assert!(decode(b"").is_err());
    }
}
