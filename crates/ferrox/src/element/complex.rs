//! Complex64 elementary functions with C99 Annex G's special values (what
//! NumPy and MLX return for infinite, NaN and signed-zero inputs). Each is
//! computed in f64 and rounded once, which also keeps intermediate
//! overflow (e^x for x near f32's range) from turning finite results into
//! infinities or NaNs.

use super::{Element, FloatElement, Scalar};
use crate::dtype::Dtype;
use num_complex::Complex32;

/// Product with C99 Annex G's recovery of infinities (what `std::complex`
/// and so MLX compute): a product with an infinite factor is infinite even
/// where the textbook formula gives NaN.
pub fn mul(z: Complex32, w: Complex32) -> Complex32 {
    let ((a, b), (c, d)) = (parts(z), parts(w));
    let (re, im) = mul_parts(a, b, c, d);
    cx(re, im)
}

/// [`mul`]'s product (a + ib)(c + id) in f64, before its rounding.
fn mul_parts(mut a: f64, mut b: f64, mut c: f64, mut d: f64) -> (f64, f64) {
    let (ac, bd, ad, bc) = (a * c, b * d, a * d, b * c);
    let (x, y) = (ac - bd, ad + bc);
    if !(x.is_nan() && y.is_nan()) {
        return (x, y);
    }
    let mut recalc = false;
    let unit = |v: f64| (if v.is_infinite() { 1.0f64 } else { 0.0 }).copysign(v);
    let unnan = |v: f64| if v.is_nan() { 0.0f64.copysign(v) } else { v };
    if a.is_infinite() || b.is_infinite() {
        (a, b) = (unit(a), unit(b));
        (c, d) = (unnan(c), unnan(d));
        recalc = true;
    }
    if c.is_infinite() || d.is_infinite() {
        (c, d) = (unit(c), unit(d));
        (a, b) = (unnan(a), unnan(b));
        recalc = true;
    }
    if !recalc && (ac.is_infinite() || bd.is_infinite() || ad.is_infinite() || bc.is_infinite()) {
        (a, b, c, d) = (unnan(a), unnan(b), unnan(c), unnan(d));
        recalc = true;
    }
    if recalc {
        return (f64::INFINITY * (a * c - b * d), f64::INFINITY * (a * d + b * c));
    }
    (x, y)
}

/// Quotient with C99 Annex G's special cases (what `std::complex` and so
/// MLX compute): x/0 is infinite, finite/infinite is zero.
pub fn div(z: Complex32, w: Complex32) -> Complex32 {
    let ((mut a, mut b), (mut c, mut d)) = (parts(z), parts(w));
    let denom = c * c + d * d;
    let (x, y) = ((a * c + b * d) / denom, (b * c - a * d) / denom);
    if !(x.is_nan() && y.is_nan()) {
        return cx(x, y);
    }
    let unit = |v: f64| (if v.is_infinite() { 1.0f64 } else { 0.0 }).copysign(v);
    if denom == 0.0 && (!a.is_nan() || !b.is_nan()) {
        let inf = f64::INFINITY.copysign(c);
        return cx(inf * a, inf * b);
    }
    if (a.is_infinite() || b.is_infinite()) && c.is_finite() && d.is_finite() {
        (a, b) = (unit(a), unit(b));
        return cx(f64::INFINITY * (a * c + b * d), f64::INFINITY * (b * c - a * d));
    }
    if (c.is_infinite() || d.is_infinite()) && a.is_finite() && b.is_finite() {
        (c, d) = (unit(c), unit(d));
        return cx(0.0 * (a * c + b * d), 0.0 * (b * c - a * d));
    }
    cx(x, y)
}

fn cx(re: f64, im: f64) -> Complex32 {
    Complex32::new(re as f32, im as f32)
}

fn parts(z: Complex32) -> (f64, f64) {
    (z.re as f64, z.im as f64)
}

/// e^z.
pub fn exp(z: Complex32) -> Complex32 {
    let (re, im) = exp_parts(z.re as f64, z.im as f64);
    cx(re, im)
}

