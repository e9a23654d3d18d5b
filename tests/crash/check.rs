//! One file system's run: make the disk, boot the guest on it, then build
//! and check the crash states the log allows.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::host::{self, Loop, Mounted, Scratch, ok, p};
use crate::log::Log;
use crate::scenario::{
    self, ACK_BYTES, APPLY, DISABLE, DISABLE2, DISK_BYTES, ENABLE, ENABLE2, FSTAB, REVERT, STEPS,
    SYNC2,
};
use crate::states::{self, Kind};
use crate::{guest, tree};

pub struct Row {
    pub fs: &'static str,
    pub entries: usize,
    pub flushes: usize,
    pub epochs: usize,
    /// States checked per last ACK on them (0: none) and kind.
    pub checked: BTreeMap<(u32, &'static str), usize>,
    pub violations: Vec<String>,
    pub boot_s: f64,
    pub check_s: f64,
}

fn env_n(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Make a file system of `fs` labelled for the guest on `img`, its last
/// MiB left outside for ACK records, holding the fstab the revert edits.
fn make_disk(fs: &str, img: &Path, mnt: &Path) {
    File::create(img).unwrap().set_len(DISK_BYTES).unwrap();
    let kib = format!("{}k", (DISK_BYTES - ACK_BYTES) >> 10);
    match fs {
        "ext4" => ok(
            "mkfs.ext4",
            &["-q", "-F", "-L", scenario::LABEL, p(img), &kib],
        ),
        "xfs" => ok(
            "mkfs.xfs",
            &[
                "-q",
                "-f",
                "-L",
                scenario::LABEL,
                "-d",
                &format!("size={kib}"),
                p(img),
            ],
        ),
        "btrfs" => ok(
            "mkfs.btrfs",
            &[
                "-q",
                "-f",
                "-L",
                scenario::LABEL,
                "-b",
                &(DISK_BYTES - ACK_BYTES).to_string(),
                p(img),
            ],
        ),
        other => panic!("no mkfs for {other}"),
    };
    let lo = Loop::attach(img);
    let m = Mounted::mount(&lo.0, fs, mnt).unwrap();
    std::fs::create_dir_all(mnt.join("etc")).unwrap();
    std::fs::write(mnt.join("etc/fstab"), FSTAB).unwrap();
    drop(m);
}

struct Ctx<'a> {
    fs: &'a str,
    trees: Vec<String>,
    fstab_new: String,
    registry: PathBuf,
    scratch: &'a Path,
}

/// Boot the guest once with the disk logged, run the scenario, and read
/// what each step left (the trees, apply's fstab line).
fn run_scenario<'a>(fs: &'static str, w: &'a Path, disk: &Path, logf: &Path) -> (Ctx<'a>, f64) {
    let t = Instant::now();
    let exe = std::env::current_exe().unwrap();
    let knockout = knockout();
    let script = match &knockout {
        // Single-quoted for the guest's shell.
        Some(k) => format!(
            "export TMPFSCTL_KNOCKOUT='{}'\n{}\n",
            k.replace('\'', r"'\''"),
            scenario::SCRIPT
        ),
        None => format!("{}\n", scenario::SCRIPT),
    };
    let run = {
        let _one = guest::one_at_a_time();
        guest::qemu_with(
            &format!("crash-{fs}"),
            &script,
            1,
            &guest::Extra {
                files: vec![(exe.as_path(), "crash")],
                logged: vec![guest::LoggedDisk {
                    image: disk,
                    log: logf,
                }],
            },
        )
    };
    let boot_s = t.elapsed().as_secs_f64();
    let glog = run.read("log");
    assert!(
        glog.contains("scenario done") && !glog.contains("failed"),
        "the {fs} scenario did not run through:\n{}",
        run.context()
    );
    if let Some(k) = &knockout {
        // The call was reached and skipped, or this row removes nothing.
        let skips: Vec<String> = (1..=STEPS)
            .map(|s| {
                let out = run.try_read(&format!("step-{s}.txt")).unwrap_or_default();
                let n = out.matches("tmpfsctl: knockout: skipped").count();
                format!("{s}:{n}")
            })
            .collect();
        eprintln!("{fs}: knockout {k}: skips per step {}", skips.join(" "));
        assert!(
            skips.iter().any(|s| !s.ends_with(":0")),
            "TMPFSCTL_CRASH_KNOCKOUT={k}: no step skipped a call (a build without the crash-knockout feature, or a WHAT no call is made for)"
        );
    }
    let mut trees = vec![String::new()];
    for s in 1..=STEPS {
        let t = run.read(&format!("tree-{s}"));
        assert!(
            !t.is_empty(),
            "no tree-{s} from the guest\n{}",
            run.context()
        );
        trees.push(t);
    }
    let ctx = Ctx {
        fs,
        trees,
        fstab_new: run.read("fstab-new"),
        registry: w.join("registry.json"),
        scratch: w,
    };
    assert!(
        ctx.fstab_new.contains("tmpfs"),
        "apply wrote no fstab line:\n{}",
        ctx.fstab_new
    );
    // The end of the log is the disk the guest left: every step ACKed.
    let end = scenario::marks(&File::open(disk).unwrap());
    assert!(
        end.acks.len() == STEPS as usize && end.begun == STEPS,
        "ACKs on the final disk: {:?}, last BEGIN {}",
        end.acks,
        end.begun
    );
    (ctx, boot_s)
}

