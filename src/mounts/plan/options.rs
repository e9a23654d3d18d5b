//! The mount options and why: size and inode limits, the root's mode and owner.

use super::{
    DEFAULT_INODES, Draft, Facts, PlanError, Request, Support, current_tmpfs, is_shared_tmp,
    needed_bytes, needed_inodes, resolve_size, round_up, tight_bytes,
};
use crate::units::{Size, fmt_bytes, tmpfs_size_option};

/// Size: the request if any (never below usage), else keep what a tmpfs
/// here already has, else tmpfs's own default of 50% of RAM unless that is
/// too small for what DIR holds. Returns the option value and the bytes.
pub(super) fn size_limit(
    d: &mut Draft,
    facts: &Facts,
    req: &Request,
) -> Result<(String, u64), PlanError> {
    let shown = facts.dir.display().to_string();
    let mem = &facts.mem;
    let need_b = needed_bytes(facts.used_bytes);
    let cur_tmpfs = current_tmpfs(facts);
    let (size, why) = match req.size {
        Some(s) => {
            let b = resolve_size(s, mem.mem_total_bytes);
            crate::units::check_tmpfs_cap(
                &s.to_string(),
                b,
                mem.mem_total_bytes,
                mem.swap_total_bytes,
                req.force,
            )
            .map_err(|e| PlanError(format!("--size {s}: {e}")))?;
            if b < facts.used_bytes {
                return Err(PlanError(format!(
                    "--size {s} ({}) is below what {shown} holds now ({}); give at least {} \
                     (usage plus headroom), e.g. --size {}",
                    fmt_bytes(b),
                    fmt_bytes(facts.used_bytes),
                    fmt_bytes(need_b),
                    tmpfs_size_option(need_b)
                )));
            }
            if b < tight_bytes(facts.used_bytes) {
                d.warn(
                    "size_tight",
                    format!(
                        "size {} leaves less than the recommended headroom over the {} {shown} holds now; \
                         writers may hit ENOSPC (recommended at least {})",
                        fmt_bytes(b),
                        fmt_bytes(facts.used_bytes),
                        fmt_bytes(need_b)
                    ),
                );
            }
            (s, "asked for".to_string())
        }
        // An existing tmpfs keeps its size (so a second apply is a no-op)
        // as long as what it holds fits.
        None => match cur_tmpfs
            .and_then(|c| c.size_bytes)
            .filter(|&b| b >= facts.used_bytes)
        {
            // Written as configured: a share of RAM stays a share, so a
            // second apply changes nothing and a RAM upgrade still scales it.
            Some(b) => (
                configured_size(facts)
                    .filter(|&c| same_size(resolve_size(c, mem.mem_total_bytes), b))
                    .unwrap_or(Size::Bytes(b)),
                "keeps the size the tmpfs here has now".to_string(),
            ),
            None => default_size(facts, need_b),
        },
    };
    let b = resolve_size(size, mem.mem_total_bytes);
    let why = if req.size.is_some() || cur_tmpfs.is_some_and(|c| c.size_bytes == Some(b)) {
        format!("{why} ({})", fmt_bytes(b))
    } else {
        why
    };
    d.opt(format!("size={size}"), why);
    size_against_memory(d, facts, b, need_b);
    Ok((size.to_string(), b))
}

/// The `size=` DIR's configuration gives it: its fstab line, else the
/// `Options=` of the systemd unit that mounts it.
pub(crate) fn configured_size(facts: &Facts) -> Option<Size> {
    let from_fstab = facts.fstab_entry.as_ref().map(|e| e.options.clone());
    let from_unit = || {
        facts
            .unit
            .options
            .as_ref()
            .map(|o| o.split(',').map(str::to_string).collect::<Vec<_>>())
    };
    from_fstab
        .or_else(from_unit)?
        .iter()
        .rev()
        .find_map(|o| o.strip_prefix("size="))
        .and_then(|v| crate::units::parse_size(v).ok())
}

/// The kernel rounds a tmpfs size to whole pages (and a share of RAM to
/// pages of RAM), so a configured size and the mounted one agree within a
/// few pages.
pub(crate) fn same_size(a: u64, b: u64) -> bool {
    a.abs_diff(b) <= 4 * 4096
}