/// e^(x + iy) in f64, with C99 Annex G's special values.
fn exp_parts(x: f64, y: f64) -> (f64, f64) {
    if y == 0.0 {
        return (x.exp(), y);
    }
    if x.is_infinite() {
        if !y.is_finite() {
            // e^(+inf + i inf) = ±inf + i NaN; e^(-inf + i inf) = ±0 ± i0.
            return if x > 0.0 { (x, f64::NAN) } else { (0.0, 0.0) };
        }
        // +inf·cis(y), or signed zeros for -inf.
        let r = x.exp();
        return (r * y.cos(), r * y.sin());
    }
    if x.is_nan() || !y.is_finite() {
        return (f64::NAN, f64::NAN);
    }
    let r = x.exp();
    (r * y.cos(), r * y.sin())
}

/// a^b = e^(b ln a) with [`mul`]'s recovery of infinities (MLX's formula,
/// no special case for a = 0), in f64 and rounded once so that a large
/// exponent does not magnify the rounding of ln a.
pub fn pow(a: Complex32, b: Complex32) -> Complex32 {
    let (lr, li) = ln_parts(a.re as f64, a.im as f64);
    let (re, im) = mul_parts(b.re as f64, b.im as f64, lr, li);
    let (re, im) = exp_parts(re, im);
    cx(re, im)
}

/// log(e^a + e^b) by MLX's formula hi + log1p(e^(lo - hi)) with its
/// lexicographic maximum and minimum, in f64 and rounded once.
pub fn logaddexp(a: Complex32, b: Complex32) -> Complex32 {
    let (hi, lo) = (a.max(b), a.min(b));
    if lo == Complex32::new(f32::NEG_INFINITY, 0.0) || hi.re == f32::INFINITY {
        return hi;
    }
    let (er, ei) = exp_parts(lo.re as f64 - hi.re as f64, lo.im as f64 - hi.im as f64);
    let (lr, li) = log1p_parts(er, ei);
    cx(hi.re as f64 + lr, hi.im as f64 + li)
}

/// Natural logarithm, with the branch cut along the negative real axis.
pub fn ln(z: Complex32) -> Complex32 {
    let (x, y) = parts(z);
    cx(x.hypot(y).ln(), y.atan2(x))
}

/// Principal square root.
pub fn sqrt(z: Complex32) -> Complex32 {
    let (x, y) = parts(z);
    let (re, im) = sqrt_parts(x, y);
    cx(re, im)
}

/// The principal square root of x + iy in f64, with C99 Annex G's special
/// values (the sign of a zero imaginary part picks the side of the cut).
fn sqrt_parts(x: f64, y: f64) -> (f64, f64) {
    if y.is_infinite() {
        return (f64::INFINITY, y);
    }
    if x.is_nan() {
        return (f64::NAN, f64::NAN);
    }
    if x.is_infinite() {
        return if x > 0.0 {
            (x, if y.is_nan() { y } else { 0.0f64.copysign(y) })
        } else {
            (if y.is_nan() { f64::NAN } else { 0.0 }, f64::INFINITY.copysign(y))
        };
    }
    if y.is_nan() {
        return (f64::NAN, f64::NAN);
    }
    if x == 0.0 && y == 0.0 {
        return (0.0, y);
    }
    let t = ((x.abs() + x.hypot(y)) / 2.0).sqrt();
    if x >= 0.0 {
        (t, y / (2.0 * t))
    } else {
        (y.abs() / (2.0 * t), t.copysign(y))
    }
}

/// ln(x + iy) in f64, the cut along the negative real axis.
fn ln_parts(x: f64, y: f64) -> (f64, f64) {
    (x.hypot(y).ln(), y.atan2(x))
}

/// asin(x + iy), Kahan's formula ("Branch Cuts for Complex Elementary
/// Functions"): accurate near ±1 and on the cuts, whose side the sign of
/// a zero imaginary part picks. Infinite and NaN parts give C99 Annex G's
/// values here and in the other inverse functions.
fn asin_parts(x: f64, y: f64) -> (f64, f64) {
    if x.is_infinite() || y.is_infinite() {
        // asin z = -i asinh(iz), and asinh of an infinite z is ±inf at z's angle.
        return (x.atan2(y.abs()), f64::INFINITY.copysign(y));
    }
    if x == 0.0 && y.is_nan() {
        return (x, y);
    }
    let (pr, pi) = sqrt_parts(1.0 + x, y);
    let (mr, mi) = sqrt_parts(1.0 - x, -y);
    // Re(sqrt(1-z) sqrt(1+z)) and Im(conj(sqrt(1-z)) sqrt(1+z)).
    (x.atan2(mr * pr - mi * pi), libm::asinh(mr * pi - mi * pr))
}

