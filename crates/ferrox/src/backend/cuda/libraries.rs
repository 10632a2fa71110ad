//! Finding and opening the CUDA libraries: the one place that names their
//! files.
//!
//! Every library ferrox uses on the GPU (the driver, NVRTC, cuBLASLt, cuDNN,
//! cuFFT, cuSOLVER, NCCL) is looked for the way PyTorch, JAX and CuPy look
//! for them, so that a machine with only the NVIDIA driver and pip's
//! `nvidia-*` wheels needs no `LD_LIBRARY_PATH`. The folders are tried in
//! this order, and the first file that opens wins:
//!
//! 1. the folders of `FERROX_CUDA_LIBRARY_PATH` (separated by `:`), which
//!    override everything below;
//! 2. the `nvidia-*` wheels of the running Python's import path (the Python
//!    extension hands `sys.path` over at import; Rust programs get the
//!    site-packages of `$VIRTUAL_ENV` and `$CONDA_PREFIX`): `nvidia/cu13/lib`,
//!    `nvidia/cudnn/lib`, `nvidia/nccl/lib`, and the per-library folders of
//!    the CUDA 12 wheels;
//! 3. `$CUDA_HOME` and `$CUDA_PATH`, then the usual install prefixes
//!    (`/usr/local/cuda`, `/usr/local/cuda-13*`, `/opt/cuda`): their
//!    `lib64`, `lib` and `targets/<arch>-linux/lib` folders;
//! 4. the dynamic loader's own search (`LD_LIBRARY_PATH`, the `ldconfig`
//!    cache, the system folders).
//!
//! The driver (`libcuda.so.1`) must match the kernel module, so only steps 1
//! and 4 apply to it.
//!
//! A library is opened by its full path with `RTLD_GLOBAL`, and its
//! functions are bound from that very copy ([`Loaded::symbol`]; `bind.rs`,
//! `nvrtc_api.rs`, `cublaslt_api.rs`, `cudnn_api.rs`), never through
//! another copy the loader might find first under the bare soname. Only the
//! driver goes through cudarc's loader (its one copy is the system's).
//! [`report`] says, for each library, where it was loaded from and its
//! version, or why it is missing.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The environment variable whose folders are searched before all others.
pub const PATH_VARIABLE: &str = "FERROX_CUDA_LIBRARY_PATH";

/// A CUDA library ferrox can load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CudaLibrary {
    /// The driver API (`libcuda.so.1`), installed with the NVIDIA driver.
    Driver,
    /// The run-time compiler that builds every ferrox kernel.
    Nvrtc,
    /// Matrix products.
    CublasLt,
    /// Batched LU factorizations and solves, triangular solves.
    Cublas,
    /// Convolutions (optional: ferrox has its own, slower kernels).
    Cudnn,
    /// Fast Fourier transforms.
    Cufft,
    /// Dense linear algebra.
    Cusolver,
    /// Collective communication between GPUs.
    Nccl,
}

/// How a library's version number reads.
#[derive(Clone, Copy)]
enum VersionCall {
    /// `int f(int*)`, `major * 1000 + minor * 10` (the driver, cuFFT, cuSOLVER).
    OutThousands,
    /// `int f(int*, int*)`: major and minor (NVRTC).
    OutMajorMinor,
    /// `size_t f(void)`, `major * 10000 + minor * 100 + patch` (cuBLASLt, cuDNN 9).
    ReturnTenThousands,
    /// `int f(int*)`, `major * 10000 + minor * 100 + patch` (NCCL 2.9 and later).
    OutTenThousands,
    /// `int f(int property, int*)` for the major, minor and patch numbers (cuBLAS).
    Properties,
}

impl CudaLibrary {
    /// Every library, in the order [`report`] lists them.
    pub const ALL: [CudaLibrary; 8] = [
        CudaLibrary::Driver,
        CudaLibrary::Nvrtc,
        CudaLibrary::CublasLt,
        CudaLibrary::Cublas,
        CudaLibrary::Cudnn,
        CudaLibrary::Cufft,
        CudaLibrary::Cusolver,
        CudaLibrary::Nccl,
    ];

