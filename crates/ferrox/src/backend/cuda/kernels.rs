//! The kernel library: CUDA C sources embedded in the crate, compiled on
//! first use and loaded into the context.
//!
//! A module is compiled from `#define FX_DTYPE_<DTYPE> 1`, the prelude (the
//! `PRELUDE` files, in order: layouts, dtypes and casts, complex math,
//! per-dtype arithmetic, vector I/O, block reductions), then its source.
//! Most families build one module per dtype; the two op-table families
//! (unary and binary maps) build one module per (op, dtype) from the op
//! functors (`unary_ops.cuh`, `binary_ops.cuh`), the kernel templates
//! (`unary.cu`, `binary.cu`) and one instantiation line generated from the
//! Rust op tables, so using one op compiles only that op and the kernel
//! names cannot drift from the tables. Scans likewise load one module per
//! (op, dtype) (`Module::Scan`); their family module, with every op, serves
//! the compile checks. The kernels inside have plain
//! `extern "C"` names such as `exp_contig` (each file's header comment lists
//! them).

use super::compiler::compile_cached;
use super::device::{driver_error, gpu};
use crate::backend::{BinaryKind, BinaryOp, ScanOp, UnaryKind, UnaryOp};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use cudarc::driver::{result, sys};
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Mutex;

/// The files every module starts with, in dependency order.
const PRELUDE: [&str; 6] = [
    include_str!("kernels/layout.cuh"),
    include_str!("kernels/dtype.cuh"),
    include_str!("kernels/complex.cuh"),
    include_str!("kernels/arith.cuh"),
    include_str!("kernels/vector_io.cuh"),
    include_str!("kernels/reduce.cuh"),
];

/// A family of kernels sharing one source file, compiled per dtype.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Family {
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
    /// Cumulative sums, products, maxima, minima, log-sum-exps: every op in
    /// one module (for checks; the backend loads `Module::Scan`, one op each).
    Scan,
    /// Random bits and the samplers fused with them (MLX's threefry generator).
    Random,
    /// Gather and scatter through integer index arrays.
    Gather,
    /// Sorting rows (sort, argsort, partitions) and searchsorted.
    Sort,
    /// The fused optimizer steps.
    Optimizer,
    /// RMS and layer normalization, forward and backward.
    Norm,
    /// Rotary position embeddings.
    Rope,
    /// Scaled dot-product attention, forward and backward.
    Attention,
    /// Softmax and log-sum-exp over the last axis.
    Softmax,
    /// The copies around a convolution's matrix product (im2col, regrouping).
    Conv,
    /// Convolutions as implicit matrix products on the tensor cores
    /// (float16, bfloat16; `conv_igemm.rs`).
    ConvIgemm,
    /// The element-wise steps around cuSOLVER's factorizations.
    Linalg,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 19] = [
        Family::Select,
        Family::Copy,
        Family::Reduce,
        Family::ArgReduce,
        Family::Creation,
        Family::Scatter,
        Family::Matmul,
        Family::Scan,
        Family::Random,
        Family::Gather,
        Family::Sort,
        Family::Optimizer,
        Family::Norm,
        Family::Rope,
        Family::Attention,
        Family::Softmax,
        Family::Conv,
        Family::ConvIgemm,
        Family::Linalg,
    ];

    /// Module name prefix (the source file's stem).
    pub fn name(self) -> &'static str {
        match self {
            Family::Select => "select",
            Family::Copy => "copy",
            Family::Reduce => "reduce",
            Family::ArgReduce => "arg_reduce",
            Family::Creation => "creation",
            Family::Scatter => "scatter",
            Family::Matmul => "matmul",
            Family::Scan => "scan",
            Family::Random => "random",
            Family::Gather => "gather",
            Family::Sort => "sort",
            Family::Optimizer => "optimizer",
            Family::Norm => "norm",
            Family::Rope => "rope",
            Family::Attention => "attention",
            Family::Softmax => "softmax",
            Family::Conv => "conv",
            Family::ConvIgemm => "conv_igemm",
            Family::Linalg => "linalg",
        }
    }

    fn source(self) -> &'static str {
        match self {
            Family::Select => include_str!("kernels/select.cu"),
            Family::Copy => include_str!("kernels/copy.cu"),
            Family::Reduce => concat!(include_str!("kernels/reduce_folds.cuh"), include_str!("kernels/reduce.cu")),
            Family::ArgReduce => include_str!("kernels/arg_reduce.cu"),
            Family::Creation => include_str!("kernels/creation.cu"),
            Family::Scatter => include_str!("kernels/scatter.cu"),
            Family::Matmul => include_str!("kernels/matmul.cu"),
            Family::Scan => include_str!("kernels/scan.cu"),
            Family::Random => include_str!("kernels/random.cu"),
            Family::Gather => include_str!("kernels/gather.cu"),
            Family::Sort => include_str!("kernels/sort.cu"),
            Family::Optimizer => include_str!("kernels/optimizer.cu"),
            Family::Norm => include_str!("kernels/norm.cu"),
            Family::Rope => include_str!("kernels/rope.cu"),
            Family::Attention => concat!(include_str!("kernels/mma.cuh"), include_str!("kernels/attention.cu")),
            Family::Softmax => include_str!("kernels/softmax.cu"),
            Family::Conv => include_str!("kernels/conv.cu"),
            Family::ConvIgemm => concat!(include_str!("kernels/mma.cuh"), include_str!("kernels/conv_igemm.cu")),
            Family::Linalg => include_str!("kernels/linalg.cu"),
        }
    }
}

