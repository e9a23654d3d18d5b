//! `persist restore`: mount the tmpfs when missing and load the newest
//! generation that verifies (or the one asked for). A generation whose
//! manifest does not read, whose objects are missing or the wrong size, or
//! whose data does not hash to its manifest while it is loaded is passed
//! over for the next older one, and the restore says which one it loaded
//! and why it skipped the others.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};

use super::load::{self, LoadReport};
use super::scan::LiveIndex;
use super::store::{self, Store, gen_name};
use super::{RestoreRequest, mount, open_dir, resolve_dir, store_for, trust};
use crate::command::Context;
use crate::sys::fs;
use crate::sys::signals::{self, Interrupt};
use crate::sys::tmpfs::Allow;
use crate::term::{safe, safe_path};
use crate::units::fmt_bytes;

#[derive(Debug, serde::Serialize)]
pub struct RestoreReport {
    pub dir: PathBuf,
    pub store: PathBuf,
    pub generation: u64,
    /// "mounted" (a new tmpfs filled and mounted), "loaded" (into the
    /// tmpfs already there), "unchanged" (DIR already held it).
    pub action: &'static str,
    pub files: u64,
    pub bytes: u64,
    /// Newer generations passed over and why (damaged paths in the store).
    pub skipped: Vec<String>,
    /// Files whose object in `generation` is damaged, taken from an older
    /// generation where theirs verifies.
    pub from_older: Vec<load::FromOlder>,
    /// Files no kept generation holds sound, with why: not restored (exit 1).
    pub not_restored: Vec<String>,
    /// DIR lives on a zram device (`enable --on zram`), made again when mounted.
    pub on_zram: bool,
}

/// Generations to try, newest first, and what was said finding them.
fn order(store: &dyn Store, asked: Option<u64>) -> Result<(Vec<u64>, Vec<String>)> {
    if let Some(g) = asked {
        if !store.generations()?.contains(&g) {
            bail!(
                "--generation {g}: {} holds no {} (it holds {:?}; `tmpfsctl persist verify` lists them)",
                safe_path(store.path()),
                gen_name(g),
                store.generations()?
            );
        }
        return Ok((vec![g], Vec::new()));
    }
    let notes = store.pointer_problem()?.into_iter().collect();
    Ok((store.candidates()?, notes))
}

/// The first generation of `gens` whose manifest reads and (unless
/// `per_file`: a damaged object then costs only its own file) whose objects
/// exist with their sizes; what was wrong with the ones before it.
fn first_sound(
    store: &dyn Store,
    gens: &[u64],
    per_file: bool,
    notes: &mut Vec<String>,
) -> Option<usize> {
    for (i, &g) in gens.iter().enumerate() {
        match store.manifest(g) {
            Err(e) => notes.push(format!("{}: {e:#}", gen_name(g))),
            Ok((entries, _)) => {
                let bad = if per_file {
                    Vec::new()
                } else {
                    store.check_objects(&entries)
                };
                if bad.is_empty() {
                    return Some(i);
                }
                notes.push(format!("{}: {}", gen_name(g), bad.join("; ")));
            }
        }
    }
    None
}

/// Load the first of `gens` that loads into the empty `root`. `per_file`
/// (no --generation asked): the newest whose manifest reads, each file
/// whose object is damaged taken from an older generation where it
/// verifies or named as not restored. Otherwise a generation whose data
/// turns out damaged is emptied out of `root` again for the next one.
fn load_first(
    store: &dyn Store,
    gens: &[u64],
    per_file: bool,
    root: BorrowedFd<'_>,
    notes: &mut Vec<String>,
) -> Result<(u64, LoadReport, LiveIndex)> {
    let mut from = 0;
    while let Some(i) = first_sound(store, &gens[from..], per_file, notes) {
        let g = gens[from + i];
        let fallback = if per_file {
            Some(load::Fallback::older_than(store, g)?)
        } else {
            None
        };
        match load::load_with(store, g, root, fallback) {
            Ok((l, live)) => return Ok((g, l, live)),
            Err(e) if load::is_damage(&e) => {
                notes.push(format!("{}: {e:#}", gen_name(g)));
                fs::clear_dir(root).context("emptying DIR after a damaged generation")?;
            }
            Err(e) => return Err(e),
        }
        from += i + 1;
    }
    bail!(
        "store {} holds no generation that verifies:\n  {}\n\
         nothing was restored; `tmpfsctl persist verify` lists the damage",
        safe_path(store.path()),
        notes
            .iter()
            .map(|n| safe(n).into_owned())
            .collect::<Vec<_>>()
            .join("\n  ")
    )
}