    /// The short name used in reports (`"nvrtc"`, `"cudnn"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            CudaLibrary::Driver => "driver",
            CudaLibrary::Nvrtc => "nvrtc",
            CudaLibrary::CublasLt => "cublaslt",
            CudaLibrary::Cublas => "cublas",
            CudaLibrary::Cudnn => "cudnn",
            CudaLibrary::Cufft => "cufft",
            CudaLibrary::Cusolver => "cusolver",
            CudaLibrary::Nccl => "nccl",
        }
    }

    /// The file names tried in each folder, most wanted first: the sonames
    /// of the major versions ferrox is built against.
    pub fn file_names(self) -> &'static [&'static str] {
        match self {
            CudaLibrary::Driver => &["libcuda.so.1"],
            CudaLibrary::Nvrtc => &["libnvrtc.so.13"],
            CudaLibrary::CublasLt => &["libcublasLt.so.13"],
            CudaLibrary::Cublas => &["libcublas.so.13"],
            CudaLibrary::Cudnn => &["libcudnn.so.9"],
            CudaLibrary::Cufft => &["libcufft.so.12"],
            CudaLibrary::Cusolver => &["libcusolver.so.12"],
            CudaLibrary::Nccl => &["libnccl.so.2"],
        }
    }

    /// The folders of a site-packages folder that pip's wheels put this
    /// library in (CUDA 13 layout first, then CUDA 12's).
    fn wheel_folders(self) -> &'static [&'static str] {
        match self {
            CudaLibrary::Driver => &[],
            CudaLibrary::Nvrtc => &["nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"],
            CudaLibrary::CublasLt | CudaLibrary::Cublas => &["nvidia/cu13/lib", "nvidia/cublas/lib"],
            CudaLibrary::Cudnn => &["nvidia/cudnn/lib", "nvidia/cu13/lib"],
            CudaLibrary::Cufft => &["nvidia/cu13/lib", "nvidia/cufft/lib"],
            CudaLibrary::Cusolver => &["nvidia/cu13/lib", "nvidia/cusolver/lib"],
            CudaLibrary::Nccl => &["nvidia/nccl/lib", "nvidia/cu13/lib"],
        }
    }

    /// The pip package that provides the library.
    pub fn wheel(self) -> &'static str {
        match self {
            CudaLibrary::Driver => "(none: install the NVIDIA driver)",
            CudaLibrary::Nvrtc => "nvidia-cuda-nvrtc",
            CudaLibrary::CublasLt | CudaLibrary::Cublas => "nvidia-cublas",
            CudaLibrary::Cudnn => "nvidia-cudnn-cu13",
            CudaLibrary::Cufft => "nvidia-cufft",
            CudaLibrary::Cusolver => "nvidia-cusolver",
            CudaLibrary::Nccl => "nvidia-nccl-cu13",
        }
    }

    /// The symbol that reports the version, and how it reports it.
    fn version_call(self) -> (&'static str, VersionCall) {
        match self {
            CudaLibrary::Driver => ("cuDriverGetVersion", VersionCall::OutThousands),
            CudaLibrary::Nvrtc => ("nvrtcVersion", VersionCall::OutMajorMinor),
            CudaLibrary::CublasLt => ("cublasLtGetVersion", VersionCall::ReturnTenThousands),
            CudaLibrary::Cublas => ("cublasGetProperty", VersionCall::Properties),
            CudaLibrary::Cudnn => ("cudnnGetVersion", VersionCall::ReturnTenThousands),
            CudaLibrary::Cufft => ("cufftGetVersion", VersionCall::OutThousands),
            CudaLibrary::Cusolver => ("cusolverGetVersion", VersionCall::OutThousands),
            CudaLibrary::Nccl => ("ncclGetVersion", VersionCall::OutTenThousands),
        }
    }

    /// Whether the library is only looked for by the loader (and the
    /// override): the driver must match the kernel module.
    fn system_only(self) -> bool {
        self == CudaLibrary::Driver
    }

    /// The file-name prefix of the libraries this one opens by bare soname
    /// at run time from its own folder. cuDNN 9's `libcudnn.so.9` is a shim
    /// that opens `libcudnn_graph.so.9`, its engines and its ops that way;
    /// outside the loader's path (a pip wheel's folder) those opens fail and
    /// every convolution is declined. Opened first, they are found by soname.
    fn companion_prefix(self) -> Option<&'static str> {
        match self {
            CudaLibrary::Cudnn => Some("libcudnn_"),
            _ => None,
        }
    }
}

