//! The package managers' databases and the key store are refused like /etc:
//! a tmpfs there hides the list of what is installed (or the private keys)
//! and leaves an empty one at the next boot. Checked with `plan`, which
//! refuses through the same step as `apply` and `persist` and changes
//! nothing even if that step were broken.

use std::path::Path;

use crate::common::tmpfsctl;

#[test]
fn package_databases_and_the_key_store_are_refused_like_etc() {
    let mut seen = 0;
    for d in [
        "/var/lib/dpkg",
        "/var/lib/apt",
        "/var/lib/rpm",
        "/usr/lib/sysimage/rpm",
        "/usr/local",
        "/etc/ssl/private",
        // Inside one, and above one.
        "/var/lib/dpkg/info",
        "/var/lib",
    ] {
        let p = Path::new(d);
        if !p.is_dir() || p.symlink_metadata().unwrap().file_type().is_symlink() {
            eprintln!("{d}: not a plain directory here; not checked");
            continue;
        }
        seen += 1;
        let o = tmpfsctl(&["plan", d]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{d}: {e}");
        assert!(
            e.contains(&format!("refusing to put {d} on tmpfs"))
                && e.contains("the system keeps files there"),
            "{d}: {e}"
        );
    }
    assert!(
        seen >= 3,
        "too few of the guarded directories exist here to test"
    );
    // Their neighbours are not refused for it.
    for d in ["/var/lib/tmpfsctl-no-such-dir-guard", "/etc/ssl/certs"] {
        if !Path::new(d).is_dir() {
            continue;
        }
        let o = tmpfsctl(&["plan", d]);
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("refusing to put"),
            "{d}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
