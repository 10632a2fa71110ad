//! MLX's custom CUDA kernels: [`cuda_kernel`] writes a kernel around a CUDA
//! C++ body the user supplies (NVRTC compiles it when it first runs) and
//! [`precompiled_cuda_kernel`] runs a kernel compiled elsewhere (PTX or
//! cubin). Both add a [`CustomKernel`] node on the current stream, which
//! must be a GPU stream.
//!
//! A generated kernel's source is, in order: the line including the prelude
//! (`backend/cuda/kernels/custom_kernel.cuh`, ferrox's stand-in for MLX's
//! default header; the backend substitutes it, see
//! [`crate::backend::expanded_source`]), the user's header, then inside
//! `namespace ferrox::cu` the signature, the template arguments as
//! constants and the body:
//!
//! ```text
//! extern "C" __global__ void custom_kernel_<name><template suffix>(
//!     const <input dtype>* <input>,
//!     const __grid_constant__ Shape <input>_shape,      // when the body names it
//!     const __grid_constant__ Strides <input>_strides,  // when the body names it
//!     const __grid_constant__ int <input>_ndim,         // when the body names it
//!     ...
//!     <output dtype>* <output>, ...) {
//!   constexpr int <int template> = <value>;
//!   constexpr bool <bool template> = <value>;
//!   using <dtype template> = <C type>;
//!
//! <body>
//! }
//! ```
//!
//! As in MLX, 0-d inputs never get the layout parameters, and the grid is
//! counted in threads: the launch has `ceil(grid / threadgroup)` blocks of
//! `min(threadgroup, grid)` threads along each axis.

use crate::array::Array;
use crate::backend::{launch_shape, KernelCode, KernelLaunch, ScalarArg, ShapeInfo, MAX_NDIM, PRELUDE_INCLUDE};
use crate::device::{current_stream, Device, DeviceType};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::primitives::{CustomKernel, OutputSpec};

/// The op name of [`cuda_kernel`]'s errors (MLX's).
const OP: &str = "custom_kernel";
/// The op name of [`precompiled_cuda_kernel`]'s errors.
const PRECOMPILED: &str = "precompiled_cuda_kernel";

/// CUDA's limit on the threads of a block.
const MAX_BLOCK_THREADS: u64 = 1024;
/// CUDA's limit on a block's extent along z.
const MAX_BLOCK_Z: u32 = 64;
/// CUDA's limit on the blocks of a launch along y and z.
const MAX_GRID_YZ: u32 = 65535;

/// A template argument of a generated kernel: an `int` or `bool` constant,
/// or a type alias for a dtype's C type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TemplateArg {
    /// `constexpr int NAME = value;`
    Int(i32),
    /// `constexpr bool NAME = value;`
    Bool(bool),
    /// `using NAME = <the dtype's C type>;`
    Dtype(Dtype),
}

/// The C type of a dtype's elements in a generated kernel (MLX's names).
pub fn cuda_type(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::Bool => "bool",
        Dtype::U8 => "uint8_t",
        Dtype::U16 => "uint16_t",
        Dtype::U32 => "uint32_t",
        Dtype::U64 => "uint64_t",
        Dtype::I8 => "int8_t",
        Dtype::I16 => "int16_t",
        Dtype::I32 => "int32_t",
        Dtype::I64 => "int64_t",
        Dtype::F16 => "__half",
        Dtype::BF16 => "__nv_bfloat16",
        Dtype::F32 => "float",
        Dtype::F64 => "double",
        Dtype::C64 => "ferrox::cu::complex64_t",
    }
}

/// The part of the kernel name a dtype template argument adds (MLX's type strings).
fn type_string(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::F16 => "float16_t",
        Dtype::BF16 => "bfloat16_t",
        Dtype::C64 => "complex64_t",
        d => cuda_type(d),
    }
}

/// Whether `s` is a C++ identifier (ASCII letters, digits and underscores,
/// not starting with a digit).
fn is_identifier(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks that every name is an identifier and that none repeats.
fn check_names<'a>(op: &'static str, names: impl IntoIterator<Item = (&'static str, &'a str)>) -> Result<()> {
    let mut seen: Vec<&str> = Vec::new();
    for (what, name) in names {
        if !is_identifier(name) {
            return Err(Error::invalid(op, format!("The {what} name {name:?} is not a valid C++ identifier.")));
        }
        if seen.contains(&name) {
            return Err(Error::invalid(
                op,
                format!("The name {name:?} is used twice among the inputs, outputs and template arguments."),
            ));
        }
        seen.push(name);
    }
    Ok(())
}

