//! Loads arbitrary bytes as a .npy file and evaluates every array: any
//! input must give arrays or an error, never a panic or an out-of-bounds read.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ferrox::io::fuzz_load(ferrox::io::Format::Npy, data);
});
