//! `status` on zram: a device made here by hand (sysfs and mkfs, not
//! tmpfsctl's own engine) is listed with its algorithm, data, RAM cost,
//! ratio and use, as the kernel's own files say.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{json, stderr, stdout, tmpfsctl};
use crate::require_root;

/// A zram device with an ext2 mounted on it, removed on drop.
struct HandMade {
    name: String,
    index: String,
    dir: tempfile::TempDir,
}

impl HandMade {
    fn new(alg: &str) -> HandMade {
        let index = std::fs::read_to_string("/sys/class/zram-control/hot_add")
            .unwrap()
            .trim()
            .to_string();
        let name = format!("zram{index}");
        let sys = |f: &str| PathBuf::from(format!("/sys/block/{name}/{f}"));
        std::fs::write(sys("comp_algorithm"), alg).unwrap();
        std::fs::write(sys("disksize"), (64u64 << 20).to_string()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let z = HandMade { name, index, dir };
        let dev = format!("/dev/{}", z.name);
        assert!(
            Command::new("mkfs.ext2")
                .args(["-q", "-F", &dev])
                .status()
                .unwrap()
                .success()
        );
        assert!(
            Command::new("mount")
                .args(["-o", "discard", &dev])
                .arg(z.dir.path())
                .status()
                .unwrap()
                .success()
        );
        z
    }

    fn mm_stat(&self) -> Vec<u64> {
        std::fs::read_to_string(format!("/sys/block/{}/mm_stat", self.name))
            .unwrap()
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect()
    }
}

impl Drop for HandMade {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
        // udev's probe after the umount can hold the device open for
        // seconds on a loaded machine (hot_remove says EBUSY meanwhile):
        // 2 s left a device behind; wait up to 30 s.
        for _ in 0..600 {
            if std::fs::write("/sys/class/zram-control/hot_remove", &self.index).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        eprintln!("{} could not be removed: remove it by hand", self.name);
    }
}

#[test]
fn status_lists_a_zram_device_with_its_ram_cost_ratio_and_use() {
    require_root!();
    let offered = std::fs::read_to_string("/sys/block/zram0/comp_algorithm").unwrap();
    let alg = if offered.contains("lz4") {
        "lz4"
    } else {
        "lzo"
    };
    let z = HandMade::new(alg);
    // 16 MiB of text-like data: compresses several times over.
    let line = b"2026-11-27T15:00:00 host app[123]: request served in 12 ms status=200\n";
    let data: Vec<u8> = line.iter().cycle().take(16 << 20).copied().collect();
    std::fs::write(z.dir.path().join("log"), &data).unwrap();
    assert!(Command::new("sync").status().unwrap().success());

    let out = tmpfsctl(&["status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["schema_version"], 4);
    let devs = v["zram"]["devices"].as_array().unwrap();
    let d = devs
        .iter()
        .find(|d| d["name"] == z.name.as_str())
        .unwrap_or_else(|| panic!("{} listed: {devs:?}", z.name));
    assert_eq!(d["algorithm"], alg);
    assert_eq!(d["disksize_bytes"], 64u64 << 20);
    let mm = z.mm_stat();
    // Read by status a moment before: the same device, so close to now.
    let orig = d["mm"]["orig_data_bytes"].as_u64().unwrap();
    let ram = d["mm"]["mem_used_total_bytes"].as_u64().unwrap();
    assert!(orig >= 16 << 20 && orig.abs_diff(mm[0]) < 1 << 20, "{d}");
    assert!(ram.abs_diff(mm[2]) < 1 << 20, "{d}");
    let ratio = d["ratio"].as_f64().unwrap();
    assert!(ratio > 2.0, "text compresses: {d}");
    assert_eq!(d["uses"][0]["kind"], "mount");
    assert_eq!(
        d["uses"][0]["mountpoint"],
        z.dir.path().to_str().unwrap(),
        "{d}"
    );
    assert_eq!(d["made_by_tmpfsctl"], false);

    let f = &v["zram"]["features"];
    assert_eq!(f["available"], true);
    assert!(f["algorithms"].as_array().unwrap().iter().any(|a| a == alg));
    assert_eq!(
        f["writeback"],
        std::path::Path::new(&format!("/sys/block/{}/writeback", z.name)).exists()
    );
    assert_eq!(
        f["recompress"],
        std::path::Path::new(&format!("/sys/block/{}/recomp_algorithm", z.name)).exists()
    );
    // Probed as root: known either way.
    assert!(v["tmpfs_features"]["noswap"].is_boolean());
    let sw = &v["swap"];
    assert_eq!(
        sw["tmpfs_swapped_at_least_bytes"].as_u64().unwrap(),
        sw["tmpfs_used_bytes"]
            .as_u64()
            .unwrap()
            .saturating_sub(sw["shmem_bytes"].as_u64().unwrap())
    );

    let text = stdout(&tmpfsctl(&["status"]));
    let row = text
        .lines()
        .find(|l| l.contains(&z.name) && l.contains(alg))
        .unwrap_or_else(|| panic!("a row for {}: {text}", z.name));
    assert!(row.contains(z.dir.path().to_str().unwrap()), "{row}");
    assert!(text.contains("tmpfs out in swap now"), "{text}");
    assert!(text.contains("zram features: algorithms"), "{text}");
}
