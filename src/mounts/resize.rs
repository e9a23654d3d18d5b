//! `tmpfsctl apply DIR --resize SIZE`: change only the size of the tmpfs at
//! DIR, live, whatever its other options are. DIR's configuration is touched
//! only where it already has some (an fstab line, or a mount unit or
//! drop-in), and there only its `size=` changes. The undo it prints puts the
//! old size back the same way; it never unmounts.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use super::facts::{gather_facts_at, read_fstab};
use super::outcome::{ApplyReport, PersistResult};
use super::plan::{self, Boot, Facts, OptionWhy, Persist, PersistAction, Plan};
use super::{ApplyRequest, boot, live, render};
use crate::command::{self, Context};
use crate::sys::atomic::{AtomicWrite, check_writable};
use crate::sys::statfs;
use crate::sys::systemd::UnitState;
use crate::term::shell_path;
use crate::units::{Size, check_tmpfs_cap, fmt_bytes};

/// Where DIR's size is configured, and the text with only `size=` changed.
enum Config {
    /// Nothing configures DIR (or `--boot none`): live only.
    Nothing(String),
    Fstab {
        path: PathBuf,
        line: String,
        text: Vec<u8>,
        edit: boot::Edit,
    },
    Dropin {
        path: PathBuf,
        unit: String,
        fragment: PathBuf,
        content: String,
    },
}

/// `options` (comma-joined) with its `size=` set to `size`, every other
/// option as it was, in its place.
fn with_size(options: &[String], size: &str) -> String {
    let mut out: Vec<String> = options
        .iter()
        .filter(|o| !o.is_empty())
        .map(|o| {
            if o.starts_with("size=") {
                format!("size={size}")
            } else {
                o.clone()
            }
        })
        .collect();
    if !out.iter().any(|o| o.starts_with("size=")) {
        out.push(format!("size={size}"));
    }
    out.dedup();
    out.join(",")
}

/// Mount options the resize cannot honour: only the size changes live.
fn refuse_other_options(args: &ApplyRequest, dir: &str) -> Result<()> {
    let o = &args.opts;
    let mut other = Vec::new();
    for (flag, given) in [
        ("--inodes", o.inodes.is_some()),
        ("--noexec", o.noexec),
        ("--noswap", o.noswap),
        ("--huge", o.huge.is_some()),
        ("--mode", o.mode.is_some()),
        ("--user-quota", o.user_quota.is_some()),
        ("--group-quota", o.group_quota.is_some()),
        ("--fstype ramfs", o.ramfs),
    ] {
        if given {
            other.push(flag);
        }
    }
    if !other.is_empty() {
        bail!(
            "--resize changes only the size; {} would change more. Drop {}, or run \
             `tmpfsctl revert {dir} --keep-data{f}` and then `tmpfsctl apply {dir}` with the options wanted",
            other.join(", "),
            if other.len() == 1 { "it" } else { "them" },
            f = args.target.follow_up()
        );
    }
    Ok(())
}

/// The configuration to update: DIR's fstab line, else the drop-in of a
/// unit that mounts DIR; `--boot` narrows that down (none: neither).
fn config_for(facts: &Facts, boot: Option<Boot>, size: &str) -> Result<Config> {
    let dir = &facts.dir;
    let shown = dir.display();
    if boot == Some(Boot::None) {
        return Ok(Config::Nothing(format!(
            "asked for: the live size only; at the next boot {shown} gets its configured size again"
        )));
    }
    if let Some(e) = facts
        .fstab_entry
        .as_ref()
        .filter(|_| boot != Some(Boot::Systemd))
    {
        let path = facts.fstab_path.clone();
        let line = format!(
            "{} {} {} {} {} {}",
            plan::fstab_escape(Path::new(&e.spec)),
            plan::fstab_escape(dir),
            e.vfstype,
            with_size(&e.options, size),
            e.freq,
            e.passno
        );
        let old = read_fstab(&path)?;
        let (text, edit) = boot::fstab_with_line(&old, dir, &line);
        return Ok(Config::Fstab {
            path,
            line,
            text,
            edit,
        });
    }
    let u = &facts.unit;
    let dropin = plan::dropin_path(&facts.unit_dir, &u.name);
    let generated = u
        .fragment
        .as_ref()
        .is_some_and(|f| f.starts_with("/run/systemd/generator"));
    let mounts_dir = u.state == UnitState::Enabled || dropin.exists();
    if boot != Some(Boot::Fstab)
        && let Some(fragment) = u.fragment.as_ref().filter(|_| !generated && mounts_dir)
        && u.state != UnitState::Masked
    {
        let opts: Vec<String> = u
            .options
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::to_string)
            .collect();
        return Ok(Config::Dropin {
            path: dropin,
            unit: u.name.clone(),
            fragment: fragment.clone(),
            content: plan::dropin_text(dir, &with_size(&opts, size)),
        });
    }
    Ok(Config::Nothing(format!(
        "neither {} nor a mount unit configures {shown}: only the live size changes, and it is gone at the next \
         reboot; `tmpfsctl apply {} --boot fstab` (or systemd) makes the whole mount permanent",
        facts.fstab_path.display(),
        shell_path(dir)
    )))
}

