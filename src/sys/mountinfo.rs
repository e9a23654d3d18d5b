//! /proc/self/mountinfo (proc(5)):
//! `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::ParseWarning;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountInfo {
    pub mount_id: u64,
    pub parent_id: u64,
    pub major: u32,
    pub minor: u32,
    /// Path inside the filesystem that is mounted here (not `/` for bind mounts).
    pub root: PathBuf,
    pub mount_point: PathBuf,
    /// Per-mount options (`rw`, `nosuid`, ...).
    pub mount_options: Vec<String>,
    /// `shared:N`, `master:N`, ...
    pub optional_fields: Vec<String>,
    pub fstype: String,
    pub source: String,
    /// Per-superblock options (`size=`, `nr_inodes=`, `mode=`, ...).
    pub super_options: Vec<String>,
}

impl MountInfo {
    /// Mount and superblock options together, mount options first, without duplicates.
    pub fn all_options(&self) -> Vec<String> {
        let mut v = self.mount_options.clone();
        for o in &self.super_options {
            if !v.contains(o) {
                v.push(o.clone());
            }
        }
        v
    }

    /// Value of `key=value` in either option list.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.super_options
            .iter()
            .chain(self.mount_options.iter())
            .find_map(|o| o.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
    }

    pub fn has_flag(&self, flag: &str) -> bool {
        self.mount_options.iter().any(|o| o == flag) || self.super_options.iter().any(|o| o == flag)
    }

    /// A bind mount shows a root other than `/` (the kernel cannot always tell otherwise).
    pub fn is_bind(&self) -> bool {
        self.root != Path::new("/")
    }
}

/// Undo the kernel's octal escapes (`\040` space, `\011` tab, `\012` newline,
/// `\134` backslash). Bytes that are not a valid escape are kept as they are.
pub fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\' && i + 3 < field.len() {
            let d = &field[i + 1..i + 4];
            if d.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = (d[0] - b'0') as u32 * 64 + (d[1] - b'0') as u32 * 8 + (d[2] - b'0') as u32;
                if v <= 255 {
                    out.push(v as u8);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(field[i]);
        i += 1;
    }
    out
}

fn path_field(field: &[u8]) -> PathBuf {
    PathBuf::from(OsString::from_vec(unescape(field)))
}

fn text_field(field: &[u8]) -> String {
    // Most fields have no escape and are UTF-8: one copy, not three (hosts
    // with many containers have tens of thousands of lines).
    if !field.contains(&b'\\')
        && let Ok(s) = std::str::from_utf8(field)
    {
        return s.to_string();
    }
    String::from_utf8_lossy(&unescape(field)).into_owned()
}

fn split_options(field: &[u8]) -> Vec<String> {
    let text = match std::str::from_utf8(field) {
        Ok(s) if !field.contains(&b'\\') => std::borrow::Cow::Borrowed(s),
        _ => std::borrow::Cow::Owned(text_field(field)),
    };
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parse one line; `Err` carries the reason it was skipped.
pub fn parse_line(line: &[u8]) -> Result<MountInfo, String> {
    let fields: Vec<&[u8]> = line
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty())
        .collect();
    let sep = fields
        .iter()
        .position(|f| *f == b"-")
        .ok_or("no ' - ' separator before the filesystem type")?;
    if sep < 6 {
        return Err(format!("only {sep} fields before ' - ', need at least 6"));
    }
    if fields.len() < sep + 3 {
        return Err("truncated after ' - ': need fstype, source and options".into());
    }
    let num = |i: usize, what: &str| -> Result<u64, String> {
        std::str::from_utf8(fields[i])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                format!(
                    "{what} {:?} is not a number",
                    String::from_utf8_lossy(fields[i])
                )
            })
    };
    let mount_id = num(0, "mount ID")?;
    let parent_id = num(1, "parent ID")?;
    let devs = std::str::from_utf8(fields[2]).map_err(|_| "device field is not text")?;
    let (maj, min) = devs
        .split_once(':')
        .ok_or_else(|| format!("device {devs:?} is not major:minor"))?;
    let major = maj
        .parse()
        .map_err(|_| format!("device major {maj:?} is not a number"))?;
    let minor = min
        .parse()
        .map_err(|_| format!("device minor {min:?} is not a number"))?;
    Ok(MountInfo {
        mount_id,
        parent_id,
        major,
        minor,
        root: path_field(fields[3]),
        mount_point: path_field(fields[4]),
        mount_options: split_options(fields[5]),
        optional_fields: fields[6..sep].iter().map(|f| text_field(f)).collect(),
        fstype: text_field(fields[sep + 1]),
        source: text_field(fields[sep + 2]),
        super_options: split_options(fields[sep + 3..].first().copied().unwrap_or(b"")),
    })
}

/// Parse the whole file. Unreadable lines are skipped with a warning.
pub fn parse(text: &[u8]) -> (Vec<MountInfo>, Vec<ParseWarning>) {
    let mut mounts = Vec::new();
    let mut warnings = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match parse_line(line) {
            Ok(m) => mounts.push(m),
            Err(reason) => warnings.push(ParseWarning {
                line: i + 1,
                reason: format!("mountinfo: {reason}"),
            }),
        }
    }
    (mounts, warnings)
}

