//! Every CUDA kernel module must compile with NVRTC. This needs NVRTC but no
//! GPU: CI installs the `nvidia-cuda-nvrtc` wheel and sets
//! `FERROX_REQUIRE_NVRTC=1`, so that a broken kernel fails the build there.
#![cfg(feature = "cuda")]

use ferrox::backend::cuda::{compiler, kernels};

#[test]
fn every_kernel_module_compiles_with_nvrtc() {
    if let Err(why) = compiler::nvrtc_version() {
        assert!(std::env::var_os("FERROX_REQUIRE_NVRTC").is_none(), "NVRTC is required here: {why}");
        eprintln!("NVRTC not found, kernel compile check not run: {why}");
        return;
    }
    let modules = kernels::all_modules();
    assert_eq!(modules.len(), kernels::Family::ALL.len() * ferrox::Dtype::ALL.len());
    // Two threads: NVRTC is thread-safe and CI machines have two cores.
    let (left, right) = modules.split_at(modules.len() / 2);
    let failures = |part: &[(String, String)]| -> Vec<String> {
        part.iter().filter_map(|(name, src)| compiler::compile(name, src, "sm_90").err()).collect()
    };
    let errors: Vec<String> = std::thread::scope(|s| {
        let a = s.spawn(|| failures(left));
        let b = s.spawn(|| failures(right));
        let mut e = a.join().expect("compile thread");
        e.extend(b.join().expect("compile thread"));
        e
    });
    assert!(errors.is_empty(), "{} kernel modules failed to compile:\n{}", errors.len(), errors.join("\n\n"));
}

#[test]
fn kernel_sources_name_their_dtype() {
    let (name, source) = kernels::module_source(kernels::Family::Unary, ferrox::Dtype::BF16);
    assert_eq!(name, "unary_bf16");
    assert!(source.starts_with("#define FX_DTYPE_BF16 1\n"));
}