/// One compiled unit of kernels.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Module {
    /// A family's kernels for one dtype.
    Family(Family, Dtype),
    /// One unary op's kernels for one dtype (`<op>_contig`, `<op>_strided`).
    Unary(UnaryOp, Dtype),
    /// One binary op's kernels for one dtype (`<op>_vv`, `<op>_sv`, ...).
    Binary(BinaryOp, Dtype),
    /// One scan op's kernels for one dtype (`<op>_tiles`, `<op>_warps`,
    /// `<op>_cols`, `<op>_col_tiles`): the `Scan` family's source with only
    /// that op instantiated, which compiles several times faster.
    Scan(ScanOp, Dtype),
}

/// The dtypes a unary op has kernels for: those it computes in.
pub fn unary_kernel_dtypes(op: UnaryOp) -> impl Iterator<Item = Dtype> {
    Dtype::ALL.into_iter().filter(move |&d| op.kind().compute_dtype(d) == Some(d))
}

/// The dtypes a binary op has kernels for: those it computes in.
pub fn binary_kernel_dtypes(op: BinaryOp) -> impl Iterator<Item = Dtype> {
    Dtype::ALL.into_iter().filter(move |&d| op.kind().compute_dtype(d) == Some(d))
}

/// The dtypes a scan op has kernels for: all (`logcumsumexp`: the inexact ones).
pub fn scan_kernel_dtypes(op: ScanOp) -> impl Iterator<Item = Dtype> {
    Dtype::ALL.into_iter().filter(move |&d| op != ScanOp::LogAddExp || d.is_inexact())
}

/// The kernels `scan.cu` defines for `op`, named after it (see its header).
pub fn scan_kernel_names(op: ScanOp) -> Vec<String> {
    ["tiles", "warps", "cols", "col_tiles"].iter().map(|k| format!("{}_{k}", op.name())).collect()
}

/// The line of `scan.cu` instantiating `op` with its device functor.
fn scan_instantiation(op: ScanOp) -> String {
    let functor = match op {
        ScanOp::Sum => "ScanSum",
        ScanOp::Prod => "ScanProd",
        ScanOp::Max => "ScanMax",
        ScanOp::Min => "ScanMin",
        ScanOp::LogAddExp => "ScanLogAddExp",
    };
    format!("FX_SCAN({}, {functor})\n", op.name())
}

/// The line of `unary.cu`'s template instantiating `op`.
fn unary_instantiation(op: UnaryOp) -> String {
    let (lift, out) = if op.kind() == UnaryKind::Predicate { ("FxPred1", "fx_bool") } else { ("FxLift1", "T") };
    format!("FX_UNARY({}, {}, {lift}, {out})\n", op.name(), op.functor())
}

/// The line of `binary.cu`'s template instantiating `op`.
fn binary_instantiation(op: BinaryOp) -> String {
    let (lift, out) = if op.kind() == BinaryKind::Compare { ("FxCmp", "fx_bool") } else { ("FxArith", "T") };
    format!("FX_BINARY({}, {lift}, {}, {out})\n", op.name(), op.functor())
}