/// A size a person would write: whole GiB from 1 GiB up, else a multiple of
/// 64 MiB (rounded up, so the headroom stays).
fn round_size(b: u64) -> u64 {
    const GIB: u64 = 1 << 30;
    round_up(b, if b >= GIB { GIB } else { 64 << 20 })
}

/// The size when none was asked for and no tmpfs is here: a share of RAM,
/// or usage plus headroom when that share is too small.
fn default_size(facts: &Facts, need_b: u64) -> (Size, String) {
    let shown = facts.dir.display().to_string();
    let mem = &facts.mem;
    // Without swap a full tmpfs pins every page in RAM, so the
    // default share is halved; with swap, tmpfs's own 50%.
    let (pct, what) = if mem.swap_total_bytes == 0 {
        (
            25.0,
            "a quarter of the RAM, since there is no swap to take a full tmpfs's pages",
        )
    } else {
        (50.0, "tmpfs's default of half the RAM")
    };
    let share = resolve_size(Size::PercentOfRam(pct), mem.mem_total_bytes);
    if share >= need_b {
        (
            Size::PercentOfRam(pct),
            format!(
                "{what} ({}): it is a limit, not a reservation, and \
                 leaves room for {shown}'s {} now plus headroom",
                fmt_bytes(share),
                fmt_bytes(facts.used_bytes)
            ),
        )
    } else {
        (
            Size::Bytes(round_size(need_b)),
            format!(
                "{shown} holds {} now; {pct}% of the RAM ({}) would be too small, so usage + 50% (at least 64 MiB), rounded up",
                fmt_bytes(facts.used_bytes),
                fmt_bytes(share)
            ),
        )
    }
}

/// Warnings and blockers from comparing a size of `b` bytes (and the
/// `need_b` DIR needs) with RAM + swap and the other tmpfs limits.
fn size_against_memory(d: &mut Draft, facts: &Facts, b: u64, need_b: u64) {
    let shown = facts.dir.display().to_string();
    let mem = &facts.mem;
    let ceiling = mem.mem_total_bytes.saturating_add(mem.swap_total_bytes);
    if b > ceiling {
        d.warn(
            "size_exceeds_memory",
            format!(
                "size {} is more than RAM + swap ({}): filling it would invoke the OOM killer; choose a smaller --size",
                fmt_bytes(b),
                fmt_bytes(ceiling)
            ),
        );
    }
    if need_b > ceiling {
        d.blockers.push(format!(
            "{shown} holds {} which with headroom ({}) does not fit in RAM + swap ({}); keep it on disk",
            fmt_bytes(facts.used_bytes),
            fmt_bytes(need_b),
            fmt_bytes(ceiling)
        ));
    }
    // A tmpfs here now already holds its data in RAM; a new one takes it in.
    let held_here = current_tmpfs(facts).map_or(0, |_| facts.used_bytes);
    let need = b.saturating_sub(held_here);
    let left = mem.left_for_tmpfs(mem.shmem_bytes);
    if b <= ceiling && need > left {
        d.warn(
            "tmpfs_overcommit",
            format!(
                "filling {shown} to its size {} would need {} more than memory has left ({}: MemAvailable + \
                 SwapFree, at most RAM + swap {} less the {} tmpfs and shared memory hold now), so the OOM killer \
                 would run before writers get ENOSPC. Give a --size below {}",
                fmt_bytes(b),
                fmt_bytes(need),
                fmt_bytes(left),
                fmt_bytes(ceiling),
                fmt_bytes(mem.shmem_bytes),
                fmt_bytes(left.saturating_add(held_here))
            ),
        );
    }
}

pub(super) fn inode_limit(d: &mut Draft, facts: &Facts, req: &Request) -> Result<u64, PlanError> {
    let shown = facts.dir.display().to_string();
    let need_i = needed_inodes(facts.inodes);
    let (inodes, why) = match req.inodes {
        Some(n) => {
            if n < facts.inodes {
                return Err(PlanError(format!(
                    "--inodes {n} is below the {} files and directories {shown} holds now; give at least {need_i}",
                    facts.inodes
                )));
            }
            (n, "asked for".to_string())
        }
        None => match current_tmpfs(facts)
            .and_then(|c| c.nr_inodes)
            .filter(|&n| n >= facts.inodes)
        {
            Some(n) => (
                n,
                "keeps the inode limit the tmpfs here has now".to_string(),
            ),
            None => {
                let n = DEFAULT_INODES.max(need_i);
                (
                    n,
                    format!(
                        "{} {} in use now; {} allows that plus headroom (systemd's tmp.mount uses 1m); \
                         builds with many small files run out of inodes before bytes",
                        facts.inodes,
                        crate::units::noun(facts.inodes, "inode", "inodes"),
                        n
                    ),
                )
            }
        },
    };
    d.opt(format!("nr_inodes={inodes}"), why);
    Ok(inodes)
}

