//! [`Element`] for the real floats (f16, bf16, f32, f64), and the math of
//! the inexact types: [`FloatElement`] (real floats and complex64) and
//! [`RealFloatElement`] (real floats only).
//!
//! f16 and bf16 compute in f32 and round once. The f32 functions other than
//! `exp` (a vectorizable polynomial within 2 ulp) compute in f64 and round
//! once, which keeps them within an ulp of the correctly rounded result.

use super::{Element, Scalar};
use crate::dtype::Dtype;
use half::{bf16, f16};

/// The functions of the op tables defined for every inexact dtype
/// (kinds `float` and, for two arguments, `logaddexp`).
pub trait FloatElement: Element {
    /// e^x.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn log(self) -> Self;
    /// ln(1 + x).
    fn log1p(self) -> Self;
    /// Base-2 logarithm.
    fn log2(self) -> Self;
    /// Base-10 logarithm.
    fn log10(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// 1 / sqrt(x).
    fn rsqrt(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Tangent.
    fn tan(self) -> Self;
    /// Inverse sine.
    fn arcsin(self) -> Self;
    /// Inverse cosine.
    fn arccos(self) -> Self;
    /// Inverse tangent.
    fn arctan(self) -> Self;
    /// Hyperbolic sine.
    fn sinh(self) -> Self;
    /// Hyperbolic cosine.
    fn cosh(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Inverse hyperbolic sine.
    fn arcsinh(self) -> Self;
    /// Inverse hyperbolic cosine.
    fn arccosh(self) -> Self;
    /// Inverse hyperbolic tangent.
    fn arctanh(self) -> Self;
    /// log(e^self + e^o) without overflow.
    fn logaddexp(self, o: Self) -> Self;
}

/// The functions of the op tables defined for the real floats only
/// (kind `real_float`).
pub trait RealFloatElement: FloatElement {
    /// e^x - 1.
    fn expm1(self) -> Self;
    /// 1 / (1 + e^-x).
    fn sigmoid(self) -> Self;
    /// The error function.
    fn erf(self) -> Self;
    /// The inverse of the error function.
    fn erfinv(self) -> Self;
    /// The angle of the point (o, self).
    fn arctan2(self, o: Self) -> Self;
    /// GELU's tanh approximation (see [`gelu_approx_f64`]).
    fn gelu_approx(self) -> Self;
    /// The derivative of [`RealFloatElement::gelu_approx`].
    fn gelu_approx_derivative(self) -> Self;
}

/// sqrt(2 / pi), the scale inside GELU's tanh approximation.
const GELU_SCALE: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of GELU's tanh approximation.
const GELU_CUBIC: f64 = 0.044_715;

/// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
pub fn gelu_approx_f64(x: f64) -> f64 {
    0.5 * x * (1.0 + (GELU_SCALE * (x + GELU_CUBIC * x * x * x)).tanh())
}

/// d/dx of [`gelu_approx_f64`]: `0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)`.
pub fn gelu_approx_derivative_f64(x: f64) -> f64 {
    let x2 = x * x;
    let t = (GELU_SCALE * (x + GELU_CUBIC * x2 * x)).tanh();
    0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_SCALE * (1.0 + 3.0 * GELU_CUBIC * x2)
}

/// erf⁻¹ in f64: Giles' single-precision approximation ("Approximating the
/// erfinv function", GPU Gems 2012) as a start, then two Newton steps on
/// erf, which bring it to full double precision.
pub fn erfinv_f64(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let mut x = if w < 5.0 {
        let w = w - 2.5;
        let mut p = 2.810_226_36e-08;
        for c in [
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ] {
            p = c + p * w;
        }
        p * y
    } else {
        let w = w.sqrt() - 3.0;
        let mut p = -0.000_200_214_257;
        for c in [
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ] {
            p = c + p * w;
        }
        p * y
    };
    // Newton on f(x) = erf(x) - y: f'(x) = 2/sqrt(pi) e^(-x^2).
    for _ in 0..2 {
        let err = libm::erf(x) - y;
        x -= err / (std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp());
    }
    x
}

/// The two-argument log-sum-exp of real numbers (MLX's formula).
fn logaddexp_f64(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a > b || a.is_nan() { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY || hi == f64::INFINITY {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

macro_rules! real_float {
    ($t:ty, $dt:ident, to = $to:expr, from = $from:expr, from_f64 = $from64:expr, exp = $exp:expr, erf = $erf:expr) => {
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
            fn lowest() -> Self {
                ($from64)(f64::NEG_INFINITY)
            }
            fn highest() -> Self {
                ($from64)(f64::INFINITY)
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
            fn remainder(self, o: Self) -> Self {
                let (a, b) = (($to)(self), ($to)(o));
                let r = a % b;
                ($from)(if r != 0.0 && ((r < 0.0) != (b < 0.0)) { r + b } else { r })
            }
            #[inline(always)]
            fn floor_divide(self, o: Self) -> Self {
                ($from)((($to)(self) / ($to)(o)).floor())
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
            fn negative(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                ($from)(($to)(self).abs())
            }
            #[inline(always)]
            fn sign(self) -> Self {
                let v = ($to)(self);
                ($from)(((v > 0.0) as i8 - (v < 0.0) as i8) as _)
            }
            #[inline(always)]
            fn square(self) -> Self {
                let v = ($to)(self);
                ($from)(v * v)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                ($from)(($to)(self).floor())
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                ($from)(($to)(self).ceil())
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                ($from)(($to)(self).trunc())
            }
            #[inline(always)]
            fn round(self) -> Self {
                ($from)(($to)(self).round_ties_even())
            }
            #[inline(always)]
            fn isnan(self) -> bool {
                ($to)(self).is_nan()
            }
            #[inline(always)]
            fn isinf(self) -> bool {
                ($to)(self).is_infinite()
            }
            #[inline(always)]
            fn isfinite(self) -> bool {
                ($to)(self).is_finite()
            }
            #[inline(always)]
            fn isposinf(self) -> bool {
                let v = ($to)(self);
                v.is_infinite() && v > 0.0
            }
            #[inline(always)]
            fn isneginf(self) -> bool {
                let v = ($to)(self);
                v.is_infinite() && v < 0.0
            }
        }

        impl FloatElement for $t {
            #[inline(always)]
            fn exp(self) -> Self {
                ($from)(($exp)(($to)(self)))
            }
            fn log(self) -> Self {
                ($from64)((($to)(self) as f64).ln())
            }
            fn log1p(self) -> Self {
                ($from64)((($to)(self) as f64).ln_1p())
            }
            fn log2(self) -> Self {
                ($from64)((($to)(self) as f64).log2())
            }
            fn log10(self) -> Self {
                ($from64)((($to)(self) as f64).log10())
            }
            fn sqrt(self) -> Self {
                ($from)(($to)(self).sqrt())
            }
            fn rsqrt(self) -> Self {
                ($from64)(1.0 / (($to)(self) as f64).sqrt())
            }
            fn sin(self) -> Self {
                ($from64)((($to)(self) as f64).sin())
            }
            fn cos(self) -> Self {
                ($from64)((($to)(self) as f64).cos())
            }
            fn tan(self) -> Self {
                ($from64)((($to)(self) as f64).tan())
            }
            fn arcsin(self) -> Self {
                ($from64)((($to)(self) as f64).asin())
            }
            fn arccos(self) -> Self {
                ($from64)((($to)(self) as f64).acos())
            }
            fn arctan(self) -> Self {
                ($from64)((($to)(self) as f64).atan())
            }
            fn sinh(self) -> Self {
                ($from64)((($to)(self) as f64).sinh())
            }
            fn cosh(self) -> Self {
                ($from64)((($to)(self) as f64).cosh())
            }
            fn tanh(self) -> Self {
                ($from64)((($to)(self) as f64).tanh())
            }
            fn arcsinh(self) -> Self {
                ($from64)(libm::asinh(($to)(self) as f64))
            }
            fn arccosh(self) -> Self {
                // libm's acosh does not check the domain (x < 1 is NaN).
                let v = ($to)(self) as f64;
                ($from64)(if v < 1.0 { f64::NAN } else { libm::acosh(v) })
            }
            fn arctanh(self) -> Self {
                ($from64)(libm::atanh(($to)(self) as f64))
            }
            fn logaddexp(self, o: Self) -> Self {
                ($from64)(logaddexp_f64(($to)(self) as f64, ($to)(o) as f64))
            }
        }

        impl RealFloatElement for $t {
            fn expm1(self) -> Self {
                ($from64)((($to)(self) as f64).exp_m1())
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                let v = ($to)(self);
                ($from)(1.0 / (1.0 + ($exp)(-v)))
            }
            #[inline(always)]
            fn erf(self) -> Self {
                ($from)(($erf)(($to)(self)))
            }
            fn erfinv(self) -> Self {
                ($from64)(erfinv_f64(($to)(self) as f64))
            }
            fn arctan2(self, o: Self) -> Self {
                ($from64)((($to)(self) as f64).atan2(($to)(o) as f64))
            }
            fn gelu_approx(self) -> Self {
                ($from64)(gelu_approx_f64(($to)(self) as f64))
            }
            fn gelu_approx_derivative(self) -> Self {
                ($from64)(gelu_approx_derivative_f64(($to)(self) as f64))
            }
        }
    };
}

real_float!(
    f16,
    F16,
    to = f16::to_f32,
    from = f16::from_f32,
    from_f64 = f16::from_f64,
    exp = crate::backend::cpu::math::exp_f32,
    erf = crate::backend::cpu::math::erf_f32
);
real_float!(
    bf16,
    BF16,
    to = bf16::to_f32,
    from = bf16::from_f32,
    from_f64 = bf16::from_f64,
    exp = crate::backend::cpu::math::exp_f32,
    erf = crate::backend::cpu::math::erf_f32
);
real_float!(
    f32,
    F32,
    to = (|x: f32| x),
    from = (|x: f32| x),
    from_f64 = (|x: f64| x as f32),
    exp = crate::backend::cpu::math::exp_f32,
    erf = crate::backend::cpu::math::erf_f32
);
real_float!(f64, F64, to = (|x: f64| x), from = (|x: f64| x), from_f64 = (|x: f64| x), exp = f64::exp, erf = libm::erf);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfinv_inverts_erf() {
        // Near ±1 erf is flat, so erf⁻¹ is ill-conditioned there: compare in
        // y (a few ulps) everywhere, and in x where erf is steep enough.
        for &x in &[-3.5, -1.2, -0.3, 0.0, 1e-8, 0.5, 1.7, 4.0] {
            let y = libm::erf(x);
            let back = erfinv_f64(y);
            assert!((libm::erf(back) - y).abs() <= 4.0 * f64::EPSILON, "{x}");
            if x.abs() < 2.0 {
                assert!((back - x).abs() <= 1e-12 * x.abs().max(1.0), "{x}");
            }
        }
        assert_eq!(erfinv_f64(1.0), f64::INFINITY);
        assert!(erfinv_f64(1.5).is_nan());
    }

    #[test]
    fn remainder_and_floor_divide_follow_python() {
        assert_eq!(Element::remainder(7.5f32, 2.0), 1.5);
        assert_eq!(Element::remainder(-7.5f32, 2.0), 0.5);
        assert_eq!(Element::remainder(7.5f32, -2.0), -0.5);
        assert_eq!(Element::floor_divide(-7.5f64, 2.0), -4.0);
        assert_eq!(Element::remainder(-7i32, 2), 1);
        assert_eq!(Element::floor_divide(-7i32, 2), -4);
        assert_eq!(Element::remainder(5i32, 0), 5);
        assert_eq!(Element::floor_divide(5i32, 0), 0);
    }

    #[test]
    fn shifts_follow_c_on_x86() {
        use crate::element::BitsElement;
        assert_eq!(1i8.left_shift(7), -128);
        assert_eq!(1i8.left_shift(9), 0);
        assert_eq!(1i32.left_shift(33), 2);
        assert_eq!(1i32.left_shift(-1), i32::MIN);
        assert_eq!((-8i32).right_shift(1), -4);
        assert_eq!(200u8.right_shift(3), 25);
    }
}
