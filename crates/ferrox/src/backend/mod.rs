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
mod custom_kernel;
pub mod dispatcher;
mod fast_op;
pub mod fused;
mod integer_range;
pub mod replay;
mod update_rule;

pub use custom_kernel::{
    expanded_source, launch_shape, KernelCode, KernelLaunch, ScalarArg, ShapeInfo, MAX_NDIM, PRELUDE_INCLUDE,
};
pub use fast_op::{AttentionMask, AttentionParams, FastOp, RopeParams};
pub use integer_range::{integer_range_element, integer_range_terms};
pub use update_rule::UpdateRule;

use crate::array::ArrayData;
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

/// How an elementwise op of one argument treats dtypes (the `kind` column
/// of [`unary_ops!`](crate::unary_ops)).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum UnaryKind {
    /// Every dtype, unchanged (complex64 gives its magnitude as float32).
    Magnitude,
    /// Every dtype but bool, unchanged.
    Signed,
    /// Every dtype, unchanged.
    Same,
    /// Every dtype but complex64, unchanged.
    Real,
    /// Inexact dtypes; bool and integers compute in float32.
    Float,
    /// Real floats; bool and integers compute in float32, complex64 is refused.
    RealFloat,
    /// Every dtype, bool result.
    Predicate,
    /// Bool and the integers, unchanged.
    Bits,
}

impl UnaryKind {
    /// The dtype the kernel computes in for an input of `dtype`, or `None`
    /// when the op does not accept it.
    pub fn compute_dtype(self, dtype: Dtype) -> Option<Dtype> {
        use UnaryKind::*;
        match self {
            Magnitude | Same | Predicate => Some(dtype),
            Signed => (dtype != Dtype::Bool).then_some(dtype),
            Real => (!dtype.is_complex()).then_some(dtype),
            Float => Some(dtype.at_least_float()),
            RealFloat => (!dtype.is_complex()).then(|| dtype.at_least_float()),
            Bits => (dtype == Dtype::Bool || dtype.is_integer()).then_some(dtype),
        }
    }

    /// The dtype the kernel writes for a compute dtype `dtype`.
    pub fn kernel_output(self, dtype: Dtype) -> Dtype {
        if self == UnaryKind::Predicate {
            Dtype::Bool
        } else {
            dtype
        }
    }

    /// Why an input dtype is refused, for the error message.
    pub fn refusal(self) -> &'static str {
        match self {
            UnaryKind::Signed => "The argument must not be boolean",
            UnaryKind::Real | UnaryKind::RealFloat => "Not supported for complex64",
            UnaryKind::Bits => "The argument must be an integer or boolean",
            _ => "Not supported for this dtype",
        }
    }
}

macro_rules! unary_kind {
    (magnitude) => {
        UnaryKind::Magnitude
    };
    (signed) => {
        UnaryKind::Signed
    };
    (same) => {
        UnaryKind::Same
    };
    (real) => {
        UnaryKind::Real
    };
    (float) => {
        UnaryKind::Float
    };
    (real_float) => {
        UnaryKind::RealFloat
    };
    (predicate) => {
        UnaryKind::Predicate
    };
    (bits) => {
        UnaryKind::Bits
    };
}

macro_rules! define_unary_op {
    ($($name:ident: $Var:ident, $kind:ident, $py:ident, $doc:literal, |$x:ident, $y:ident| $d:expr;)*) => {
        /// Elementwise functions of one argument: the rows of
        /// [`unary_ops!`](crate::unary_ops).
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
        pub enum UnaryOp {
            $(#[doc = $doc] $Var,)*
        }

        impl UnaryOp {
            /// Every op, in table order.
            pub const ALL: &'static [UnaryOp] = &[$(UnaryOp::$Var),*];

            /// The op's MLX name.
            pub fn name(self) -> &'static str {
                match self {
                    $(UnaryOp::$Var => stringify!($name),)*
                }
            }

            /// How the op treats dtypes.
            pub fn kind(self) -> UnaryKind {
                match self {
                    $(UnaryOp::$Var => unary_kind!($kind),)*
                }
            }

            /// The name of the op's CUDA device functor (`unary_ops.cuh`).
            pub fn functor(self) -> &'static str {
                match self {
                    $(UnaryOp::$Var => concat!("Op", stringify!($Var)),)*
                }
            }
        }
    };
}

