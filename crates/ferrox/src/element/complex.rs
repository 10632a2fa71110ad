//! Complex64 elementary functions with C99 Annex G's special values (what
//! NumPy and MLX return for infinite, NaN and signed-zero inputs). Each is
//! computed in f64 and rounded once, which also keeps intermediate
//! overflow (e^x for x near f32's range) from turning finite results into
//! infinities or NaNs.

use num_complex::Complex32;

/// Product with C99 Annex G's recovery of infinities (what `std::complex`
/// and so MLX compute): a product with an infinite factor is infinite even
/// where the textbook formula gives NaN.
pub fn mul(z: Complex32, w: Complex32) -> Complex32 {
    let ((mut a, mut b), (mut c, mut d)) = (parts(z), parts(w));
    let (ac, bd, ad, bc) = (a * c, b * d, a * d, b * c);
    let (x, y) = (ac - bd, ad + bc);
    if !(x.is_nan() && y.is_nan()) {
        return cx(x, y);
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
        return cx(f64::INFINITY * (a * c - b * d), f64::INFINITY * (a * d + b * c));
    }
    cx(x, y)
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
    let (x, y) = parts(z);
    if y == 0.0 {
        return cx(x.exp(), y);
    }
    if x.is_infinite() {
        if !y.is_finite() {
            // e^(+inf + i inf) = ±inf + i NaN; e^(-inf + i inf) = ±0 ± i0.
            return if x > 0.0 { cx(x, f64::NAN) } else { cx(0.0, 0.0) };
        }
        // +inf·cis(y), or signed zeros for -inf.
        let r = x.exp();
        return cx(r * y.cos(), r * y.sin());
    }
    if x.is_nan() || !y.is_finite() {
        return cx(f64::NAN, f64::NAN);
    }
    let r = x.exp();
    cx(r * y.cos(), r * y.sin())
}

/// Natural logarithm, with the branch cut along the negative real axis.
pub fn ln(z: Complex32) -> Complex32 {
    let (x, y) = parts(z);
    cx(x.hypot(y).ln(), y.atan2(x))
}

/// Principal square root.
pub fn sqrt(z: Complex32) -> Complex32 {
    let (x, y) = parts(z);
    if y.is_infinite() {
        return cx(f64::INFINITY, y);
    }
    if x.is_nan() {
        return cx(f64::NAN, f64::NAN);
    }
    if x.is_infinite() {
        return if x > 0.0 {
            cx(x, if y.is_nan() { y } else { 0.0f64.copysign(y) })
        } else {
            cx(if y.is_nan() { f64::NAN } else { 0.0 }, f64::INFINITY.copysign(y))
        };
    }
    if y.is_nan() {
        return cx(f64::NAN, f64::NAN);
    }
    if x == 0.0 && y == 0.0 {
        return cx(0.0, y);
    }
    let t = ((x.abs() + x.hypot(y)) / 2.0).sqrt();
    if x >= 0.0 {
        cx(t, y / (2.0 * t))
    } else {
        cx(y.abs() / (2.0 * t), t.copysign(y))
    }
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
