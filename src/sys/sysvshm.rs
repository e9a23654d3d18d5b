//! SysV shared memory segments (`/proc/sysvipc/shm`): RAM that no file shows.

use serde::Serialize;

use super::Sysroot;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShmSegment {
    pub key: i64,
    pub id: u64,
    /// The segment's size.
    pub bytes: u64,
    /// Resident pages (what it takes in RAM now), when the kernel says.
    pub rss_bytes: Option<u64>,
    pub uid: u32,
    /// The owner's user name, filled by callers that read passwd.
    pub owner: Option<String>,
    /// Processes attached now (0: kept only because nobody removed it).
    pub attached: u64,
    /// Creator's pid.
    pub cpid: u32,
}

/// Parse the table; its header names the columns, so column order is not assumed.
pub fn parse(text: &str) -> Vec<ShmSegment> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let cols: Vec<&str> = header.split_whitespace().collect();
    let at = |name: &str| cols.iter().position(|c| *c == name);
    let (Some(k), Some(i), Some(sz), Some(n), Some(u), Some(cp)) = (
        at("key"),
        at("shmid"),
        at("size"),
        at("nattch"),
        at("uid"),
        at("cpid"),
    ) else {
        return Vec::new();
    };
    let rss = at("rss");
    lines
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some(ShmSegment {
                key: f.get(k)?.parse().ok()?,
                id: f.get(i)?.parse().ok()?,
                bytes: f.get(sz)?.parse().ok()?,
                rss_bytes: rss.and_then(|r| f.get(r)?.parse().ok()),
                uid: f.get(u)?.parse().ok()?,
                owner: None,
                attached: f.get(n)?.parse().ok()?,
                cpid: f.get(cp)?.parse().ok()?,
            })
        })
        .collect()
}

/// The live (or sysroot's) segments; none when the file is absent.
pub fn read(root: &Sysroot) -> Vec<ShmSegment> {
    std::fs::read_to_string(root.path("/proc/sysvipc/shm"))
        .map(|t| parse(&t))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn table_is_read_by_its_header() {
        let t = "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n\
                 1234 7 600 1048576 42 42 2 1000 1000 1000 1000 0 0 0 524288 0\n\
                 garbage line\n";
        let v = super::parse(t);
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].key, v[0].id, v[0].bytes, v[0].attached, v[0].uid),
            (1234, 7, 1 << 20, 2, 1000)
        );
        assert_eq!(v[0].rss_bytes, Some(524288));
        assert!(super::parse("").is_empty());
    }
}
