#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let f = tmpfsctl::sys::fstab::Fstab::parse(data);
    // The editor relies on this: parsing never loses a byte.
    assert_eq!(f.to_bytes(), data);
});