/// MLX's message for an argument list of the wrong length.
fn check_size(op: &'static str, what: &str, actual: usize, expected: usize) -> Result<()> {
    if actual == expected {
        Ok(())
    } else {
        Err(Error::invalid(op, format!("Expected `{what}` to have size {expected} but got size {actual}.")))
    }
}

/// Custom kernels run on the GPU only: the current stream must be a GPU's.
fn check_gpu_stream(op: &'static str) -> Result<()> {
    if current_stream().device.kind == DeviceType::Gpu {
        return Ok(());
    }
    let why = if crate::device::is_available(Device::GPU) {
        "the stream runs on the CPU"
    } else {
        "no CUDA GPU is available on this machine"
    };
    Err(Error::invalid(op, format!("Only supports the GPU; {why}.")))
}

/// Checks a launch shape against CUDA's limits (on the block the launch
/// uses: the threadgroup capped by the grid).
fn check_launch(op: &'static str, grid: [u32; 3], threadgroup: [u32; 3]) -> Result<()> {
    let fmt = |v: [u32; 3]| format!("({}, {}, {})", v[0], v[1], v[2]);
    if threadgroup.contains(&0) {
        return Err(Error::invalid(op, format!("The threadgroup must be positive, got {}.", fmt(threadgroup))));
    }
    let (blocks, block) = launch_shape(grid, threadgroup);
    if block.iter().map(|&b| b as u64).product::<u64>() > MAX_BLOCK_THREADS || block[2] > MAX_BLOCK_Z {
        return Err(Error::invalid(
            op,
            format!(
                "A block of {} threads exceeds CUDA's limits ({MAX_BLOCK_THREADS} threads, {MAX_BLOCK_Z} along z).",
                fmt(block)
            ),
        ));
    }
    if blocks[1] > MAX_GRID_YZ || blocks[2] > MAX_GRID_YZ {
        return Err(Error::invalid(
            op,
            format!("A grid of {} blocks exceeds CUDA's limit of {MAX_GRID_YZ} blocks along y and z.", fmt(blocks)),
        ));
    }
    Ok(())
}

/// Adds the kernel's node: one output array per spec.
fn add_node(
    launch: KernelLaunch,
    ensure_row_contiguous: bool,
    inputs: &[Array],
    output_shapes: &[Vec<usize>],
    output_dtypes: &[Dtype],
) -> Result<Vec<Array>> {
    let outputs: Vec<OutputSpec> =
        output_shapes.iter().zip(output_dtypes).map(|(s, &dtype)| OutputSpec { shape: s.clone(), dtype }).collect();
    let node = CustomKernel {
        launch,
        ensure_row_contiguous,
        input_dtypes: inputs.iter().map(Array::dtype).collect(),
        outputs: outputs.clone(),
    };
    Array::siblings_from_primitive(outputs, node, inputs.to_vec())
}

/// A CUDA kernel written from a body (MLX's `fast.cuda_kernel`); call it
/// with [`CudaKernel::call`].
#[derive(Clone, Debug)]
pub struct CudaKernel {
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    shared_memory: u32,
    /// Which layout parameters the body names, per input.
    shape_infos: Vec<ShapeInfo>,
}