/// Where to look, besides the fixed prefixes: the inputs of [`candidates`].
#[derive(Clone, Debug, Default)]
pub struct SearchRoots {
    /// Folders searched before all others (`FERROX_CUDA_LIBRARY_PATH`).
    pub overrides: Vec<PathBuf>,
    /// Python import-path entries (site-packages folders) holding wheels.
    pub python_paths: Vec<PathBuf>,
    /// CUDA installations (`CUDA_HOME`, `CUDA_PATH`, the usual prefixes).
    pub cuda_homes: Vec<PathBuf>,
}

/// The interpreter's import path, handed over by the Python extension.
static PYTHON_PATHS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Tells the search where the running Python imports from (`sys.path`), so
/// that the `nvidia-*` wheels installed there are found. Call it before the
/// first GPU use; the Python extension does so at import.
pub fn set_python_paths(paths: Vec<PathBuf>) {
    *PYTHON_PATHS.lock().unwrap_or_else(|e| e.into_inner()) = paths;
}

fn split_paths(value: Option<std::ffi::OsString>) -> Vec<PathBuf> {
    value.map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect()).unwrap_or_default()
}

/// The site-packages folders of a Python environment's prefix.
fn site_packages(prefix: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for lib in ["lib", "lib64"] {
        let Ok(entries) = std::fs::read_dir(prefix.join(lib)) else { continue };
        let mut pythons: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("python3")))
            .collect();
        pythons.sort();
        found.extend(pythons.into_iter().map(|p| p.join("site-packages")).filter(|p| p.is_dir()));
    }
    found
}

/// The roots this process searches: the environment and the registered
/// Python path.
pub fn search_roots() -> SearchRoots {
    let mut python_paths = PYTHON_PATHS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = std::env::var_os(var) {
            python_paths.extend(site_packages(Path::new(&prefix)));
        }
    }
    let mut cuda_homes = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        cuda_homes.extend(split_paths(std::env::var_os(var)));
    }
    cuda_homes.push(PathBuf::from("/usr/local/cuda"));
    if let Ok(entries) = std::fs::read_dir("/usr/local") {
        let mut versioned: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("cuda-13")))
            .collect();
        versioned.sort();
        versioned.reverse(); // the newest minor version first
        cuda_homes.extend(versioned);
    }
    cuda_homes.push(PathBuf::from("/opt/cuda"));
    SearchRoots { overrides: split_paths(std::env::var_os(PATH_VARIABLE)), python_paths, cuda_homes }
}

/// The library folders of a CUDA installation.
fn cuda_home_folders(home: &Path) -> Vec<PathBuf> {
    let arch = if cfg!(target_arch = "aarch64") { "sbsa-linux" } else { "x86_64-linux" };
    vec![home.join("lib64"), home.join("lib"), home.join("targets").join(arch).join("lib")]
}

