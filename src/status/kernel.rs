//! What `status` says beside the mounts: the zram devices and what each
//! costs, how much tmpfs data is out in swap now, and which zram and tmpfs
//! features this kernel has (read or probed, never assumed from a version).

use std::fmt::Write as _;

use serde::Serialize;

use crate::sys::zram::{self, Device, Features, Use};
use crate::sys::{MemInfo, Sysroot};
use crate::term::safe;
use crate::units::fmt_bytes;

/// tmpfs options this kernel takes, probed on a filesystem context that is
/// never mounted; null = unknown (not root, or a `--sysroot`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TmpfsFeatures {
    /// `noswap` (Linux 6.4+): pages never go to swap.
    pub noswap: Option<bool>,
    /// `usrquota` (Linux 6.6+ with CONFIG_TMPFS_QUOTA).
    pub quota: Option<bool>,
    /// `huge=within_size` (needs CONFIG_TRANSPARENT_HUGEPAGE).
    pub huge: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ZramReport {
    pub features: Features,
    pub devices: Vec<Device>,
}

/// tmpfs data out in swap now, from what the kernel gives: statfs counts a
/// tmpfs's pages wherever they are (RAM or swap), Shmem (/proc/meminfo)
/// only those in RAM, and also SysV, POSIX and memfd shared memory. The
/// difference is the least that can be in swap; the kernel keeps no
/// per-mount swapped figure.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SwappedReport {
    /// Data of every tmpfs superblock by statfs (resident and swapped).
    pub tmpfs_used_bytes: u64,
    pub shmem_bytes: u64,
    /// max(0, tmpfs_used_bytes - shmem_bytes): a lower bound.
    pub tmpfs_swapped_at_least_bytes: u64,
    pub swap_used_bytes: u64,
    /// Swap devices that are zram (compressed RAM): swapped pages there
    /// still cost RAM, less of it.
    pub swap_on_zram: Vec<String>,
}

pub fn tmpfs_features(root: &Sysroot) -> TmpfsFeatures {
    if !root.is_live() {
        return TmpfsFeatures::default();
    }
    use crate::sys::tmpfs::accepts;
    TmpfsFeatures {
        noswap: accepts("noswap"),
        quota: accepts("usrquota"),
        huge: accepts("huge=within_size"),
    }
}

pub fn zram_report(root: &Sysroot) -> ZramReport {
    ZramReport {
        features: zram::features(root),
        devices: zram::devices(root),
    }
}

pub fn swapped(tmpfs_used: u64, mem: &MemInfo, z: &ZramReport) -> SwappedReport {
    SwappedReport {
        tmpfs_used_bytes: tmpfs_used,
        shmem_bytes: mem.shmem_bytes,
        tmpfs_swapped_at_least_bytes: tmpfs_used.saturating_sub(mem.shmem_bytes),
        swap_used_bytes: mem.swap_used_bytes(),
        swap_on_zram: z
            .devices
            .iter()
            .filter(|d| d.uses.contains(&Use::Swap))
            .map(|d| d.name.clone())
            .collect(),
    }
}

fn yes_no(x: Option<bool>) -> &'static str {
    match x {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown (probed only as root on the live system)",
    }
}

fn ratio(x: Option<f64>) -> String {
    x.map_or("-".into(), |r| format!("{r:.2}x"))
}