/// A CUDA kernel from the body `source` (MLX's `fast.cuda_kernel`).
/// `input_names` and `output_names` name the pointer parameters of the
/// generated signature (distinct C++ identifiers; at least one output);
/// `header` goes before the kernel (helper functions, includes);
/// `ensure_row_contiguous` copies strided inputs to row-contiguous ones
/// before the launch; `shared_memory` is the dynamic shared memory in bytes.
/// The body gets `<input>_shape`, `<input>_strides` and `<input>_ndim`
/// parameters for the names it mentions.
pub fn cuda_kernel(
    name: &str,
    input_names: &[String],
    output_names: &[String],
    source: &str,
    header: &str,
    ensure_row_contiguous: bool,
    shared_memory: u32,
) -> Result<CudaKernel> {
    if output_names.is_empty() {
        return Err(Error::invalid(OP, "Must specify at least one output."));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(Error::invalid(
            OP,
            format!("The kernel name {name:?} must consist of ASCII letters, digits and underscores."),
        ));
    }
    let names =
        input_names.iter().map(|n| ("input", n.as_str())).chain(output_names.iter().map(|n| ("output", n.as_str())));
    check_names(OP, names)?;
    let shape_infos = input_names
        .iter()
        .map(|n| ShapeInfo {
            shape: source.contains(&format!("{n}_shape")),
            strides: source.contains(&format!("{n}_strides")),
            ndim: source.contains(&format!("{n}_ndim")),
        })
        .collect();
    Ok(CudaKernel {
        name: name.to_string(),
        input_names: input_names.to_vec(),
        output_names: output_names.to_vec(),
        source: source.to_string(),
        header: header.to_string(),
        ensure_row_contiguous,
        shared_memory,
        shape_infos,
    })
}

impl CudaKernel {
    /// The kernel's name and complete source for `inputs`, outputs of
    /// `output_dtypes` and the `template` arguments (what a call compiles;
    /// MLX prints it when called with `verbose`).
    pub fn source_for(
        &self,
        inputs: &[Array],
        output_dtypes: &[Dtype],
        template: &[(String, TemplateArg)],
    ) -> Result<(String, String)> {
        check_size(OP, "inputs", inputs.len(), self.input_names.len())?;
        check_size(OP, "output_dtypes", output_dtypes.len(), self.output_names.len())?;
        self.check_template_names(template)?;
        let mut kernel = format!("custom_kernel_{}", self.name);
        for (_, arg) in template {
            match arg {
                TemplateArg::Int(v) if *v < 0 => kernel += &format!("_n{}", v.unsigned_abs()),
                TemplateArg::Int(v) => kernel += &format!("_{v}"),
                TemplateArg::Bool(b) => kernel += if *b { "_t" } else { "_f" },
                TemplateArg::Dtype(d) => kernel += &format!("_{}", type_string(*d)),
            }
        }
        let mut src = String::with_capacity(self.header.len() + self.source.len() + 4096);
        src += PRELUDE_INCLUDE;
        src += "\n";
        src += &self.header;
        src += "\nnamespace ferrox::cu {\n\nnamespace cg = cooperative_groups;\n\n";
        src += &format!("extern \"C\" __global__ void {kernel}(\n");
        for ((name, x), info) in self.input_names.iter().zip(inputs).zip(self.layout_params(inputs)?) {
            src += &format!("    const {}* {name},\n", cuda_type(x.dtype()));
            if info.shape {
                src += &format!("    const __grid_constant__ Shape {name}_shape,\n");
            }
            if info.strides {
                src += &format!("    const __grid_constant__ Strides {name}_strides,\n");
            }
            if info.ndim {
                src += &format!("    const __grid_constant__ int {name}_ndim,\n");
            }
        }
        let last = self.output_names.len() - 1;
        for (i, (name, &dtype)) in self.output_names.iter().zip(output_dtypes).enumerate() {
            src += &format!("    {}* {name}{}", cuda_type(dtype), if i < last { ",\n" } else { ") {\n" });
        }
        if !template.is_empty() {
            for (name, arg) in template {
                src += &match arg {
                    TemplateArg::Int(v) => format!("  constexpr int {name} = {v};\n"),
                    TemplateArg::Bool(b) => format!("  constexpr bool {name} = {b};\n"),
                    TemplateArg::Dtype(d) => format!("  using {name} = {};\n", cuda_type(*d)),
                };
            }
            src += "\n";
        }
        src += &self.source;
        src += "\n}\n\n} // namespace ferrox::cu\n";
        Ok((kernel, src))
    }

    /// Checks that the template arguments' names are identifiers distinct
    /// from each other and from the parameters'.
    fn check_template_names(&self, template: &[(String, TemplateArg)]) -> Result<()> {
        let names = self
            .input_names
            .iter()
            .chain(&self.output_names)
            .map(|n| ("parameter", n.as_str()))
            .chain(template.iter().map(|(n, _)| ("template argument", n.as_str())));
        check_names(OP, names)
    }