crate::unary_ops!(define_unary_op);

/// How an elementwise op of two arguments treats dtypes (the `kind` column
/// of [`binary_ops!`](crate::binary_ops)). Operands are first promoted to
/// one dtype with MLX's table.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BinaryKind {
    /// Every dtype, unchanged.
    Arith,
    /// Every dtype but complex64, unchanged.
    NoComplex,
    /// Inexact dtypes; bool and integers compute in float32.
    Float,
    /// Real floats; bool and integers compute in float32, complex64 is refused.
    RealFloat,
    /// Every dtype, bool result.
    Compare,
    /// Bool and the integers, unchanged.
    Bits,
    /// The integers; bool computes as uint8.
    Shift,
}

impl BinaryKind {
    /// The dtype the kernel computes in for promoted operands of `dtype`,
    /// or `None` when the op does not accept it.
    pub fn compute_dtype(self, dtype: Dtype) -> Option<Dtype> {
        use BinaryKind::*;
        match self {
            Arith | Compare => Some(dtype),
            NoComplex => (!dtype.is_complex()).then_some(dtype),
            Float => Some(dtype.at_least_float()),
            RealFloat => (!dtype.is_complex()).then(|| dtype.at_least_float()),
            Bits => (dtype == Dtype::Bool || dtype.is_integer()).then_some(dtype),
            Shift if dtype == Dtype::Bool => Some(Dtype::U8),
            Shift => dtype.is_integer().then_some(dtype),
        }
    }

    /// The dtype the kernel writes for a compute dtype `dtype`.
    pub fn kernel_output(self, dtype: Dtype) -> Dtype {
        if self == BinaryKind::Compare {
            Dtype::Bool
        } else {
            dtype
        }
    }

    /// Why an operand dtype is refused, for the error message.
    pub fn refusal(self) -> &'static str {
        match self {
            BinaryKind::NoComplex | BinaryKind::RealFloat => "Complex type not supported",
            BinaryKind::Bits | BinaryKind::Shift => "Arrays must have integer or boolean type",
            _ => "Not supported for this dtype",
        }
    }
}

macro_rules! binary_kind {
    (arith) => {
        BinaryKind::Arith
    };
    (no_complex) => {
        BinaryKind::NoComplex
    };
    (float) => {
        BinaryKind::Float
    };
    (real_float) => {
        BinaryKind::RealFloat
    };
    (compare) => {
        BinaryKind::Compare
    };
    (bits) => {
        BinaryKind::Bits
    };
    (shift) => {
        BinaryKind::Shift
    };
}

macro_rules! define_binary_op {
    ($($name:ident: $Var:ident, $kind:ident, $doc:literal, |$a:ident, $b:ident, $out:ident| $d:expr;)*) => {
        /// Elementwise functions of two arguments of one dtype: the rows of
        /// [`binary_ops!`](crate::binary_ops).
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
        pub enum BinaryOp {
            $(#[doc = $doc] $Var,)*
        }

        impl BinaryOp {
            /// Every op, in table order.
            pub const ALL: &'static [BinaryOp] = &[$(BinaryOp::$Var),*];

            /// The op's MLX name.
            pub fn name(self) -> &'static str {
                match self {
                    $(BinaryOp::$Var => stringify!($name),)*
                }
            }

            /// How the op treats dtypes.
            pub fn kind(self) -> BinaryKind {
                match self {
                    $(BinaryOp::$Var => binary_kind!($kind),)*
                }
            }

            /// The name of the op's CUDA device functor (`binary_ops.cuh`).
            pub fn functor(self) -> &'static str {
                match self {
                    $(BinaryOp::$Var => concat!("Op", stringify!($Var)),)*
                }
            }
        }
    };
}

crate::binary_ops!(define_binary_op);

impl BinaryOp {
    /// Whether the result is bool regardless of the input dtype.
    pub fn is_comparison(self) -> bool {
        self.kind() == BinaryKind::Compare
    }
}

/// Reductions over a set of axes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
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

