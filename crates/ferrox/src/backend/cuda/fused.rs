//! Fused elementwise programs on the GPU (`compile`'s fusion): one CUDA C
//! kernel is generated per program and per way of reading its inputs,
//! compiled by NVRTC (cached in memory and on disk like the library's
//! kernels) and launched over the output.
//!
//! Every step computes exactly as its eager kernel does: the op functors of
//! `unary_ops.cuh`/`binary_ops.cuh` on the module dtype's compute type,
//! rounded to the storage type after each step; float32/float64 sums,
//! differences and products use the explicitly rounded intrinsics
//! (`__fadd_rn`, ...), which the assembler never contracts with another
//! step into an FMA. A fused result is therefore bit for bit the unfused
//! one.
//!
//! The arithmetic steps of one program must share a dtype (the module's
//! `T`): a predicate or comparison may give bool, `where` and casts may
//! move between any real dtypes. Programs outside that (arithmetic in two
//! dtypes, complex64) run step by step with the ordinary kernels.

use super::compiler::compile_cached;
use super::device::{driver_error, gpu};
use super::kernels::{dtype_tag, with_prelude, BINARY_OPS, UNARY_OPS};
use super::launch::{grid_for, grid_full, launch_function, Args, Strided, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::fused::{FusedOp, FusedProgram, Operand};
use crate::backend::{BinaryOp, ReduceOp};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::{collapse_dims, Layout};
use cudarc::driver::{result, sys};
use std::collections::HashMap;
use std::ffi::CString;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

/// How the kernel reads one input.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum InputMode {
    /// Row-contiguous over the output: element `i` at `in[i]`.
    Contiguous,
    /// One element broadcast to every output.
    Scalar,
    /// A contiguous row repeated over the leading dimensions (a bias):
    /// element `i` at `in[i % w]`, with the row length `w` an argument.
    Row,
    /// Any other layout, through a `Strided1` argument.
    Strided,
}

impl InputMode {
    /// The mode for an input read through `l` (broadcast to the output).
    pub fn of(l: &Layout) -> InputMode {
        if l.is_row_contiguous() {
            InputMode::Contiguous
        } else if l.reads_one_element() {
            InputMode::Scalar
        } else if row_length(l).is_some() {
            InputMode::Row
        } else {
            InputMode::Strided
        }
    }
}

/// The length of the row `l` repeats, when it reads one contiguous row
/// for every index of the leading dimensions.
pub(super) fn row_length(l: &Layout) -> Option<usize> {
    let (shape, [strides]) = collapse_dims(&l.shape, [&l.strides]);
    match (shape.as_slice(), strides.as_slice()) {
        ([_, w], [0, 1]) => Some(*w),
        _ => None,
    }
}

/// The explicitly rounded intrinsic of a float32/float64 sum, difference
/// or product: PTX arithmetic without a rounding modifier may be fused
/// into an FMA by the assembler (across steps, which the eager kernels
/// never are), arithmetic with `.rn` never is.
fn rounded_intrinsic(op: BinaryOp, module: Dtype) -> Option<&'static str> {
    match (op, module) {
        (BinaryOp::Add, Dtype::F32) => Some("__fadd_rn"),
        (BinaryOp::Subtract, Dtype::F32) => Some("__fsub_rn"),
        (BinaryOp::Multiply, Dtype::F32) => Some("__fmul_rn"),
        (BinaryOp::Add, Dtype::F64) => Some("__dadd_rn"),
        (BinaryOp::Subtract, Dtype::F64) => Some("__dsub_rn"),
        (BinaryOp::Multiply, Dtype::F64) => Some("__dmul_rn"),
        _ => None,
    }
}