/// The full paths tried for `lib` under `roots`, in order, before the
/// loader's own search; only files that exist are listed, each once.
pub fn candidates(lib: CudaLibrary, roots: &SearchRoots) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = roots.overrides.clone();
    if !lib.system_only() {
        for root in &roots.python_paths {
            folders.extend(lib.wheel_folders().iter().map(|f| root.join(f)));
        }
        for home in &roots.cuda_homes {
            folders.extend(cuda_home_folders(home));
        }
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for folder in folders {
        for name in lib.file_names() {
            let path = folder.join(name);
            if path.is_file() && !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// A library in the process: its handle, where it came from, its version.
#[derive(Debug)]
pub struct Loaded {
    handle: usize,
    /// The file the library was loaded from.
    pub path: PathBuf,
    /// Its version, e.g. "13.0" or "9.10.2", when the library reports one.
    pub version: Option<String>,
}

/// One library's line in [`report`].
#[derive(Clone, Debug)]
pub struct LibraryStatus {
    /// The library.
    pub library: CudaLibrary,
    /// Where it was loaded from, when it was.
    pub path: Option<PathBuf>,
    /// Its version, when it was loaded and reports one.
    pub version: Option<String>,
    /// Why it is missing, when it is.
    pub error: Option<String>,
}

static LOADED: OnceLock<Mutex<HashMap<CudaLibrary, &'static std::result::Result<Loaded, String>>>> = OnceLock::new();

fn dl_error() -> String {
    // SAFETY: dlerror returns a thread-local message or null.
    let msg = unsafe { libc::dlerror() };
    if msg.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: a NUL-terminated string owned by the loader.
        unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned()
    }
}

/// Opens `name` (a path or a bare soname) for the whole process.
fn dl_open(name: &str) -> std::result::Result<usize, String> {
    let c = CString::new(name).map_err(|_| "a NUL byte in the library name".to_string())?;
    // SAFETY: dlopen with a valid C string; the handle is kept for the process.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        Err(dl_error())
    } else {
        Ok(handle as usize)
    }
}

fn symbol(handle: usize, name: &str) -> Option<*mut c_void> {
    let c = CString::new(name).ok()?;
    // SAFETY: a live handle from dlopen and a valid C string.
    let sym = unsafe { libc::dlsym(handle as *mut c_void, c.as_ptr()) };
    (!sym.is_null()).then_some(sym)
}

/// The file a loaded symbol lives in, as the loader opened it.
fn file_of(sym: *mut c_void) -> Option<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables.
    if unsafe { libc::dladdr(sym, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated path owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname as *const c_char) };
    Some(PathBuf::from(name.to_string_lossy().into_owned()))
}

fn version_of(lib: CudaLibrary, handle: usize) -> Option<String> {
    let (name, call) = lib.version_call();
    let sym = symbol(handle, name)?;
    // SAFETY: each symbol has the C signature its VersionCall names.
    unsafe {
        match call {
            VersionCall::OutThousands => {
                let f: extern "C" fn(*mut c_int) -> c_int = std::mem::transmute(sym);
                let mut v = 0;
                (f(&mut v) == 0).then(|| format!("{}.{}", v / 1000, (v % 1000) / 10))
            }
            VersionCall::OutMajorMinor => {
                let f: extern "C" fn(*mut c_int, *mut c_int) -> c_int = std::mem::transmute(sym);
                let (mut major, mut minor) = (0, 0);
                (f(&mut major, &mut minor) == 0).then(|| format!("{major}.{minor}"))
            }
            VersionCall::ReturnTenThousands => {
                let f: extern "C" fn() -> usize = std::mem::transmute(sym);
                let v = f();
                Some(format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100))
            }
            VersionCall::OutTenThousands => {
                let f: extern "C" fn(*mut c_int) -> c_int = std::mem::transmute(sym);
                let mut v = 0;
                (f(&mut v) == 0).then(|| format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100))
            }
            VersionCall::Properties => {
                let f: extern "C" fn(c_int, *mut c_int) -> c_int = std::mem::transmute(sym);
                let mut parts = [0; 3];
                let read = (0..3).all(|p| f(p as c_int, &mut parts[p]) == 0);
                read.then(|| format!("{}.{}.{}", parts[0], parts[1], parts[2]))
            }
        }
    }
}

