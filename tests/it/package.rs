//! The Debian package's metadata and maintainer script, on the host: a
//! licence and a DEP-5 copyright file, a synopsis that fits, lintian with
//! nothing left it could fix, and a prerm that finds every persisted
//! directory whichever registry holds it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn prerm(root: &Path, arg: &str) -> Output {
    Command::new("sh")
        .arg(repo().join("debian/prerm"))
        .arg(arg)
        .env("DPKG_ROOT", root)
        .output()
        .unwrap()
}

#[test]
fn prerm_reads_every_registry_the_units_name() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    // Nothing persisted: removal goes ahead.
    assert_eq!(prerm(root, "remove").status.code(), Some(0));
    // A directory persisted with its own registry, named by its unit.
    let units = root.join("etc/systemd/system");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::create_dir_all(root.join("srv")).unwrap();
    std::fs::write(
        units.join("tmpfsctl-persist-srv-my\\x20data.service"),
        "[Service]\nExecStart=\"/usr/bin/tmpfsctl\" persist restore \"/srv/my data\" \
         --store \"/var/lib/st\" --registry \"/srv/reg one.json\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("srv/reg one.json"),
        "{\n  \"dirs\": [\n    {\n      \"dir\": \"/srv/my data\",\n      \"store\": \"/var/lib/st\"\n    }\n  ]\n}\n",
    )
    .unwrap();
    let o = prerm(root, "remove");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("  /srv/my data\n") && e.contains("persist disable"),
        "{e}"
    );
    // An upgrade replaces the binary in place: never refused.
    assert_eq!(prerm(root, "upgrade").status.code(), Some(0));
    // A unit whose registry is gone still counts.
    std::fs::remove_file(root.join("srv/reg one.json")).unwrap();
    let o = prerm(root, "remove");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("tmpfsctl-persist-srv-my"), "{e}");
}

#[test]
fn the_package_has_a_licence_a_short_synopsis_and_lintian_has_nothing_to_fix() {
    let toml = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let field = |k: &str| {
        toml.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} = \"")))
            .map(|v| v.trim_end_matches('"').to_string())
    };
    assert_eq!(field("license").as_deref(), Some("MIT OR Apache-2.0"));
    let synopsis = field("description").unwrap();
    assert!(synopsis.len() < 80, "{synopsis:?}");
    let copyright = std::fs::read_to_string(repo().join("debian/copyright")).unwrap();
    for want in [
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n",
        "\nFiles: *\n",
        "\nLicense: MIT or Apache-2.0\n",
        "\nLicense: MIT\n",
        "\nLicense: Apache-2.0\n",
    ] {
        assert!(copyright.contains(want), "debian/copyright lacks {want:?}");
    }
    for f in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(repo().join(f).is_file(), "{f} missing");
    }
    if Command::new("cargo-deb").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "cargo-deb is not installed (scripts/setup installs it)"
        );
        eprintln!("SKIP lintian: cargo-deb is not installed (scripts/setup installs it)");
        return;
    }
    // Packed from this test's own release build, as the boot tests do.
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tmpfsctl"));
    let target = bin.parent().and_then(Path::parent).unwrap();
    let out = Command::new(repo().join("scripts/package"))
        .arg("--no-build")
        .env("CARGO_TARGET_DIR", target)
        .current_dir(repo())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deb = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .trim()
        .to_string();
    let desc = Command::new("dpkg-deb")
        .args(["-f", &deb, "Description"])
        .output()
        .unwrap();
    let first = String::from_utf8_lossy(&desc.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert_eq!(first, synopsis, "the package's synopsis");
    let lint = Command::new("lintian")
        .arg(&deb)
        .output()
        .expect("lintian is not installed (scripts/setup installs it)");
    let text = String::from_utf8_lossy(&lint.stdout);
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("E:") || l.starts_with("W:"))
        .collect();
    assert!(bad.is_empty(), "lintian:\n{text}");
}

#[test]
fn nothing_the_binary_prints_points_at_a_script_the_package_does_not_ship() {
    // The package ships the binary, man pages, completions and docs/; the
    // scripts in bench/ stay in the repository, so a warning that sends a
    // user there sends them nowhere.
    let mut stack = vec![repo().join("src")];
    let mut found = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            for (n, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                for (i, _) in line.match_indices("bench/") {
                    let name: String = line[i + 6..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
                        .collect();
                    if name.ends_with(".sh") || name.ends_with(".py") {
                        found.push(format!("{}:{}: bench/{name}", p.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}