/// Division by a broadcast scalar: by a power of two whose reciprocal is a
/// normal number, a multiplication by that reciprocal rounds the same real
/// number as the division (so the result is the same, bit for bit) at a
/// fraction of an IEEE division's cost; other divisors divide. The test on
/// the divisor is the same for every element, so it leaves the loop.
pub(super) const DIVIDE_BY_SCALAR: &str = r#"
__device__ __forceinline__ float fx_div_by_scalar(float a, float b) {
    const unsigned int bits = __float_as_uint(b), e = (bits >> 23) & 0xffu;
    if ((bits & 0x7fffffu) == 0u && e >= 1u && e <= 253u)
        return __fmul_rn(a, __uint_as_float((bits & 0x80000000u) | ((254u - e) << 23)));
    return a / b;
}
__device__ __forceinline__ double fx_div_by_scalar(double a, double b) {
    const unsigned long long bits = (unsigned long long)__double_as_longlong(b), e = (bits >> 52) & 0x7ffull;
    if ((bits & 0xfffffffffffffull) == 0ull && e >= 1ull && e <= 2045ull)
        return __dmul_rn(a, __longlong_as_double((long long)((bits & 0x8000000000000000ull) | ((2046ull - e) << 52))));
    return a / b;
}
"#;

/// Whether `step` divides floats by a broadcast scalar input (see
/// [`DIVIDE_BY_SCALAR`]).
fn divides_by_scalar(step: &crate::backend::fused::FusedStep, module: Dtype, modes: &[InputMode]) -> bool {
    step.op == FusedOp::Binary(BinaryOp::Divide)
        && matches!(module, Dtype::F16 | Dtype::BF16 | Dtype::F32 | Dtype::F64)
        && matches!(step.args[1], Operand::Input(j) if modes[j] == InputMode::Scalar)
}

/// The dtype the program's arithmetic runs in (the generated module's
/// `T`), or `None` when no kernel can be generated for it.
pub fn module_dtype(program: &FusedProgram) -> Option<Dtype> {
    let all = program.inputs.iter().chain(program.steps.iter().map(|s| &s.dtype));
    if all.clone().any(|&d| d == Dtype::C64) {
        return None;
    }
    let mut module: Option<Dtype> = None;
    for step in &program.steps {
        let operand = program.dtype_of(step.args[0]);
        let fits = match step.op {
            FusedOp::Unary(_) | FusedOp::Binary(_) => step.dtype == operand || step.dtype == Dtype::Bool,
            FusedOp::Select | FusedOp::AsType => continue,
        };
        if !fits || module.is_some_and(|m| m != operand) {
            return None;
        }
        module = Some(operand);
    }
    module.or(program.inputs.first().copied()).or(Some(Dtype::F32))
}

/// The C type of a dtype's elements in the kernels.
fn c_type(d: Dtype) -> String {
    format!("fx_{}", dtype_tag(d))
}

/// The dtype tag of `dtype.cuh` (casts into the dtype).
fn tag(d: Dtype) -> &'static str {
    match d {
        Dtype::Bool => "DtBool",
        Dtype::U8 => "DtU8",
        Dtype::U16 => "DtU16",
        Dtype::U32 => "DtU32",
        Dtype::U64 => "DtU64",
        Dtype::I8 => "DtI8",
        Dtype::I16 => "DtI16",
        Dtype::I32 => "DtI32",
        Dtype::I64 => "DtI64",
        Dtype::F16 => "DtF16",
        Dtype::BF16 => "DtBF16",
        Dtype::F32 => "DtF32",
        Dtype::F64 => "DtF64",
        Dtype::C64 => "DtC64",
    }
}

/// The expression casting `v` from `src` to `dst` as the copy kernels do
/// (`fx_cast`: `Element::from_scalar` of the source value).
fn cast_expr(src: Dtype, dst: Dtype, v: &str) -> String {
    if src == dst {
        return v.to_string();
    }
    let t = tag(dst);
    match src {
        Dtype::Bool => format!("{t}::from_bool({v} != 0)"),
        Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64 => format!("{t}::from_i64((long long){v})"),
        Dtype::U8 | Dtype::U16 | Dtype::U32 | Dtype::U64 => format!("{t}::from_u64((unsigned long long){v})"),
        Dtype::F16 => format!("{t}::from_f64((double)fx_f16_to_f32({v}))"),
        Dtype::BF16 => format!("{t}::from_f64((double)fx_bf16_to_f32({v}))"),
        Dtype::F32 | Dtype::F64 => format!("{t}::from_f64((double){v})"),
        Dtype::C64 => format!("{t}::from_c64({v}.re, {v}.im)"),
    }
}