/// acos(x + iy), Kahan's formula.
fn acos_parts(x: f64, y: f64) -> (f64, f64) {
    if x.is_infinite() || y.is_infinite() {
        return (y.abs().atan2(x), -f64::INFINITY.copysign(y));
    }
    if x == 0.0 && y.is_nan() {
        return (std::f64::consts::FRAC_PI_2, y);
    }
    let (pr, pi) = sqrt_parts(1.0 + x, y);
    let (mr, mi) = sqrt_parts(1.0 - x, -y);
    // 2 atan2(Re sqrt(1-z), Re sqrt(1+z)), asinh(Im(conj(sqrt(1+z)) sqrt(1-z))).
    (2.0 * mr.atan2(pr), libm::asinh(pr * mi - pi * mr))
}

/// acosh(x + iy), Kahan's formula.
fn acosh_parts(x: f64, y: f64) -> (f64, f64) {
    if x.is_infinite() || y.is_infinite() {
        return (f64::INFINITY, y.atan2(x));
    }
    let (pr, pi) = sqrt_parts(x + 1.0, y);
    let (mr, mi) = sqrt_parts(x - 1.0, y);
    // asinh(Re(conj(sqrt(z-1)) sqrt(z+1))), 2 atan2(Im sqrt(z-1), Re sqrt(z+1)).
    (libm::asinh(mr * pr + mi * pi), 2.0 * mi.atan2(pr))
}

/// Below this magnitude atanh uses its Taylor series z + z³/3 (exact to
/// f64 rounding there), keeping tiny arguments exact.
const SERIES_BELOW: f64 = 1e-5;

/// atanh(x + iy) = (ln(1 + z) - ln(1 - z)) / 2; branch cuts on the real
/// axis beyond ±1.
fn atanh_parts(x: f64, y: f64) -> (f64, f64) {
    if x.is_infinite() || y.is_infinite() {
        let im = if y.is_nan() { y } else { std::f64::consts::FRAC_PI_2.copysign(y) };
        return (0.0f64.copysign(x), im);
    }
    if x == 0.0 && y.is_nan() {
        return (x, y);
    }
    if x.hypot(y) < SERIES_BELOW {
        let (r2, i2) = (x * x - y * y, 2.0 * x * y);
        let (r3, i3) = (r2 * x - i2 * y, r2 * y + i2 * x);
        return (x + r3 / 3.0, y + i3 / 3.0);
    }
    let (pr, pi) = log1p_parts(x, y);
    let (mr, mi) = log1p_parts(-x, -y);
    ((pr - mr) / 2.0, (pi - mi) / 2.0)
}

/// ln(1 + x + iy) (MLX's formula: log1p of |1+z|² - 1 for small z).
fn log1p_parts(x: f64, y: f64) -> (f64, f64) {
    let theta = y.atan2(x + 1.0);
    if x.hypot(y) < 0.5 {
        let r = x * (2.0 + x) + y * y;
        if r == 0.0 {
            return (x, theta);
        }
        (0.5 * r.ln_1p(), theta)
    } else {
        ((x + 1.0).hypot(y).ln(), theta)
    }
}

/// Inverse sine (branch cuts on the real axis beyond ±1, as C99 casin).
pub fn asin(z: Complex32) -> Complex32 {
    let (re, im) = asin_parts(z.re as f64, z.im as f64);
    cx(re, im)
}

/// Inverse cosine.
pub fn acos(z: Complex32) -> Complex32 {
    let (re, im) = acos_parts(z.re as f64, z.im as f64);
    cx(re, im)
}

/// Inverse tangent: atan z = -i atanh(iz).
pub fn atan(z: Complex32) -> Complex32 {
    let (a, b) = atanh_parts(-(z.im as f64), z.re as f64);
    cx(b, -a)
}

/// Inverse hyperbolic sine: asinh z = -i asin(iz).
pub fn asinh(z: Complex32) -> Complex32 {
    let (a, b) = asin_parts(-(z.im as f64), z.re as f64);
    cx(b, -a)
}