/// Cumulative (scan) ops along one axis: `cumsum`, `cumprod`, `cummax`,
/// `cummin`, `logcumsumexp`. Each combines the running result with the
/// next element by the op's element function (`element/`), so values and
/// NaN handling are those of `add`, `multiply`, `maximum`, `minimum` and
/// `logaddexp`; an exclusive scan starts from the op's identity.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum ScanOp {
    /// Running sum (integers wrap, bool is or); identity 0.
    Sum,
    /// Running product (bool is and); identity 1.
    Prod,
    /// Running maximum, NaN-propagating; identity the dtype's lowest value
    /// (-inf for floats, `(-inf, -inf)` for complex64, false for bool).
    Max,
    /// Running minimum, NaN-propagating; identity the dtype's highest value.
    Min,
    /// Running `logaddexp` (inexact dtypes only); identity -inf (`-inf + 0i`).
    LogAddExp,
}

impl ScanOp {
    /// Every scan op.
    pub const ALL: [ScanOp; 5] = [ScanOp::Sum, ScanOp::Prod, ScanOp::Max, ScanOp::Min, ScanOp::LogAddExp];

    /// The op's MLX name.
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "cumsum",
            ScanOp::Prod => "cumprod",
            ScanOp::Max => "cummax",
            ScanOp::Min => "cummin",
            ScanOp::LogAddExp => "logcumsumexp",
        }
    }
}

/// The discrete Fourier transforms of `fft`, one per (direction, real)
/// pair as MLX's `FFT` primitive has them. Transforms are unnormalized:
/// the forward transform is `X[k] = sum x[j] e^(-2 pi i jk/n)`, the inverse
/// the same sum with `e^(+2 pi i jk/n)` and no `1/n` (the op builders fold
/// normalization into the output scale).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum FftOp {
    /// complex64 to complex64, forward.
    Forward,
    /// complex64 to complex64, inverse.
    Inverse,
    /// float32 to complex64, forward: the last transformed axis keeps its
    /// `n / 2 + 1` non-negative frequencies.
    RealForward,
    /// complex64 to float32, inverse: the last transformed axis holds the
    /// `n / 2 + 1` non-negative frequencies of a Hermitian spectrum whose
    /// real signal has length `n`.
    RealInverse,
}

impl FftOp {
    /// Whether the transform is an inverse one.
    pub fn is_inverse(self) -> bool {
        matches!(self, FftOp::Inverse | FftOp::RealInverse)
    }

    /// Whether one side of the transform is real.
    pub fn is_real(self) -> bool {
        matches!(self, FftOp::RealForward | FftOp::RealInverse)
    }

    /// The dtype the transform reads.
    pub fn input_dtype(self) -> Dtype {
        if self == FftOp::RealForward {
            Dtype::F32
        } else {
            Dtype::C64
        }
    }

    /// The dtype the transform writes.
    pub fn output_dtype(self) -> Dtype {
        if self == FftOp::RealInverse {
            Dtype::F32
        } else {
            Dtype::C64
        }
    }
}

/// The dense linear algebra routines of `linalg`, each over the last two
/// axes of its inputs and batched over the leading ones (which the op
/// builders make equal). float32 and float64; outputs keep the input dtype
/// except where noted.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum LinalgOp {
    /// `A = L L^T` of a symmetric positive definite `A` (reading its lower
    /// triangle, or its upper one when `upper`): `L`, or `U = L^T` when `upper`.
    Cholesky {
        /// Return (and read) the upper factor.
        upper: bool,
    },
    /// The inverse of a square `A` (LU with partial pivoting).
    Inverse,
    /// The inverse of the lower (or `upper`) triangle of `A`.
    TriangularInverse {
        /// Invert the upper triangle.
        upper: bool,
    },
    /// `X` with `A X = B`: inputs `A [.., n, n]` and `B [.., n, k]`.
    Solve,
    /// `X` with `T X = B` for the lower (or `upper`) triangle `T` of `A`.
    SolveTriangular {
        /// Use the upper triangle.
        upper: bool,
    },
    /// The reduced QR factorization `A [m, n] = Q [m, k] R [k, n]`, `k = min(m, n)`.
    Qr,
    /// The singular value decomposition: `U [m, m]`, `S [k]` (descending,
    /// non-negative), `Vt [n, n]`; only `S` without `compute_uv`.
    Svd {
        /// Whether to return `U` and `Vt`.
        compute_uv: bool,
    },
    /// The eigenvalues (ascending) and, with `vectors`, the eigenvectors
    /// (columns) of a symmetric `A`, reading its lower (or `upper`) triangle.
    Eigh {
        /// Read the upper triangle.
        upper: bool,
        /// Whether to return the eigenvectors.
        vectors: bool,
    },
    /// The eigenvalues and, with `vectors`, the (unit-norm) eigenvectors of
    /// a general square `A`, both complex64.
    Eig {
        /// Whether to return the eigenvectors.
        vectors: bool,
    },
    /// The LU factorization with partial pivoting of `A [m, n]`: the packed
    /// factors (`L` strictly below the diagonal, unit diagonal implied, `U`
    /// on and above), LAPACK's pivots (uint32, 0-based: row `i` was swapped
    /// with row `pivots[i]`, length `min(m, n)`), and the row permutation
    /// `p` (uint32, length `m`) with `A = (L U)[p]`.
    LuFactor,
    /// The Bunch–Kaufman `L D T(L)` factorization of a symmetric `A`, read
    /// from its lower triangle, in LAPACK's `sytrf` form (PyTorch's
    /// `ldl_factor`): the packed factors (`D`'s 1x1 and 2x2 blocks on and
    /// next to the diagonal, the multipliers below, zeros above) and the
    /// pivots (int32, 1-based, both entries of a 2x2 block negative).
    LdlFactor,
}