    /// The layout parameters each input gets: those the body names, none
    /// for 0-d inputs. Inputs with them hold at most [`MAX_NDIM`] dimensions.
    fn layout_params(&self, inputs: &[Array]) -> Result<Vec<ShapeInfo>> {
        self.shape_infos
            .iter()
            .zip(inputs)
            .zip(&self.input_names)
            .map(|((&info, x), name)| {
                if x.ndim() == 0 {
                    return Ok(ShapeInfo::default());
                }
                if info != ShapeInfo::default() && x.ndim() > MAX_NDIM {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "Input {name:?} has {} dimensions; its layout parameters hold at most {MAX_NDIM}.",
                            x.ndim()
                        ),
                    ));
                }
                Ok(info)
            })
            .collect()
    }

    /// Runs the kernel on `inputs` (one per input name) with outputs of
    /// `output_shapes` and `output_dtypes` (one per output name): `grid`
    /// threads along x, y, z in blocks of `threadgroup`, with the `template`
    /// arguments, every output filled with `init_value` first when given
    /// (uninitialized otherwise). The current stream must be a GPU stream.
    #[allow(clippy::too_many_arguments)] // MLX's call signature
    pub fn call(
        &self,
        inputs: &[Array],
        output_shapes: &[Vec<usize>],
        output_dtypes: &[Dtype],
        grid: [u32; 3],
        threadgroup: [u32; 3],
        template: &[(String, TemplateArg)],
        init_value: Option<f32>,
    ) -> Result<Vec<Array>> {
        check_size(OP, "inputs", inputs.len(), self.input_names.len())?;
        check_size(OP, "output_shapes", output_shapes.len(), self.output_names.len())?;
        check_size(OP, "output_dtypes", output_dtypes.len(), self.output_names.len())?;
        check_launch(OP, grid, threadgroup)?;
        self.check_template_names(template)?;
        let shape_infos = self.layout_params(inputs)?;
        check_gpu_stream(OP)?;
        let (name, source) = self.source_for(inputs, output_dtypes, template)?;
        let launch = KernelLaunch {
            name,
            code: KernelCode::Source(source),
            grid,
            threadgroup,
            shape_infos,
            init_value,
            scalars: Vec::new(),
            shared_memory: self.shared_memory,
        };
        add_node(launch, self.ensure_row_contiguous, inputs, output_shapes, output_dtypes)
    }
}

/// Runs kernel `name` (its symbol: declare it `extern "C"` or give the
/// mangled name) of `compiled_source` (PTX, a cubin or a fatbin; MLX's
/// `fast.precompiled_cuda_kernel`). The kernel takes a pointer to each
/// input, a pointer to each output, then the `scalars` by value; launch
/// shape, shared memory and `init_value` are as in [`CudaKernel::call`].
/// `ensure_row_contiguous` copies strided inputs first; otherwise the
/// kernel reads each input's elements in its own layout, which it does
/// not get (pass what it needs as scalars).
#[allow(clippy::too_many_arguments)] // MLX's signature
pub fn precompiled_cuda_kernel(
    name: &str,
    compiled_source: &[u8],
    inputs: &[Array],
    output_shapes: &[Vec<usize>],
    output_dtypes: &[Dtype],
    scalars: &[ScalarArg],
    grid: [u32; 3],
    threadgroup: [u32; 3],
    shared_memory: u32,
    init_value: Option<f32>,
    ensure_row_contiguous: bool,
) -> Result<Vec<Array>> {
    if name.is_empty() || name.contains('\0') {
        return Err(Error::invalid(PRECOMPILED, format!("Invalid kernel name {name:?}.")));
    }
    if compiled_source.is_empty() {
        return Err(Error::invalid(PRECOMPILED, "The compiled source is empty."));
    }
    if output_shapes.is_empty() {
        return Err(Error::invalid(PRECOMPILED, "Must specify at least one output."));
    }
    check_size(PRECOMPILED, "output_dtypes", output_dtypes.len(), output_shapes.len())?;
    check_launch(PRECOMPILED, grid, threadgroup)?;
    check_gpu_stream(PRECOMPILED)?;
    let launch = KernelLaunch {
        name: name.to_string(),
        code: KernelCode::Binary(compiled_source.to_vec()),
        grid,
        threadgroup,
        shape_infos: vec![ShapeInfo::default(); inputs.len()],
        init_value,
        scalars: scalars.to_vec(),
        shared_memory,
    };
    add_node(launch, ensure_row_contiguous, inputs, output_shapes, output_dtypes)
}