/// The device function `fx_body(a_0, .., r_0&, ..)`: the program's steps
/// on one element (inputs by value, outputs by reference), arithmetic in
/// `module`, inputs read as `modes`.
pub(super) fn body_source(program: &FusedProgram, module: Dtype, modes: &[InputMode]) -> String {
    let operand = |a: Operand| match a {
        Operand::Input(j) => format!("a{j}"),
        Operand::Step(j) => format!("v{j}"),
    };
    let mut body = String::new();
    for (i, step) in program.steps.iter().enumerate() {
        let args: Vec<String> = step.args.iter().map(|&a| operand(a)).collect();
        let out = c_type(step.dtype);
        let expr = match step.op {
            FusedOp::Unary(op) if step.dtype == module => {
                format!("fx_from_c({}()(fx_to_c({})))", op.functor(), args[0])
            }
            FusedOp::Unary(op) => format!("(fx_bool)({}()(fx_to_c({})) ? 1 : 0)", op.functor(), args[0]),
            FusedOp::Binary(_) if step.dtype == module && divides_by_scalar(step, module, modes) => {
                format!("fx_from_c(fx_div_by_scalar(fx_to_c({}), fx_to_c({})))", args[0], args[1])
            }
            FusedOp::Binary(op) if step.dtype == module => match rounded_intrinsic(op, module) {
                Some(f) => format!("{f}({}, {})", args[0], args[1]),
                None => format!("fx_from_c({}()(fx_to_c({}), fx_to_c({})))", op.functor(), args[0], args[1]),
            },
            FusedOp::Binary(op) => {
                format!("(fx_bool)({}()(fx_to_c({}), fx_to_c({})) ? 1 : 0)", op.functor(), args[0], args[1])
            }
            FusedOp::Select => format!("{} ? {} : {}", args[0], args[1], args[2]),
            FusedOp::AsType => cast_expr(program.dtype_of(step.args[0]), step.dtype, &args[0]),
        };
        let _ = writeln!(body, "    {out} v{i} = {expr};");
    }
    for (k, &o) in program.outputs.iter().enumerate() {
        let _ = writeln!(body, "    r{k} = v{o};");
    }
    let value_params: Vec<String> = program
        .inputs
        .iter()
        .enumerate()
        .map(|(j, &d)| format!("{} a{j}", c_type(d)))
        .chain(program.outputs.iter().enumerate().map(|(k, &o)| format!("{}& r{k}", c_type(program.steps[o].dtype))))
        .collect();
    format!("__device__ __forceinline__ void fx_body({}) {{\n{body}}}\n", value_params.join(", "))
}

/// The kernel parameters of the program's inputs: `const S_j* in{j}` each.
pub(super) fn input_params(program: &FusedProgram) -> Vec<String> {
    program.inputs.iter().enumerate().map(|(j, &d)| format!("const {}* __restrict__ in{j}", c_type(d))).collect()
}

/// The parameters describing how inputs are read, in input order: a
/// `Strided1 l{j}` per strided input, a `long long w{j}` (row length) per
/// row input.
pub(super) fn layout_params(modes: &[InputMode]) -> Vec<String> {
    modes
        .iter()
        .enumerate()
        .filter_map(|(j, &m)| match m {
            InputMode::Strided => Some(format!("Strided1 l{j}")),
            InputMode::Row => Some(format!("long long w{j}")),
            _ => None,
        })
        .collect()
}

/// The value of scalar input `j`: its literal when the program knows it,
/// else its first element.
pub(super) fn scalar_value(program: &FusedProgram, j: usize) -> String {
    match program.known_scalar(j) {
        Some(bits) => literal(program.inputs[j], bits),
        None => format!("in{j}[0]"),
    }
}

