//! What a backend needs to run a user's kernel ([`crate::ops::custom_kernel`],
//! MLX's `fast.cuda_kernel` and `fast.precompiled_cuda_kernel`): its code,
//! its launch shape and the arguments it takes besides the arrays.

use std::fmt;

/// The first line of every generated kernel source: it stands for the
/// custom-kernel prelude (`cuda/kernels/custom_kernel.cuh`), which
/// [`expanded_source`] puts in its place before compiling.
pub const PRELUDE_INCLUDE: &str = "#include <ferrox/custom_kernel.cuh>";

/// The custom-kernel prelude.
const PRELUDE: &str = include_str!("cuda/kernels/custom_kernel.cuh");

/// The text NVRTC compiles for a generated source of kernel `name`: the
/// prelude in place of its first line ([`PRELUDE_INCLUDE`]), with `#line`
/// directives so that compiler messages name the prelude's lines
/// `ferrox/custom_kernel.cuh(N)` and the generated source's `<name>.cu(N)`
/// (N counting the lines of the text a `verbose` call prints).
pub fn expanded_source(name: &str, source: &str) -> String {
    match source.strip_prefix(PRELUDE_INCLUDE) {
        Some(rest) => format!("#line 1 \"ferrox/custom_kernel.cuh\"\n{PRELUDE}\n#line 2 \"{name}.cu\"{rest}"),
        None => source.to_string(),
    }
}

/// A user kernel's code.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum KernelCode {
    /// CUDA C++ source that NVRTC compiles after [`expanded_source`].
    Source(String),
    /// A compiled image the driver loads as is: PTX text, a cubin or a fatbin.
    Binary(Vec<u8>),
}

impl fmt::Debug for KernelCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelCode::Source(s) => write!(f, "Source({} bytes)", s.len()),
            KernelCode::Binary(b) => write!(f, "Binary({} bytes)", b.len()),
        }
    }
}

/// A scalar argument of a precompiled kernel, passed by value after the
/// outputs as the C type of its variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarArg {
    /// A C++ `bool`.
    Bool(bool),
    /// An `int`.
    Int(i32),
    /// A `float`.
    Float(f32),
}

/// Which layout parameters follow an input's pointer in the kernel's
/// signature, in this order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShapeInfo {
    /// The extents, as a `Shape` (MAX_NDIM int32 values by value).
    pub shape: bool,
    /// The strides in elements, as a `Strides` (MAX_NDIM int64 values).
    pub strides: bool,
    /// The number of dimensions, as an `int`.
    pub ndim: bool,
}

/// Entries of the `Shape` and `Strides` parameters (MLX's `MAX_NDIM`).
pub const MAX_NDIM: usize = 10;

/// A user kernel and how to launch it. The kernel takes, in order: for each
/// input a pointer to its first element followed by the layout parameters
/// its [`ShapeInfo`] asks for, a pointer to each output, then the scalars.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelLaunch {
    /// The kernel's symbol in the compiled module.
    pub name: String,
    /// The module holding it.
    pub code: KernelCode,
    /// Threads to launch along x, y and z (MLX counts the grid in threads,
    /// as Metal does; see [`launch_shape`]).
    pub grid: [u32; 3],
    /// Threads per block along x, y and z (capped by `grid`).
    pub threadgroup: [u32; 3],
    /// The layout parameters of each input.
    pub shape_infos: Vec<ShapeInfo>,
    /// The value every output starts with; `None` leaves them uninitialized.
    pub init_value: Option<f32>,
    /// The scalar arguments after the outputs.
    pub scalars: Vec<ScalarArg>,
    /// Bytes of dynamic shared memory per block.
    pub shared_memory: u32,
}

/// The blocks along x, y, z and the threads per block of a launch of `grid`
/// threads in blocks of `threadgroup` (MLX's rule): `ceil(grid /
/// threadgroup)` blocks of `min(threadgroup, grid)` threads along each axis.
pub fn launch_shape(grid: [u32; 3], threadgroup: [u32; 3]) -> ([u32; 3], [u32; 3]) {
    let blocks = [0, 1, 2].map(|i| grid[i].div_ceil(threadgroup[i].max(1)));
    let block = [0, 1, 2].map(|i| threadgroup[i].min(grid[i]));
    (blocks, block)
}
