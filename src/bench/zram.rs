//! A zram target: a device made for the run with an ext4 without a journal
//! on it, mounted with `discard` in this process's private mount namespace
//! (so the kernel unmounts it when the process ends, even by SIGKILL), and
//! removed on every exit path. A device left by a killed run is removed by
//! the next one (`sys::zram::sweep`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, Result};

use super::leftover::{self, Kind};
use super::report::{ZramCost, ZramTargetInfo};
use super::target::{MOUNT_BASE, Made, MakeSpec, PrivateSpec, TargetKind, enter_private_namespace};
use crate::sys::zram::{self, MmStat, Spec, ZramDevice};
use crate::units::fmt_bytes;

/// The label of bench's devices: says in `blkid` and `status` who made them.
pub const LABEL: &str = "tmpfsctl-bench";

/// The zram kind of target: `zram` or `zram:ALG`.
pub const ZRAM: TargetKind = TargetKind {
    name: "zram",
    help: "zram[:ALG] for a zram device made for the run (root; ext4 without a journal, mounted with discard, removed at the end; ALG one of /sys/block/zram*/comp_algorithm, e.g. zram:lz4; its RAM cost is reported as mem_used_total)",
    doing: "making a zram device",
    parse: parse_spec,
};

/// A zram target, checked: the back end, or `None` for the kernel's default.
#[derive(Debug)]
struct ZramSpec(Option<String>);

fn parse_spec(arg: Option<&str>) -> Result<Option<Made>> {
    let Some(alg) = arg else {
        return Ok(Some(Arc::new(ZramSpec(None))));
    };
    anyhow::ensure!(
        !alg.is_empty()
            && alg.len() <= 32
            && alg
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
        "target zram:{}: not a zram algorithm name; write zram or zram:ALG with ALG one of the names in /sys/block/zram*/comp_algorithm (e.g. zram:lz4)",
        crate::term::safe(alg)
    );
    Ok(Some(Arc::new(ZramSpec(Some(alg.to_string())))))
}

impl MakeSpec for ZramSpec {
    fn shown(&self) -> String {
        match &self.0 {
            Some(a) => format!("zram:{a}"),
            None => "zram".into(),
        }
    }

    fn make(
        &self,
        ctx: &crate::command::Context,
        size_bytes: u64,
    ) -> Result<(PrivateSpec, Box<dyn Send>)> {
        let z = PrivateZram::make(ctx, self.0.as_deref(), size_bytes)?;
        let spec = PrivateSpec {
            path: z.path.clone(),
            options: None,
            zram: Some(z.info.clone()),
        };
        Ok((spec, Box::new(z)))
    }
}

/// A zram device with a file system, mounted for the run. Dropping it
/// unmounts, removes the device and the mount point.
pub struct PrivateZram {
    dir: Option<tempfile::TempDir>,
    device: Option<ZramDevice>,
    pub path: PathBuf,
    pub info: ZramTargetInfo,
}

impl PrivateZram {
    /// Make the device and mount it. Call on the main thread before any
    /// benchmark thread starts (the private mount namespace needs it).
    pub fn make(
        ctx: &crate::command::Context,
        algorithm: Option<&str>,
        data_bytes: u64,
    ) -> Result<PrivateZram> {
        let shown = match algorithm {
            Some(a) => format!("zram:{a}"),
            None => "zram".into(),
        };
        let features = zram::features(&ctx.sysroot);
        anyhow::ensure!(
            features.available,
            "target {shown}: this kernel has no zram (/sys/class/zram-control is missing); load it with `modprobe zram`, or drop the target"
        );
        if let Some(a) = algorithm
            && !features.algorithms.is_empty()
        {
            anyhow::ensure!(
                features.algorithms.iter().any(|o| o == a),
                "target {shown}: this kernel's zram does not offer {a}; it offers {} (write e.g. zram:{})",
                features.algorithms.join(", "),
                features.algorithms[0]
            );
        }
        let disksize = zram::device_bytes(data_bytes);
        // Incompressible data costs its full size, and more: the worst case
        // must fit in the RAM that is free.
        let (mem, _) = ctx.sysroot.meminfo()?;
        anyhow::ensure!(
            disksize <= mem.mem_available_bytes,
            "target {shown}: the device needs up to {} of RAM (incompressible data) but only {} is available; pass a smaller --size. Nothing was made.",
            fmt_bytes(disksize),
            fmt_bytes(mem.mem_available_bytes)
        );
        enter_private_namespace()?;
        leftover::sweep(&std::env::temp_dir(), MOUNT_BASE, Kind::MountPoint);
        let device = ZramDevice::make(&Spec {
            algorithm: algorithm.map(str::to_string),
            disksize_bytes: disksize,
            label: LABEL.into(),
        })
        .with_context(|| format!("target {shown}"))?;
        let dir = tempfile::Builder::new()
            .prefix(&leftover::prefix(MOUNT_BASE))
            .tempdir()
            .context("creating a directory for the zram mount")?;
        let path = dir.path().to_path_buf();
        // discard: a deleted file's blocks are freed in zram at once, else
        // they keep holding RAM until overwritten.
        rustix::mount::mount(
            device.path().as_path(),
            &path,
            "ext4",
            rustix::mount::MountFlags::NOSUID | rustix::mount::MountFlags::NODEV,
            c"discard",
        )
        .with_context(|| format!("target {shown}: mounting {}", device.path().display()))?;
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .with_context(|| format!("target {shown}: chmod {}", path.display()))?;
        let info = ZramTargetInfo {
            device: device.name(),
            algorithm: device.algorithm().unwrap_or_else(|| "unknown".into()),
            algorithms: features.algorithms,
            disksize_bytes: disksize,
        };
        Ok(PrivateZram {
            dir: Some(dir),
            device: Some(device),
            path,
            info,
        })
    }
}

impl Drop for PrivateZram {
    fn drop(&mut self) {
        use crate::sys::unmount::{At, How, unmount};
        let _ = unmount(At::Dir(&self.path), How::ScratchAnyway);
        if let Some(d) = self.device.take() {
            let _ = d.remove();
        }
        if let Some(d) = self.dir.take() {
            let _ = d.close();
        }
    }
}

/// The RAM cost now of the zram device mounted at `path`: its files written
/// out first (syncfs), then `mm_stat`. None when `path` is not on zram.
pub fn cost_at(path: &std::path::Path) -> Option<ZramCost> {
    let f = std::fs::File::open(path).ok()?;
    rustix::fs::syncfs(&f).ok()?;
    let st = rustix::fs::fstat(&f).ok()?;
    let name = zram::name_of_dev(st.st_dev)?;
    let text = std::fs::read_to_string(format!("/sys/block/{name}/mm_stat")).ok()?;
    MmStat::parse(&text).map(|m| ZramCost::of(&m))
}
