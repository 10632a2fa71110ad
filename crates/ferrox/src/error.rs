//! Typed errors. Each carries the op that raised it; messages follow MLX's
//! `[op] problem` form. The Python layer maps kinds to exception classes.

use crate::dtype::Dtype;

/// Every failure ferrox reports.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
pub enum Error {
    /// Two shapes could not be broadcast together.
    #[error("[{op}] Shapes {} and {} cannot be broadcast.", fmt_shape(.lhs), fmt_shape(.rhs))]
    Broadcast { op: &'static str, lhs: Vec<usize>, rhs: Vec<usize> },
    /// Shapes that must agree do not.
    #[error("[{op}] {msg}")]
    ShapeMismatch { op: &'static str, msg: String },
    /// An axis outside `[-ndim, ndim)`.
    #[error("[{op}] Axis {axis} is out of bounds for array with {ndim} dimensions.")]
    AxisOutOfRange { op: &'static str, axis: isize, ndim: usize },
    /// A dtype the op does not accept.
    #[error("[{op}] {detail} (got {dtype}).")]
    UnsupportedDtype { op: &'static str, dtype: Dtype, detail: &'static str },
    /// An integer index outside an axis.
    #[error("[{op}] Index {index} is out of bounds for axis {axis} with size {size}.")]
    IndexOutOfRange { op: &'static str, index: i64, axis: usize, size: usize },
    /// An axis outside the array, in the op's own words (MLX's message for
    /// `moveaxis`, `sort`, `cumsum`, ...); Python raises it as
    /// `AxisOutOfRange` is raised.
    #[error("[{op}] {msg}")]
    AxisArgument { op: &'static str, msg: String },
    /// An index argument out of range where MLX raises IndexError.
    #[error("[{op}] {msg}")]
    IndexArgument { op: &'static str, msg: String },
    /// More integer/slice indices than the array has dimensions.
    #[error("[{op}] Too many indices ({given}) for array with {ndim} dimensions.")]
    TooManyIndices { op: &'static str, given: usize, ndim: usize },
    /// An argument of the wrong kind (maps to Python's TypeError).
    #[error("[{op}] {msg}")]
    InvalidType { op: &'static str, msg: String },
    /// Any other invalid argument.
    #[error("[{op}] {msg}")]
    InvalidArgument { op: &'static str, msg: String },
    /// A device or backend problem (no GPU, a failed driver call, ...).
    #[error("[{op}] {msg}")]
    Device { op: &'static str, msg: String },
    /// Memory that could not be had: the system refused an allocation, or it
    /// would exceed the device's memory or the memory limit (Python's MemoryError).
    #[error("[{op}] {msg}")]
    OutOfMemory { op: &'static str, msg: String },
    /// Work that cannot run on this build or machine (a Metal kernel
    /// without Metal): Python's RuntimeError, as MLX raises it.
    #[error("[{op}] {msg}")]
    Runtime { op: &'static str, msg: String },
    /// The operating system refused to open, read or write a file
    /// (Python's OSError, or the subclass matching `kind`).
    #[error("[{op}] {path}: {msg}")]
    File { op: &'static str, path: String, kind: std::io::ErrorKind, msg: String },
    /// A file whose contents are not a valid file of its format: truncated,
    /// corrupt, or describing data it does not hold.
    #[error("[{op}] {file}: {msg}")]
    CorruptFile { op: &'static str, file: String, msg: String },
}

/// `Result` with ferrox's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(op: &'static str, msg: impl Into<String>) -> Error {
        Error::InvalidArgument { op, msg: msg.into() }
    }

    /// The error for a shape whose byte size does not fit in memory's
    /// address range (NumPy's "array is too big").
    pub fn too_big(op: &'static str, shape: &[usize], dtype: Dtype) -> Error {
        Error::invalid(
            op,
            format!("Array is too big: shape {} of {dtype} needs more than {} bytes.", fmt_shape(shape), isize::MAX),
        )
    }

    /// The error for an allocation of `bytes` that the system refused.
    pub fn allocation_failed(op: &'static str, bytes: usize, device: &str) -> Error {
        Error::OutOfMemory { op, msg: format!("Unable to allocate {bytes} bytes on the {device}.") }
    }

    /// The error for an operating-system failure on `path`.
    pub fn file(op: &'static str, path: impl Into<String>, err: &std::io::Error) -> Error {
        Error::File { op, path: path.into(), kind: err.kind(), msg: err.to_string() }
    }

    /// The error for a file of invalid content.
    pub fn corrupt(op: &'static str, file: impl Into<String>, msg: impl Into<String>) -> Error {
        Error::CorruptFile { op, file: file.into(), msg: msg.into() }
    }

    /// The same error attributed to `op` when it was raised by a shared
    /// helper (an allocation inside a kernel reports the op that needed it).
    pub fn in_op(self, op: &'static str) -> Error {
        match self {
            Error::OutOfMemory { op: "allocate", msg } => Error::OutOfMemory { op, msg },
            other => other,
        }
    }
}

/// Formats a shape as NumPy and MLX print it: `(2,3)`, `(4,)`, `()`.
pub fn fmt_shape(shape: &[usize]) -> String {
    match shape {
        [d] => format!("({d},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")),
    }
}

/// The message a panic carried (`"unknown panic"` when it was not a string).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