/// The expression reading input `j`'s element at flat output index
/// `index` (scalar inputs are in `s{j}`).
pub(super) fn load_expr(modes: &[InputMode], j: usize, index: &str) -> String {
    match modes[j] {
        InputMode::Contiguous => format!("in{j}[{index}]"),
        InputMode::Scalar => format!("s{j}"),
        InputMode::Strided => format!("in{j}[fx_offset({index}, l{j})]"),
        InputMode::Row => format!("in{j}[({index}) % w{j}]"),
    }
}

/// The source of the kernel `fx_fused` for `program` with arithmetic in
/// `module` and inputs read as `modes`.
///
/// Arguments: `const S_j* in_j` per input, `O_k* out_k` per output,
/// `long long n`, then one `Strided1` per strided input and one `long
/// long` row length per row input, in input order.
/// Launch with blockDim 256 and any grid; with `vector` set, every
/// contiguous input and every output must be aligned to packs of
/// `pack_elements(program)` elements, and the grid must cover the packs
/// with `PACKS_PER_THREAD` per thread, `tid + u * nth` for thread `tid`
/// (on an H200, two loads in flight per thread ran 5% faster than one
/// pack per thread, and a grid-stride loop 7% slower; see
/// `docs/gpu-notes.md`). Known scalar inputs are written into the source
/// as literals, which also lets NVRTC fold what depends on them (a
/// division by 2 becomes a product).
pub fn kernel_source(program: &FusedProgram, module: Dtype, modes: &[InputMode], vector: bool) -> String {
    let mut src = body_source(program, module, modes);
    let mut params = input_params(program);
    params.extend(
        program
            .outputs
            .iter()
            .enumerate()
            .map(|(k, &o)| format!("{}* __restrict__ out{k}", c_type(program.steps[o].dtype))),
    );
    params.push("long long n".into());
    params.extend(layout_params(modes));
    let _ = writeln!(src, "extern \"C\" __global__ void fx_fused({}) {{", params.join(", "));
    src.push_str("    const long long tid = fx_thread_id(), nth = fx_thread_count();\n");
    for (j, &m) in modes.iter().enumerate() {
        if m == InputMode::Scalar {
            let _ = writeln!(src, "    const {} s{j} = {};", c_type(program.inputs[j]), scalar_value(program, j));
        }
    }
    let outs = program.outputs.len();
    let declare_results = |src: &mut String, indent: &str| {
        for (k, &o) in program.outputs.iter().enumerate() {
            let _ = writeln!(src, "{indent}{} r{k};", c_type(program.steps[o].dtype));
        }
    };
    let call = |loads: Vec<String>, results: Vec<String>| -> String {
        let all: Vec<String> = loads.into_iter().chain(results).collect();
        format!("fx_body({});", all.join(", "))
    };
    let mut start = "tid".to_string();
    if vector {
        let p = pack_elements(program);
        let _ = writeln!(src, "    const long long npk = n / {p};");
        let _ = writeln!(src, "#pragma unroll\n    for (int u = 0; u < {PACKS_PER_THREAD}; ++u) {{");
        src.push_str("        const long long p = tid + u * nth;\n        if (p >= npk) break;\n");
        for (j, &m) in modes.iter().enumerate() {
            let at = match m {
                InputMode::Contiguous => format!("p * {p}"),
                InputMode::Row => format!("(p * {p}) % w{j}"),
                _ => continue,
            };
            let ty = c_type(program.inputs[j]);
            let _ = writeln!(src, "        FxPack<{ty}, {p}> x{j};\n        x{j}.load(in{j} + {at});");
        }
        for (k, &o) in program.outputs.iter().enumerate() {
            let _ = writeln!(src, "        FxPack<{}, {p}> y{k};", c_type(program.steps[o].dtype));
        }
        let _ = writeln!(src, "#pragma unroll\n        for (int e = 0; e < {p}; ++e) {{");
        let loads = (0..modes.len())
            .map(|j| match modes[j] {
                InputMode::Contiguous | InputMode::Row => format!("x{j}.v[e]"),
                _ => format!("s{j}"),
            })
            .collect();
        let results = (0..outs).map(|k| format!("y{k}.v[e]")).collect();
        let _ = writeln!(src, "            {}\n        }}", call(loads, results));
        for k in 0..outs {
            let _ = writeln!(src, "        y{k}.store(out{k} + p * {p});");
        }
        src.push_str("    }\n");
        start = format!("npk * {p} + tid");
    }
    let _ = writeln!(src, "    for (long long i = {start}; i < n; i += nth) {{");
    declare_results(&mut src, "        ");
    let loads = (0..modes.len()).map(|j| load_expr(modes, j, "i")).collect();
    let results = (0..outs).map(|k| format!("r{k}")).collect();
    let _ = writeln!(src, "        {}", call(loads, results));
    for k in 0..outs {
        let _ = writeln!(src, "        out{k}[i] = r{k};");
    }
    src.push_str("    }\n}\n");
    with_prelude(module, &[UNARY_OPS, BINARY_OPS, DIVIDE_BY_SCALAR, &src])
}