impl LinalgOp {
    /// The name of the op in error messages.
    pub fn name(self) -> &'static str {
        match self {
            LinalgOp::Cholesky { .. } => "linalg::cholesky",
            LinalgOp::Inverse => "linalg::inv",
            LinalgOp::TriangularInverse { .. } => "linalg::tri_inv",
            LinalgOp::Solve => "linalg::solve",
            LinalgOp::SolveTriangular { .. } => "linalg::solve_triangular",
            LinalgOp::Qr => "linalg::qr",
            LinalgOp::Svd { .. } => "linalg::svd",
            LinalgOp::Eigh { .. } => "linalg::eigh",
            LinalgOp::Eig { .. } => "linalg::eig",
            LinalgOp::LuFactor => "linalg::lu_factor",
            LinalgOp::LdlFactor => "linalg::ldl_factor",
        }
    }

    /// The shapes and dtypes of the outputs for inputs of `shapes` and
    /// `dtype` (which the op builders check); singular values and symmetric
    /// eigenvalues of a complex64 matrix are float32.
    pub fn outputs(self, shapes: &[&[usize]], dtype: Dtype) -> Vec<(Vec<usize>, Dtype)> {
        let real = if dtype == Dtype::C64 { Dtype::F32 } else { dtype };
        let a = shapes[0];
        let nd = a.len();
        let (batch, m, n) = (&a[..nd - 2], a[nd - 2], a[nd - 1]);
        let k = m.min(n);
        let shaped = |tail: &[usize]| -> Vec<usize> { batch.iter().chain(tail).copied().collect() };
        match self {
            LinalgOp::Cholesky { .. } | LinalgOp::Inverse | LinalgOp::TriangularInverse { .. } => {
                vec![(a.to_vec(), dtype)]
            }
            LinalgOp::Solve | LinalgOp::SolveTriangular { .. } => vec![(shapes[1].to_vec(), dtype)],
            LinalgOp::Qr => vec![(shaped(&[m, k]), dtype), (shaped(&[k, n]), dtype)],
            LinalgOp::Svd { compute_uv: false } => vec![(shaped(&[k]), real)],
            LinalgOp::Svd { compute_uv: true } => {
                vec![(shaped(&[m, m]), dtype), (shaped(&[k]), real), (shaped(&[n, n]), dtype)]
            }
            LinalgOp::Eigh { vectors: false, .. } => vec![(shaped(&[n]), real)],
            LinalgOp::Eigh { vectors: true, .. } => vec![(shaped(&[n]), real), (a.to_vec(), dtype)],
            LinalgOp::Eig { vectors: false } => vec![(shaped(&[n]), Dtype::C64)],
            LinalgOp::Eig { vectors: true } => vec![(shaped(&[n]), Dtype::C64), (a.to_vec(), Dtype::C64)],
            LinalgOp::LuFactor => {
                vec![(a.to_vec(), dtype), (shaped(&[k]), Dtype::U32), (shaped(&[m]), Dtype::U32)]
            }
            LinalgOp::LdlFactor => vec![(a.to_vec(), dtype), (shaped(&[n]), Dtype::I32)],
        }
    }
}

