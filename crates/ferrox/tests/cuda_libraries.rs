//! The CUDA library search finds NVRTC in the `nvidia-cuda-nvrtc` wheel of
//! the environment in `$VIRTUAL_ENV`, with no `LD_LIBRARY_PATH`: CI runs the
//! tests that way (`make test`, with `FERROX_REQUIRE_NVRTC=1`).
#![cfg(feature = "cuda")]

use ferrox::backend::cuda::libraries::{self, CudaLibrary};

#[test]
fn nvrtc_is_found_in_the_virtual_envs_wheel() {
    let required = std::env::var_os("FERROX_REQUIRE_NVRTC").is_some();
    let loaded = match libraries::load(CudaLibrary::Nvrtc) {
        Ok(l) => l,
        Err(why) => {
            assert!(!required, "NVRTC is required here: {why}");
            eprintln!("NVRTC not found, discovery check not run: {why}");
            return;
        }
    };
    assert!(loaded.version.as_deref().is_some_and(|v| v.starts_with("13.")), "{:?}", loaded.version);
    let overridden = std::env::var_os(libraries::PATH_VARIABLE).is_some();
    if let (true, false, Some(venv)) = (required, overridden, std::env::var_os("VIRTUAL_ENV")) {
        let venv = std::fs::canonicalize(venv).unwrap();
        let path = std::fs::canonicalize(&loaded.path).unwrap();
        assert!(path.starts_with(&venv), "NVRTC came from {path:?}, not the wheel in {venv:?}");
        assert!(loaded.path.to_string_lossy().contains("nvidia"), "{:?}", loaded.path);
    }
}

#[test]
fn report_lists_every_library_with_a_path_or_a_reason() {
    let report = libraries::report();
    assert_eq!(report.len(), CudaLibrary::ALL.len());
    for status in report {
        match (&status.path, &status.error) {
            (Some(p), None) => assert!(p.is_file(), "{p:?}"),
            (None, Some(why)) => assert!(why.contains(status.library.file_names()[0]), "{why}"),
            other => panic!("{:?}: {other:?}", status.library),
        }
    }
}