pub fn restore_cmd(ctx: &Context, req: &RestoreRequest) -> Result<RestoreReport> {
    let dir = resolve_dir(&req.dir)?;
    let (store_path, entry) = store_for(&dir, req.store.as_deref(), &req.registry)?;
    let store = store::open(&store_path)?;
    let trust = entry
        .as_ref()
        .filter(|e| e.store == store_path)
        .and_then(|e| e.trust);
    trust::check_unchanged(&store_path, store.fd(), trust.as_ref())?;
    let _lock = store.lock()?;
    let (gens, mut notes) = order(&*store, req.generation)?;
    let per_file = req.generation.is_none();
    // SIGINT and SIGTERM alike: a restore is finished, never left half
    // loaded (the tmpfs appears on DIR only once filled).
    let _intr = Interrupt::install(false)?;
    if gens.is_empty() {
        bail!(
            "store {} holds no generation yet; run `tmpfsctl persist sync` first",
            safe_path(&store_path)
        );
    }
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    let size = req
        .size
        .clone()
        .or_else(|| entry.as_ref().and_then(|e| e.size.clone()));
    let zram = entry.as_ref().and_then(|e| e.zram.clone());
    if zram.is_some() && req.size.is_some() {
        bail!(
            "--size sets a tmpfs's size; {} lives on zram, whose size enable set (nothing was changed)",
            safe_path(&dir)
        );
    }
    let mut rep = RestoreReport {
        dir: dir.clone(),
        store: store_path.clone(),
        generation: 0,
        action: "mounted",
        files: 0,
        bytes: 0,
        skipped: Vec::new(),
        from_older: Vec::new(),
        not_restored: Vec::new(),
        on_zram: zram.is_some(),
    };
    if mount::persisted_at(&mounts, &dir, zram.as_ref()).is_none() {
        let backing = match &zram {
            Some(z) => mount::Backing::Zram(z),
            None => mount::Backing::Tmpfs {
                size: size.as_deref(),
            },
        };
        let mut out = None;
        let allow = trust
            .as_ref()
            .map(|t| Allow {
                suid: t.allow_suid,
                dev: t.allow_dev,
            })
            .unwrap_or_default();
        mount::mount_dir(&dir, backing, allow, |root| {
            let st = rustix::fs::fstat(root)?;
            out = Some((
                load_first(&*store, &gens, per_file, root, &mut notes)?,
                st.st_dev,
            ));
            Ok(())
        })?;
        if let Some(((g, l, live), dev)) = out {
            store.write_live_index(g, dev, &live)?;
            (rep.generation, rep.files, rep.bytes) = (g, l.files, l.bytes);
            (rep.from_older, rep.not_restored) = (l.from_older, l.not_restored);
        }
    } else {
        let dfd = open_dir(&dir)?;
        if !fs::names(dfd.as_fd())?.is_empty() {
            let mut probe = Vec::new();
            let Some(i) = first_sound(&*store, &gens, per_file, &mut probe) else {
                notes.extend(probe);
                load_first(&*store, &[], per_file, dfd.as_fd(), &mut notes)?;
                bail!("no generation in {} verifies", safe_path(&store_path));
            };
            let g = gens[i];
            let d = load::diff(dfd.as_fd(), &*store, Some(g))?;
            if d.is_empty() {
                rep.action = "unchanged";
                rep.generation = g;
                rep.skipped = notes;
                rep.skipped.extend(probe);
                return finish_restore(rep, req.quiet);
            }
            if !req.force {
                refuse_overwrite(&dir, &store_path, g, &d)?;
            }
            fs::clear_dir(dfd.as_fd()).with_context(|| format!("clearing {}", safe_path(&dir)))?;
        }
        // The tmpfs already there gets persist's flags before anything from
        // the store is created in it.
        trust::restrict_mount(dfd.as_fd(), trust.as_ref())?;
        let st = rustix::fs::fstat(&dfd)?;
        let (g, l, live) = load_first(&*store, &gens, per_file, dfd.as_fd(), &mut notes)?;
        store.write_live_index(g, st.st_dev, &live)?;
        rep.action = "loaded";
        (rep.generation, rep.files, rep.bytes) = (g, l.files, l.bytes);
        (rep.from_older, rep.not_restored) = (l.from_older, l.not_restored);
    }
    rep.skipped = notes;
    finish_restore(rep, req.quiet)
}