/// Index-of reductions along one axis; results are uint32.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum ArgReduceOp {
    /// Index of the first largest element.
    ArgMax,
    /// Index of the first smallest element.
    ArgMin,
}

/// How [`Backend::scatter`] combines an update with the element it lands on.
/// Updates landing on one element combine in an unspecified order (for
/// `Assign`, one of them wins).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum ScatterOp {
    /// Replaces the element (MLX's `scatter`).
    Assign,
    /// Adds to it (`scatter_add`; bool is or).
    Sum,
    /// Multiplies it (`scatter_prod`; bool is and).
    Prod,
    /// Keeps the larger, NaN-propagating (`scatter_max`).
    Max,
    /// Keeps the smaller, NaN-propagating (`scatter_min`).
    Min,
}

impl ScatterOp {
    /// Every scatter op.
    pub const ALL: [ScatterOp; 5] =
        [ScatterOp::Assign, ScatterOp::Sum, ScatterOp::Prod, ScatterOp::Max, ScatterOp::Min];

    /// The op's MLX name.
    pub fn name(self) -> &'static str {
        match self {
            ScatterOp::Assign => "scatter",
            ScatterOp::Sum => "scatter_add",
            ScatterOp::Prod => "scatter_prod",
            ScatterOp::Max => "scatter_max",
            ScatterOp::Min => "scatter_min",
        }
    }
}

/// What the random kernels make of MLX's generator (threefry2x32 keys laid
/// out as MLX's `RandomBits`, see `cpu/random.rs`): its raw bits, or one of
/// the samplers fused with it so that a sample costs one pass over the
/// output. Each computes exactly MLX's sequence of float32 ops.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum RandomOp {
    /// The generator's bytes as uint8, uint16 or uint32 (MLX's `bits`).
    Bits,
    /// MLX's `uniform` on [0, 1) in float32, float16 or bfloat16.
    Uniform,
    /// MLX's float32 `erfinv` of its uniform on (-1, 1), cast to a float
    /// dtype (`normal` before its scale); complex64 takes the real and the
    /// imaginary part from consecutive words (MLX's complex normal).
    Erfinv,
    /// MLX's standard normal: `sqrt(2)` times [`RandomOp::Erfinv`], in a
    /// real float dtype.
    Normal,
}

impl RandomOp {
    /// The primitive's name (MLX's `RandomBits` for raw bits).
    pub fn name(self) -> &'static str {
        match self {
            RandomOp::Bits => "RandomBits",
            RandomOp::Uniform => "RandomUniform",
            RandomOp::Erfinv => "RandomErfinv",
            RandomOp::Normal => "RandomNormal",
        }
    }
}