/// Packs each thread of the vector path takes (see [`kernel_source`]).
const PACKS_PER_THREAD: usize = 2;

/// A C expression of `dtype` whose bits are `bits` (see
/// [`FusedProgram::known_scalars`]).
fn literal(dtype: Dtype, bits: u64) -> String {
    match dtype {
        Dtype::F32 => format!("__uint_as_float({bits:#x}u)"),
        Dtype::F64 => format!("__longlong_as_double({bits:#x}ll)"),
        Dtype::F16 | Dtype::BF16 => format!("{}{{(unsigned short){bits:#x}}}", c_type(dtype)),
        _ => format!("({}){bits:#x}ull", c_type(dtype)),
    }
}

/// Elements per pack in the vector loop: 16 bytes of the widest type read
/// or written.
pub fn pack_elements(program: &FusedProgram) -> usize {
    let widest = program
        .inputs
        .iter()
        .chain(program.outputs.iter().map(|&o| &program.steps[o].dtype))
        .map(|d| d.size())
        .max()
        .unwrap_or(1);
    16 / widest
}

/// A loaded fused kernel.
#[derive(Clone, Copy)]
struct Loaded(sys::CUfunction);

// SAFETY: function handles are process-wide in their context.
unsafe impl Send for Loaded {}

/// What a generated module was generated for, besides its program: how
/// it reads its inputs, whether it takes the vector path, and for fused
/// reductions the reduction.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) struct Variant {
    pub modes: Vec<InputMode>,
    pub vector: bool,
    pub reduce: Option<ReduceOp>,
}

/// The modules generated for one program: by variant, the loaded kernels.
type Variants = Vec<(Variant, Vec<Loaded>)>;

/// Loaded kernels by the program and variant they were generated from, so
/// a call neither regenerates the source nor copies the program. Modules
/// stay loaded: launched work may still run them.
static KERNELS: Mutex<Option<HashMap<FusedProgram, Variants>>> = Mutex::new(None);

/// The kernels `names` of the module that `source` generates for
/// `program` and `variant`, generating, compiling (NVRTC, cached in memory
/// and on disk) and loading it on first use.
pub(super) fn generated_kernels(
    program: &FusedProgram,
    variant: &Variant,
    names: &[&str],
    source: impl FnOnce() -> String,
) -> Result<Vec<sys::CUfunction>> {
    let mut guard = KERNELS.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    if let Some((_, fs)) = cache.get(program).and_then(|v| v.iter().find(|(v, _)| v == variant)) {
        return Ok(fs.iter().map(|f| f.0).collect());
    }
    let dev = gpu()?;
    let cubin =
        compile_cached("fused", &source(), &dev.arch_name()).map_err(|msg| Error::Device { op: "compile", msg })?;
    // SAFETY: a complete cubin image for this device.
    let loaded = unsafe { result::module::load_data(cubin.as_ptr() as *const _) }.map_err(driver_error("compile"))?;
    let functions = names
        .iter()
        .map(|name| {
            let name = CString::new(*name).expect("no NUL");
            // SAFETY: the module is loaded and stays loaded.
            unsafe { result::module::get_function(loaded, name) }.map(Loaded).map_err(driver_error("compile"))
        })
        .collect::<Result<Vec<_>>>()?;
    cache.entry(program.clone()).or_default().push((variant.clone(), functions.clone()));
    Ok(functions.iter().map(|f| f.0).collect())
}

