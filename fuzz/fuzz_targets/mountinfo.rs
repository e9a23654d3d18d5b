#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (mounts, _warnings) = tmpfsctl::sys::mountinfo::parse(data);
    for m in &mounts {
        let _ = m.all_options();
        let _ = tmpfsctl::sys::mountinfo::mount_for(&mounts, &m.mount_point);
    }
});