/// Inverse hyperbolic cosine.
pub fn acosh(z: Complex32) -> Complex32 {
    let (re, im) = acosh_parts(z.re as f64, z.im as f64);
    cx(re, im)
}

/// Inverse hyperbolic tangent.
pub fn atanh(z: Complex32) -> Complex32 {
    let (re, im) = atanh_parts(z.re as f64, z.im as f64);
    cx(re, im)
}

/// ln(1 + z), accurate for small z.
pub fn log1p(z: Complex32) -> Complex32 {
    let (re, im) = log1p_parts(z.re as f64, z.im as f64);
    cx(re, im)
}

/// Hyperbolic sine, as f64 parts.
fn sinh_parts(x: f64, y: f64) -> (f64, f64) {
    if y == 0.0 {
        return (x.sinh(), y);
    }
    if x == 0.0 {
        return (if y.is_finite() { x * y.cos() } else { x }, y.sin());
    }
    if !y.is_finite() {
        // Annex G leaves the sign of the infinity open; NumPy's is +.
        return if x.is_infinite() { (f64::INFINITY, f64::NAN) } else { (f64::NAN, f64::NAN) };
    }
    if x.is_nan() {
        return (f64::NAN, f64::NAN);
    }
    (x.sinh() * y.cos(), x.cosh() * y.sin())
}

/// Hyperbolic cosine, as f64 parts.
fn cosh_parts(x: f64, y: f64) -> (f64, f64) {
    if y == 0.0 {
        return (x.cosh(), if x.is_nan() { y } else { y * x.signum() });
    }
    if x == 0.0 {
        return if y.is_finite() { (y.cos(), x * y.sin()) } else { (f64::NAN, 0.0) };
    }
    if !y.is_finite() {
        return if x.is_infinite() { (f64::INFINITY, f64::NAN) } else { (f64::NAN, f64::NAN) };
    }
    if x.is_nan() {
        return (f64::NAN, f64::NAN);
    }
    (x.cosh() * y.cos(), x.sinh() * y.sin())
}

/// Hyperbolic sine.
pub fn sinh(z: Complex32) -> Complex32 {
    let (re, im) = sinh_parts(z.re as f64, z.im as f64);
    cx(re, im)
}

/// Hyperbolic cosine.
pub fn cosh(z: Complex32) -> Complex32 {
    let (re, im) = cosh_parts(z.re as f64, z.im as f64);
    cx(re, im)
}

/// Sine: sin z = −i sinh(iz).
pub fn sin(z: Complex32) -> Complex32 {
    let (u, v) = sinh_parts(-(z.im as f64), z.re as f64);
    // An infinite imaginary part beside a NaN has no defined sign; NumPy's is +.
    let im = if v.is_nan() && u.is_infinite() { f64::INFINITY } else { -u };
    cx(v, im)
}

/// Cosine: cos z = cosh(iz).
pub fn cos(z: Complex32) -> Complex32 {
    let (re, im) = cosh_parts(-(z.im as f64), z.re as f64);
    cx(re, im)
}

