//! Run-time compilation of kernel sources with NVRTC, straight to machine
//! code (a cubin) for the device's architecture, with an on-disk cache so
//! that a second process start does not compile again.
//!
//! The cache lives in `$FERROX_KERNEL_CACHE`, else `$XDG_CACHE_HOME/ferrox/kernels`,
//! else `~/.cache/ferrox/kernels`; entries are keyed by a hash of the source,
//! the target and the NVRTC version. Failing to read or write the cache only
//! costs a compile.

use super::nvrtc_api::{self, check, Api};
use cudarc::nvrtc::sys::nvrtcProgram;
use std::ffi::{c_char, CString};
use std::path::PathBuf;

/// NVRTC's version, or why NVRTC cannot be used.
pub fn nvrtc_version() -> Result<(i32, i32), String> {
    let api = nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters.
    check(unsafe { (api.nvrtcVersion)(&mut major, &mut minor) }).map_err(|e| format!("nvrtcVersion failed: {e:?}"))?;
    Ok((major, minor))
}

/// NVRTC's bound functions, or why NVRTC cannot be used.
fn nvrtc() -> Result<&'static Api, String> {
    nvrtc_api::api().map_err(|e| format!("NVRTC, which compiles ferrox's kernels, is missing: {e}"))
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
    let api = nvrtc()?;
    let src = CString::new(source).map_err(|_| format!("kernel module {name} contains a NUL byte"))?;
    let cname = CString::new(name).map_err(|_| format!("kernel module name {name:?} contains a NUL byte"))?;
    let mut options = vec![format!("--gpu-architecture={arch}"), "--std=c++17".to_string()];
    options.extend(extra.iter().map(|o| o.to_string()));
    let options: Vec<CString> = options
        .into_iter()
        .map(|o| CString::new(o).map_err(|_| format!("an NVRTC option for {name} contains a NUL byte")))
        .collect::<Result<_, _>>()?;
    let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let mut prog: nvrtcProgram = std::ptr::null_mut();
    // SAFETY: valid C strings; no headers.
    check(unsafe {
        (api.nvrtcCreateProgram)(&mut prog, src.as_ptr(), cname.as_ptr(), 0, std::ptr::null(), std::ptr::null())
    })
    .map_err(|e| format!("nvrtcCreateProgram({name}): {e:?}"))?;
    // SAFETY: `prog` is a live program until destroyed below; the option
    // pointers outlive the call.
    let outcome = unsafe {
        match check((api.nvrtcCompileProgram)(prog, option_ptrs.len() as i32, option_ptrs.as_ptr())) {
            Ok(()) => {
                let mut size = 0usize;
                let mut cubin = Vec::new();
                let r = check((api.nvrtcGetCUBINSize)(prog, &mut size)).and_then(|_| {
                    cubin.resize(size, 0u8);
                    check((api.nvrtcGetCUBIN)(prog, cubin.as_mut_ptr() as *mut c_char))
                });
                r.map(|_| cubin).map_err(|e| format!("nvrtcGetCUBIN({name}): {e:?}"))
            }
            Err(e) => {
                Err(format!("kernel module {name} failed to compile for {arch} ({e:?}):\n{}", program_log(api, prog)))
            }
        }
    };
    // SAFETY: destroyed once.
    let _ = unsafe { (api.nvrtcDestroyProgram)(&mut prog) };
    outcome
}

/// The compile log of `prog` (empty when NVRTC cannot give it).
///
/// # Safety
/// `prog` is a live program.
unsafe fn program_log(api: &Api, prog: nvrtcProgram) -> String {
    let mut size = 0usize;
    if check((api.nvrtcGetProgramLogSize)(prog, &mut size)).is_err() {
        return String::new();
    }
    let mut log = vec![0u8; size];
    if check((api.nvrtcGetProgramLog)(prog, log.as_mut_ptr() as *mut c_char)).is_err() {
        return String::new();
    }
    let end = log.iter().position(|&c| c == 0).unwrap_or(log.len());
    String::from_utf8_lossy(&log[..end]).into_owned()
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
