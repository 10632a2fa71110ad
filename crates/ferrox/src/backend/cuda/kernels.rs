//! The kernel library: CUDA C sources embedded in the crate, one module per
//! (family, dtype), compiled on first use and loaded into the context.
//!
//! A module's source is `#define FX_DTYPE_<DTYPE> 1`, then `common.cuh`,
//! then the family's file; the kernels inside have plain `extern "C"` names
//! such as `exp_contig` (each file's header comment lists them).

use super::compiler::compile_cached;
use super::device::{driver_error, gpu};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use cudarc::driver::{result, sys};
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Mutex;

const COMMON: &str = include_str!("kernels/common.cuh");

/// A family of kernels sharing one source file.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Family {
    /// Elementwise functions of one argument.
    Unary,
    /// Elementwise functions of two arguments.
    Binary,
    /// `where`.
    Select,
    /// Casting and layout-changing copies (the dtype is the source's).
    Copy,
    /// Sum, prod, max, min.
    Reduce,
    /// Argmax, argmin.
    ArgReduce,
    /// Fill, arange, eye.
    Creation,
    /// Strided copies into windows of a buffer (slice updates, concatenate).
    Scatter,
    /// The exact matrix product for types cuBLAS does not cover.
    Matmul,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 9] = [
        Family::Unary,
        Family::Binary,
        Family::Select,
        Family::Copy,
        Family::Reduce,
        Family::ArgReduce,
        Family::Creation,
        Family::Scatter,
        Family::Matmul,
    ];

    /// Module name prefix (the source file's stem).
    pub fn name(self) -> &'static str {
        match self {
            Family::Unary => "unary",
            Family::Binary => "binary",
            Family::Select => "select",
            Family::Copy => "copy",
            Family::Reduce => "reduce",
            Family::ArgReduce => "arg_reduce",
            Family::Creation => "creation",
            Family::Scatter => "scatter",
            Family::Matmul => "matmul",
        }
    }

    fn source(self) -> &'static str {
        match self {
            Family::Unary => include_str!("kernels/unary.cu"),
            Family::Binary => include_str!("kernels/binary.cu"),
            Family::Select => include_str!("kernels/select.cu"),
            Family::Copy => include_str!("kernels/copy.cu"),
            Family::Reduce => include_str!("kernels/reduce.cu"),
            Family::ArgReduce => include_str!("kernels/arg_reduce.cu"),
            Family::Creation => include_str!("kernels/creation.cu"),
            Family::Scatter => include_str!("kernels/scatter.cu"),
            Family::Matmul => include_str!("kernels/matmul.cu"),
        }
    }
}

/// The suffix kernels and modules use for a dtype (`f32`, `bf16`, `c64`, ...).
pub fn dtype_tag(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::Bool => "bool",
        Dtype::U8 => "u8",
        Dtype::U16 => "u16",
        Dtype::U32 => "u32",
        Dtype::U64 => "u64",
        Dtype::I8 => "i8",
        Dtype::I16 => "i16",
        Dtype::I32 => "i32",
        Dtype::I64 => "i64",
        Dtype::F16 => "f16",
        Dtype::BF16 => "bf16",
        Dtype::F32 => "f32",
        Dtype::F64 => "f64",
        Dtype::C64 => "c64",
    }
}

/// Name and full source of the module of `family` for `dtype`.
pub fn module_source(family: Family, dtype: Dtype) -> (String, String) {
    let name = format!("{}_{}", family.name(), dtype_tag(dtype));
    let source =
        format!("#define FX_DTYPE_{} 1\n{}\n{}", dtype_tag(dtype).to_ascii_uppercase(), COMMON, family.source());
    (name, source)
}

/// Every module the backend can load, as (name, source).
pub fn all_modules() -> Vec<(String, String)> {
    Family::ALL.iter().flat_map(|&f| Dtype::ALL.iter().map(move |&d| module_source(f, d))).collect()
}

struct Module {
    handle: sys::CUmodule,
    functions: HashMap<String, sys::CUfunction>,
}

// SAFETY: module and function handles are process-wide in their context.
unsafe impl Send for Module {}

static MODULES: Mutex<Option<HashMap<(Family, Dtype), Module>>> = Mutex::new(None);

/// The kernel `name` of `family`'s module for `dtype`, compiling and loading
/// the module on first use.
pub(crate) fn function(family: Family, dtype: Dtype, name: &str) -> Result<sys::CUfunction> {
    let mut modules = MODULES.lock().unwrap_or_else(|e| e.into_inner());
    let map = modules.get_or_insert_with(HashMap::new);
    let module = match map.entry((family, dtype)) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            let dev = gpu()?;
            let (module_name, source) = module_source(family, dtype);
            let cubin = compile_cached(&module_name, &source, &dev.arch_name())
                .map_err(|msg| Error::Device { op: "compile", msg })?;
            // SAFETY: a complete cubin image for this device.
            let handle =
                unsafe { result::module::load_data(cubin.as_ptr() as *const _) }.map_err(driver_error("compile"))?;
            e.insert(Module { handle, functions: HashMap::new() })
        }
    };
    if let Some(&f) = module.functions.get(name) {
        return Ok(f);
    }
    let cname = CString::new(name).expect("kernel names have no NUL");
    // SAFETY: the module is loaded and stays loaded.
    let f = unsafe { result::module::get_function(module.handle, cname) }.map_err(|e| Error::Device {
        op: "kernel",
        msg: format!("kernel {name} is missing from module {}_{}: {e:?}", family.name(), dtype_tag(dtype)),
    })?;
    module.functions.insert(name.to_string(), f);
    Ok(f)
}
