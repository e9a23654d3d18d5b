//! The floor for `fleet analyze` on a survey TSV: map the file, split it in
//! two at a line end, and on two threads cut every line at its tabs and
//! parse each numeric field to a u64 (summed, so nothing is optimised away).
//! No statistics, no storage, no checks: what reading and splitting costs.
//! Not shipped; bench/fleet-analyze-vs-duckdb.sh builds and times it.
//!
//!   rustc -O bench/fleet-split-floor.rs -o /tmp/fleet-split-floor
//!   /tmp/fleet-split-floor FILE
use std::os::unix::io::AsRawFd;

extern "C" {
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
}

fn split(part: &[u8]) -> (u64, u64) {
    let (mut lines, mut sum) = (0u64, 0u64);
    for line in part.split(|&b| b == b'\n') {
        if line.is_empty() {
            continue;
        }
        lines += 1;
        for field in line.split(|&b| b == b'\t').skip(1) {
            let mut x = 0u64;
            for &b in field {
                x = x.wrapping_mul(10).wrapping_add(u64::from(b.wrapping_sub(b'0')));
            }
            sum = sum.wrapping_add(x);
        }
    }
    (lines, sum)
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: fleet-split-floor FILE");
    let f = std::fs::File::open(&path).expect("open");
    let len = f.metadata().expect("stat").len() as usize;
    // PROT_READ = 1, MAP_PRIVATE = 2
    let p = unsafe { mmap(std::ptr::null_mut(), len, 1, 2, f.as_raw_fd(), 0) };
    assert!(p as isize != -1, "mmap failed");
    let data = unsafe { std::slice::from_raw_parts(p, len) };
    let mid = data[len / 2..].iter().position(|&b| b == b'\n').map_or(len, |i| len / 2 + i + 1);
    let (a, b) = data.split_at(mid);
    let (ra, rb) = std::thread::scope(|s| {
        let h = s.spawn(|| split(b));
        (split(a), h.join().expect("thread"))
    });
    println!("{} lines, checksum {}", ra.0 + rb.0, ra.1.wrapping_add(rb.1));
}
