//! Fused reductions on the GPU (`compile`'s `FusedReduce`): a fused
//! program's one output is folded as the program computes it, so the
//! values are never written out.
//!
//! The generated module defines a value source for the folds of
//! `reduce_folds.cuh` (see `FxLoad` there): its element `i` is what the
//! program writes at flat index `i`, computed from the inputs. The
//! reduction launches exactly the kernels that reducing the stored output
//! would ([`reduce::fold`]), and the folds take their order from where
//! element `i` would lie in a fresh buffer (16-byte aligned, as every
//! allocation is), so the result is bit for bit that of `fused` then
//! `reduce`.

use super::fused::{
    body_source, generated_kernels, input_params, layout_params, load_expr, module_dtype, row_length, scalar_value,
    InputMode, Variant, DIVIDE_BY_SCALAR,
};
use super::kernels::{dtype_tag, with_prelude, BINARY_OPS, REDUCE_FOLDS, UNARY_OPS};
use super::launch::{launch_function, Args, Strided};
use super::reduce::{fold, Values};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::fused::FusedProgram;
use crate::backend::ReduceOp;
use crate::dtype::Dtype;
use crate::error::Result;
use crate::shape::{numel, Layout};
use cudarc::driver::sys;
use std::fmt::Write;
use std::sync::Arc;

/// The first-pass kernels of a fused reduction, in the order their
/// functions are loaded: `fx_fused_<kind>` has `reduce.cu`'s `<op>_<kind>`
/// ABI after the source's own arguments.
const KINDS: [&str; 3] = ["all", "rows", "cols"];

/// Reduces `program`'s one output (over `inputs` broadcast to `shape`)
/// with `op` over sorted, unique `axes` without writing the output;
/// `None` when the program needs the two-pass path (no kernel can be
/// generated for it, its output is not of its arithmetic dtype, or the
/// reduction casts first).
pub(crate) fn fused_reduce(
    s: &Arc<GpuStream>,
    program: &FusedProgram,
    inputs: &[(&CudaStorage, Layout)],
    shape: &[usize],
    op: ReduceOp,
    axes: &[usize],
    out_dtype: Dtype,
) -> Result<Option<CudaStorage>> {
    let Some(module) = module_dtype(program) else { return Ok(None) };
    let &[output] = program.outputs.as_slice() else { return Ok(None) };
    if program.steps[output].dtype != module || out_dtype != module || numel(shape) == 0 {
        return Ok(None);
    }
    let modes: Vec<InputMode> = inputs.iter().map(|(_, l)| InputMode::of(l)).collect();
    let rows: Vec<usize> = inputs.iter().map(|(_, l)| row_length(l).unwrap_or(0)).collect();
    // Inputs are read in packs of as many elements as a 16-byte pack of
    // the values holds, where every contiguous and row input allows it.
    let p = 16 / module.size();
    let packs_fit = |((x, l), (m, w)): ((&CudaStorage, &Layout), (&InputMode, &usize))| {
        let bytes = (p * x.dtype().size()) as u64;
        let aligned = bytes <= 16 && x.ptr_at(l.offset).is_multiple_of(bytes);
        match m {
            InputMode::Contiguous => aligned,
            InputMode::Row => aligned && w.is_multiple_of(p),
            InputMode::Scalar | InputMode::Strided => true,
        }
    };
    let vector = inputs.iter().map(|(x, l)| (*x, l)).zip(modes.iter().zip(&rows)).all(packs_fit);
    let variant = Variant { modes: modes.clone(), vector, reduce: Some(op) };
    let names: Vec<String> = KINDS.iter().map(|k| format!("fx_fused_{k}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let functions =
        generated_kernels(program, &variant, &names, || kernel_source(program, module, &modes, vector, op))?;
    let values = Generated { functions, inputs, modes: &modes, rows: &rows };
    fold(s, op, &values, &Layout::contiguous(shape), axes, module).map(Some)
}

/// The values of a generated module's source, with the inputs it reads.
struct Generated<'a> {
    /// The loaded `fx_fused_<kind>` kernels, in [`KINDS`] order.
    functions: Vec<sys::CUfunction>,
    inputs: &'a [(&'a CudaStorage, Layout)],
    modes: &'a [InputMode],
    rows: &'a [usize],
}

impl Values for Generated<'_> {
    fn launch(
        &self,
        kind: &str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        s: &GpuStream,
        args: Args,
    ) -> Result<()> {
        let f = self.functions[KINDS.iter().position(|k| *k == kind).expect("a first-pass kernel")];
        let mut own = Args::new();
        for (x, l) in self.inputs {
            own = own.arg(x.ptr_at(l.offset));
        }
        for (((_, l), &m), &w) in self.inputs.iter().zip(self.modes).zip(self.rows) {
            match m {
                InputMode::Strided => own = own.arg(Strided::new("Compiled", &l.shape, [&l.strides])?),
                InputMode::Row => own = own.arg(w as i64),
                _ => {}
            }
        }
        // SAFETY: the arguments follow `kernel_source`'s signatures; the
        // buffers live until the stream has run the kernel.
        unsafe { launch_function(f, grid, block, 0, s, own.extend(args)) }
    }
}

/// The functor of `reduce_folds.cuh` for `op`.
fn reduction(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "RedSum",
        ReduceOp::Prod => "RedProd",
        ReduceOp::Max => "RedMax",
        ReduceOp::Min => "RedMin",
    }
}

