//! systemd's view of a mount unit such as `tmp.mount`, read from unit files on
//! disk (so it works under --sysroot and without a running systemd).

use std::path::{Path, PathBuf};

use super::Sysroot;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitState {
    /// Linked to /dev/null: systemd will never start it.
    Masked,
    /// Unit file present and wanted by a target: mounted at boot.
    Enabled,
    /// Unit file present but nothing pulls it in.
    Disabled,
    /// No unit file.
    Absent,
}

impl std::fmt::Display for UnitState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UnitState::Masked => "masked",
            UnitState::Enabled => "enabled",
            UnitState::Disabled => "present, not enabled",
            UnitState::Absent => "absent",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnitInfo {
    pub name: String,
    pub state: UnitState,
    /// The unit file in effect, if any (on the inspected system).
    pub fragment: Option<PathBuf>,
    /// `NAME.d/*.conf` drop-ins, in the order systemd reads them.
    pub dropins: Vec<PathBuf>,
    /// The `Options=` in effect (the last one read, fragment then drop-ins),
    /// with systemd's `%%` unescaped: `size=50%` stays a share of RAM.
    pub options: Option<String>,
}

/// Search path for system units, highest priority first (systemd.unit(5)).
const UNIT_DIRS: &[&str] = &[
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
];

/// The unit name systemd derives for a mount point (`/tmp` -> `tmp.mount`,
/// `/var/tmp` -> `var-tmp.mount`), with systemd-escape's `\xNN` for odd bytes.
pub fn mount_unit_name(mount_point: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = mount_point.as_os_str().as_bytes();
    let trimmed: Vec<&[u8]> = bytes
        .split(|&b| b == b'/')
        .filter(|s| !s.is_empty())
        .collect();
    if trimmed.is_empty() {
        return "-.mount".to_string();
    }
    let mut out = String::new();
    for (i, comp) in trimmed.iter().enumerate() {
        if i > 0 {
            out.push('-');
        }
        for (j, &b) in comp.iter().enumerate() {
            let plain =
                b.is_ascii_alphanumeric() || b == b'_' || (b == b'.' && !(i == 0 && j == 0));
            if plain {
                out.push(b as char);
            } else {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out.push_str(".mount");
    out
}

pub fn unit_info(root: &Sysroot, name: &str) -> UnitInfo {
    let mut fragment = None;
    let mut state = UnitState::Absent;
    for dir in UNIT_DIRS {
        let p = root.path(Path::new(dir).join(name));
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let masked = if meta.file_type().is_symlink() {
            std::fs::read_link(&p).is_ok_and(|t| t == Path::new("/dev/null"))
        } else {
            meta.len() == 0
        };
        if masked {
            state = UnitState::Masked;
            break;
        }
        fragment = Some(Path::new(dir).join(name));
        state = UnitState::Disabled;
        break;
    }
    if state == UnitState::Disabled && is_wanted(root, name) {
        state = UnitState::Enabled;
    }
    let mut dropins = Vec::new();
    if state != UnitState::Absent {
        for dir in UNIT_DIRS {
            let d = Path::new(dir).join(format!("{name}.d"));
            if let Ok(rd) = std::fs::read_dir(root.path(&d)) {
                for e in rd.flatten() {
                    let n = e.file_name();
                    if n.to_string_lossy().ends_with(".conf") {
                        dropins.push(d.join(n));
                    }
                }
            }
        }
        dropins.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    }
    let options = fragment
        .iter()
        .chain(&dropins)
        .filter_map(|f| std::fs::read_to_string(root.path(f)).ok())
        .fold(None, |acc, text| mount_options_in(&text).or(acc));
    UnitInfo {
        name: name.to_string(),
        state,
        fragment,
        dropins,
        options,
    }
}

/// The last `Options=` of a unit file's `[Mount]` section; an empty
/// assignment resets, as systemd reads it.
pub fn mount_options_in(text: &str) -> Option<String> {
    let mut section = "";
    let mut found = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[Mount]"
            && let Some(v) = line.strip_prefix("Options=")
        {
            found = Some(v.trim().replace("%%", "%"));
        }
    }
    found
}

/// A `*.wants/NAME` or `*.requires/NAME` link in any unit directory.
fn is_wanted(root: &Sysroot, name: &str) -> bool {
    UNIT_DIRS.iter().any(|dir| {
        std::fs::read_dir(root.path(dir)).is_ok_and(|rd| {
            rd.flatten().any(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                (n.ends_with(".wants") || n.ends_with(".requires"))
                    && std::fs::symlink_metadata(e.path().join(name)).is_ok()
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_names_follow_systemd_escape() {
        assert_eq!(mount_unit_name(Path::new("/tmp")), "tmp.mount");
        assert_eq!(mount_unit_name(Path::new("/var/tmp/")), "var-tmp.mount");
        assert_eq!(mount_unit_name(Path::new("/")), "-.mount");
        assert_eq!(
            mount_unit_name(Path::new("/mnt/my disk")),
            "mnt-my\\x20disk.mount"
        );
        assert_eq!(mount_unit_name(Path::new("/a-b")), "a\\x2db.mount");
    }

    #[test]
    fn reads_unit_states_from_a_tree() {
        let t = tempfile::tempdir().unwrap();
        let root = Sysroot::new(t.path());
        assert_eq!(unit_info(&root, "tmp.mount").state, UnitState::Absent);

        let lib = t.path().join("usr/lib/systemd/system");
        std::fs::create_dir_all(lib.join("local-fs.target.wants")).unwrap();
        std::fs::write(lib.join("tmp.mount"), "[Mount]\nWhat=tmpfs\n").unwrap();
        assert_eq!(unit_info(&root, "tmp.mount").state, UnitState::Disabled);

        std::os::unix::fs::symlink("../tmp.mount", lib.join("local-fs.target.wants/tmp.mount"))
            .unwrap();
        let etc = t.path().join("etc/systemd/system/tmp.mount.d");
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(etc.join("override.conf"), "[Mount]\nOptions=size=1G\n").unwrap();
        let u = unit_info(&root, "tmp.mount");
        assert_eq!(u.state, UnitState::Enabled);
        assert_eq!(
            u.fragment.as_deref(),
            Some(Path::new("/usr/lib/systemd/system/tmp.mount"))
        );
        assert_eq!(
            u.dropins,
            vec![PathBuf::from(
                "/etc/systemd/system/tmp.mount.d/override.conf"
            )]
        );

        std::os::unix::fs::symlink("/dev/null", t.path().join("etc/systemd/system/tmp.mount"))
            .unwrap();
        assert_eq!(unit_info(&root, "tmp.mount").state, UnitState::Masked);
    }
}