/// The durability calls the guest's tmpfsctl skips (a build with the
/// crash-knockout feature, run by bench/crash-mutants.sh): passed on as
/// its TMPFSCTL_KNOCKOUT, and only in the guest, so the host's checks run
/// with every call in place.
fn knockout() -> Option<String> {
    std::env::var("TMPFSCTL_CRASH_KNOCKOUT")
        .ok()
        .filter(|k| !k.is_empty())
}

/// TMPFSCTL_CRASH_ACKS=7-9,11 (for bench/crash-mutants.sh: the steps a
/// removed call can break): only the states whose last ACK is one of these
/// are checked.
fn acks_checked() -> Option<Vec<u32>> {
    let v = std::env::var("TMPFSCTL_CRASH_ACKS")
        .ok()
        .filter(|v| !v.trim().is_empty())?;
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) else {
            panic!("TMPFSCTL_CRASH_ACKS={v}: {part:?} is not N or N-M")
        };
        out.extend(a..=b);
    }
    eprintln!("checking only the states after ACKs {out:?} (TMPFSCTL_CRASH_ACKS)");
    Some(out)
}

pub fn run_fs(fs: &'static str) -> Row {
    let mut sc = Scratch::new();
    let w = &sc.work;
    let disk = w.join("disk.img");
    let base = w.join("base.img");
    let logf = w.join("disk.log");
    make_disk(fs, &disk, &w.join("mnt"));
    host::clone(&disk, &base);
    File::create(&logf).unwrap().set_len(8 << 30).unwrap();
    let (ctx, boot_s) = run_scenario(fs, w, &disk, &logf);

    let t = Instant::now();
    let log = Log::read(&logf);
    let ss = log.sector_size;
    let eps = states::epochs(&log, (DISK_BYTES - ACK_BYTES) / ss);
    let full = std::env::var_os("TMPFSCTL_CRASH_FULL").is_some();
    let plan = states::plan(
        &eps,
        full,
        env_n("TMPFSCTL_CRASH_PREFIXES", 16),
        env_n("TMPFSCTL_CRASH_SUBSETS", 8),
        env_n("TMPFSCTL_CRASH_SAMPLE", 60),
    );
    let mut row = Row {
        fs,
        entries: log.entries.len(),
        flushes: log.entries.iter().filter(|e| e.is_flush()).count(),
        epochs: eps.len(),
        checked: BTreeMap::new(),
        violations: Vec::new(),
        boot_s,
        check_s: 0.0,
    };
    let work = w.join("work.img");
    host::clone(&base, &work);
    let state = w.join("state.img");
    let planned = eps.len() + 1 + plan.iter().map(Vec::len).sum::<usize>();
    eprintln!(
        "{fs}: {} log entries, {} flushes, {} epochs: checking {planned} crash states",
        row.entries, row.flushes, row.epochs
    );
    let only = acks_checked();
    let note = |row: &mut Row, what: String, kind: Kind| {
        if let Some(only) = &only {
            // Reading the ACK area is cheap; mounting and restoring is not.
            let acked = scenario::marks(&File::open(&state).unwrap()).acked();
            if !only.contains(&acked) {
                return;
            }
        }
        let (step, v) = check_state(&ctx, &state);
        let done: usize = row.checked.values().sum::<usize>() + 1;
        if done.is_multiple_of(50) {
            eprintln!(
                "{fs}: {done}/{planned} states, {} violations, {:.0} s",
                row.violations.len(),
                t.elapsed().as_secs_f64()
            );
        }
        let k = match kind {
            Kind::Boundary => "flush",
            Kind::Prefix => "prefix",
            Kind::Subset => "subset",
        };
        *row.checked.entry((step, k)).or_default() += 1;
        if let Some(v) = v {
            row.violations
                .push(format!("{fs} {what} (after ACK {step}): {v}"));
        }
    };
    host::clone(&work, &state);
    note(&mut row, "before the first write".into(), Kind::Boundary);
    for (j, ep) in eps.iter().enumerate() {
        for &(kind, k) in &plan[j] {
            host::clone(&work, &state);
            let img = std::fs::OpenOptions::new()
                .write(true)
                .open(&state)
                .unwrap();
            let writes = match kind {
                Kind::Prefix => ep.writes[..k].to_vec(),
                _ => states::subset(&log, ep, j, k),
            };
            for &i in &writes {
                log.apply(i, &img);
            }
            drop(img);
            let what = match kind {
                Kind::Prefix => format!(
                    "epoch {j}: first {k} of {} unflushed writes",
                    ep.writes.len()
                ),
                _ => format!(
                    "epoch {j}: subset {k} ({} of {} writes)",
                    writes.len(),
                    ep.writes.len()
                ),
            };
            note(&mut row, what, kind);
        }
        let img = std::fs::OpenOptions::new().write(true).open(&work).unwrap();
        for &i in &ep.writes {
            log.apply(i, &img);
        }
        drop(img);
        host::clone(&work, &state);
        note(
            &mut row,
            format!("flush {j} (after entry {})", ep.writes.last().unwrap()),
            Kind::Boundary,
        );
    }
    row.check_s = t.elapsed().as_secs_f64();
    if !row.violations.is_empty() {
        // With TMPFSCTL_CRASH_KEEP set: the disk, its log and the base image
        // stay in scratch.xfs for a look.
        sc.keep = true;
        eprintln!(
            "{fs}: scratch {} (kept if TMPFSCTL_CRASH_KEEP is set)",
            sc.dir.display()
        );
    }
    row
}

