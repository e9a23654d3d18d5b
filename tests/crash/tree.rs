//! A tree as text, the same on the guest (where this binary lists the
//! directory a step promised) and on the host (where it lists what a crash
//! state restores): one line per entry, sorted by path, with its type, mode,
//! owner, content hash, symlink target, xattrs and hard-link group.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use sha2::{Digest, Sha256};

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

fn xattrs(p: &Path) -> String {
    let mut names = vec![0u8; 64 * 1024];
    let Ok(n) = rustix::fs::llistxattr(p, &mut names) else {
        return String::new();
    };
    let mut list: Vec<&[u8]> = names[..n]
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .collect();
    list.sort();
    let mut out = String::new();
    for name in list {
        let mut v = vec![0u8; 64 * 1024];
        let Ok(cname) = std::ffi::CString::new(name) else {
            continue;
        };
        let len = rustix::fs::lgetxattr(p, cname.as_c_str(), &mut v).unwrap_or(0);
        let _ = write!(
            out,
            " x:{}={}",
            String::from_utf8_lossy(name),
            hex(&Sha256::digest(&v[..len])[..8])
        );
    }
    out
}

fn walk(root: &Path, rel: &Path, links: &mut BTreeMap<(u64, u64), String>, out: &mut Vec<String>) {
    let mut names: Vec<_> = std::fs::read_dir(root.join(rel))
        .unwrap_or_else(|e| panic!("{}: {e}", root.join(rel).display()))
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    for name in names {
        let r = rel.join(&name);
        let p = root.join(&r);
        let m = std::fs::symlink_metadata(&p).unwrap();
        let show = r.display().to_string();
        let mut line = format!("{show} mode={:o} uid={} gid={}", m.mode(), m.uid(), m.gid());
        let ft = m.file_type();
        if ft.is_symlink() {
            let _ = write!(line, " -> {}", std::fs::read_link(&p).unwrap().display());
        } else if ft.is_file() {
            let data = std::fs::read(&p).unwrap();
            let _ = write!(
                line,
                " size={} sha={}",
                data.len(),
                hex(&Sha256::digest(&data)[..12])
            );
            if m.nlink() > 1 {
                let first = links
                    .entry((m.dev(), m.ino()))
                    .or_insert_with(|| show.clone());
                if *first != show {
                    let _ = write!(line, " link={first}");
                }
            }
        }
        line.push_str(&xattrs(&p));
        out.push(line);
        if ft.is_dir() {
            walk(root, &r, links, out);
        }
    }
}

/// The listing of the tree under `root` (not `root` itself).
pub fn listing(root: &Path) -> String {
    let mut out = Vec::new();
    walk(root, Path::new(""), &mut BTreeMap::new(), &mut out);
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// What an ACK record carries for a listing.
pub fn digest(listing: &str) -> String {
    hex(&Sha256::digest(listing.as_bytes())[..8])
}
