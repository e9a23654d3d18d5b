//! User names of the inspected system, from its /etc/passwd.

use std::collections::HashMap;

use super::Sysroot;

/// uid -> name from the inspected system's /etc/passwd.
pub fn users(root: &Sysroot) -> HashMap<u32, String> {
    let text = std::fs::read_to_string(root.path("/etc/passwd")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            Some((f.get(2)?.parse().ok()?, (*f.first()?).to_string()))
        })
        .collect()
}