/// The kernel names `unary.cu` defines for `op`.
pub fn unary_kernel_names(op: UnaryOp) -> Vec<String> {
    ["contig", "strided"].iter().map(|v| format!("{}_{v}", op.name())).collect()
}

/// The kernel names `binary.cu` defines for `op`.
pub fn binary_kernel_names(op: BinaryOp) -> Vec<String> {
    ["vv", "sv", "vs", "strided", "kv", "vk"].iter().map(|v| format!("{}_{v}", op.name())).collect()
}

/// For kernel development on a GPU machine without rebuilding ferrox: where
/// `FERROX_KERNEL_SOURCE_DIR` names a folder holding `<family>.cu` (e.g.
/// `attention.cu`), that file replaces the family's embedded source (the
/// prelude stays embedded; the reduce family's file must hold
/// `reduce_folds.cuh` too, and the attention and conv_igemm files `mma.cuh`). The kernel cache keys on the source, so an edit
/// recompiles.
fn source_override(family: Family) -> Option<String> {
    let dir = std::env::var_os("FERROX_KERNEL_SOURCE_DIR")?;
    std::fs::read_to_string(std::path::Path::new(&dir).join(format!("{}.cu", family.name()))).ok()
}

/// A module's source: the dtype define, the prelude, then `body`.
pub(crate) fn with_prelude(dtype: Dtype, body: &[&str]) -> String {
    let mut source = format!("#define FX_DTYPE_{} 1\n", dtype_tag(dtype).to_ascii_uppercase());
    for part in PRELUDE.iter().chain(body) {
        source.push_str(part);
        source.push('\n');
    }
    source
}

/// The reductions' folds over any value source (the reduce family's
/// kernels and compile's fused reductions instantiate them).
pub(crate) const REDUCE_FOLDS: &str = include_str!("kernels/reduce_folds.cuh");
/// The unary op functors.
pub(crate) const UNARY_OPS: &str = include_str!("kernels/unary_ops.cuh");
const UNARY: &str = include_str!("kernels/unary.cu");
/// The binary op functors.
pub(crate) const BINARY_OPS: &str = include_str!("kernels/binary_ops.cuh");
const BINARY: &str = include_str!("kernels/binary.cu");

impl Module {
    /// The module's name (`copy_f32`, `unary_exp_f32`, ...).
    pub fn name(self) -> String {
        match self {
            Module::Family(f, d) => format!("{}_{}", f.name(), dtype_tag(d)),
            Module::Unary(op, d) => format!("unary_{}_{}", op.name(), dtype_tag(d)),
            Module::Binary(op, d) => format!("binary_{}_{}", op.name(), dtype_tag(d)),
            Module::Scan(op, d) => format!("scan_{}_{}", op.name(), dtype_tag(d)),
        }
    }

    /// The module's full source.
    pub fn source(self) -> String {
        match self {
            Module::Family(f, d) => match source_override(f) {
                Some(text) => with_prelude(d, &[&text]),
                None => with_prelude(d, &[f.source()]),
            },
            Module::Unary(op, d) => with_prelude(d, &[UNARY_OPS, UNARY, &unary_instantiation(op)]),
            Module::Binary(op, d) => with_prelude(d, &[BINARY_OPS, BINARY, &binary_instantiation(op)]),
            Module::Scan(op, d) => {
                with_prelude(d, &["#define FX_SCAN_ONE 1\n", Family::Scan.source(), &scan_instantiation(op)])
            }
        }
    }

    /// The kernel names the module defines, where the op tables fix them.
    pub fn kernel_names(self) -> Vec<String> {
        match self {
            Module::Family(Family::Scan, d) => ScanOp::ALL
                .iter()
                .filter(|&&op| scan_kernel_dtypes(op).any(|k| k == d))
                .flat_map(|&op| scan_kernel_names(op))
                .collect(),
            Module::Family(Family::Random, d) => super::random::kernel_names(d),
            Module::Family(Family::Gather, _) => super::gather::KERNEL_NAMES.iter().map(|k| k.to_string()).collect(),
            Module::Family(Family::Sort, _) => super::sort::KERNELS.iter().map(|k| k.to_string()).collect(),
            Module::Family(Family::Optimizer, d) => super::optimizer::kernel_names(d),
            Module::Family(f @ (Family::Norm | Family::Rope | Family::Attention | Family::Softmax), d) => {
                super::fast::kernel_names(f, d)
            }
            Module::Family(Family::Conv, d) => super::conv::kernel_names(d),
            Module::Family(Family::ConvIgemm, d) => super::conv_igemm::kernel_names(d),
            Module::Family(Family::Linalg, d) => super::linalg::kernel_names(d),
            Module::Family(..) => Vec::new(),
            Module::Unary(op, _) => unary_kernel_names(op),
            Module::Binary(op, _) => binary_kernel_names(op),
            Module::Scan(op, _) => scan_kernel_names(op),
        }
    }