/// The mount a path lives on: the longest mount point that is a prefix of it;
/// among stacked mounts on the same point, the last one (the visible one).
pub fn mount_for<'a>(mounts: &'a [MountInfo], path: &Path) -> Option<&'a MountInfo> {
    let mut best: Option<&MountInfo> = None;
    for m in mounts {
        if path.starts_with(&m.mount_point) {
            let better = match best {
                None => true,
                Some(b) => m.mount_point.as_os_str().len() >= b.mount_point.as_os_str().len(),
            };
            if better {
                best = Some(m);
            }
        }
    }
    best
}

/// The visible mounts: for stacked mounts on one point, the last one wins,
/// listed where it appears in mountinfo. One pass to find each point's last
/// mount, one to keep it: hosts with many containers have tens of thousands
/// of mounts, where comparing every mount with every other took minutes.
pub fn visible_mask(mounts: &[MountInfo]) -> Vec<bool> {
    let mut last: HashMap<&Path, usize> = HashMap::with_capacity(mounts.len());
    for (i, m) in mounts.iter().enumerate() {
        last.insert(m.mount_point.as_path(), i);
    }
    mounts
        .iter()
        .enumerate()
        .map(|(i, m)| last.get(m.mount_point.as_path()) == Some(&i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw\n\
25 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro\n\
30 25 0:26 / /tmp rw,nosuid,nodev shared:12 - tmpfs tmpfs rw,size=8388608k,nr_inodes=1048576,inode64\n\
31 25 0:27 / /mnt/my\\040disk rw,relatime - tmpfs none rw,size=16384k,mode=755\n\
32 25 253:1 /srv/data /data rw,relatime shared:1 master:3 - ext4 /dev/vda1 rw\n\
33 25 0:28 / /mnt/ram rw,relatime - ramfs ramfs rw\n";

    #[test]
    fn parses_normal_lines() {
        let (m, w) = parse(SAMPLE);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(m.len(), 6);
        let tmp = &m[2];
        assert_eq!(tmp.mount_point, Path::new("/tmp"));
        assert_eq!(tmp.fstype, "tmpfs");
        assert_eq!(tmp.option("size"), Some("8388608k"));
        assert_eq!(tmp.option("nr_inodes"), Some("1048576"));
        assert!(tmp.has_flag("nosuid"));
        assert_eq!(tmp.optional_fields, vec!["shared:12"]);
        assert_eq!((tmp.major, tmp.minor), (0, 26));
    }

    #[test]
    fn unescapes_octal_and_sees_bind_mounts() {
        let (m, _) = parse(SAMPLE);
        assert_eq!(m[3].mount_point, Path::new("/mnt/my disk"));
        assert!(m[4].is_bind());
        assert_eq!(m[4].optional_fields, vec!["shared:1", "master:3"]);
        assert!(!m[1].is_bind());
        assert_eq!(unescape(b"a\\011b\\012c\\134d"), b"a\tb\nc\\d");
        // Not an escape: kept verbatim.
        assert_eq!(unescape(b"a\\9xy\\"), b"a\\9xy\\");
        assert_eq!(unescape(b"\\04"), b"\\04");
    }

    #[test]
    fn non_utf8_paths_survive() {
        let line = b"40 25 0:30 / /mnt/\xff\xfe rw - tmpfs tmpfs rw\n";
        let (m, w) = parse(line);
        assert!(w.is_empty());
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(m[0].mount_point.as_os_str().as_bytes(), b"/mnt/\xff\xfe");
    }

    #[test]
    fn hostile_lines_are_skipped_with_reasons() {
        let text = b"garbage\n\
30 25 0:26 / /tmp rw shared:12\n\
99999999999999999999999 25 0:26 / /x rw - tmpfs tmpfs rw\n\
31 25 0:26 / /y rw - tmpfs\n\
32 25 0-26 / /z rw - tmpfs tmpfs rw\n\
33 25 0:26 / /ok rw - tmpfs tmpfs rw\n\
34 25";
        let (m, w) = parse(text);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].mount_point, Path::new("/ok"));
        assert_eq!(w.len(), 6);
        assert_eq!(w[0].line, 1);
        assert!(w[2].reason.contains("not a number"), "{:?}", w[2]);
        assert!(w[3].reason.contains("truncated"), "{:?}", w[3]);
    }

    #[test]
    fn finds_the_mount_of_a_path() {
        let (m, _) = parse(SAMPLE);
        assert_eq!(
            mount_for(&m, Path::new("/tmp/x/y")).unwrap().fstype,
            "tmpfs"
        );
        assert_eq!(
            mount_for(&m, Path::new("/tmpx")).unwrap().mount_point,
            Path::new("/")
        );
        assert_eq!(
            mount_for(&m, Path::new("/mnt/my disk/a")).unwrap().mount_id,
            31
        );
    }
}