/// Check one crash state: the last step ACKed on it and what broke the
/// rule, if anything. The step after it is in flight only when its BEGIN
/// record is there; before that the disk must hold exactly what the last
/// ACK promised.
fn check_state(ctx: &Ctx<'_>, img: &Path) -> (u32, Option<String>) {
    let marks = scenario::marks(&File::open(img).unwrap());
    for (s, d) in &marks.acks {
        assert_eq!(
            *d,
            tree::digest(&ctx.trees[*s as usize]),
            "ACK {s} digest vs out/tree-{s}"
        );
    }
    let acked = marks.acked();
    assert!(marks.begun >= acked, "ACK {acked} without its BEGIN");
    // The step under way, if it began.
    let in_flight = (marks.begun > acked).then_some(acked + 1);
    let lo = Loop::attach(img);
    let mnt = ctx.scratch.join("state");
    let m = match Mounted::mount(&lo.0, ctx.fs, &mnt) {
        Ok(m) => m,
        Err(e) => {
            return (acked, Some(format!("the file system does not mount: {e}")));
        }
    };
    let mut bad = Vec::new();
    // persist: what restore brings back from the store the steps so far
    // wrote to, and what verify says; the second store once its enable began.
    let (store, allowed): (&str, Vec<u32>) = if acked >= ENABLE2 || in_flight == Some(ENABLE2) {
        let last = match acked {
            a if a >= SYNC2 => SYNC2,
            ENABLE2 => ENABLE2,
            _ => 0,
        };
        let next = in_flight.filter(|&s| s <= SYNC2);
        ("store2", std::iter::once(last).chain(next).collect())
    } else if acked >= DISABLE {
        ("store", vec![DISABLE])
    } else {
        ("store", std::iter::once(acked).chain(in_flight).collect())
    };
    match persist_check(ctx, &m.0.join(store), &allowed) {
        Err(e) => bad.push(e),
        // The record of the last sync: old or new, whole, never torn; after
        // a sync's ACK it names the generation that sync made (or a newer
        // one, from the sync in flight).
        Ok(restored) => {
            if let Err(e) = record_check(&m.0.join(store), acked, restored) {
                bad.push(e);
            }
        }
    }
    for (step, dir) in [(DISABLE, "data"), (DISABLE2, "data2")] {
        if acked >= step {
            let on_disk = listing_on(&m.0.join(dir));
            if on_disk != ctx.trees[step as usize] {
                bad.push(format!(
                    "after disable's ACK ({step}) DIR on disk is not the tree:\n{}",
                    diff(&ctx.trees[step as usize], &on_disk)
                ));
            }
        }
    }
    let fstab = std::fs::read_to_string(m.0.join("etc/fstab")).unwrap_or_else(|e| format!("<{e}>"));
    // Old before apply, new after its ACK, old after revert's; either one,
    // whole, while apply or revert is under way.
    let want_fstab: Vec<&str> = match (acked, in_flight) {
        (_, Some(APPLY | REVERT)) => vec![FSTAB, &ctx.fstab_new],
        (APPLY, None) => vec![&ctx.fstab_new],
        _ => vec![FSTAB],
    };
    if !want_fstab.contains(&fstab.as_str()) {
        bad.push(format!(
            "fstab is neither the old nor the new file as the last ACK wants: {fstab:?}"
        ));
    }
    // apply's backup of the fstab: whole once apply is ACKed, gone once
    // revert is (a stale one would put back a line on a later revert).
    let bak = std::fs::read_to_string(m.0.join("etc/fstab.tmpfsctl.bak")).ok();
    let want_bak: Vec<Option<&str>> = match (acked, in_flight) {
        (_, Some(APPLY | REVERT)) => vec![None, Some(FSTAB)],
        (APPLY, None) => vec![Some(FSTAB)],
        _ => vec![None],
    };
    if !want_bak.contains(&bak.as_deref()) {
        bad.push(format!(
            "the fstab's backup is {bak:?} after ACK {acked}, not one of {want_bak:?}"
        ));
    }
    if acked >= REVERT {
        let on_disk = listing_on(&m.0.join("app"));
        if on_disk != ctx.trees[REVERT as usize] {
            bad.push(format!(
                "after revert --keep-data's ACK DIR on disk lacks the tmpfs's files:\n{}",
                diff(&ctx.trees[REVERT as usize], &on_disk)
            ));
        }
    }
    drop(m);
    drop(lo);
    (
        acked,
        if bad.is_empty() {
            None
        } else {
            Some(bad.join("; "))
        },
    )
}