    /// Every module the backend can load.
    pub fn all() -> Vec<Module> {
        let families = Family::ALL.iter().flat_map(|&f| Dtype::ALL.iter().map(move |&d| Module::Family(f, d)));
        let unary = UnaryOp::ALL.iter().flat_map(|&op| unary_kernel_dtypes(op).map(move |d| Module::Unary(op, d)));
        let binary = BinaryOp::ALL.iter().flat_map(|&op| binary_kernel_dtypes(op).map(move |d| Module::Binary(op, d)));
        let scan = ScanOp::ALL.iter().flat_map(|&op| scan_kernel_dtypes(op).map(move |d| Module::Scan(op, d)));
        families.chain(unary).chain(binary).chain(scan).collect()
    }
}

/// Sources that compile every kernel of the op tables in few NVRTC runs,
/// for checks: per dtype, one module with every unary op and one with every
/// binary op that has kernels for it, as (name, source, kernel names). The
/// per-op modules the backend loads differ only in holding one of the
/// instantiation lines.
pub fn op_table_check_modules() -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for d in Dtype::ALL {
        let unary: Vec<UnaryOp> =
            UnaryOp::ALL.iter().copied().filter(|&op| unary_kernel_dtypes(op).any(|k| k == d)).collect();
        let lines: String = unary.iter().map(|&op| unary_instantiation(op)).collect();
        let names = unary.iter().flat_map(|&op| unary_kernel_names(op)).collect();
        out.push((format!("unary_all_{}", dtype_tag(d)), with_prelude(d, &[UNARY_OPS, UNARY, &lines]), names));
        let binary: Vec<BinaryOp> =
            BinaryOp::ALL.iter().copied().filter(|&op| binary_kernel_dtypes(op).any(|k| k == d)).collect();
        let lines: String = binary.iter().map(|&op| binary_instantiation(op)).collect();
        let names = binary.iter().flat_map(|&op| binary_kernel_names(op)).collect();
        out.push((format!("binary_all_{}", dtype_tag(d)), with_prelude(d, &[BINARY_OPS, BINARY, &lines]), names));
    }
    out
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

struct Loaded {
    handle: sys::CUmodule,
    functions: HashMap<String, sys::CUfunction>,
}

// SAFETY: module and function handles are process-wide in their context.
unsafe impl Send for Loaded {}

static MODULES: Mutex<Option<HashMap<Module, Loaded>>> = Mutex::new(None);

/// The kernel `name` of `module`, compiling and loading the module on
/// first use.
pub(crate) fn function(module: Module, name: &str) -> Result<sys::CUfunction> {
    let mut modules = MODULES.lock().unwrap_or_else(|e| e.into_inner());
    let map = modules.get_or_insert_with(HashMap::new);
    let loaded = match map.entry(module) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            let dev = gpu()?;
            let cubin = compile_cached(&module.name(), &module.source(), &dev.arch_name())
                .map_err(|msg| Error::Device { op: "compile", msg })?;
            // SAFETY: a complete cubin image for this device.
            let handle =
                unsafe { result::module::load_data(cubin.as_ptr() as *const _) }.map_err(driver_error("compile"))?;
            e.insert(Loaded { handle, functions: HashMap::new() })
        }
    };
    if let Some(&f) = loaded.functions.get(name) {
        return Ok(f);
    }
    let cname = CString::new(name).expect("kernel names have no NUL");
    // SAFETY: the module is loaded and stays loaded.
    let f = unsafe { result::module::get_function(loaded.handle, cname) }.map_err(|e| Error::Device {
        op: "kernel",
        msg: format!("kernel {name} is missing from module {}: {e:?}", module.name()),
    })?;
    loaded.functions.insert(name.to_string(), f);
    Ok(f)
}