/// The root's mode (and uid/gid options when not root's): as asked, 1777 for
/// the shared temp directories, else as DIR has now.
pub(super) fn mode_and_owner(d: &mut Draft, facts: &Facts, req: &Request) -> u32 {
    let shown = facts.dir.display().to_string();
    let mode = match req.mode {
        Some(m) => {
            d.opt(format!("mode={m:o}"), "asked for".into());
            m
        }
        None if is_shared_tmp(&facts.dir) => {
            let why = if facts.dir_mode & 0o7777 == 0o1777 {
                "as now: everyone may create files, the sticky bit stops them deleting each other's"
                    .to_string()
            } else {
                d.warn(
                    "tmp_mode",
                    format!(
                        "{shown} has mode {:o} now; shared temp directories need 1777 (sticky, world-writable)",
                        facts.dir_mode & 0o7777
                    ),
                );
                "shared temp directories need 1777: writable by all, sticky so users cannot delete each other's files".into()
            };
            d.opt("mode=1777".into(), why);
            0o1777
        }
        None => {
            let m = facts.dir_mode & 0o7777;
            d.opt(format!("mode={m:o}"), "as the directory has now".into());
            m
        }
    };
    if facts.dir_uid != 0 {
        d.opt(
            format!("uid={}", facts.dir_uid),
            "owner of the directory now".into(),
        );
    }
    if facts.dir_gid != 0 {
        d.opt(
            format!("gid={}", facts.dir_gid),
            "group of the directory now".into(),
        );
    }
    mode
}

/// `usrquota`/`grpquota` with a block limit per user or group, when asked
/// and the kernel has them; otherwise a request error before anything
/// changes, naming the kernel and what it lacks.
pub(super) fn quota_options(d: &mut Draft, facts: &Facts, req: &Request) -> Result<(), PlanError> {
    let asked = [
        ("usrquota", "--user-quota", "user", req.user_quota),
        ("grpquota", "--group-quota", "group", req.group_quota),
    ];
    let Some(&(_, flag, _, _)) = asked.iter().find(|a| a.3.is_some()) else {
        return Ok(());
    };
    let release = &facts.kernel_release;
    match &facts.tmpfs_quota {
        Support::Yes => {}
        Support::No(why) => {
            return Err(PlanError(format!(
                "{flag} cannot be honoured: {why}. Drop {flag}, or give each user a tmpfs of their own \
                 (e.g. `tmpfsctl run`)"
            )));
        }
        Support::Unknown(why) => {
            if !release_at_least(release, 6, 6) {
                return Err(PlanError(format!(
                    "{flag} cannot be honoured: Linux {release} has no tmpfs quotas (they need Linux 6.6+ \
                     built with CONFIG_TMPFS_QUOTA). Drop {flag}"
                )));
            }
            d.warn(
                "quota_unchecked",
                format!(
                    "could not ask the kernel whether its tmpfs has quotas ({why}); Linux {release} has them \
                     only when built with CONFIG_TMPFS_QUOTA, and apply fails before changing anything if not"
                ),
            );
        }
    }
    for (key, flag, who, size) in asked {
        let Some(size) = size else { continue };
        let Size::Bytes(b) = size else {
            return Err(PlanError(format!(
                "{flag} {size}: a quota is an amount per {who}, not a share of RAM; give a size such as 1G"
            )));
        };
        d.opt(
            key.to_string(),
            format!(
                "asked for: per-{who} accounting, so one {who} cannot fill the mount for everyone"
            ),
        );
        d.opt(
            format!(
                "{key}_block_hardlimit={}",
                tmpfs_size_option(round_up(b, super::PAGE))
            ),
            format!(
                "asked for: each {who} may hold at most {} here",
                fmt_bytes(b)
            ),
        );
    }
    Ok(())
}

/// Whether a release such as `6.6.0-1-amd64` is at least `major.minor`.
pub(super) fn release_at_least(release: &str, major: u32, minor: u32) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}