/// The source of the fused reduction of `program`'s one output (of dtype
/// `module`, its arithmetic dtype) with `op`, inputs read as `modes`
/// (in packs with `vector`, see [`fused_reduce`]).
///
/// Kernels `fx_fused_all`, `fx_fused_rows` and `fx_fused_cols`: arguments
/// `const S_j* in_j` per input, then a `Strided1` per strided input and a
/// `long long` row length per row input (in input order), then those of
/// `reduce.cu`'s `<op>_all`, `<op>_rows` and `<op>_cols` after their
/// input pointer.
pub fn kernel_source(program: &FusedProgram, module: Dtype, modes: &[InputMode], vector: bool, op: ReduceOp) -> String {
    let ty = |j: usize| format!("fx_{}", dtype_tag(program.inputs[j]));
    let mut src = body_source(program, module, modes);
    // The source: its members, and element i computed alone.
    src.push_str("struct FxSource {\n");
    for (j, &m) in modes.iter().enumerate() {
        let _ = match m {
            InputMode::Scalar => writeln!(src, "    {} s{j};", ty(j)),
            _ => writeln!(src, "    const {}* in{j};", ty(j)),
        };
        let _ = match m {
            InputMode::Strided => writeln!(src, "    Strided1 l{j};"),
            InputMode::Row => writeln!(src, "    long long w{j};"),
            _ => Ok(()),
        };
    }
    let loads = |index: &str| -> Vec<String> { (0..modes.len()).map(|j| load_expr(modes, j, index)).collect() };
    src.push_str("    typedef FxPack<T, FX_P> Pack;\n");
    src.push_str(
        "    __device__ __forceinline__ unsigned long long addr(long long i) const { \
         return (unsigned long long)i * sizeof(T); }\n",
    );
    let _ = writeln!(
        src,
        "    __device__ __forceinline__ TC at(long long i) const {{\n        T r;\n        fx_body({}, r);\n        \
         return fx_to_c(r);\n    }}",
        loads("i").join(", ")
    );
    // Elements [i, i + FX_P), i a multiple of FX_P.
    src.push_str("    __device__ __forceinline__ void fetch(Pack& p, long long i) const {\n");
    let mut args = Vec::new();
    for (j, &m) in modes.iter().enumerate() {
        let at = match m {
            InputMode::Contiguous if vector => "i".to_string(),
            InputMode::Row if vector => format!("i % w{j}"),
            _ => {
                args.push(load_expr(modes, j, "i + e"));
                continue;
            }
        };
        let _ = writeln!(src, "        FxPack<{}, FX_P> x{j};\n        x{j}.load(in{j} + {at});", ty(j));
        args.push(format!("x{j}.v[e]"));
    }
    let _ = writeln!(
        src,
        "#pragma unroll\n        for (int e = 0; e < FX_P; ++e) fx_body({}, p.v[e]);\n    }}",
        args.join(", ")
    );
    src.push_str(
        "    __device__ __forceinline__ TC value(const Pack& p, int e) const { return fx_to_c(p.v[e]); }\n};\n",
    );

    // Building the source from the kernel arguments.
    let mut params = input_params(program);
    params.extend(layout_params(modes));
    let params = params.join(", ");
    let _ = writeln!(src, "__device__ __forceinline__ FxSource fx_source({params}) {{\n    FxSource src;");
    for (j, &m) in modes.iter().enumerate() {
        let _ = match m {
            InputMode::Scalar => writeln!(src, "    src.s{j} = {};", scalar_value(program, j)),
            _ => writeln!(src, "    src.in{j} = in{j};"),
        };
        let _ = match m {
            InputMode::Strided => writeln!(src, "    src.l{j} = l{j};"),
            InputMode::Row => writeln!(src, "    src.w{j} = w{j};"),
            _ => Ok(()),
        };
    }
    src.push_str("    return src;\n}\n");
    let mut names: Vec<String> = (0..modes.len()).map(|j| format!("in{j}")).collect();
    names.extend(modes.iter().enumerate().filter_map(|(j, &m)| match m {
        InputMode::Strided => Some(format!("l{j}")),
        InputMode::Row => Some(format!("w{j}")),
        _ => None,
    }));
    let source = format!("fx_source({})", names.join(", "));

    // The kernels.
    let _ = writeln!(src, "typedef {} FxRed;", reduction(op));
    let _ = writeln!(
        src,
        "extern \"C\" __global__ void fx_fused_all({params}, FxRed::Acc* partial, long long n) {{\n    \
         fx_reduce_all<FxRed>({source}, partial, n);\n}}"
    );
    let _ = writeln!(
        src,
        "extern \"C\" __global__ void fx_fused_rows({params}, T* out, long long n_out, Strided1 kept, Strided1 red) \
         {{\n    fx_reduce_rows<FxRed>({source}, out, n_out, kept, red);\n}}"
    );
    let _ = writeln!(
        src,
        "extern \"C\" __global__ void fx_fused_cols({params}, FxRed::Acc* partial, long long outer, long long r, \
         long long inner, long long split) {{\n    fx_reduce_cols<FxRed>({source}, partial, outer, r, inner, split);\n}}"
    );
    with_prelude(module, &[UNARY_OPS, BINARY_OPS, DIVIDE_BY_SCALAR, REDUCE_FOLDS, &src])
}
