//! /etc/fstab (fstab(5)). The parser keeps every line's raw bytes so an editor
//! can rewrite the file byte-for-byte outside the lines it manages.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use super::ParseWarning;
use super::mountinfo::unescape;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FstabEntry {
    pub spec: String,
    pub file: PathBuf,
    pub vfstype: String,
    pub options: Vec<String>,
    pub freq: u32,
    pub passno: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FstabLine {
    /// The line exactly as in the file, without its trailing newline.
    pub raw: Vec<u8>,
    /// The parsed entry, if the line is one (not a comment, blank or broken line).
    pub entry: Option<FstabEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fstab {
    pub lines: Vec<FstabLine>,
    /// Whether the file ended with a newline (kept on rewrite).
    pub trailing_newline: bool,
    pub warnings: Vec<ParseWarning>,
}

impl Fstab {
    pub fn parse(text: &[u8]) -> Fstab {
        let trailing_newline = text.last() == Some(&b'\n');
        let body = if trailing_newline {
            &text[..text.len() - 1]
        } else {
            text
        };
        let mut lines = Vec::new();
        let mut warnings = Vec::new();
        if !text.is_empty() {
            for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
                let entry = match parse_line(raw) {
                    Ok(e) => e,
                    Err(reason) => {
                        warnings.push(ParseWarning {
                            line: i + 1,
                            reason: format!("fstab: {reason}"),
                        });
                        None
                    }
                };
                lines.push(FstabLine {
                    raw: raw.to_vec(),
                    entry,
                });
            }
        }
        Fstab {
            lines,
            trailing_newline,
            warnings,
        }
    }

    pub fn entries(&self) -> impl Iterator<Item = &FstabEntry> {
        self.lines.iter().filter_map(|l| l.entry.as_ref())
    }

    /// The last entry for a mount point (the one `mount -a` ends up with).
    pub fn entry_for(&self, file: &std::path::Path) -> Option<&FstabEntry> {
        self.entries().filter(|e| e.file == file).last()
    }

    /// The file's bytes again, byte-for-byte.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, l) in self.lines.iter().enumerate() {
            if i > 0 {
                out.push(b'\n');
            }
            out.extend_from_slice(&l.raw);
        }
        if self.trailing_newline {
            out.push(b'\n');
        }
        out
    }
}

/// `Ok(None)` for comments and blank lines; `Err` for lines that look like an
/// entry but cannot be one.
pub fn parse_line(raw: &[u8]) -> Result<Option<FstabEntry>, String> {
    let fields: Vec<&[u8]> = raw
        .split(|b| *b == b' ' || *b == b'\t' || *b == b'\r')
        .filter(|f| !f.is_empty())
        .collect();
    if fields.is_empty() || fields[0].starts_with(b"#") {
        return Ok(None);
    }
    if fields.len() < 3 {
        return Err(format!(
            "only {} field(s); an entry needs at least spec, mount point and type",
            fields.len()
        ));
    }
    let text = |f: &[u8]| String::from_utf8_lossy(&unescape(f)).into_owned();
    let num = |i: usize, what: &str| -> Result<u32, String> {
        match fields.get(i) {
            None => Ok(0),
            Some(f) => std::str::from_utf8(f)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("{what} {:?} is not a number", String::from_utf8_lossy(f))),
        }
    };
    if fields.len() > 6 && !fields[6].starts_with(b"#") {
        return Err(format!("{} fields; an entry has at most 6", fields.len()));
    }
    Ok(Some(FstabEntry {
        spec: text(fields[0]),
        file: PathBuf::from(OsString::from_vec(unescape(fields[1]))),
        vfstype: text(fields[2]),
        options: fields
            .get(3)
            .map(|f| {
                text(f)
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_else(|| vec!["defaults".to_string()]),
        freq: num(4, "dump frequency")?,
        passno: num(5, "pass number")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const DEBIAN: &[u8] = b"# /etc/fstab: static file system information.\n\
#\n\
# <file system> <mount point>   <type>  <options>       <dump>  <pass>\n\
UUID=0a3c-11 /               ext4    errors=remount-ro 0       1\n\
UUID=ABCD-1234  /boot/efi       vfat    umask=0077      0       1\n\
/swapfile none swap sw 0 0\n\
\n\
tmpfs\t/tmp\ttmpfs\tdefaults,nosuid,nodev,size=2G\t0  0\n\
tmpfs /mnt/my\\040ram tmpfs size=128M,mode=0777 0 0\n";

    #[test]
    fn round_trips_byte_for_byte() {
        let f = Fstab::parse(DEBIAN);
        assert_eq!(f.to_bytes(), DEBIAN);
        let no_nl = &DEBIAN[..DEBIAN.len() - 1];
        assert_eq!(Fstab::parse(no_nl).to_bytes(), no_nl);
        assert_eq!(Fstab::parse(b"").to_bytes(), b"");
        assert_eq!(Fstab::parse(b"\n\n").to_bytes(), b"\n\n");
    }

    #[test]
    fn finds_entries() {
        let f = Fstab::parse(DEBIAN);
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
        assert_eq!(f.entries().count(), 5);
        let tmp = f.entry_for(Path::new("/tmp")).unwrap();
        assert_eq!(tmp.vfstype, "tmpfs");
        assert_eq!(tmp.options, vec!["defaults", "nosuid", "nodev", "size=2G"]);
        assert!(f.entry_for(Path::new("/mnt/my ram")).is_some());
        assert_eq!(f.entry_for(Path::new("/")).unwrap().passno, 1);
    }

    #[test]
    fn hostile_lines_warn_and_keep_bytes() {
        let text = b"tmpfs /tmp\nUUID=x / ext4 defaults zero 1\n\xff\xfe /bad\xff tmpfs rw 0 0\na b c d 0 0 extra\n";
        let f = Fstab::parse(text);
        assert_eq!(f.to_bytes(), text);
        assert_eq!(f.warnings.len(), 3, "{:?}", f.warnings);
        assert_eq!(f.entries().count(), 1);
    }
}
