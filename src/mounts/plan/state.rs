//! What is mounted at DIR now, compared with the plan.

use super::{CurrentMount, Draft, Facts, Limits, MountState, Request, close};

/// What is mounted at DIR now, compared with what is planned.
pub(super) fn mount_state(
    d: &mut Draft,
    facts: &Facts,
    req: &Request,
    mode: u32,
    limits: &Limits,
) -> MountState {
    let shown = facts.dir.display().to_string();
    match &facts.current {
        None => MountState::NotMounted,
        Some(c) if c.fstype != "tmpfs" => {
            d.blockers.push(format!(
                "{shown} is already a {} mount; unmount it first (`umount {shown}`), then apply",
                c.fstype
            ));
            MountState::Conflict
        }
        Some(c) => {
            let flags_same = c.nosuid && c.nodev && c.noexec == req.noexec;
            let others_same = flags_same
                && c.mode & 0o7777 == mode
                && c.uid == facts.dir_uid
                && c.gid == facts.dir_gid
                && limits.nr_inodes.is_none_or(|n| c.nr_inodes == Some(n))
                && c.noswap == req.noswap
                && req
                    .huge
                    .is_none_or(|h| c.huge.as_deref() == Some(h.as_str()))
                && quota_same(c, req);
            let size_same = match (limits.size_bytes, c.size_bytes) {
                (Some(a), Some(b)) => close(a, b),
                _ => false,
            };
            match (others_same, size_same) {
                (true, true) => MountState::Same,
                (true, false) => MountState::SizeDiffers,
                _ => {
                    let diff = option_differences(c, facts, req, mode, limits);
                    d.blockers.push(format!(
                        "{shown} is already a tmpfs with other options: {}; only the size can change live \
                         (`tmpfsctl apply {shown} --resize SIZE{f}`); for the rest run `tmpfsctl revert {shown} --keep-data{f}` \
                         first, then apply",
                        diff.join(", "),
                        f = req.follow_up
                    ));
                    MountState::Conflict
                }
            }
        }
    }
}

/// How the tmpfs at DIR differs from the plan, besides its size.
fn option_differences(
    c: &CurrentMount,
    facts: &Facts,
    req: &Request,
    mode: u32,
    limits: &Limits,
) -> Vec<String> {
    let mut d = Vec::new();
    let yn = |b: bool| if b { "on" } else { "off" };
    for (name, now, want) in [
        ("nosuid", c.nosuid, true),
        ("nodev", c.nodev, true),
        ("noexec", c.noexec, req.noexec),
        ("noswap", c.noswap, req.noswap),
    ] {
        if now != want {
            d.push(format!("{name} {} (wanted {})", yn(now), yn(want)));
        }
    }
    if c.mode & 0o7777 != mode {
        d.push(format!("mode {:o} (wanted {mode:o})", c.mode & 0o7777));
    }
    if (c.uid, c.gid) != (facts.dir_uid, facts.dir_gid) {
        d.push(format!(
            "uid/gid {}:{} (wanted {}:{})",
            c.uid, c.gid, facts.dir_uid, facts.dir_gid
        ));
    }
    if let Some(n) = limits.nr_inodes.filter(|&n| c.nr_inodes != Some(n)) {
        d.push(format!(
            "nr_inodes {} (wanted {n})",
            c.nr_inodes.unwrap_or(0)
        ));
    }
    if let Some(h) = req.huge.filter(|h| c.huge.as_deref() != Some(h.as_str())) {
        d.push(format!(
            "huge={} (wanted {})",
            c.huge.as_deref().unwrap_or("never"),
            h.as_str()
        ));
    }
    d
}

/// A quota asked for is on the mount now (limits are not shown in
/// mountinfo, so only whether accounting is on can be compared).
fn quota_same(c: &CurrentMount, req: &Request) -> bool {
    let on = |k: &str| c.options.iter().any(|o| o == k);
    req.user_quota.is_none_or(|_| on("usrquota")) && req.group_quota.is_none_or(|_| on("grpquota"))
}
