//! Rust element types behind each [`Dtype`], and the per-type arithmetic that
//! the CPU kernels are generic over.
//!
//! Integer arithmetic wraps (as in NumPy and MLX); f16/bf16 compute in f32.

use crate::dtype::Dtype;
use half::{bf16, f16};
use num_complex::Complex32;

pub mod complex;

/// A Rust scalar of any dtype: fill values, `item()`, and the bridge of casts.
#[derive(Clone, Copy, Debug, PartialEq)]
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
    /// Negation (wrapping for integers).
    fn neg(self) -> Self;
    /// Absolute value (magnitude for complex numbers).
    fn abs(self) -> Self;
    /// `self < o` (lexicographic for complex numbers, as NumPy).
    fn lt(self, o: Self) -> bool;
    /// `self <= o`.
    fn le(self, o: Self) -> bool {
        self.lt(o) || self == o
    }
    /// Whether the value is NaN.
    fn is_nan(self) -> bool;
    /// The smallest value of the type (identity of `max`).
    fn lowest() -> Self;
    /// The largest value of the type (identity of `min`).
    fn highest() -> Self;
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

macro_rules! int_element {
    ($t:ty, $dt:ident, $variant:ident, $conv:ty, signed = $signed:expr, from_f64 = $from_f64:expr) => {
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$dt;
            #[inline(always)]
            fn to_scalar(self) -> Scalar {
                Scalar::$variant(self as $conv)
            }
            #[inline(always)]
            fn from_scalar(s: Scalar) -> Self {
                match s {
                    Scalar::Bool(b) => b as $t,
                    Scalar::Int(v) => v as $t,
                    Scalar::UInt(v) => v as $t,
                    Scalar::Float(v) => $from_f64(v) as $t,
                    Scalar::Complex(re, _) => $from_f64(re as f64) as $t,
                }
            }
            #[inline(always)]
            fn zero() -> Self {
                0
            }
            #[inline(always)]
            fn one() -> Self {
                1
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self.wrapping_div(o)
                }
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                #[allow(unused_comparisons)]
                if o < 0 {
                    // MLX's integer power: 0 for any negative exponent.
                    0
                } else {
                    let mut base = self;
                    let mut exp = o as u64;
                    let mut acc: $t = 1;
                    while exp > 0 {
                        if exp & 1 == 1 {
                            acc = acc.wrapping_mul(base);
                        }
                        base = base.wrapping_mul(base);
                        exp >>= 1;
                    }
                    acc
                }
            }
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                if self > o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn min(self, o: Self) -> Self {
                if self < o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                (0 as $t).wrapping_sub(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                #[allow(unused_comparisons)]
                if $signed && self < 0 {
                    self.neg()
                } else {
                    self
                }
            }
            #[inline(always)]
            fn lt(self, o: Self) -> bool {
                self < o
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            fn lowest() -> Self {
                <$t>::MIN
            }
            fn highest() -> Self {
                <$t>::MAX
            }
        }
    };
}

// Float sources convert as C does on x86-64 (see `cvt32`): targets up to 16
// bits and int32 through the 32-bit conversion, uint32 and int64 through the
// 64-bit one, then wrapping to the target.
int_element!(u8, U8, UInt, u64, signed = false, from_f64 = cvt32);
int_element!(u16, U16, UInt, u64, signed = false, from_f64 = cvt32);
int_element!(u32, U32, UInt, u64, signed = false, from_f64 = cvt64);
int_element!(u64, U64, UInt, u64, signed = false, from_f64 = cvt_u64);
int_element!(i8, I8, Int, i64, signed = true, from_f64 = cvt32);
int_element!(i16, I16, Int, i64, signed = true, from_f64 = cvt32);
int_element!(i32, I32, Int, i64, signed = true, from_f64 = cvt32);
int_element!(i64, I64, Int, i64, signed = true, from_f64 = cvt64);

