//! The Debian package: what it installs, and lintian's verdict on it.

use std::process::Command;

use crate::guest;

#[test]
fn the_package_holds_binary_man_pages_completions_docs_and_passes_lintian() {
    crate::require_guest!(false);
    let deb = guest::deb();
    let name = deb.file_name().unwrap_or_default().to_string_lossy();
    assert!(
        name.starts_with(&format!("tmpfsctl_{}", env!("CARGO_PKG_VERSION")))
            && name.ends_with("_amd64.deb"),
        "unexpected package name {name}"
    );
    let list = Command::new("dpkg-deb")
        .arg("-c")
        .arg(deb)
        .output()
        .unwrap();
    assert!(list.status.success());
    let list = String::from_utf8_lossy(&list.stdout);
    for want in [
        "./usr/bin/tmpfsctl",
        "./usr/share/man/man1/tmpfsctl.1.gz",
        "./usr/share/man/man1/tmpfsctl-persist-enable.1.gz",
        "./usr/share/bash-completion/completions/tmpfsctl",
        "./usr/share/zsh/vendor-completions/_tmpfsctl",
        "./usr/share/fish/vendor_completions.d/tmpfsctl.fish",
        "./usr/share/doc/tmpfsctl/README.md",
        "./usr/share/doc/tmpfsctl/copyright",
        "./usr/share/doc/tmpfsctl/examples/systemd/tmpfsctl-collect.timer",
    ] {
        assert!(list.contains(want), "the package lacks {want}:\n{list}");
    }
    // One page per command: as many as the binary writes with `man --all`.
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new(env!("CARGO_BIN_EXE_tmpfsctl"))
        .args(["man", "--all", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(st.status.success());
    let pages = std::fs::read_dir(dir.path()).unwrap().count();
    let packed = list.matches("/usr/share/man/man1/").count() - 1;
    assert_eq!(packed, pages, "man pages in the package vs commands");
    // Nothing runs at install: the only maintainer script is prerm.
    let ctl = Command::new("dpkg-deb")
        .arg("-I")
        .arg(deb)
        .output()
        .unwrap();
    let ctl = String::from_utf8_lossy(&ctl.stdout);
    for script in ["postinst", "preinst", "postrm"] {
        assert!(
            !ctl.contains(&format!(" {script}")),
            "the package has a {script}:\n{ctl}"
        );
    }
    let Ok(lint) = Command::new("lintian").arg(deb).output() else {
        panic!("lintian is not installed (scripts/setup installs it)");
    };
    let text = String::from_utf8_lossy(&lint.stdout);
    eprintln!("lintian:\n{text}");
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("E:")).collect();
    assert!(
        errors.is_empty(),
        "lintian reports errors:\n{}",
        errors.join("\n")
    );
}
