//! The one reader of a process's own files under /proc: its stat line, its
//! name, and whether the process that left something behind is still the
//! one running under that PID.
//!
//! A PID alone does not name a process: the kernel hands a freed PID to the
//! next process that needs one. A PID together with the process's start
//! time (field 22 of /proc/PID/stat, clock ticks after boot) does, so
//! everything that notes an owner to check later records both, and
//! [`Owner::alive`] compares both.

use super::Sysroot;

/// The fields of /proc/PID/stat this tool reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub pid: u32,
    /// The command name (field 2) without its parentheses; it may itself
    /// hold spaces and parentheses.
    pub comm: String,
    /// `R`, `S`, `D`, `Z` (zombie: exited, not yet reaped), …
    pub state: char,
    pub ppid: u32,
    /// Clock ticks after boot at which the process started.
    pub starttime: u64,
}

impl Stat {
    /// Parse a stat line. The name sits between the first `(` and the last
    /// `)`: a name like `a) S 1 (` cannot shift the fields after it.
    pub fn parse(line: &[u8]) -> Option<Stat> {
        let open = line.iter().position(|&b| b == b'(')?;
        let close = line.iter().rposition(|&b| b == b')')?;
        if close < open {
            return None;
        }
        let pid = std::str::from_utf8(&line[..open])
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let comm = String::from_utf8_lossy(&line[open + 1..close]).into_owned();
        let rest = std::str::from_utf8(&line[close + 1..]).ok()?;
        // Fields from 3 (state) on; starttime is field 22.
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(Stat {
            pid,
            comm,
            state: f.first()?.chars().next()?,
            ppid: f.get(1)?.parse().ok()?,
            starttime: f.get(19)?.parse().ok()?,
        })
    }
}

/// The stat line of `pid` under `root`; None when there is no such process.
pub fn stat(root: &Sysroot, pid: u32) -> Option<Stat> {
    Stat::parse(&std::fs::read(root.path(format!("/proc/{pid}/stat"))).ok()?)
}

/// The effective uid of `pid` (the second figure of /proc/PID/status's
/// `Uid:` line: the one files and quotas are charged to); None when gone.
pub fn euid(root: &Sysroot, pid: u32) -> Option<u32> {
    let t = std::fs::read_to_string(root.path(format!("/proc/{pid}/status"))).ok()?;
    status_euid(&t)
}

fn status_euid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The numeric entries of /proc: every process, sorted.
pub fn pids(root: &Sysroot) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir(root.path("/proc")) else {
        return Vec::new();
    };
    let mut v: Vec<u32> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// /proc/PID/comm without its newline, as the process set it (raw: pass it
/// through `term::safe` before it reaches a terminal); None when gone.
pub fn name(root: &Sysroot, pid: u32) -> Option<String> {
    let b = std::fs::read(root.path(format!("/proc/{pid}/comm"))).ok()?;
    Some(
        String::from_utf8_lossy(&b)
            .trim_end_matches('\n')
            .to_string(),
    )
}

/// [`name`], or "?" for a process that is gone.
pub fn name_or_unknown(root: &Sysroot, pid: u32) -> String {
    name(root, pid).unwrap_or_else(|| "?".into())
}

/// A BSD `flock(2)` lock held on a file, as /proc/locks lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flock {
    /// The process that took it (it stays while any copy of the fd is open).
    pub pid: u32,
    pub major: u32,
    pub minor: u32,
    pub ino: u64,
}

/// The flocks held now (waiters left out); empty when /proc/locks is unreadable.
pub fn flocks(root: &Sysroot) -> Vec<Flock> {
    std::fs::read_to_string(root.path("/proc/locks"))
        .map(|t| parse_flocks(&t))
        .unwrap_or_default()
}

/// `1: FLOCK  ADVISORY  WRITE 4385 fe:00:5359437 0 EOF`: the device in hex,
/// the inode in decimal; a `->` line waits for the lock and holds nothing.
fn parse_flocks(text: &str) -> Vec<Flock> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.get(1) != Some(&"FLOCK") {
                return None;
            }
            let mut dev = f.get(5)?.split(':');
            Some(Flock {
                pid: f.get(4)?.parse().ok()?,
                major: u32::from_str_radix(dev.next()?, 16).ok()?,
                minor: u32::from_str_radix(dev.next()?, 16).ok()?,
                ino: dev.next()?.parse().ok()?,
            })
        })
        .collect()
}