impl Element for bool {
    const DTYPE: Dtype = Dtype::Bool;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        match s {
            Scalar::Bool(b) => b,
            Scalar::Int(v) => v != 0,
            Scalar::UInt(v) => v != 0,
            Scalar::Float(v) => v != 0.0,
            Scalar::Complex(re, im) => re != 0.0 || im != 0.0,
        }
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn pow(self, o: Self) -> Self {
        self | !o
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn neg(self) -> Self {
        self
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        !self & o
    }
    fn is_nan(self) -> bool {
        false
    }
    fn lowest() -> Self {
        false
    }
    fn highest() -> Self {
        true
    }
}

macro_rules! float_element {
    ($t:ty, $dt:ident, compute = $c:ty, to = $to:expr, from = $from:expr, from_f64 = $from64:expr) => {
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$dt;
            #[inline(always)]
            fn to_scalar(self) -> Scalar {
                Scalar::Float(($to)(self) as f64)
            }
            #[inline(always)]
            fn from_scalar(s: Scalar) -> Self {
                match s {
                    Scalar::Bool(b) => ($from64)(b as u8 as f64),
                    Scalar::Int(v) => ($from64)(v as f64),
                    Scalar::UInt(v) => ($from64)(v as f64),
                    Scalar::Float(v) => ($from64)(v),
                    Scalar::Complex(re, _) => ($from64)(re as f64),
                }
            }
            #[inline(always)]
            fn zero() -> Self {
                ($from)(0.0)
            }
            #[inline(always)]
            fn one() -> Self {
                ($from)(1.0)
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                ($from)(($to)(self) + ($to)(o))
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                ($from)(($to)(self) - ($to)(o))
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                ($from)(($to)(self) * ($to)(o))
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                ($from)(($to)(self) / ($to)(o))
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                ($from)(($to)(self).powf(($to)(o)))
            }
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                let (a, b) = (($to)(self), ($to)(o));
                if a > b || a.is_nan() {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn min(self, o: Self) -> Self {
                let (a, b) = (($to)(self), ($to)(o));
                if a < b || a.is_nan() {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                ($from)(($to)(self).abs())
            }
            #[inline(always)]
            fn lt(self, o: Self) -> bool {
                ($to)(self) < ($to)(o)
            }
            #[inline(always)]
            fn le(self, o: Self) -> bool {
                ($to)(self) <= ($to)(o)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                ($to)(self).is_nan()
            }
            fn lowest() -> Self {
                ($from)(<$c>::NEG_INFINITY)
            }
            fn highest() -> Self {
                ($from)(<$c>::INFINITY)
            }
        }
    };
}

float_element!(f16, F16, compute = f32, to = f16::to_f32, from = f16::from_f32, from_f64 = f16::from_f64);
float_element!(bf16, BF16, compute = f32, to = bf16::to_f32, from = bf16::from_f32, from_f64 = bf16::from_f64);
float_element!(f32, F32, compute = f32, to = (|x: f32| x), from = (|x: f32| x), from_f64 = (|x: f64| x as f32));
float_element!(f64, F64, compute = f64, to = (|x: f64| x), from = (|x: f64| x), from_f64 = (|x: f64| x));

impl Element for Complex32 {
    const DTYPE: Dtype = Dtype::C64;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Complex(self.re, self.im)
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        match s {
            Scalar::Complex(re, im) => Complex32::new(re, im),
            other => Complex32::new(other.as_f64() as f32, 0.0),
        }
    }
    fn zero() -> Self {
        Complex32::new(0.0, 0.0)
    }
    fn one() -> Self {
        Complex32::new(1.0, 0.0)
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self - o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        complex::mul(self, o)
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        complex::div(self, o)
    }
    #[inline(always)]
    fn pow(self, o: Self) -> Self {
        // As std::pow (so MLX): e^(o ln self), with no special case for 0.
        complex::exp(complex::mul(o, complex::ln(self)))
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        if o.lt(self) || self.is_nan() {
            self
        } else {
            o
        }
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        if self.lt(o) || self.is_nan() {
            self
        } else {
            o
        }
    }
    #[inline(always)]
    fn neg(self) -> Self {
        -self
    }
    #[inline(always)]
    fn abs(self) -> Self {
        Complex32::new(self.norm(), 0.0)
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        self.re < o.re || (self.re == o.re && self.im < o.im)
    }
    fn is_nan(self) -> bool {
        self.re.is_nan() || self.im.is_nan()
    }
    fn lowest() -> Self {
        Complex32::new(f32::NEG_INFINITY, f32::NEG_INFINITY)
    }
    fn highest() -> Self {
        Complex32::new(f32::INFINITY, f32::INFINITY)
    }
}

/// Transcendental functions for the inexact types (f16, bf16, f32, f64, c64).
pub trait FloatElement: Element {
    /// e^x.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Logistic sigmoid 1 / (1 + e^-x).
    fn sigmoid(self) -> Self;
}

impl FloatElement for f32 {
    #[inline(always)]
    fn exp(self) -> Self {
        crate::backend::cpu::math::exp_f32(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        f32::ln(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        f32::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        f32::cos(self)
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        f32::tanh(self)
    }
    #[inline(always)]
    fn sigmoid(self) -> Self {
        1.0 / (1.0 + crate::backend::cpu::math::exp_f32(-self))
    }
}

impl FloatElement for f64 {
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn sin(self) -> Self {
        f64::sin(self)
    }
    fn cos(self) -> Self {
        f64::cos(self)
    }
    fn tanh(self) -> Self {
        f64::tanh(self)
    }
    fn sigmoid(self) -> Self {
        1.0 / (1.0 + f64::exp(-self))
    }
}

macro_rules! half_float_element {
    ($t:ty) => {
        impl FloatElement for $t {
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::from_f32(FloatElement::exp(self.to_f32()))
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::from_f32(self.to_f32().ln())
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::from_f32(self.to_f32().sqrt())
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::from_f32(self.to_f32().sin())
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::from_f32(self.to_f32().cos())
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                <$t>::from_f32(self.to_f32().tanh())
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                <$t>::from_f32(FloatElement::sigmoid(self.to_f32()))
            }
        }
    };
}

half_float_element!(f16);
half_float_element!(bf16);

impl FloatElement for Complex32 {
    fn exp(self) -> Self {
        complex::exp(self)
    }
    fn ln(self) -> Self {
        complex::ln(self)
    }
    fn sqrt(self) -> Self {
        complex::sqrt(self)
    }
    fn sin(self) -> Self {
        complex::sin(self)
    }
    fn cos(self) -> Self {
        complex::cos(self)
    }
    fn tanh(self) -> Self {
        complex::tanh(self)
    }
    fn sigmoid(self) -> Self {
        complex::div(Complex32::new(1.0, 0.0), Complex32::new(1.0, 0.0) + complex::exp(-self))
    }
}
