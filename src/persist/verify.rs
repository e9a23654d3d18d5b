//! `persist verify`: read back every object every kept generation refers to
//! and compare it with the manifest (exists, size, content hash), so damage
//! in the store is found before a restore needs it. Each object is hashed
//! once however many generations share it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::os::fd::AsFd;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::registry::Registry;
use super::scan::show;
use super::store::{self, Store, gen_name};
use super::{content, resolve_dir, store_for};
use crate::command::{Context, ExitCode};
use crate::term::{safe, safe_path};

#[derive(Debug, Clone)]
pub struct VerifyRequest {
    pub dir: Option<PathBuf>,
    pub store: Option<PathBuf>,
    pub registry: PathBuf,
}

#[derive(Debug, Serialize)]
pub struct Damage {
    pub generation: u64,
    /// The damaged path in the store.
    pub store_path: PathBuf,
    /// The file of DIR whose content it holds (empty for a manifest).
    pub file: String,
    pub problem: String,
}

#[derive(Debug, Serialize)]
pub struct StoreVerdict {
    pub dir: PathBuf,
    pub store: PathBuf,
    pub current: Option<u64>,
    pub generations: Vec<u64>,
    /// Generations whose manifest and every object check out.
    pub sound_generations: Vec<u64>,
    pub objects_checked: u64,
    pub bytes_checked: u64,
    /// Objects no kept generation refers to (collected by the next prune
    /// after an interrupted one; not damage).
    pub unreferenced_objects: u64,
    pub damaged: Vec<Damage>,
    /// Generations newer than `current`: a sync stopped before it switched
    /// to them. Never read by a restore and removed by the next sync, so
    /// not damage.
    pub unfinished_generations: Vec<u64>,
    /// Store-level problems (no `current`, unreadable store).
    pub problems: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct VerifyReport {
    pub schema_version: u32,
    pub stores: Vec<StoreVerdict>,
}

fn check(dir: PathBuf, store_path: PathBuf) -> StoreVerdict {
    let mut v = StoreVerdict {
        dir,
        store: store_path.clone(),
        current: None,
        generations: Vec::new(),
        sound_generations: Vec::new(),
        objects_checked: 0,
        bytes_checked: 0,
        unreferenced_objects: 0,
        damaged: Vec::new(),
        unfinished_generations: Vec::new(),
        problems: Vec::new(),
    };
    let store = match store::open(&store_path) {
        Ok(s) => s,
        Err(e) => {
            v.problems.push(format!("{e:#}"));
            return v;
        }
    };
    match store.current() {
        Ok(c) => v.current = c,
        Err(e) => v.problems.push(format!("{e:#}")),
    }
    v.generations = store.generations().unwrap_or_default();
    if v.current.is_none() && !v.generations.is_empty() {
        v.problems.push(format!(
            "{}: missing; a sync or restore uses the newest generation that verifies",
            store.current_path().display()
        ));
    }
    if v.current.is_some_and(|c| !v.generations.contains(&c)) {
        v.problems.push(format!(
            "{} names a generation that is not there",
            store.current_path().display()
        ));
    }
    // Object identity -> its problem (None: sound), each read once.
    let mut seen: HashMap<[u8; 16], Option<String>> = HashMap::new();
    let mut buf = Vec::new();
    for &g in &v.generations {
        if v.current.is_some_and(|c| g > c) {
            v.unfinished_generations.push(g);
            continue;
        }
        let entries = match store.manifest(g) {
            Ok((e, _)) => e,
            Err(e) => {
                v.damaged.push(Damage {
                    generation: g,
                    store_path: store.manifest_path(g),
                    file: String::new(),
                    problem: format!("{:#}", e.root_cause()),
                });
                continue;
            }
        };
        let mut sound = true;
        for e in entries.iter().filter(|e| e.is_file()) {
            let Some(h) = e.hash else { continue };
            let problem = seen
                .entry(h)
                .or_insert_with(|| {
                    let p = object_check(&*store, &h, e.size, &mut buf);
                    v.objects_checked += 1;
                    v.bytes_checked += e.size;
                    p
                })
                .clone();
            if let Some(problem) = problem {
                sound = false;
                v.damaged.push(Damage {
                    generation: g,
                    store_path: store.object_path(&h),
                    file: show(&e.path),
                    problem,
                });
            }
        }
        if sound {
            v.sound_generations.push(g);
        }
    }
    v.unreferenced_objects = store.unreferenced_objects(&seen.keys().copied().collect());
    v
}

fn object_check(store: &dyn Store, h: &[u8; 16], size: u64, buf: &mut Vec<u8>) -> Option<String> {
    if let Some(p) = store.object_problem(h, size) {
        return Some(p);
    }
    let fd = match store.open_object(h) {
        Ok(f) => f,
        Err(e) => return Some(format!("cannot open it: {e}")),
    };
    let st = rustix::fs::fstat(&fd).ok()?;
    match content::copy_hash(fd.as_fd(), &st, None, buf) {
        Ok(got) if &got == h => None,
        Ok(_) => Some("its content does not hash to its name (damaged on disk)".into()),
        Err(e) => Some(format!("reading it failed: {e}")),
    }
}

pub fn verify_cmd(_ctx: &Context, req: &VerifyRequest) -> Result<VerifyReport> {
    let targets: Vec<(PathBuf, PathBuf)> = match &req.dir {
        Some(d) => {
            let dir = resolve_dir(d)?;
            let (store, _) = store_for(&dir, req.store.as_deref(), &req.registry)?;
            vec![(dir, store)]
        }
        None => Registry::load(&req.registry)?
            .dirs
            .into_iter()
            .map(|e| (e.dir, e.store))
            .collect(),
    };
    let report = VerifyReport {
        schema_version: 1,
        stores: targets.into_iter().map(|(d, s)| check(d, s)).collect(),
    };
    Ok(report)
}

impl VerifyReport {
    /// Exit 1 with a list of what is damaged.
    pub fn exit_code(&self) -> ExitCode {
        let bad = self
            .stores
            .iter()
            .any(|s| !s.damaged.is_empty() || !s.problems.is_empty());
        ExitCode::problem_if(bad)
    }
}

pub fn text(r: &VerifyReport) -> String {
    let mut out = String::new();
    if r.stores.is_empty() {
        out.push_str("no persisted directories to verify\n");
    }
    for s in &r.stores {
        let state = if s.damaged.is_empty() && s.problems.is_empty() {
            "sound"
        } else {
            "DAMAGED"
        };
        let _ = writeln!(
            out,
            "{} -> {}: {state}: {} generation(s) {:?}, sound {:?}; {} objects ({}) read and hashed{}",
            safe_path(&s.dir),
            safe_path(&s.store),
            s.generations.len(),
            s.generations,
            s.sound_generations,
            s.objects_checked,
            crate::units::fmt_bytes(s.bytes_checked),
            if s.unreferenced_objects > 0 {
                format!(
                    "; {} unreferenced (the next sync collects them)",
                    s.unreferenced_objects
                )
            } else {
                String::new()
            }
        );
        for g in &s.unfinished_generations {
            let _ = writeln!(
                out,
                "  {}: unfinished, ignored (a sync stopped before switching to it; the next sync removes it)",
                gen_name(*g)
            );
        }
        for p in &s.problems {
            let _ = writeln!(out, "  problem: {}", safe(p));
        }
        for d in &s.damaged {
            let _ = writeln!(
                out,
                "  damaged: {} ({}{}): {}",
                safe_path(&d.store_path),
                gen_name(d.generation),
                if d.file.is_empty() {
                    String::new()
                } else {
                    format!(", content of {}", safe(&d.file))
                },
                safe(&d.problem)
            );
        }
    }
    out
}