/// The paths of the unix sockets some process has bound (/proc/net/unix):
/// a socket file listed there is alive.
pub fn unix_socket_paths(root: &Sysroot) -> std::collections::HashSet<String> {
    std::fs::read_to_string(root.path("/proc/net/unix"))
        .map(|t| {
            t.lines()
                .skip(1)
                .filter_map(|l| l.split_whitespace().nth(7))
                .filter(|p| p.starts_with('/'))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The inode of this process's PID namespace (`pid:[4026531836]`): PIDs a
/// note records can be checked only from the namespace that gave them.
pub fn pid_namespace() -> Option<u64> {
    let l = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let s = l.to_str()?;
    s.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// A process as noted by something it leaves behind (a progress note, a
/// directory name): enough to tell it from a later process given its PID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    pub starttime: u64,
}

impl Owner {
    /// This process; None where /proc does not tell.
    pub fn me() -> Option<Owner> {
        Owner::of(&Sysroot::live(), std::process::id())
    }

    /// The process running as `pid` now.
    pub fn of(root: &Sysroot, pid: u32) -> Option<Owner> {
        stat(root, pid).map(|s| Owner {
            pid,
            starttime: s.starttime,
        })
    }

    /// Whether this very process still runs: its PID exists and started at
    /// the same tick (else the PID was reused by another process).
    pub fn alive(&self, root: &Sysroot) -> bool {
        stat(root, self.pid).is_some_and(|s| s.starttime == self.starttime)
    }
}

/// Whether a process that may have written something at `unix_s` (seconds)
/// still runs as `pid`, for notes that recorded no start time: a process that
/// started after that moment cannot have written it.
pub fn alive_since(root: &Sysroot, pid: u32, unix_s: u64) -> bool {
    let Some(s) = stat(root, pid) else {
        return false;
    };
    match boot_time(root) {
        // One tick of rounding, and a second of the note's own rounding down.
        Some(btime) => {
            btime + s.starttime / rustix::param::clock_ticks_per_second().max(1) <= unix_s + 1
        }
        None => true,
    }
}

/// The boot time in seconds after the epoch (`btime` of /proc/stat).
fn boot_time(root: &Sysroot) -> Option<u64> {
    std::fs::read_to_string(root.path("/proc/stat"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let line = b"4242 (a) S 1 (x y) R 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615\n";
        let s = Stat::parse(line).unwrap();
        assert_eq!(s.pid, 4242);
        assert_eq!(s.comm, "a) S 1 (x y");
        assert_eq!(s.state, 'R');
        assert_eq!(s.ppid, 17);
        assert_eq!(s.starttime, 987654);
        assert_eq!(Stat::parse(b"12 (x"), None);
        assert_eq!(Stat::parse(b"12 (x) S 1"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not_it() {
        let root = Sysroot::live();
        let me = Owner::me().unwrap();
        assert!(me.alive(&root));
        let mine = stat(&root, me.pid).unwrap();
        assert_eq!(mine.ppid, std::os::unix::process::parent_id());
        assert!(name(&root, me.pid).is_some());
        let other = Owner {
            starttime: me.starttime + 1,
            ..me
        };
        assert!(
            !other.alive(&root),
            "same pid, another start: another process"
        );
        let dead = crate::test_support::dead_pid();
        assert!(
            !Owner {
                pid: dead,
                starttime: 0
            }
            .alive(&root)
        );
        assert_eq!(name_or_unknown(&root, dead), "?");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(alive_since(&root, me.pid, now));
        assert!(!alive_since(&root, me.pid, 1), "started after 1970");
        assert!(pids(&root).contains(&me.pid));
        assert_eq!(
            euid(&root, me.pid),
            Some(rustix::process::geteuid().as_raw())
        );
        assert_eq!(euid(&root, dead), None);
    }

    #[test]
    fn flocks_are_read_with_hex_devices_and_waiters_left_out() {
        let t = "1: FLOCK  ADVISORY  WRITE 4385 fe:00:5359437 0 EOF\n\
                 1: -> FLOCK  ADVISORY  WRITE 4390 fe:00:5359437 0 EOF\n\
                 2: POSIX  ADVISORY  WRITE 77 00:2a:12 0 EOF\n\
                 3: FLOCK  ADVISORY  READ 12 00:2a:99 0 EOF\n";
        let l = parse_flocks(t);
        assert_eq!(
            l,
            [
                Flock {
                    pid: 4385,
                    major: 0xfe,
                    minor: 0,
                    ino: 5359437
                },
                Flock {
                    pid: 12,
                    major: 0,
                    minor: 42,
                    ino: 99
                }
            ]
        );
    }

    #[test]
    fn the_effective_uid_is_the_second_figure() {
        let status = "Name:\tx\nUmask:\t0022\nUid:\t1000\t0\t0\t0\nGid:\t5\t5\t5\t5\n";
        assert_eq!(status_euid(status), Some(0));
        assert_eq!(status_euid("Name:\tx\n"), None);
    }
}