/// Hyperbolic tangent.
pub fn tanh(z: Complex32) -> Complex32 {
    let (x, y) = parts(z);
    if x.is_infinite() {
        return cx(
            1.0f64.copysign(x),
            if y.is_finite() { 0.0f64.copysign((2.0 * y).sin()) } else { 0.0f64.copysign(y) },
        );
    }
    if x.is_nan() {
        return if y == 0.0 { cx(f64::NAN, y) } else { cx(f64::NAN, f64::NAN) };
    }
    if !y.is_finite() {
        return if x == 0.0 { cx(x, f64::NAN) } else { cx(f64::NAN, f64::NAN) };
    }
    if y == 0.0 {
        return cx(x.tanh(), y);
    }
    if x.abs() > 20.0 {
        // cosh(2x) overflows long before tanh stops being ±1 to f32 precision.
        return cx(1.0f64.copysign(x), 4.0 * y.sin() * y.cos() * (-2.0 * x.abs()).exp());
    }
    let d = (2.0 * x).cosh() + (2.0 * y).cos();
    cx((2.0 * x).sinh() / d, (2.0 * y).sin() / d)
}

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
    fn lowest() -> Self {
        Complex32::new(f32::NEG_INFINITY, f32::NEG_INFINITY)
    }
    fn highest() -> Self {
        Complex32::new(f32::INFINITY, f32::INFINITY)
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
        mul(self, o)
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        div(self, o)
    }
    #[inline(always)]
    fn pow(self, o: Self) -> Self {
        pow(self, o)
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        if o.lt(self) || self.isnan() {
            self
        } else {
            o
        }
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        if self.lt(o) || self.isnan() {
            self
        } else {
            o
        }
    }
    fn remainder(self, o: Self) -> Self {
        // Not defined for complex numbers (the op builder refuses them).
        self.sub(mul(o, self.floor_divide(o)))
    }
    fn floor_divide(self, o: Self) -> Self {
        // As MLX: floor of a complex quotient leaves it unchanged.
        div(self, o)
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        self.re < o.re || (self.re == o.re && self.im < o.im)
    }
    #[inline(always)]
    fn negative(self) -> Self {
        -self
    }
    #[inline(always)]
    fn abs(self) -> Self {
        Complex32::new((self.re as f64).hypot(self.im as f64) as f32, 0.0)
    }
    fn sign(self) -> Self {
        let r = (self.re as f64).hypot(self.im as f64);
        if r == 0.0 {
            Complex32::new(0.0, 0.0)
        } else {
            cx(self.re as f64 / r, self.im as f64 / r)
        }
    }
    fn square(self) -> Self {
        mul(self, self)
    }
    fn floor(self) -> Self {
        Complex32::new(self.re.floor(), self.im.floor())
    }
    fn ceil(self) -> Self {
        Complex32::new(self.re.ceil(), self.im.ceil())
    }
    fn trunc(self) -> Self {
        Complex32::new(self.re.trunc(), self.im.trunc())
    }
    fn round(self) -> Self {
        Complex32::new(self.re.round_ties_even(), self.im.round_ties_even())
    }
    fn conj(self) -> Self {
        Complex32::new(self.re, -self.im)
    }
    fn imag(self) -> Self {
        Complex32::new(self.im, 0.0)
    }
    fn isnan(self) -> bool {
        self.re.is_nan() || self.im.is_nan()
    }
    fn isinf(self) -> bool {
        self.re.is_infinite() || self.im.is_infinite()
    }
    fn isfinite(self) -> bool {
        self.re.is_finite() && self.im.is_finite()
    }
    // As MLX: equality with ±inf + 0j.
    fn isposinf(self) -> bool {
        self.re == f32::INFINITY && self.im == 0.0
    }
    fn isneginf(self) -> bool {
        self.re == f32::NEG_INFINITY && self.im == 0.0
    }
}

impl FloatElement for Complex32 {
    fn exp(self) -> Self {
        exp(self)
    }
    fn log(self) -> Self {
        ln(self)
    }
    fn log1p(self) -> Self {
        log1p(self)
    }
    fn log2(self) -> Self {
        let l = ln(self);
        cx(l.re as f64 / std::f64::consts::LN_2, l.im as f64 / std::f64::consts::LN_2)
    }
    fn log10(self) -> Self {
        let l = ln(self);
        cx(l.re as f64 / std::f64::consts::LN_10, l.im as f64 / std::f64::consts::LN_10)
    }
    fn sqrt(self) -> Self {
        sqrt(self)
    }
    fn rsqrt(self) -> Self {
        div(Complex32::new(1.0, 0.0), sqrt(self))
    }
    fn sin(self) -> Self {
        sin(self)
    }
    fn cos(self) -> Self {
        cos(self)
    }
    fn tan(self) -> Self {
        // tan z = -i tanh(iz).
        let t = tanh(Complex32::new(-self.im, self.re));
        Complex32::new(t.im, -t.re)
    }
    fn arcsin(self) -> Self {
        asin(self)
    }
    fn arccos(self) -> Self {
        acos(self)
    }
    fn arctan(self) -> Self {
        atan(self)
    }
    fn sinh(self) -> Self {
        sinh(self)
    }
    fn cosh(self) -> Self {
        cosh(self)
    }
    fn tanh(self) -> Self {
        tanh(self)
    }
    fn arcsinh(self) -> Self {
        asinh(self)
    }
    fn arccosh(self) -> Self {
        acosh(self)
    }
    fn arctanh(self) -> Self {
        atanh(self)
    }
    fn logaddexp(self, o: Self) -> Self {
        logaddexp(self, o)
    }
}