/// The size the tmpfs has now, as its configuration writes it when that
/// agrees (a share of RAM stays a share), else in bytes.
fn old_size(facts: &Facts, bytes: u64) -> Size {
    plan::configured_size(facts)
        .filter(|c| plan::same_size(plan::resolve_size(*c, facts.mem.mem_total_bytes), bytes))
        .unwrap_or(Size::Bytes(bytes))
}

pub(super) fn resize(ctx: &Context, args: &ApplyRequest, r: Size) -> Result<ApplyReport> {
    let (facts, opened) = gather_facts_at(ctx, &args.target)?;
    let dir = facts.dir.clone();
    let q = shell_path(&dir);
    let follow = args.target.follow_up();
    refuse_other_options(args, &q)?;
    let Some(cur) = plan::current_tmpfs(&facts) else {
        bail!(
            "{} is not a tmpfs, so there is nothing to resize; run `tmpfsctl apply {q}{follow}` without --resize first",
            dir.display()
        );
    };
    let mem = &facts.mem;
    let new_b = plan::resolve_size(r, mem.mem_total_bytes);
    check_tmpfs_cap(
        &r.to_string(),
        new_b,
        mem.mem_total_bytes,
        mem.swap_total_bytes,
        args.force,
    )
    .map_err(|e| anyhow::anyhow!("--resize {r}: {e}"))?;
    let used = statfs::statfs(&opened.proc_path())?.used_bytes;
    if new_b < used {
        bail!(
            "--resize {r} ({}) is below the {} in use in {}; give at least that plus headroom, e.g. --resize {}",
            fmt_bytes(new_b),
            fmt_bytes(used),
            dir.display(),
            crate::units::tmpfs_size_option(plan::needed_bytes(used))
        );
    }
    let size = r.to_string();
    let config = config_for(&facts, args.opts.boot, &size)?;
    match &config {
        Config::Fstab { path, edit, .. } if *edit != boot::Edit::Unchanged => {
            check_writable("--fstab", path)?
        }
        _ => {}
    }
    let old_b = cur.size_bytes;
    let p = resize_plan(&facts, args, r, &config)?;
    if !args.target.quiet {
        command::show(&render::plan_text(&p));
    }
    let same_live = old_b.is_some_and(|b| plan::same_size(b, new_b));
    let same_config = match &config {
        Config::Nothing(_) => true,
        Config::Fstab { edit, .. } => *edit == boot::Edit::Unchanged,
        Config::Dropin { path, content, .. } => {
            std::fs::read_to_string(path).ok().as_deref() == Some(content.as_str())
        }
    };
    let undo = match old_b {
        Some(b) => {
            let old = old_size(&facts, b);
            let force = if old_b > Some(mem.mem_total_bytes.saturating_add(mem.swap_total_bytes)) {
                " --force"
            } else {
                ""
            };
            let boot = if args.opts.boot == Some(Boot::None) {
                " --boot none"
            } else {
                ""
            };
            format!("tmpfsctl apply {q} --resize {old}{boot}{force}{follow}")
        }
        None => format!("mount -o remount,size=0 {q}"),
    };
    let mut changes = Vec::new();
    let mut resized_to = None;
    if !(same_live && same_config) {
        super::ui::confirm(
            &format!("Change the size of {} as above?", dir.display()),
            args.yes,
        )?;
    }
    if !same_live {
        live::resize(&dir, &size)?;
        changes.push(format!(
            "resized the tmpfs at {} from {} to {size} ({}); its other options are as they were",
            dir.display(),
            old_b.map_or("no limit".to_string(), fmt_bytes),
            fmt_bytes(new_b)
        ));
        resized_to = Some(size.clone());
    }
    let persisted = match write_config(&config, &dir) {
        Ok(r) => r,
        Err(e) => {
            if !same_live && let Some(b) = old_b {
                let back = crate::units::tmpfs_size_option(b);
                if live::resize(&dir, &back).is_ok() {
                    return Err(e.context(format!(
                        "updating the configuration failed, so the live size was put back to {back}: {} is as it was",
                        dir.display()
                    )));
                }
            }
            return Err(e);
        }
    };
    if persisted.edit != boot::Edit::Unchanged {
        changes.push(format!(
            "set size={size} in {} (nothing else in it changed)",
            persisted.changed_file()
        ));
    }
    let report = ApplyReport {
        schema_version: plan::SCHEMA_VERSION,
        dir: dir.display().to_string(),
        plan: p,
        mounted: false,
        resized_to,
        copied: None,
        verified_entries: None,
        persist: persisted,
        changes,
        follow_up: follow,
        undo: Some(undo),
    };
    Ok(report)
}