/// [`Backend::matmul_bias`] as two backend calls: the product, then an add
/// of the bias broadcast over its rows.
pub(crate) fn product_then_bias<B: Backend + ?Sized>(
    backend: &B,
    a: &Storage,
    la: &Layout,
    b: &Storage,
    lb: &Layout,
    bias: &Storage,
    lbias: &Layout,
) -> Result<Storage> {
    let product = backend.matmul(a, la, b, lb)?;
    let nd = la.ndim();
    let mut shape = la.shape[..nd - 1].to_vec();
    shape.push(lb.shape[nd - 1]);
    let spread = lbias.broadcast_to(&shape).ok_or_else(|| {
        crate::error::Error::invalid(
            "addmm",
            format!("a bias of shape {:?} for a product of shape {shape:?}", lbias.shape),
        )
    })?;
    backend.binary(BinaryOp::Add, &product, &Layout::contiguous(&shape), bias, &spread)
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

    /// The elements `layout` selects, row-contiguous, with their bytes
    /// read as `dtype` (MLX's `view`; the caller checks that the byte
    /// count divides; a bool result holds 0 or 1).
    fn bitcast(&self, x: &Storage, layout: &Layout, dtype: Dtype) -> Result<Storage>;

    /// `op` applied elementwise; output dtype equals the input dtype.
    fn unary(&self, op: UnaryOp, x: &Storage, layout: &Layout) -> Result<Storage>;

    /// `op` applied elementwise to two inputs of one dtype whose layouts
    /// already share the output shape (broadcast strides are 0).
    /// Output dtype: bool for comparisons, else the input dtype.
    fn binary(&self, op: BinaryOp, a: &Storage, la: &Layout, b: &Storage, lb: &Layout) -> Result<Storage>;

    /// Whether `x`'s buffer may be overwritten by this backend's in-place
    /// kernels once nothing else holds it (MLX's buffer donation): memory
    /// ferrox owns, with no work of another stream pending on it.
    fn can_overwrite(&self, x: &Storage) -> bool;

    /// [`Backend::unary`] written over `x`, a buffer [`Backend::can_overwrite`]
    /// allows and nothing else holds: `layout` is row-contiguous and the op
    /// keeps the dtype. The output is `layout`'s elements of `x`.
    fn unary_in_place(&self, op: UnaryOp, x: &mut Storage, layout: &Layout) -> Result<()>;

    /// [`Backend::binary`] written over one operand, `donor` (as for
    /// [`Backend::unary_in_place`], `ld` with the output's shape); `other`
    /// is read through `lo`, and `donor_is_lhs` says which side `donor` is.
    fn binary_in_place(
        &self,
        op: BinaryOp,
        donor: &mut Storage,
        ld: &Layout,
        other: &Storage,
        lo: &Layout,
        donor_is_lhs: bool,
    ) -> Result<()>;

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

    /// Scans `op` along `axis` of `x`: element i of a line along the axis
    /// combines the elements before it (in the scan direction: from the end
    /// when `reverse`) and, when `inclusive`, itself; an exclusive scan's
    /// first element is the op's identity. Same shape and dtype as `x`
    /// (the op builder casts first; `LogAddExp` gets inexact dtypes only).
    fn scan(
        &self,
        op: ScanOp,
        x: &Storage,
        layout: &Layout,
        axis: usize,
        reverse: bool,
        inclusive: bool,
    ) -> Result<Storage>;

    /// The unnormalized discrete Fourier transform `op` of `x` over `axes`
    /// (distinct, non-empty), times `scale`, as a row-contiguous array of
    /// `out_shape`. `x` has `op`'s input dtype; its shape equals
    /// `out_shape` except along the last of `axes` for a real transform,
    /// where a real signal of length `n` has `n / 2 + 1` frequencies
    /// (`RealInverse` reads the imaginary parts of the zero and, for even
    /// `n`, the `n / 2` frequency as zero, as NumPy and cuFFT do). Transform
    /// lengths are at least 1.
    fn fft(
        &self,
        op: FftOp,
        x: &Storage,
        layout: &Layout,
        axes: &[usize],
        scale: f64,
        out_shape: &[usize],
    ) -> Result<Storage>;

    /// The linear algebra routine `op` over the last two axes of `inputs`
    /// (float32 or float64, batch axes equal), with the outputs
    /// [`LinalgOp::outputs`] describes, row-contiguous. A failure that
    /// leaves no answer (a singular matrix to invert, a matrix that is not
    /// positive definite) is an error naming the op.
    fn linalg(&self, op: LinalgOp, inputs: &[(&Storage, &Layout)]) -> Result<Vec<Storage>>;

    /// Sorts every line of `x` along `axis` in ascending order, stably
    /// (equal elements keep their order): NaNs last (a complex64 number is
    /// NaN when either part is), complex64 lexicographically (real part,
    /// then imaginary), false before true, -0.0 equal to 0.0 (MLX's
    /// order). Same shape as `x`; the sorted values in `x`'s dtype, or with
    /// `arg` the uint32 positions along the axis that sort each line.
    fn sort(&self, x: &Storage, layout: &Layout, axis: usize, arg: bool) -> Result<Storage>;

    /// For each element of `values` (any shape and layout), the number of
    /// elements of the 1-D `sorted` (ascending in the order of
    /// [`Backend::sort`], at most `u32::MAX` elements) that come before it in
    /// that order (`right`: that do not come after it): its insertion point
    /// on the left or right side. Both share a dtype; uint32 output with
    /// the shape of `values`.
    fn search_sorted(
        &self,
        sorted: &Storage,
        ls: &Layout,
        values: &Storage,
        lv: &Layout,
        right: bool,
    ) -> Result<Storage>;

    /// Batched matrix product: `a` is `[..., M, K]`, `b` is `[..., K, N]`,
    /// both already broadcast to the output's batch shape; one dtype.
    fn matmul(&self, a: &Storage, la: &Layout, b: &Storage, lb: &Layout) -> Result<Storage>;

    /// [`Backend::matmul`] plus `bias` (`[N]`, the same dtype) added to
    /// every row of the product: a linear layer. By default the product,
    /// then an add; a backend may fuse them.
    fn matmul_bias(
        &self,
        a: &Storage,
        la: &Layout,
        b: &Storage,
        lb: &Layout,
        bias: &Storage,
        lbias: &Layout,
    ) -> Result<Storage> {
        product_then_bias(self, a, la, b, lb, bias, lbias)
    }

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

    /// MLX's `gather`: `indices` are integer arrays whose layouts share one
    /// shape `I` (already broadcast), one per axis of `axes`; output element
    /// `(i, j)` (row-major over `I ++ slice_sizes`) is the element of `x` at
    /// position `j` of the slice of extents `slice_sizes` that starts at
    /// `indices[k][i]` along `axes[k]` and at 0 along the other axes.
    /// Negative indices count from the end. Out-of-range starts are an
    /// error on the CPU; the GPU reads zeros for them.
    fn gather(
        &self,
        x: &Storage,
        lx: &Layout,
        indices: &[(&Storage, &Layout)],
        axes: &[usize],
        slice_sizes: &[usize],
    ) -> Result<Storage>;

    /// MLX's `scatter`: a row-contiguous copy of `base` into which `updates`
    /// (one dtype with `base`, shape `I ++ slice shape`, where the slice
    /// shape has `base`'s rank) are combined by `op` at the slices
    /// [`Backend::gather`] would read with the same `indices` and `axes`.
    /// Out-of-range starts are an error on the CPU; the GPU drops them.
    #[allow(clippy::too_many_arguments)] // the operands of MLX's Scatter, each with its layout
    fn scatter(
        &self,
        op: ScatterOp,
        base: &Storage,
        lb: &Layout,
        indices: &[(&Storage, &Layout)],
        axes: &[usize],
        updates: &Storage,
        lu: &Layout,
    ) -> Result<Storage>;

    /// Joins inputs of one dtype along `axis`; `out_shape` is the result's shape.
    fn concatenate(&self, inputs: &[(&Storage, &Layout)], axis: usize, out_shape: &[usize]) -> Result<Storage>;

    /// Random numbers from MLX's generator: `keys` holds `K` uint32 key
    /// pairs (shape `[..., 2]`, any layout; the leading axes come from
    /// vmap); the output has `n` elements of `dtype`, `n / K` per key in
    /// key order, each key's in MLX's layout. `op` picks raw bits (uint8,
    /// uint16, uint32) or a fused sampler (see [`RandomOp`] for its dtypes).
    fn random(&self, op: RandomOp, keys: &Storage, keys_layout: &Layout, n: usize, dtype: Dtype) -> Result<Storage>;

    /// One fused optimizer step (see [`UpdateRule`]): `inputs` are the
    /// parameter, its gradient and the rule's states, all of one real float
    /// dtype and row-contiguous (from their layouts' offsets) with `n`
    /// elements each; `lr` and `t` are float32 scalars (the learning rate
    /// and the step count). Returns the new parameter and states.
    fn optimizer_update(
        &self,
        rule: &UpdateRule,
        inputs: &[(&Storage, &Layout)],
        lr: (&Storage, &Layout),
        t: (&Storage, &Layout),
        n: usize,
    ) -> Result<Vec<Storage>>;

    /// One fused "fast" kernel ([`FastOp`], whose variants list the inputs
    /// and outputs): normalizations, rotary embeddings, attention and their
    /// derivatives.
    fn fast(&self, op: &FastOp, inputs: &[(&Storage, &Layout)]) -> Result<Vec<Storage>>;

    /// Runs a user's kernel ([`KernelLaunch`]) on `inputs` (any layout:
    /// the kernel gets each one's first element and, as asked, its shape
    /// and strides) and returns one new row-contiguous output per
    /// `(dtype, element count)` of `outputs`. Only the GPU runs them.
    fn custom_kernel(
        &self,
        kernel: &KernelLaunch,
        inputs: &[(&Storage, &Layout)],
        outputs: &[(Dtype, usize)],
    ) -> Result<Vec<Storage>> {
        let _ = (kernel, inputs, outputs);
        Err(crate::error::Error::Device { op: "custom_kernel", msg: "Custom kernels only run on the GPU.".into() })
    }

    /// A convolution ([`ConvParams`]): `x` is `(N, in..., C_in)` and `w`
    /// `(C_out, k..., C_in / groups)`, both of one real float dtype
    /// (float16 and bfloat16 compute in float32) under any layouts; the
    /// output `(N, out..., C_out)` has their dtype.
    fn conv(&self, params: &ConvParams, x: &Storage, lx: &Layout, w: &Storage, lw: &Layout) -> Result<Storage>;

    /// Runs a fused elementwise program (`compile`'s fusion, see
    /// [`fused::FusedProgram`]) in one pass: `inputs` are read through
    /// layouts already broadcast to `shape`; one row-contiguous storage of
    /// `shape` per program output.
    fn fused(
        &self,
        program: &fused::FusedProgram,
        inputs: &[(&Storage, Layout)],
        shape: &[usize],
    ) -> Result<Vec<Storage>>;

    /// [`Backend::fused`] with input `inputs[i]` donated (MLX's buffer
    /// donation): `donor` is that input's buffer, which
    /// [`Backend::can_overwrite`] allows and nothing else holds, read
    /// through `inputs[i].1` (row-contiguous over `shape`, of output
    /// `output`'s dtype), and `inputs[i].0` is `None`. Output `output` may
    /// be computed over `donor`: its entry in the returned outputs is then
    /// `None`. The default computes every output afresh.
    fn fused_donated(
        &self,
        program: &fused::FusedProgram,
        inputs: &[(Option<&Storage>, Layout)],
        donor: &mut Storage,
        output: usize,
        shape: &[usize],
    ) -> Result<Vec<Option<Storage>>> {
        let _ = output;
        fused_without_donation(self, program, inputs, donor, shape)
    }

    /// Runs a fused elementwise program with one output (of `shape`) and
    /// reduces that output with `op` over `axes` (sorted, unique) into
    /// `out_dtype`: what [`Backend::fused`] then [`Backend::reduce`] give,
    /// bit for bit. Backends that can fold the values as the program makes
    /// them, without writing them out, override this default (which does
    /// exactly that pair of calls).
    fn fused_reduce(
        &self,
        program: &fused::FusedProgram,
        inputs: &[(&Storage, Layout)],
        shape: &[usize],
        op: ReduceOp,
        axes: &[usize],
        out_dtype: Dtype,
    ) -> Result<Storage> {
        fused_then_reduce(self, program, inputs, shape, op, axes, out_dtype)
    }

    /// Runs a compiled graph through its replay slot: `run` computes the
    /// outputs from `inputs` with this backend's kernels. Backends that can
    /// record the launches (CUDA graphs) replay the recording on later
    /// calls; the others call `run`.
    fn replay(
        &self,
        slot: &replay::ReplaySlot,
        inputs: &[ArrayData],
        run: &replay::GraphRun,
    ) -> Result<Vec<ArrayData>> {
        let _ = slot;
        run(inputs)
    }
}