/// The listing of a directory on a crash state; one the file system cannot
/// read (EIO from a shut-down xfs, say) lists as that error, a violation
/// like any other difference, not the end of the run.
fn listing_on(dir: &Path) -> String {
    std::panic::catch_unwind(|| tree::listing(dir)).unwrap_or_else(|e| {
        let why = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("<cannot list: {why}>\n")
    })
}

fn diff(want: &str, got: &str) -> String {
    let w: std::collections::BTreeSet<&str> = want.lines().collect();
    let g: std::collections::BTreeSet<&str> = got.lines().collect();
    let mut s = String::new();
    for l in w.difference(&g).take(5) {
        s.push_str(&format!("  - {l}\n"));
    }
    for l in g.difference(&w).take(5) {
        s.push_str(&format!("  + {l}\n"));
    }
    s
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_default()
}

/// verify, then restore into a scratch tmpfs: the tree must be one of the
/// `allowed` steps' (0: no generation yet), and no generation verify calls
/// damaged loaded, none restore passed over left unnamed. Returns the
/// generation restore loaded and the step whose tree it holds.
fn persist_check(
    ctx: &Ctx<'_>,
    store: &Path,
    allowed: &[u32],
) -> Result<Option<(u64, u32)>, String> {
    let dir = ctx.scratch.join("restored");
    std::fs::create_dir_all(&dir).unwrap();
    let v = host::tmpfsctl(
        &ctx.registry,
        &["verify", p(&dir), "--store", p(store), "--json"],
    );
    let vj = json(&v);
    let damaged: Vec<u64> = vj["stores"][0]["damaged"]
        .as_array()
        .map(|a| a.iter().filter_map(|d| d["generation"].as_u64()).collect())
        .unwrap_or_default();
    let r = host::tmpfsctl(
        &ctx.registry,
        &[
            "restore",
            p(&dir),
            "--store",
            p(store),
            "--size",
            "1G",
            "--json",
        ],
    );
    let (out, g) = if r.status.success() {
        let rj = json(&r);
        let g = rj["generation"].as_u64().unwrap_or(0);
        let listing = tree::listing(&dir);
        let _ = host::sh("umount", &[p(&dir)]);
        if damaged.contains(&g) {
            return Err(format!(
                "restore loaded gen {g}, which verify calls damaged"
            ));
        }
        let skipped = rj["skipped"].as_array().cloned().unwrap_or_default();
        if !skipped.is_empty() && v.status.code() != Some(1) {
            return Err(format!(
                "restore passed over {skipped:?} but verify exited {:?}",
                v.status.code()
            ));
        }
        (listing, g)
    } else {
        let _ = host::sh("umount", &[p(&dir)]);
        if !allowed.contains(&0) {
            return Err(format!(
                "restore failed: {}",
                String::from_utf8_lossy(&r.stderr).trim()
            ));
        }
        return Ok(None);
    };
    if let Some(&s) = allowed
        .iter()
        .find(|&&s| s > 0 && ctx.trees[s as usize] == out)
    {
        return Ok(Some((g, s)));
    }
    let older = (ENABLE..allowed[0])
        .rev()
        .find(|&s| ctx.trees[s as usize] == out);
    Err(match older {
        Some(s) => format!(
            "restore brought back step {s}'s tree, older than the last ACK ({})",
            allowed[0]
        ),
        None => format!(
            "restore brought back a tree no step promised (a mix):\n{}",
            diff(&ctx.trees[*allowed.last().unwrap() as usize], &out)
        ),
    })
}

