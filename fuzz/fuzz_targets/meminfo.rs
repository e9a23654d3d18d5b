#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (m, _warnings) = tmpfsctl::sys::meminfo::parse(data);
    let _ = m.swap_used_bytes();
});