fn search(lib: CudaLibrary) -> std::result::Result<Loaded, String> {
    let roots = search_roots();
    let mut failures = Vec::new();
    let tried = candidates(lib, &roots);
    let mut opened = None;
    for path in &tried {
        match dl_open(&path.to_string_lossy()) {
            Ok(h) => {
                if let (Some(prefix), Some(folder)) = (lib.companion_prefix(), path.parent()) {
                    open_companions(folder, prefix, lib.file_names()[0]);
                }
                opened = Some(h);
                break;
            }
            Err(e) => failures.push(e),
        }
    }
    if opened.is_none() {
        for name in lib.file_names() {
            match dl_open(name) {
                Ok(h) => {
                    opened = Some(h);
                    break;
                }
                Err(e) => failures.push(e),
            }
        }
    }
    let Some(handle) = opened else {
        let mut why = format!("{} was not found", lib.file_names().join(" or "));
        if !lib.system_only() {
            why.push_str(&format!(
                " (looked in {PATH_VARIABLE}, the nvidia-* wheels of Python's path, CUDA_HOME/CUDA_PATH, \
                 /usr/local/cuda and the loader's path; `pip install {}` provides it)",
                lib.wheel()
            ));
        }
        if let Some(last) = failures.last() {
            why.push_str(&format!("; last error: {last}"));
        }
        return Err(why);
    };
    let (name, _) = lib.version_call();
    let path = symbol(handle, name)
        .and_then(file_of)
        .or_else(|| tried.first().cloned())
        .unwrap_or_else(|| PathBuf::from(lib.file_names()[0]));
    Ok(Loaded { handle, path, version: version_of(lib, handle) })
}

/// The files of `folder` named `<prefix>*.so.<major>`, where `main` (e.g.
/// `libcudnn.so.9`) gives the major version: the companions a library opens
/// by soname, sorted by name.
fn companion_files(folder: &Path, prefix: &str, main: &str) -> Vec<PathBuf> {
    let suffix = &main[main.find(".so").unwrap_or(main.len())..];
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
        })
        .collect();
    files.sort();
    files
}

/// Opens the companions of a library found in `folder` (see
/// `companion_prefix`). They need each other (the engines need
/// `libcudnn_graph`), so each pass opens what it can until a pass opens
/// nothing more; what never opens is left to the library to report.
fn open_companions(folder: &Path, prefix: &str, main: &str) {
    let mut pending = companion_files(folder, prefix, main);
    loop {
        let before = pending.len();
        pending.retain(|p| dl_open(&p.to_string_lossy()).is_err());
        if pending.is_empty() || pending.len() == before {
            break;
        }
    }
}

/// Opens `lib` on first use (later calls answer at once) and says where it
/// came from, or why it is missing.
pub fn load(lib: CudaLibrary) -> std::result::Result<&'static Loaded, String> {
    let mut table = LOADED.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    let entry = *table.entry(lib).or_insert_with(|| Box::leak(Box::new(search(lib))));
    entry.as_ref().map_err(Clone::clone)
}

/// Every library's status; opens each one that is not open yet.
pub fn report() -> Vec<LibraryStatus> {
    CudaLibrary::ALL
        .iter()
        .map(|&library| match load(library) {
            Ok(l) => LibraryStatus { library, path: Some(l.path.clone()), version: l.version.clone(), error: None },
            Err(e) => LibraryStatus { library, path: None, version: None, error: Some(e) },
        })
        .collect()
}

impl Loaded {
    /// Whether the library exports `name` (for features of newer versions).
    pub fn has_symbol(&self, name: &str) -> bool {
        symbol(self.handle, name).is_some()
    }

    /// The address of the library's symbol `name`, to bind a function
    /// from this very copy of the library.
    pub fn symbol(&self, name: &str) -> Option<*mut c_void> {
        symbol(self.handle, name)
    }
}

