//! How a mount comes back at boot: the one configuration type that the
//! mount commands and persist share.

use serde::Serialize;

/// How a mount comes back at boot: the one answer `plan`, `apply` and
/// `persist enable` share (`--boot`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Boot {
    /// A line in /etc/fstab (persist: plus its units)
    Fstab,
    /// A drop-in for DIR's systemd mount unit, tmp.mount for /tmp (persist: its own units)
    Systemd,
    /// Nothing: the live mount only, gone after the next reboot
    None,
}

crate::variants::all_variants!(Boot, [Fstab, Systemd, None]);

impl Boot {
    pub fn name(self) -> &'static str {
        match self {
            Boot::Fstab => "fstab",
            Boot::Systemd => "systemd",
            Boot::None => "none",
        }
    }
}
