//! Rust element types behind each [`Dtype`], and the per-type arithmetic that
//! the CPU kernels are generic over: one method per elementwise op of the op
//! tables (`ops/tables.rs`), named as the op.
//!
//! Integer arithmetic wraps (as in NumPy and MLX); f16/bf16 compute in f32.
//! [`Element`] holds what every dtype has; [`FloatElement`] the functions
//! of the inexact dtypes, [`RealFloatElement`] those of the real floats and
//! [`BitsElement`] the bitwise ops of bool and the integers. One file per
//! family of types implements them: `int.rs`, `float.rs`, `complex.rs`.

use crate::dtype::Dtype;

pub mod complex;
mod float;
mod int;

pub use float::{FloatElement, RealFloatElement};
pub use int::BitsElement;

/// A Rust scalar of any dtype: fill values, `item()`, and the bridge of casts.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// A signed integer (also used for values of signed integer dtypes).
    Int(i64),
    /// An unsigned integer (used for values of unsigned integer dtypes).
    UInt(u64),
    /// A real float.
    Float(f64),
    /// A complex number.
    Complex(f32, f32),
}

impl Scalar {
    /// The value as f64 (real part for complex numbers).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(v) => v as f64,
            Scalar::UInt(v) => v as f64,
            Scalar::Float(v) => v,
            Scalar::Complex(re, _) => re as f64,
        }
    }
}

/// A Rust type that stores the elements of one dtype.
pub trait Element: Copy + Send + Sync + 'static + Default + PartialEq + std::fmt::Debug {
    /// The dtype this type stores.
    const DTYPE: Dtype;
    /// Converts to the dtype-agnostic scalar.
    fn to_scalar(self) -> Scalar;
    /// Converts from any scalar with C-style cast semantics
    /// (wrapping integers, truncating floats, real part of complex numbers).
    fn from_scalar(s: Scalar) -> Self;
    /// The additive identity.
    fn zero() -> Self;
    /// The multiplicative identity.
    fn one() -> Self;
    /// The smallest value of the type (identity of `max`).
    fn lowest() -> Self;
    /// The largest value of the type (identity of `min`).
    fn highest() -> Self;

    /// Addition (wrapping for integers, logical or for bool).
    fn add(self, o: Self) -> Self;
    /// Subtraction (wrapping for integers, xor for bool).
    fn sub(self, o: Self) -> Self;
    /// Multiplication (wrapping for integers, logical and for bool).
    fn mul(self, o: Self) -> Self;
    /// Division (integer division truncates; division by zero gives 0 for integers).
    fn div(self, o: Self) -> Self;
    /// Power (integers: wrapping, and 0 for negative exponents, as MLX).
    fn pow(self, o: Self) -> Self;
    /// Larger of two values; NaN propagates.
    fn max(self, o: Self) -> Self;
    /// Smaller of two values; NaN propagates.
    fn min(self, o: Self) -> Self;
    /// Remainder with the sign of the divisor (Python's `%`); an integer
    /// divided by 0 leaves itself (MLX), a float NaN.
    fn remainder(self, o: Self) -> Self;
    /// Division rounded toward negative infinity (Python's `//`); integers
    /// divided by 0 give 0; complex numbers divide.
    fn floor_divide(self, o: Self) -> Self;
    /// `self < o` (lexicographic for complex numbers, as NumPy).
    fn lt(self, o: Self) -> bool;
    /// `self <= o`.
    fn le(self, o: Self) -> bool {
        self.lt(o) || self == o
    }

    /// Negation (wrapping for integers; bool is unchanged).
    fn negative(self) -> Self;
    /// Absolute value (the magnitude, in the real part, for complex numbers).
    fn abs(self) -> Self;
    /// -1, 0 or 1 (0 for NaN, as MLX); z / |z| for complex numbers.
    fn sign(self) -> Self;
    /// `self * self`.
    fn square(self) -> Self {
        self.mul(self)
    }
    /// Rounding down (integers and bool unchanged).
    fn floor(self) -> Self;
    /// Rounding up (integers and bool unchanged).
    fn ceil(self) -> Self;
    /// Rounding toward zero (integers and bool unchanged).
    fn trunc(self) -> Self;
    /// Rounding to the nearest integer, halves to even (each part of a complex number).
    fn round(self) -> Self;
    /// Complex conjugate (other types unchanged).
    fn conj(self) -> Self {
        self
    }
    /// The imaginary part, in the real part of a complex number (0 for other types).
    fn imag(self) -> Self {
        Self::zero()
    }
    /// Whether the value is NaN (either part, for complex numbers).
    fn isnan(self) -> bool {
        false
    }
    /// Whether the value is ±infinity (either part, for complex numbers).
    fn isinf(self) -> bool {
        false
    }
    /// Whether the value is neither infinite nor NaN.
    fn isfinite(self) -> bool {
        true
    }
    /// Whether the value is +infinity.
    fn isposinf(self) -> bool {
        false
    }
    /// Whether the value is -infinity.
    fn isneginf(self) -> bool {
        false
    }
    /// Whether the value is zero.
    fn logical_not(self) -> bool {
        self == Self::zero()
    }
}

/// C's float-to-int32 conversion as x86-64 performs it (what NumPy and MLX
/// return): truncation toward zero; NaN and out-of-range values give
/// `i32::MIN`, the instruction's "integer indefinite" value.
pub fn cvt32(v: f64) -> i32 {
    if v > -2147483649.0 && v < 2147483648.0 {
        v as i32
    } else {
        i32::MIN
    }
}

/// [`cvt32`]'s 64-bit counterpart (`i64::MIN` for NaN and out of range).
pub fn cvt64(v: f64) -> i64 {
    if (-9223372036854775808.0..9223372036854775808.0).contains(&v) {
        v as i64
    } else {
        i64::MIN
    }
}

/// C's float-to-uint64 conversion on x86-64: values from 2^63 up are
/// converted after subtracting 2^63.
pub fn cvt_u64(v: f64) -> u64 {
    if v >= 9223372036854775808.0 {
        (cvt64(v - 9223372036854775808.0) as u64) ^ (1 << 63)
    } else {
        cvt64(v) as u64
    }
}