/// Prints `message` to standard error the first time `key` is seen: how
/// ferrox says, once, that a missing library makes something slower.
pub fn warn_once(key: &'static str, message: &str) {
    static SEEN: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !seen.contains(&key) {
        seen.push(key);
        eprintln!("ferrox warning: {message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
    }

    #[test]
    fn search_order_follows_override_wheels_cuda_home() {
        let base = std::env::temp_dir().join(format!("ferrox-libsearch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let site = base.join("venv/lib/python3.11/site-packages");
        let other_site = base.join("user/site-packages");
        let home = base.join("cuda-13.0");
        let over = base.join("override");
        touch(&site.join("nvidia/cu13/lib/libnvrtc.so.13"));
        touch(&site.join("nvidia/cudnn/lib/libcudnn.so.9"));
        touch(&other_site.join("nvidia/cu13/lib/libnvrtc.so.13"));
        touch(&home.join("lib64/libnvrtc.so.13"));
        touch(&home.join("targets/x86_64-linux/lib/libcublasLt.so.13"));
        touch(&home.join("lib64/libcudnn.so.8")); // another major version: never picked
        touch(&over.join("libcudnn.so.9"));
        touch(&over.join("libcuda.so.1"));

        let roots = SearchRoots {
            overrides: vec![],
            python_paths: vec![site.clone(), base.join("missing"), other_site.clone()],
            cuda_homes: vec![home.clone()],
        };
        assert_eq!(
            candidates(CudaLibrary::Nvrtc, &roots),
            vec![
                site.join("nvidia/cu13/lib/libnvrtc.so.13"),
                other_site.join("nvidia/cu13/lib/libnvrtc.so.13"),
                home.join("lib64/libnvrtc.so.13"),
            ]
        );
        assert_eq!(candidates(CudaLibrary::Cudnn, &roots), vec![site.join("nvidia/cudnn/lib/libcudnn.so.9")]);
        if cfg!(target_arch = "x86_64") {
            assert_eq!(
                candidates(CudaLibrary::CublasLt, &roots),
                vec![home.join("targets/x86_64-linux/lib/libcublasLt.so.13")]
            );
        }
        assert!(candidates(CudaLibrary::Nccl, &roots).is_empty());
        // The driver is never taken from wheels or toolkits.
        assert!(candidates(CudaLibrary::Driver, &roots).is_empty());

        let with_override = SearchRoots { overrides: vec![over.clone()], ..roots };
        assert_eq!(
            candidates(CudaLibrary::Cudnn, &with_override),
            vec![over.join("libcudnn.so.9"), site.join("nvidia/cudnn/lib/libcudnn.so.9")]
        );
        assert_eq!(candidates(CudaLibrary::Driver, &with_override), vec![over.join("libcuda.so.1")]);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn virtual_env_site_packages_are_found() {
        let base = std::env::temp_dir().join(format!("ferrox-venv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("lib/python3.12/site-packages")).unwrap();
        std::fs::create_dir_all(base.join("lib/not-python")).unwrap();
        assert_eq!(site_packages(&base), vec![base.join("lib/python3.12/site-packages")]);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn cudnn_companions_are_its_sublibraries_of_the_same_major_version() {
        let base = std::env::temp_dir().join(format!("ferrox-companions-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for name in [
            "libcudnn.so.9",
            "libcudnn_graph.so.9",
            "libcudnn_engines_precompiled.so.9",
            "libcudnn_ops.so.8",
            "libcudnn_cnn.so.9.1",
            "libcublas.so.13",
        ] {
            touch(&base.join(name));
        }
        assert_eq!(
            companion_files(&base, "libcudnn_", "libcudnn.so.9"),
            vec![base.join("libcudnn_engines_precompiled.so.9"), base.join("libcudnn_graph.so.9")]
        );
        assert!(companion_files(&base.join("missing"), "libcudnn_", "libcudnn.so.9").is_empty());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