/// Runs `program` over `inputs` (layouts broadcast to `shape`) as one
/// kernel; `None` when the program needs the step-by-step path.
///
/// With `donated = Some((j, k))`, output `k` is written over input `j`
/// (donated by the scheduler: row-contiguous over `shape`, of the output's
/// dtype, read by nothing else) and its entry in the result is `None`:
/// each thread reads its elements of the input before it writes them.
pub(crate) fn fused(
    s: &Arc<GpuStream>,
    program: &FusedProgram,
    inputs: &[(&CudaStorage, Layout)],
    shape: &[usize],
    donated: Option<(usize, usize)>,
) -> Result<Option<Vec<Option<CudaStorage>>>> {
    let Some(module) = module_dtype(program) else { return Ok(None) };
    let n = crate::shape::numel(shape);
    let outputs = (0..program.outputs.len())
        .map(|k| match donated {
            Some((_, d)) if d == k => Ok(None),
            _ => CudaStorage::alloc(program.steps[program.outputs[k]].dtype, n, s).map(Some),
        })
        .collect::<Result<Vec<_>>>()?;
    if n == 0 {
        return Ok(Some(outputs));
    }
    let output_ptrs: Vec<(u64, Dtype)> = outputs
        .iter()
        .map(|o| match (o, donated) {
            (Some(o), _) => (o.ptr_at(0), o.dtype()),
            (None, Some((j, _))) => (inputs[j].0.ptr_at(inputs[j].1.offset), inputs[j].0.dtype()),
            (None, None) => unreachable!("only a donated output is not allocated"),
        })
        .collect();
    let modes: Vec<InputMode> = inputs.iter().map(|(_, l)| InputMode::of(l)).collect();
    let p = pack_elements(program);
    let aligned = |ptr: u64, d: Dtype| ptr.is_multiple_of((p * d.size()) as u64);
    let rows: Vec<usize> = inputs.iter().map(|(_, l)| row_length(l).unwrap_or(0)).collect();
    let packs_fit = |(((x, l), m), w): (((&CudaStorage, &Layout), &InputMode), &usize)| match m {
        InputMode::Contiguous => aligned(x.ptr_at(l.offset), x.dtype()),
        InputMode::Row => w.is_multiple_of(p) && aligned(x.ptr_at(l.offset), x.dtype()),
        InputMode::Scalar => true,
        InputMode::Strided => false,
    };
    let vector = p > 1
        && n.div_ceil(BLOCK as usize * p * PACKS_PER_THREAD) <= i32::MAX as usize
        && inputs.iter().map(|(x, l)| (*x, l)).zip(&modes).zip(&rows).all(packs_fit)
        && output_ptrs.iter().all(|&(ptr, d)| aligned(ptr, d));
    let variant = Variant { modes: modes.clone(), vector, reduce: None };
    let f = generated_kernels(program, &variant, &["fx_fused"], || kernel_source(program, module, &modes, vector))?[0];
    let mut args = Args::new();
    for (x, l) in inputs {
        args = args.arg(x.ptr_at(l.offset));
    }
    for &(ptr, _) in &output_ptrs {
        args = args.arg(ptr);
    }
    args = args.arg(n as i64);
    for (((_, l), &m), &w) in inputs.iter().zip(&modes).zip(&rows) {
        match m {
            InputMode::Strided => args = args.arg(Strided::new("Compiled", &l.shape, [&l.strides])?),
            InputMode::Row => args = args.arg(w as i64),
            _ => {}
        }
    }
    let grid = if vector { grid_full(n, p * PACKS_PER_THREAD) } else { grid_for(n, 1)? };
    // SAFETY: the arguments follow `kernel_source`'s signature; the buffers
    // live until the stream has run the kernel.
    unsafe { launch_function(f, (grid, 1, 1), (BLOCK, 1, 1), 0, s, args)? };
    Ok(Some(outputs))
}
