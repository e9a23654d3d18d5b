//! The scratch's end: mounts made inside, the size cap, neighbouring runs,
//! symlinks planted to lead cleanup out of the scratch.

use super::*;

#[test]
fn cleanup_detaches_a_mount_made_inside_and_keeps_its_files() {
    require_root!();
    // One outside directory on the scratch's own filesystem (a device check
    // alone would not see the mount), one elsewhere.
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let disk = tempfile::tempdir().unwrap();
    for outside in [shm.path(), disk.path()] {
        std::fs::write(outside.join("precious"), "keep me").unwrap();
        std::fs::create_dir_all(outside.join("sub")).unwrap();
        std::fs::write(outside.join("sub/also"), "keep me too").unwrap();
        for extra in [vec!["--no-namespace"], vec![]] {
            let t = tempfile::tempdir().unwrap();
            let js = t.path().join("s.json");
            let o_ = outside.display();
            let script = format!(
                "set -e; mkdir $TMPDIR/b $TMPDIR/b2; mount --bind {o_} $TMPDIR/b; mount --bind {o_}/sub $TMPDIR/b2; ln -s {o_} $TMPDIR/l"
            );
            let mut args = vec!["run", "--size", "8M", "--json", js.to_str().unwrap()];
            args.extend(&extra);
            args.extend(["--", "sh", "-c", &script]);
            let o = tmpfsctl(&args);
            assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
            for (f, text) in [("precious", "keep me"), ("sub/also", "keep me too")] {
                assert_eq!(
                    std::fs::read_to_string(outside.join(f)).ok().as_deref(),
                    Some(text),
                    "{extra:?} {}: {f} lost; {}",
                    outside.display(),
                    stderr(&o)
                );
            }
            let j = read_json(&js);
            assert_eq!(j["removed"], true, "{j}");
            let scratch = j["path"].as_str().unwrap();
            let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
            assert!(
                !info.contains(&format!(" {scratch}/")),
                "mount left below the scratch: {info}"
            );
            if !extra.is_empty() {
                assert!(!Path::new(scratch).exists(), "{scratch} left behind");
            }
            let err = stderr(&o);
            assert!(
                err.contains(
                    "CMD left 2 mounts inside the scratch: detached without touching their files"
                ),
                "{extra:?}: {err}"
            );
            assert!(err.contains(&format!("{scratch}/b2")), "{err}");
        }
    }
}

#[test]
fn the_cap_gives_enospc_and_says_so() {
    require_root!();
    let t = tempfile::tempdir().unwrap();
    let js = t.path().join("s.json");
    let o = tmpfsctl(&[
        "run",
        "--size",
        "4M",
        "--json",
        js.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "dd if=/dev/zero of=$TMPDIR/f bs=1M count=8 2>&1; echo dd=$?",
    ]);
    let out = stdout(&o);
    assert!(out.contains("No space left on device"), "{out}");
    assert!(!out.contains("dd=0"), "{out}");
    assert!(
        stderr(&o).contains("workspace full at 4.00 MiB"),
        "{}",
        stderr(&o)
    );
    let j = read_json(&js);
    assert_eq!(j["full"], true);
    assert_eq!(j["peak_used_bytes"], 4u64 << 20);
    // Inside the cap nothing is said.
    let o = tmpfsctl(&[
        "run",
        "--size",
        "4M",
        "--",
        "sh",
        "-c",
        "head -c 1M /dev/zero > $TMPDIR/f",
    ]);
    assert!(o.status.success());
    assert!(!stderr(&o).contains("workspace full"), "{}", stderr(&o));
}

#[test]
fn concurrent_runs_do_not_see_each_other() {
    require_root!();
    let (a, a_cmd, _, _rest) = start(&[
        "run",
        "--size",
        "8M",
        "--",
        "sh",
        "-c",
        "echo secret > $TMPDIR/a-secret; echo $$; exec sleep 60",
    ]);
    let o = tmpfsctl(&[
        "run",
        "--size",
        "8M",
        "--",
        "sh",
        "-c",
        "echo $TMPDIR; ls -A $TMPDIR; echo end",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("{ROOT_ANCHOR}\nend\n"),
        "B saw A's scratch"
    );
    // And from outside any scratch the path is just the empty anchor.
    assert!(anchor_is_empty(ROOT_ANCHOR));
    wait_exec(a_cmd, "sleep");
    kill(a.id() as i32, "TERM");
    let (st, _) = finish(a);
    assert_eq!(st.code(), Some(143));
}

fn plant_symlinks_script(outside: &Path) -> String {
    let o = outside.display();
    format!(
        "set -e; ln -s {o} $TMPDIR/dir-link; ln -s {o}/precious $TMPDIR/file-link; mkdir -p $TMPDIR/a/b; \
         ln -s {o} $TMPDIR/a/b/deep-link; ln -s / $TMPDIR/a/root-link; echo junk > $TMPDIR/a/b/junk"
    )
}

#[test]
fn cleanup_never_follows_symlinks_out_of_the_scratch() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("precious"), "keep me").unwrap();
    std::fs::create_dir(outside.path().join("sub")).unwrap();
    std::fs::write(outside.path().join("sub/also"), "keep me too").unwrap();
    let script = plant_symlinks_script(outside.path());
    let t = tempfile::tempdir().unwrap();
    let mut modes = vec![vec!["--no-namespace"]];
    if is_root() {
        modes.push(vec![]);
    }
    for extra in modes {
        let js = t.path().join("s.json");
        let mut args = vec!["run", "--size", "8M", "--json", js.to_str().unwrap()];
        args.extend(&extra);
        args.extend(["--", "sh", "-c", &script]);
        let o = tmpfsctl(&args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let j = read_json(&js);
        assert_eq!(j["removed"], true, "{extra:?}");
        let scratch = PathBuf::from(j["path"].as_str().unwrap());
        if extra.is_empty() {
            assert!(anchor_is_empty(scratch.to_str().unwrap()));
        } else {
            assert_eq!(j["mode"], "directory");
            assert!(!scratch.exists(), "{} left behind", scratch.display());
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("precious")).unwrap(),
            "keep me"
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join("sub/also")).unwrap(),
            "keep me too"
        );
    }
}
