//! Trees deeper than one path can name. Any user who can write in a
//! directory can make one (mkdir and chdir, one level at a time), so every
//! walk over a tree it does not own has to survive one: each walk here holds
//! a descriptor per level (never a path), so it needs more descriptors than
//! the usual soft limit of 1024 and more stack than a thread's default, and
//! it stops, naming the entry, past a depth it cannot hold.

use crate::sys::fs;

/// The longest path below a tree's top the kernel takes in one call:
/// PATH_MAX less its NUL. What is stored by path (persist's store) cannot
/// hold an entry deeper than this.
pub const MAX_REL: usize = libc::PATH_MAX as usize - 1;

/// The deepest directory a descriptor walk goes into. Far beyond any real
/// tree (a path of one-letter names this deep is twice PATH_MAX), and small
/// enough that its descriptors and its stack ([`on_deep_stack`]) are cheap.
pub const MAX_DEPTH: usize = 4096;

/// Stack per level of a walk's recursion, with room to spare: a level of
/// the copy takes under 2 KiB in a release build.
const STACK_PER_LEVEL: usize = 16 << 10;

/// Descriptors kept free for everything else the process holds open.
const SPARE_FDS: u64 = 256;

/// Raise the soft open-files limit to the hard one (what systemd gives a
/// service anyway) and return the limit now in force.
pub fn raise_open_files_limit() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut l = getrlimit(Resource::Nofile);
    if l.current < l.maximum {
        l.current = l.maximum;
        let _ = setrlimit(Resource::Nofile, l);
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// How deep a walk holding `fds_per_level` descriptors per level may go:
/// [`MAX_DEPTH`], or less when the open-files limit cannot be raised that far.
pub fn depth_limit(fds_per_level: u64) -> usize {
    let fds = raise_open_files_limit().saturating_sub(SPARE_FDS);
    (fds / fds_per_level.max(1)).min(MAX_DEPTH as u64) as usize
}

/// Run a recursive walk on a thread whose stack holds [`MAX_DEPTH`] levels,
/// whatever the caller's stack (the main thread's is 8 MiB, or less under a
/// lower `ulimit -s`). The stack is reserved, not touched: it costs what the
/// walk uses.
pub fn on_deep_stack<T: Send>(f: impl FnOnce() -> anyhow::Result<T> + Send) -> anyhow::Result<T> {
    std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("deep-walk".into())
            .stack_size(MAX_DEPTH * STACK_PER_LEVEL)
            .spawn_scoped(s, f)
            .map_err(|e| anyhow::anyhow!("cannot start a thread for a directory walk: {e}"))?;
        h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// A path too long to read whole in a message: its first and last bytes
/// and its length, each end shown by `show`.
pub fn show_long_with(rel: &[u8], show: fn(&[u8]) -> String) -> String {
    if rel.len() <= 200 {
        return show(rel);
    }
    format!(
        "{}…{} ({} bytes long)",
        show(&rel[..100]),
        show(&rel[rel.len() - 100..]),
        rel.len()
    )
}

/// A path below a tree's top for messages, escaped, and cut in the middle
/// when long.
pub fn show_long(rel: &[u8]) -> String {
    show_long_with(rel, fs::show)
}

/// The error for a directory deeper than a walk goes.
pub fn too_deep(rel: &[u8], limit: usize) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: a directory more than {limit} levels below the top, deeper than tmpfsctl walks; \
         move it higher up or remove it, and retry",
        show_long(rel)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deep_stack_holds_a_recursion_the_default_one_would_not() {
        fn down(n: usize) -> usize {
            let pad = std::hint::black_box([0u8; 1024]);
            if n == 0 {
                pad[0] as usize
            } else {
                down(n - 1) + pad[n % 1024] as usize
            }
        }
        // 16 MiB of frames: more than the main thread's 8 MiB.
        assert_eq!(on_deep_stack(|| Ok(down(MAX_DEPTH * 4))).unwrap(), 0);
    }

    #[test]
    fn long_paths_are_cut_in_the_middle_and_the_limit_is_at_most_max_depth() {
        let p = b"a/".repeat(2100);
        let s = show_long(&p);
        assert!(s.contains("(4200 bytes long)") && s.len() < 260, "{s}");
        assert_eq!(show_long(b"x/y"), "x/y");
        assert!(depth_limit(2) <= MAX_DEPTH && depth_limit(2) > 0);
    }
}