fn refuse_overwrite(
    dir: &std::path::Path,
    store: &std::path::Path,
    g: u64,
    d: &load::Diff,
) -> Result<()> {
    let mut names: Vec<String> = Vec::new();
    for (what, v) in [
        ("changed", &d.changed),
        ("only in DIR", &d.added),
        ("only in the store", &d.removed),
    ] {
        for p in v.iter().take(10) {
            names.push(format!("  {what}: {}", safe(p)));
        }
    }
    bail!(
        "{} holds data that differs from {} in {} ({} {}, {} in files that would be lost):\n{}\n\
         not overwriting it; run `tmpfsctl persist sync {}` to keep DIR's data, or pass --force to replace it with the store's",
        safe_path(dir),
        gen_name(g),
        safe_path(store),
        d.changed_files(),
        crate::units::noun(d.changed_files(), "entry", "entries"),
        fmt_bytes(d.changed_bytes),
        names.join("\n"),
        safe_path(dir)
    )
}

/// Newer generations passed over go to stderr before the text report says
/// it restored an older one ("see the warnings above"); JSON lists them.
fn finish_restore(rep: RestoreReport, quiet: bool) -> Result<RestoreReport> {
    if !quiet {
        for n in &rep.skipped {
            crate::command::warn(&format!("skipped {}", safe(n)));
        }
        for f in &rep.from_older {
            crate::command::warn(&format!(
                "{} ({}); took {} from {}, where it verifies",
                safe(&f.damage),
                gen_name(rep.generation),
                safe(&f.path),
                gen_name(f.generation)
            ));
        }
        for n in &rep.not_restored {
            crate::command::warn(&format!("not restored: {}", safe(n)));
        }
    }
    signals::check_finished(|| {
        format!(
            "restore finished first: {} holds {} of {}",
            safe_path(&rep.dir),
            gen_name(rep.generation),
            safe_path(&rep.store)
        )
    })?;
    Ok(rep)
}

pub fn text(rep: &RestoreReport) -> String {
    if rep.action == "unchanged" {
        format!(
            "{} already holds {} of {}; nothing to restore\n",
            safe_path(&rep.dir),
            gen_name(rep.generation),
            safe_path(&rep.store)
        )
    } else {
        let mut s = format!(
            "{}: {} restored from {} ({} {}, {}){}{}\n",
            safe_path(&rep.dir),
            gen_name(rep.generation),
            safe_path(&rep.store),
            rep.files,
            crate::units::noun(rep.files, "file", "files"),
            fmt_bytes(rep.bytes),
            match (rep.action, rep.on_zram) {
                ("mounted", true) => " onto a new zram device",
                ("mounted", false) => " onto a new tmpfs",
                _ => "",
            },
            if rep.skipped.is_empty() {
                ""
            } else {
                " (the newest generation that verifies; see the warnings above)"
            }
        );
        for f in &rep.from_older {
            s.push_str(&format!(
                "  {} taken from {} (its object in {} is damaged)\n",
                safe(&f.path),
                gen_name(f.generation),
                gen_name(rep.generation)
            ));
        }
        if !rep.not_restored.is_empty() {
            s.push_str(&format!(
                "  {} file(s) not restored: no kept generation holds them sound (see the warnings above)\n",
                rep.not_restored.len()
            ));
        }
        s
    }
}
