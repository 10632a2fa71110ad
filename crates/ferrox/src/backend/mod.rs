//! The compute-backend interface (Lucid's `IBackend` idea): one [`Backend`]
//! object per device, each implementing every kernel family, and the
//! [`dispatcher`] that routes an evaluated primitive to its device's backend.
//!
//! Backends receive storage by reference with a [`Layout`] per input and
//! return new storage; ops and primitives validate arguments beforehand, so a
//! backend never re-checks shapes or dtype rules.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod dispatcher;

use crate::device::Device;
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::Result;
use crate::shape::Layout;
use cpu::CpuStorage;

/// Where an array's bytes live; one variant per device kind, so the compiler
/// checks that every dispatch handles every device.
#[derive(Debug)]
pub enum Storage {
    /// Host memory.
    Cpu(CpuStorage),
    /// GPU memory.
    #[cfg(feature = "cuda")]
    Cuda(cuda::CudaStorage),
}

impl Storage {
    /// The element type stored.
    pub fn dtype(&self) -> Dtype {
        match self {
            Storage::Cpu(s) => s.dtype(),
            #[cfg(feature = "cuda")]
            Storage::Cuda(s) => s.dtype(),
        }
    }

    /// The device holding the bytes.
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::CPU,
            #[cfg(feature = "cuda")]
            Storage::Cuda(_) => Device::GPU,
        }
    }
}

/// Elementwise functions of one argument.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum UnaryOp {
    /// -x
    Negative,
    /// |x|
    Abs,
    /// e^x
    Exp,
    /// ln x
    Log,
    /// √x
    Sqrt,
    /// sin x
    Sin,
    /// cos x
    Cos,
    /// tanh x
    Tanh,
    /// 1 / (1 + e^-x)
    Sigmoid,
}

impl UnaryOp {
    /// The op's MLX name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Negative => "negative",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
        }
    }

    /// Whether the op computes in floating point (integer inputs are promoted
    /// to float32 by the op builder).
    pub fn is_transcendental(self) -> bool {
        !matches!(self, UnaryOp::Negative | UnaryOp::Abs)
    }
}

/// Elementwise functions of two arguments of one dtype.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BinaryOp {
    /// a + b
    Add,
    /// a - b
    Subtract,
    /// a * b
    Multiply,
    /// a / b
    Divide,
    /// a ** b
    Power,
    /// max(a, b), NaN-propagating
    Maximum,
    /// min(a, b), NaN-propagating
    Minimum,
    /// a == b (bool result)
    Equal,
    /// a != b (bool result)
    NotEqual,
    /// a < b (bool result)
    Less,
    /// a <= b (bool result)
    LessEqual,
    /// a > b (bool result)
    Greater,
    /// a >= b (bool result)
    GreaterEqual,
}

impl BinaryOp {
    /// The op's MLX name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Subtract => "subtract",
            BinaryOp::Multiply => "multiply",
            BinaryOp::Divide => "divide",
            BinaryOp::Power => "power",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Equal => "equal",
            BinaryOp::NotEqual => "not_equal",
            BinaryOp::Less => "less",
            BinaryOp::LessEqual => "less_equal",
            BinaryOp::Greater => "greater",
            BinaryOp::GreaterEqual => "greater_equal",
        }
    }

    /// Whether the result is bool regardless of the input dtype.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Equal
                | BinaryOp::NotEqual
                | BinaryOp::Less
                | BinaryOp::LessEqual
                | BinaryOp::Greater
                | BinaryOp::GreaterEqual
        )
    }
}

/// Reductions over a set of axes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ReduceOp {
    /// Sum (f16/bf16 accumulate in f32; integers wrap).
    Sum,
    /// Product.
    Prod,
    /// Largest element, NaN-propagating.
    Max,
    /// Smallest element, NaN-propagating.
    Min,
}

/// Index-of reductions along one axis; results are uint32.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ArgReduceOp {
    /// Index of the first largest element.
    ArgMax,
    /// Index of the first smallest element.
    ArgMin,
}

/// One device's kernels. Every method documents its inputs and output; all
/// outputs are new row-contiguous storage of the stated dtype and shape.
pub trait Backend: Send + Sync {
    /// The device this backend computes on.
    fn device(&self) -> Device;

    /// Copies host data onto this device.
    fn upload(&self, host: &CpuStorage, layout: &Layout) -> Result<Storage>;

    /// Copies the elements `layout` selects back to the host, row-contiguous.
    fn to_host(&self, storage: &Storage, layout: &Layout) -> Result<CpuStorage>;

    /// `n` copies of `value` cast to `dtype`.
    fn full(&self, value: Scalar, dtype: Dtype, n: usize) -> Result<Storage>;

    /// `start + i * step` for i in 0..n, computed in f64 and cast to `dtype`.
    fn arange(&self, start: f64, step: f64, n: usize, dtype: Dtype) -> Result<Storage>;

    /// An `n × m` matrix with ones on diagonal `k`.
    fn eye(&self, n: usize, m: usize, k: isize, dtype: Dtype) -> Result<Storage>;

    /// The elements `layout` selects, row-contiguous, cast to `dtype`
    /// (covers `astype` and making a copy contiguous).
    fn copy(&self, x: &Storage, layout: &Layout, dtype: Dtype) -> Result<Storage>;

    /// `op` applied elementwise; output dtype equals the input dtype.
    fn unary(&self, op: UnaryOp, x: &Storage, layout: &Layout) -> Result<Storage>;

    /// `op` applied elementwise to two inputs of one dtype whose layouts
    /// already share the output shape (broadcast strides are 0).
    /// Output dtype: bool for comparisons, else the input dtype.
    fn binary(&self, op: BinaryOp, a: &Storage, la: &Layout, b: &Storage, lb: &Layout) -> Result<Storage>;

    /// `cond ? x : y` elementwise; `cond` is bool, `x` and `y` share a dtype,
    /// all three layouts share the output shape.
    fn select(
        &self,
        cond: &Storage,
        lc: &Layout,
        x: &Storage,
        lx: &Layout,
        y: &Storage,
        ly: &Layout,
    ) -> Result<Storage>;

    /// Reduces `axes` (sorted, unique, non-empty) of `x`; the output keeps
    /// the reduced axes with extent 1. Output dtype: `out_dtype` (the input
    /// dtype, or int32 for a bool sum).
    fn reduce(&self, op: ReduceOp, x: &Storage, layout: &Layout, axes: &[usize], out_dtype: Dtype) -> Result<Storage>;

    /// Index of the max/min along `axis` (kept with extent 1); uint32 output.
    fn arg_reduce(&self, op: ArgReduceOp, x: &Storage, layout: &Layout, axis: usize) -> Result<Storage>;

    /// Batched matrix product: `a` is `[..., M, K]`, `b` is `[..., K, N]`,
    /// both already broadcast to the output's batch shape; one dtype.
    fn matmul(&self, a: &Storage, la: &Layout, b: &Storage, lb: &Layout) -> Result<Storage>;

    /// A row-contiguous copy of `base` whose elements selected by `window`
    /// (a layout over that contiguous copy) are replaced, in row-major order,
    /// by the elements of `update` (same dtype, shape `window.shape`).
    fn slice_update(
        &self,
        base: &Storage,
        lb: &Layout,
        update: &Storage,
        lu: &Layout,
        window: &Layout,
    ) -> Result<Storage>;

    /// Joins inputs of one dtype along `axis`; `out_shape` is the result's shape.
    fn concatenate(&self, inputs: &[(&Storage, &Layout)], axis: usize, out_shape: &[usize]) -> Result<Storage>;
}