/// `STORE/last-sync`, replaced by a rename: when there, it parses; after a
/// sync's ACK, when restore brought back that sync's tree (generation `g`),
/// it says the sync succeeded and names `g` or a newer generation.
fn record_check(store: &Path, acked: u32, restored: Option<(u64, u32)>) -> Result<(), String> {
    let rec = match std::fs::read(store.join("last-sync")) {
        Ok(b) => Some(
            serde_json::from_slice::<serde_json::Value>(&b)
                .map_err(|e| format!("the last-sync record is torn ({} bytes): {e}", b.len()))?,
        ),
        Err(_) => None,
    };
    let Some((g, step)) = restored else {
        return Ok(());
    };
    if !scenario::is_sync(acked) || step != acked {
        return Ok(());
    }
    let named = rec
        .as_ref()
        .filter(|r| r["ok"] == true)
        .and_then(|r| r["generation"].as_u64());
    match named {
        Some(n) if n >= g => Ok(()),
        _ => Err(format!(
            "after sync {acked}'s ACK (generation {g} restored) the last-sync record says {}",
            rec.map_or("nothing (missing)".into(), |r| r.to_string())
        )),
    }
}

pub fn table(rows: &[Row]) -> String {
    let mut s = String::from(
        "fs    entries flushes epochs  after-ACK-k:flush/prefix/subset ...  states  violations  boot_s  check_s\n",
    );
    for r in rows {
        let mut per = BTreeMap::<u32, [usize; 3]>::new();
        for ((step, k), n) in &r.checked {
            let e = per.entry(*step).or_default();
            e[match *k {
                "flush" => 0,
                "prefix" => 1,
                _ => 2,
            }] += n;
        }
        let steps: Vec<String> = per
            .iter()
            .map(|(s, c)| format!("{s}:{}/{}/{}", c[0], c[1], c[2]))
            .collect();
        let total: usize = r.checked.values().sum();
        s.push_str(&format!(
            "{:<5} {:>7} {:>7} {:>6}  {}  {:>6}  {:>10}  {:>6.0}  {:>7.0}\n",
            r.fs,
            r.entries,
            r.flushes,
            r.epochs,
            steps.join(" "),
            total,
            r.violations.len(),
            r.boot_s,
            r.check_s
        ));
    }
    s
}
