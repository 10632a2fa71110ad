//! Run-time compilation of kernel sources with NVRTC, straight to machine
//! code (a cubin) for the device's architecture, with an on-disk cache so
//! that a second process start does not compile again.
//!
//! The cache lives in `$FERROX_KERNEL_CACHE`, else `$XDG_CACHE_HOME/ferrox/kernels`,
//! else `~/.cache/ferrox/kernels`; entries are keyed by a hash of the source,
//! the target and the NVRTC version. Failing to read or write the cache only
//! costs a compile.

use super::libraries::{self, CudaLibrary};
use cudarc::nvrtc::{result, sys};
use std::ffi::CString;
use std::path::PathBuf;

/// NVRTC's version, or why NVRTC cannot be used.
pub fn nvrtc_version() -> Result<(i32, i32), String> {
    libraries::load(CudaLibrary::Nvrtc)
        .map_err(|e| format!("NVRTC, which compiles ferrox's kernels, is missing: {e}"))?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }.result().map_err(|e| format!("nvrtcVersion failed: {e:?}"))?;
    Ok((major, minor))
}

/// 64-bit FNV-1a: a stable hash for cache file names.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("FERROX_KERNEL_CACHE") {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("ferrox").join("kernels"))
}

/// Compiles `source` (module `name`) to a cubin for `arch` (e.g. "sm_90"),
/// without touching the cache. Errors carry NVRTC's log.
pub fn compile(name: &str, source: &str, arch: &str) -> Result<Vec<u8>, String> {
    compile_with_options(name, source, arch, &[])
}

/// [`compile`] with more NVRTC options (user kernels add
/// `--device-as-default-execution-space`, as MLX compiles them).
pub fn compile_with_options(name: &str, source: &str, arch: &str, extra: &[&str]) -> Result<Vec<u8>, String> {
    nvrtc_version()?;
    let src = CString::new(source).map_err(|_| format!("kernel module {name} contains a NUL byte"))?;
    let cname = CString::new(name).map_err(|_| format!("kernel module name {name:?} contains a NUL byte"))?;
    let prog = result::create_program(&src, Some(&cname)).map_err(|e| format!("nvrtcCreateProgram({name}): {e:?}"))?;
    let mut options = vec![format!("--gpu-architecture={arch}"), "--std=c++17".to_string()];
    options.extend(extra.iter().map(|o| o.to_string()));
    // SAFETY: `prog` is a live program until destroyed below.
    let outcome = unsafe {
        match result::compile_program(prog, &options) {
            Ok(()) => {
                let mut size = 0usize;
                let mut cubin = Vec::new();
                let r = sys::nvrtcGetCUBINSize(prog, &mut size).result().and_then(|_| {
                    cubin.resize(size, 0u8);
                    sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut std::ffi::c_char).result()
                });
                r.map(|_| cubin).map_err(|e| format!("nvrtcGetCUBIN({name}): {e:?}"))
            }
            Err(e) => {
                let log = result::get_program_log(prog).unwrap_or_default();
                let log: Vec<u8> = log.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                Err(format!(
                    "kernel module {name} failed to compile for {arch} ({e:?}):\n{}",
                    String::from_utf8_lossy(&log)
                ))
            }
        }
    };
    // SAFETY: destroyed once.
    let _ = unsafe { result::destroy_program(prog) };
    outcome
}

/// Like [`compile`], reading and filling the on-disk cache.
pub(crate) fn compile_cached(name: &str, source: &str, arch: &str) -> Result<Vec<u8>, String> {
    let (major, minor) = nvrtc_version()?;
    let version = format!("{major}.{minor}");
    let key = fnv1a(&[source.as_bytes(), arch.as_bytes(), version.as_bytes()]);
    let path = cache_dir().map(|d| d.join(format!("{name}-{arch}-{key:016x}.cubin")));
    if let Some(bytes) = path.as_ref().and_then(|p| std::fs::read(p).ok()) {
        // A cubin starts with the ELF magic; anything else is a torn write.
        if bytes.starts_with(b"\x7fELF") {
            return Ok(bytes);
        }
    }
    let cubin = compile(name, source, arch)?;
    if let Some(path) = path {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            if std::fs::write(&tmp, &cubin).is_ok() {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
    }
    Ok(cubin)
}