fn write_config(config: &Config, dir: &Path) -> Result<PersistResult> {
    match config {
        Config::Nothing(_) => Ok(PersistResult {
            via: "none".into(),
            path: None,
            edit: boot::Edit::Unchanged,
            backup: None,
        }),
        Config::Fstab {
            path, text, edit, ..
        } => {
            let mut backup = None;
            if *edit != boot::Edit::Unchanged {
                backup = boot::make_backup(path, "the backup of --fstab")?;
                AtomicWrite::config("--fstab")
                    .write_checked(path, text, |tmp| boot::verify_fstab(tmp, dir))?;
                boot::daemon_reload_if_real(path, "/etc/");
            }
            Ok(PersistResult {
                via: "fstab".into(),
                path: Some(path.display().to_string()),
                edit: *edit,
                backup: backup.map(|b| b.display().to_string()),
            })
        }
        Config::Dropin {
            path,
            unit,
            fragment,
            content,
        } => {
            let (edit, backup) = boot::write_dropin(path, content, |_| {
                boot::verify_dropin(fragment, unit, content)
            })
            .with_context(|| format!("cannot update the size in {}", path.display()))?;
            boot::daemon_reload_if_real(path, "/etc/");
            Ok(PersistResult {
                via: "systemd".into(),
                path: Some(path.display().to_string()),
                edit,
                backup: backup.map(|b| b.display().to_string()),
            })
        }
    }
}

/// The plan a resize carries out, in the shape `plan` prints: the size
/// option alone, the live step, and the configuration edit (or none).
fn resize_plan(facts: &Facts, args: &ApplyRequest, r: Size, config: &Config) -> Result<Plan> {
    let req = plan::Request {
        size: Some(r),
        boot: Some(Boot::None),
        force: args.force,
        follow_up: args.target.follow_up(),
        ..Default::default()
    };
    let mut p = plan::plan(facts, &req)?;
    let dir = &facts.dir;
    let shown = dir.display().to_string();
    let size = r.to_string();
    let cur = plan::current_tmpfs(facts);
    let old = cur.and_then(|c| c.size_bytes);
    p.options = vec![OptionWhy {
        option: format!("size={size}"),
        reason: format!(
            "asked for ({}, now {}); every other option stays as mounted",
            fmt_bytes(plan::resolve_size(r, facts.mem.mem_total_bytes)),
            old.map_or("no limit".to_string(), fmt_bytes)
        ),
    }];
    p.mount_options = with_size(&cur.map(|c| c.options.clone()).unwrap_or_default(), &size);
    p.mount_state = if old.is_some_and(|b| plan::same_size(b, p.size_bytes.unwrap_or(0))) {
        plan::MountState::Same
    } else {
        plan::MountState::SizeDiffers
    };
    // The plan's blockers are about mounting a new tmpfs with its options;
    // a resize keeps the mount as it is.
    p.blockers.clear();
    p.apply_command = format!(
        "tmpfsctl apply {} --resize {size}{}{}",
        shell_path(dir),
        if args.force { " --force" } else { "" },
        args.target.follow_up()
    );
    let mut steps = vec![format!(
        "change the size of the tmpfs at {shown} live (`mount -o remount,size={size}`); its files and other options stay as they are"
    )];
    let unit = facts.unit.name.clone();
    p.persist = match config {
        Config::Nothing(why) => {
            steps.push(format!("edit no configuration: {why}"));
            Persist {
                via: Boot::None,
                path: String::new(),
                unit,
                content: String::new(),
                action: PersistAction::Unchanged,
                why: why.clone(),
            }
        }
        Config::Fstab {
            path, line, edit, ..
        } => {
            steps.push(if *edit == boot::Edit::Unchanged {
                format!("{} already has size={size}: leave it", path.display())
            } else {
                format!(
                    "set size={size} in the line for {shown} in {} (backup {}.tmpfsctl.bak; every other option and line unchanged)",
                    path.display(),
                    path.display()
                )
            });
            Persist {
                via: Boot::Fstab,
                path: path.display().to_string(),
                unit,
                content: line.clone(),
                action: if *edit == boot::Edit::Unchanged {
                    PersistAction::Unchanged
                } else {
                    PersistAction::Replace
                },
                why: format!(
                    "{} has a line for {shown}: its size= follows",
                    path.display()
                ),
            }
        }
        Config::Dropin {
            path,
            unit,
            content,
            ..
        } => {
            steps.push(format!(
                "set size={size} in the drop-in {} (other options as {unit} has them), checked with `systemd-analyze verify`",
                path.display()
            ));
            Persist {
                via: Boot::Systemd,
                path: path.display().to_string(),
                unit: unit.clone(),
                content: content.clone(),
                action: PersistAction::Write,
                why: format!("{unit} mounts {shown}: its size= follows"),
            }
        }
    };
    p.steps = steps;
    Ok(p)
}
