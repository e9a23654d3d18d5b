//! `explain` knows what tmpfiles does at boot (`D`, `R`: `--remove`, which x/X
//! do not stop) and shows ages as written with their age-by letters; checked
//! against a real `systemd-tmpfiles --remove` on scratch copies of the rules.

use std::path::Path;
use std::process::Command;

use crate::common::{json, tmpfsctl};

fn explain(conf_dir: &Path, path: &Path) -> serde_json::Value {
    json(&tmpfsctl(&[
        "explain",
        "--json",
        "--tmpfiles-dir",
        conf_dir.to_str().unwrap(),
        path.to_str().unwrap(),
    ]))
}

#[test]
fn debians_tmp_conf_empties_tmp_at_every_boot() {
    let t = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // Debian's /usr/lib/tmpfiles.d/tmp.conf, its one rule.
    std::fs::write(t.path().join("tmp.conf"), "D /tmp 1777 root root -\n").unwrap();
    let v = explain(t.path(), Path::new("/tmp"));
    assert_eq!(v["will_be_removed_at_boot"], true, "{v:#}");
    let by = v["removed_at_boot_by"].as_str().unwrap();
    assert!(
        by.starts_with("D /tmp (") && by.ends_with("tmp.conf:1)"),
        "{by}"
    );
    let r = &v["tmpfiles_rules"][0];
    assert_eq!(
        (r["type"].as_str(), r["removes_at_boot"].as_bool()),
        (Some("D"), Some(true))
    );
    let out = tmpfsctl(&[
        "explain",
        "--tmpfiles-dir",
        t.path().to_str().unwrap(),
        "/tmp",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("removed at every boot: D /tmp"), "{text}");
    assert!(!text.contains("No tmpfiles.d"), "{text}");
}

#[test]
fn boot_removal_and_age_letters_match_systemd_tmpfiles() {
    let s = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let s = s.path();
    let conf = s.join("conf");
    std::fs::create_dir(&conf).unwrap();
    for d in ["d", "r/sub", "aged"] {
        std::fs::create_dir_all(s.join(d)).unwrap();
    }
    for f in ["d/a", "d/keep", "r/sub/b", "aged/old"] {
        std::fs::write(s.join(f), b"x").unwrap();
    }
    let p = |x: &str| s.join(x).to_str().unwrap().to_string();
    std::fs::write(
        conf.join("scratch.conf"),
        format!(
            "D {} - - - -\nx {}\nR {}\ne {} - - - am:10d\n",
            p("d"),
            p("d/keep"),
            p("r"),
            p("aged")
        ),
    )
    .unwrap();

    let keep = explain(&conf, &s.join("d/keep"));
    assert_eq!(
        keep["will_be_removed_at_boot"], true,
        "x does not stop --remove: {keep:#}"
    );
    let sub = explain(&conf, &s.join("r/sub/b"));
    assert_eq!(sub["will_be_removed_at_boot"], true, "{sub:#}");
    let aged = explain(&conf, &s.join("aged/old"));
    assert_eq!(aged["will_be_removed_at_boot"], false, "{aged:#}");
    let rule = aged["tmpfiles_rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"] == "e")
        .unwrap();
    assert_eq!(rule["age"], "am:10d");
    // No upper-case letter: directories are aged by systemd's default.
    assert_eq!(
        rule["age_by"],
        serde_json::json!(["atime", "mtime", "dir atime", "dir btime", "dir mtime"])
    );
    let text = String::from_utf8_lossy(
        &tmpfsctl(&[
            "explain",
            "--tmpfiles-dir",
            conf.to_str().unwrap(),
            &p("aged/old"),
        ])
        .stdout,
    )
    .into_owned();
    assert!(
        text.contains("age 10d (atime, mtime, dir atime, dir btime, dir mtime)"),
        "{text}"
    );

    let Ok(st) = Command::new("systemd-tmpfiles")
        .arg("--remove")
        .arg(conf.join("scratch.conf"))
        .status()
    else {
        crate::skip!("the systemd-tmpfiles half: systemd-tmpfiles is not installed");
    };
    assert!(st.success());
    assert!(
        !s.join("d/keep").exists() && !s.join("d/a").exists(),
        "D emptied d"
    );
    assert!(s.join("d").is_dir());
    assert!(!s.join("r").exists(), "R removed r");
    assert!(
        s.join("aged/old").exists(),
        "--remove leaves age rules alone"
    );
}