/// The text section: devices, swap, features.
pub fn text(z: &ZramReport, sw: &SwappedReport, tf: &TmpfsFeatures) -> String {
    let mut s = String::new();
    let para = |s: &mut String, text: String| {
        let _ = writeln!(s, "{}", crate::render::paragraph("  ", &text));
    };
    let _ = writeln!(s, "\nzram");
    if !z.features.available {
        para(
            &mut s,
            "this kernel has no zram (no /sys/class/zram-control): `modprobe zram` where it is a module"
                .into(),
        );
    } else if z.devices.is_empty() {
        para(&mut s, "no zram devices".into());
    } else {
        let mut t = crate::render::table(&[
            "device",
            "algorithm",
            "disksize",
            "data",
            "RAM cost",
            "data per RAM byte",
            "use",
        ]);
        for d in &z.devices {
            let uses: Vec<String> = d
                .uses
                .iter()
                .map(|u| match u {
                    Use::Swap => "swap".to_string(),
                    Use::Mount { mountpoint, fstype } => {
                        format!("{} ({})", safe(mountpoint), safe(fstype))
                    }
                })
                .collect();
            let mut use_cell = if d.disksize_bytes == 0 {
                "not set up".to_string()
            } else if uses.is_empty() {
                "unused".to_string()
            } else {
                uses.join(", ")
            };
            if d.made_by_tmpfsctl {
                use_cell.push_str(" [tmpfsctl]");
            }
            t.add_row(vec![
                d.name.clone(),
                safe(d.algorithm.as_deref().unwrap_or("?")).into_owned(),
                fmt_bytes(d.disksize_bytes),
                d.mm.map_or("?".into(), |m| fmt_bytes(m.orig_data_bytes)),
                d.mm.map_or("?".into(), |m| fmt_bytes(m.mem_used_total_bytes)),
                ratio(d.ratio),
                use_cell,
            ]);
        }
        crate::render::fit_to_terminal(&mut t);
        let _ = writeln!(s, "{t}");
        para(
            &mut s,
            "RAM cost is mem_used_total (mm_stat): compressed data plus the allocator's overhead."
                .into(),
        );
    }
    if z.features.available {
        let f = &z.features;
        para(
            &mut s,
            format!(
                "zram features: algorithms {}; recompression {}; writeback {}; algorithm_params {}",
                if f.algorithms.is_empty() {
                    "unknown (no device to ask)".into()
                } else {
                    safe(&f.algorithms.join(", ")).into_owned()
                },
                if f.recompress { "yes" } else { "no" },
                if f.writeback { "yes" } else { "no" },
                if f.algorithm_params { "yes" } else { "no" },
            ),
        );
    }
    para(
        &mut s,
        format!(
            "tmpfs features: noswap {}; quotas {}; huge pages {}",
            yes_no(tf.noswap),
            yes_no(tf.quota),
            yes_no(tf.huge)
        ),
    );
    let mut swap_line = format!(
        "tmpfs out in swap now: at least {} (tmpfs data {} by statfs, less Shmem {} in RAM); swap used {}",
        fmt_bytes(sw.tmpfs_swapped_at_least_bytes),
        fmt_bytes(sw.tmpfs_used_bytes),
        fmt_bytes(sw.shmem_bytes),
        fmt_bytes(sw.swap_used_bytes),
    );
    if !sw.swap_on_zram.is_empty() {
        let _ = write!(
            swap_line,
            "; swap is on {} (compressed RAM): swapped tmpfs pages still cost RAM there",
            sw.swap_on_zram.join(", ")
        );
    }
    para(&mut s, swap_line);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swapped_is_tmpfs_data_beyond_shmem_and_names_zram_swap() {
        let mem = MemInfo {
            shmem_bytes: 100 << 20,
            swap_total_bytes: 1 << 30,
            swap_free_bytes: (1 << 30) - (64 << 20),
            ..MemInfo::default()
        };
        let mut z = ZramReport::default();
        z.features.available = true;
        z.devices.push(Device {
            name: "zram0".into(),
            disksize_bytes: 1 << 30,
            algorithm: Some("lz4".into()),
            algorithms: vec!["lz4".into()],
            mm: None,
            ratio: None,
            uses: vec![Use::Swap],
            made_by_tmpfsctl: false,
        });
        let sw = swapped(160 << 20, &mem, &z);
        assert_eq!(sw.tmpfs_swapped_at_least_bytes, 60 << 20);
        assert_eq!(sw.swap_used_bytes, 64 << 20);
        assert_eq!(sw.swap_on_zram, ["zram0"]);
        assert_eq!(swapped(50 << 20, &mem, &z).tmpfs_swapped_at_least_bytes, 0);
        let t = text(&z, &sw, &TmpfsFeatures::default());
        assert!(t.contains("at least 60.0 MiB"), "{t}");
        assert!(t.contains("swap is on zram0"), "{t}");
        assert!(t.contains("zram0") && t.contains("lz4"), "{t}");
    }
}