/// [`Backend::fused_donated`] ignoring the donation: every output computed
/// afresh by [`Backend::fused`], `donor` read as the missing input.
pub fn fused_without_donation<B: Backend + ?Sized>(
    backend: &B,
    program: &fused::FusedProgram,
    inputs: &[(Option<&Storage>, Layout)],
    donor: &Storage,
    shape: &[usize],
) -> Result<Vec<Option<Storage>>> {
    let inputs: Vec<(&Storage, Layout)> = inputs.iter().map(|(s, l)| (s.unwrap_or(donor), l.clone())).collect();
    Ok(backend.fused(program, &inputs, shape)?.into_iter().map(Some).collect())
}

/// [`Backend::fused_reduce`] as two passes: the program's one output
/// written out by [`Backend::fused`], then reduced by [`Backend::reduce`].
/// The trait's default, and the fallback of backends that fold only some
/// reductions themselves.
pub fn fused_then_reduce<B: Backend + ?Sized>(
    backend: &B,
    program: &fused::FusedProgram,
    inputs: &[(&Storage, Layout)],
    shape: &[usize],
    op: ReduceOp,
    axes: &[usize],
    out_dtype: Dtype,
) -> Result<Storage> {
    let values = backend.fused(program, inputs, shape)?.pop().expect("the program has one output");
    backend.reduce(op, &values, &Layout::contiguous(shape), axes, out_dtype)
}

mod conv_params;
pub use conv_params::{dilated, ConvParams};
