// complex.cuh: complex64 arithmetic and elementary functions, the formulas
// of element/complex.rs (C99 Annex G special values, computed in double and
// rounded once, like Rust: no FMA).

// ---------------------------------------------------------------------------
// Complex arithmetic (num_complex formulas, rounded like Rust: no FMA)
// ---------------------------------------------------------------------------

// sqrt(x^2 + y^2) in double as glibc's hypot (what f64::hypot calls), which
// is correctly rounded but for rare near-ties; CUDA's hypot is within 2 ulp,
// which the cancelling complex formulas below would turn into visible
// differences (|0.866.. + 0.5i| must be exactly 1). The sum of squares is
// formed exactly as a double-double (FMA error terms), then a square root
// and one Newton correction; scaled by 2^±600 away from over- and underflow.
__device__ __noinline__ double fx_hypot(double x, double y) {
    x = fabs(x);
    y = fabs(y);
    if (x == fx_inf_f64() || y == fx_inf_f64()) return fx_inf_f64();
    if (x != x || y != y) return x + y;
    double hi = x > y ? x : y, lo = x > y ? y : x;
    if (hi == 0.0) return 0.0;
    double scale = 1.0;
    if (hi > 0x1p+500) {
        scale = 0x1p+600;
        hi *= 0x1p-600;
        lo *= 0x1p-600;
    } else if (hi < 0x1p-500) {
        scale = 0x1p-600;
        hi *= 0x1p+600;
        lo *= 0x1p+600;
    }
    double p1 = __dmul_rn(hi, hi), e1 = fma(hi, hi, -p1);
    double p2 = __dmul_rn(lo, lo), e2 = fma(lo, lo, -p2);
    double sh = __dadd_rn(p1, p2);
    double sl = __dadd_rn(__dadd_rn(__dadd_rn(__dsub_rn(p1, sh), p2), e1), e2);  // p1 >= p2: exact tail
    double r = __dsqrt_rn(sh);
    r = __dadd_rn(r, __ddiv_rn(__dadd_rn(fma(-r, r, sh), sl), __dmul_rn(2.0, r)));
    return __dmul_rn(r, scale);
}
// |(x, y)| of float parts in double (f64::hypot of the widened parts).
__device__ __forceinline__ double fx_hypotd(float x, float y) { return fx_hypot((double)x, (double)y); }
// |(x, y)| rounded to float (element/complex.rs's abs: f64::hypot as f32).
__device__ __forceinline__ float fx_hypotf(float x, float y) { return (float)fx_hypotd(x, y); }

__device__ __forceinline__ fx_c64 fx_cadd(fx_c64 a, fx_c64 b) { return fx_cplx(a.re + b.re, a.im + b.im); }
__device__ __forceinline__ fx_c64 fx_csub(fx_c64 a, fx_c64 b) { return fx_cplx(a.re - b.re, a.im - b.im); }
// Product and quotient with C99 Annex G's recovery of infinities (as
// std::complex, so MLX), in double: element/complex.rs has the same code.
__device__ __forceinline__ fx_c64 fx_cd(double re, double im) { return fx_cplx((float)re, (float)im); }
__device__ __forceinline__ double fx_dinf() { return __longlong_as_double(0x7ff0000000000000ll); }
__device__ __forceinline__ double fx_unit_if_inf(double v) { return copysign(isinf(v) ? 1.0 : 0.0, v); }
__device__ __forceinline__ double fx_zero_if_nan(double v) { return isnan(v) ? copysign(0.0, v) : v; }
// A complex result in double, before its one rounding (the f64 pairs of
// element/complex.rs's *_parts functions).
struct fx_z {
    double re, im;
};
__device__ __forceinline__ fx_z fx_zmk(double re, double im) {
    fx_z z;
    z.re = re;
    z.im = im;
    return z;
}
__device__ __forceinline__ fx_c64 fx_zc64(fx_z z) { return fx_cd(z.re, z.im); }

// The product (a + ib)(c + id) in double, before its rounding.
__device__ __noinline__ fx_z fx_cmul_parts(double a, double b, double c, double d) {
    double ac = a * c, bd = b * d, ad = a * d, bc = b * c;
    double x = ac - bd, y = ad + bc;
    if (!(isnan(x) && isnan(y))) return fx_zmk(x, y);
    bool recalc = false;
    if (isinf(a) || isinf(b)) {
        a = fx_unit_if_inf(a); b = fx_unit_if_inf(b);
        c = fx_zero_if_nan(c); d = fx_zero_if_nan(d);
        recalc = true;
    }
    if (isinf(c) || isinf(d)) {
        c = fx_unit_if_inf(c); d = fx_unit_if_inf(d);
        a = fx_zero_if_nan(a); b = fx_zero_if_nan(b);
        recalc = true;
    }
    if (!recalc && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {
        a = fx_zero_if_nan(a); b = fx_zero_if_nan(b); c = fx_zero_if_nan(c); d = fx_zero_if_nan(d);
        recalc = true;
    }
    if (recalc) return fx_zmk(fx_dinf() * (a * c - b * d), fx_dinf() * (a * d + b * c));
    return fx_zmk(x, y);
}
__device__ __forceinline__ fx_c64 fx_cmul(fx_c64 z, fx_c64 w) { return fx_zc64(fx_cmul_parts(z.re, z.im, w.re, w.im)); }
__device__ __noinline__ fx_c64 fx_cdiv(fx_c64 z, fx_c64 w) {
    double a = z.re, b = z.im, c = w.re, d = w.im;
    double denom = c * c + d * d;
    double x = (a * c + b * d) / denom, y = (b * c - a * d) / denom;
    if (!(isnan(x) && isnan(y))) return fx_cd(x, y);
    if (denom == 0.0 && (!isnan(a) || !isnan(b))) {
        double inf = copysign(fx_dinf(), c);
        return fx_cd(inf * a, inf * b);
    }
    if ((isinf(a) || isinf(b)) && isfinite(c) && isfinite(d)) {
        a = fx_unit_if_inf(a); b = fx_unit_if_inf(b);
        return fx_cd(fx_dinf() * (a * c + b * d), fx_dinf() * (b * c - a * d));
    }
    if ((isinf(c) || isinf(d)) && isfinite(a) && isfinite(b)) {
        c = fx_unit_if_inf(c); d = fx_unit_if_inf(d);
        return fx_cd(0.0 * (a * c + b * d), 0.0 * (b * c - a * d));
    }
    return fx_cd(x, y);
}
__device__ __forceinline__ bool fx_ceq(fx_c64 a, fx_c64 b) { return a.re == b.re && a.im == b.im; }
__device__ __forceinline__ bool fx_cisnan(fx_c64 a) { return a.re != a.re || a.im != a.im; }
// Lexicographic, as NumPy.
__device__ __forceinline__ bool fx_clt(fx_c64 a, fx_c64 b) { return a.re < b.re || (a.re == b.re && a.im < b.im); }

// Elementary functions with C99 Annex G's special values, computed in
// double and rounded once: the same formulas as element/complex.rs.
__device__ __forceinline__ double fx_dnan() { return __longlong_as_double(0x7ff8000000000000ll); }
__device__ __forceinline__ bool fx_dfinite(double v) { return fabs(v) < fx_dinf(); }
__device__ __forceinline__ bool fx_disinf(double v) { return fabs(v) == fx_dinf(); }

// e^(x + iy).
__device__ __noinline__ fx_z fx_exp_parts(double x, double y) {
    if (y == 0.0) return fx_zmk(exp(x), y);
    if (fx_disinf(x)) {
        if (!fx_dfinite(y)) return x > 0.0 ? fx_zmk(x, fx_dnan()) : fx_zmk(0.0, 0.0);
        double r = exp(x);
        return fx_zmk(r * cos(y), r * sin(y));
    }
    if (x != x || !fx_dfinite(y)) return fx_zmk(fx_dnan(), fx_dnan());
    double r = exp(x);
    return fx_zmk(r * cos(y), r * sin(y));
}
// ln(x + iy), the cut along the negative real axis.
__device__ __forceinline__ fx_z fx_ln_parts(double x, double y) { return fx_zmk(log(fx_hypot(x, y)), atan2(y, x)); }
// The principal square root of x + iy (the sign of a zero imaginary part
// picks the side of the cut).
__device__ __noinline__ fx_z fx_sqrt_parts(double x, double y) {
    if (fx_disinf(y)) return fx_zmk(fx_dinf(), y);
    if (x != x) return fx_zmk(fx_dnan(), fx_dnan());
    if (fx_disinf(x)) {
        if (x > 0.0) return fx_zmk(x, y != y ? y : copysign(0.0, y));
        return fx_zmk(y != y ? fx_dnan() : 0.0, copysign(fx_dinf(), y));
    }
    if (y != y) return fx_zmk(fx_dnan(), fx_dnan());
    if (x == 0.0 && y == 0.0) return fx_zmk(0.0, y);
    double t = sqrt((fabs(x) + fx_hypot(x, y)) / 2.0);
    if (x >= 0.0) return fx_zmk(t, y / (2.0 * t));
    return fx_zmk(fabs(y) / (2.0 * t), copysign(t, y));
}
__device__ __noinline__ fx_c64 fx_cexp(fx_c64 z) { return fx_zc64(fx_exp_parts(z.re, z.im)); }
__device__ __noinline__ fx_c64 fx_cln(fx_c64 z) { return fx_zc64(fx_ln_parts(z.re, z.im)); }
__device__ __noinline__ fx_c64 fx_csqrt(fx_c64 z) { return fx_zc64(fx_sqrt_parts(z.re, z.im)); }
// sinh(x + iy) as double parts.
__device__ __forceinline__ void fx_sinh_parts(double x, double y, double* re, double* im) {
    if (y == 0.0) { *re = sinh(x); *im = y; return; }
    if (x == 0.0) { *re = fx_dfinite(y) ? x * cos(y) : x; *im = sin(y); return; }
    if (!fx_dfinite(y)) { *re = fx_disinf(x) ? fx_dinf() : fx_dnan(); *im = fx_dnan(); return; }
    if (x != x) { *re = fx_dnan(); *im = fx_dnan(); return; }
    *re = sinh(x) * cos(y);
    *im = cosh(x) * sin(y);
}
// cosh(x + iy) as double parts.
__device__ __forceinline__ void fx_cosh_parts(double x, double y, double* re, double* im) {
    if (y == 0.0) { *re = cosh(x); *im = x != x ? y : y * copysign(1.0, x); return; }
    if (x == 0.0) {
        if (fx_dfinite(y)) { *re = cos(y); *im = x * sin(y); } else { *re = fx_dnan(); *im = 0.0; }
        return;
    }
    if (!fx_dfinite(y)) { *re = fx_disinf(x) ? fx_dinf() : fx_dnan(); *im = fx_dnan(); return; }
    if (x != x) { *re = fx_dnan(); *im = fx_dnan(); return; }
    *re = cosh(x) * cos(y);
    *im = sinh(x) * sin(y);
}
// sin z = -i sinh(iz); an infinite imaginary part beside a NaN is +inf (NumPy).
__device__ __noinline__ fx_c64 fx_csin(fx_c64 z) {
    double u, v;
    fx_sinh_parts(-(double)z.im, (double)z.re, &u, &v);
    return fx_cd(v, (v != v && fx_disinf(u)) ? fx_dinf() : -u);
}
// cos z = cosh(iz).
__device__ __noinline__ fx_c64 fx_ccos(fx_c64 z) {
    double re, im;
    fx_cosh_parts(-(double)z.im, (double)z.re, &re, &im);
    return fx_cd(re, im);
}
__device__ __noinline__ fx_c64 fx_ctanh(fx_c64 z) {
    double x = z.re, y = z.im;
    if (fx_disinf(x)) return fx_cd(copysign(1.0, x), fx_dfinite(y) ? copysign(0.0, sin(2.0 * y)) : copysign(0.0, y));
    if (x != x) return y == 0.0 ? fx_cd(fx_dnan(), y) : fx_cd(fx_dnan(), fx_dnan());
    if (!fx_dfinite(y)) return x == 0.0 ? fx_cd(x, fx_dnan()) : fx_cd(fx_dnan(), fx_dnan());
    if (y == 0.0) return fx_cd(tanh(x), y);
    if (fabs(x) > 20.0) return fx_cd(copysign(1.0, x), 4.0 * sin(y) * cos(y) * exp(-2.0 * fabs(x)));
    double d = cosh(2.0 * x) + cos(2.0 * y);
    return fx_cd(sinh(2.0 * x) / d, sin(2.0 * y) / d);
}

// sinh z.
__device__ __noinline__ fx_c64 fx_csinh(fx_c64 z) {
    double re, im;
    fx_sinh_parts((double)z.re, (double)z.im, &re, &im);
    return fx_cd(re, im);
}
// cosh z.
__device__ __noinline__ fx_c64 fx_ccosh(fx_c64 z) {
    double re, im;
    fx_cosh_parts((double)z.re, (double)z.im, &re, &im);
    return fx_cd(re, im);
}
// tan z = -i tanh(iz).
__device__ __noinline__ fx_c64 fx_ctan(fx_c64 z) {
    fx_c64 t = fx_ctanh(fx_cplx(-z.im, z.re));
    return fx_cplx(t.im, -t.re);
}


// ---------------------------------------------------------------------------
// Inverse functions, log1p, pow and logaddexp (element/complex.rs)
// ---------------------------------------------------------------------------
//
// The same formulas in double, operation for operation; products that Rust
// rounds separately go through __dmul_rn/__dadd_rn/__dsub_rn so that none
// is contracted into an FMA.

// ln(1 + x + iy), MLX's formula: for |z| < 0.5, log1p of |1 + z|^2 - 1
// computed without cancellation, halved.
__device__ __noinline__ fx_z fx_log1p_parts(double x, double y) {
    double theta = atan2(y, x + 1.0);
    if (fx_hypot(x, y) < 0.5) {
        double r = __dadd_rn(__dmul_rn(x, 2.0 + x), __dmul_rn(y, y));
        if (r == 0.0) return fx_zmk(x, theta);
        return fx_zmk(__dmul_rn(0.5, log1p(r)), theta);
    }
    return fx_zmk(log(fx_hypot(x + 1.0, y)), theta);
}
// asin(x + iy), Kahan's formula from sqrt(1 + z) and sqrt(1 - z):
// (atan2(x, Re(sqrt(1-z) sqrt(1+z))), asinh(Im(conj(sqrt(1-z)) sqrt(1+z)))).
__device__ __noinline__ fx_z fx_asin_parts(double x, double y) {
    // Infinite and NaN parts: C99 Annex G's values, as element/complex.rs.
    if (fx_disinf(x) || fx_disinf(y)) return fx_zmk(atan2(x, fabs(y)), copysign(fx_dinf(), y));
    if (x == 0.0 && y != y) return fx_zmk(x, y);
    fx_z p = fx_sqrt_parts(1.0 + x, y), m = fx_sqrt_parts(1.0 - x, -y);
    return fx_zmk(atan2(x, __dsub_rn(__dmul_rn(m.re, p.re), __dmul_rn(m.im, p.im))),
                  asinh(__dsub_rn(__dmul_rn(m.re, p.im), __dmul_rn(m.im, p.re))));
}
// acos(x + iy), Kahan's formula:
// (2 atan2(Re sqrt(1-z), Re sqrt(1+z)), asinh(Im(conj(sqrt(1+z)) sqrt(1-z)))).
__device__ __noinline__ fx_z fx_acos_parts(double x, double y) {
    if (fx_disinf(x) || fx_disinf(y)) return fx_zmk(atan2(fabs(y), x), -copysign(fx_dinf(), y));
    if (x == 0.0 && y != y) return fx_zmk(1.5707963267948966, y);
    fx_z p = fx_sqrt_parts(1.0 + x, y), m = fx_sqrt_parts(1.0 - x, -y);
    return fx_zmk(__dmul_rn(2.0, atan2(m.re, p.re)), asinh(__dsub_rn(__dmul_rn(p.re, m.im), __dmul_rn(p.im, m.re))));
}
// acosh(x + iy), Kahan's formula:
// (asinh(Re(conj(sqrt(z-1)) sqrt(z+1))), 2 atan2(Im sqrt(z-1), Re sqrt(z+1))).
__device__ __noinline__ fx_z fx_acosh_parts(double x, double y) {
    if (fx_disinf(x) || fx_disinf(y)) return fx_zmk(fx_dinf(), atan2(y, x));
    fx_z p = fx_sqrt_parts(x + 1.0, y), m = fx_sqrt_parts(x - 1.0, y);
    return fx_zmk(asinh(__dadd_rn(__dmul_rn(m.re, p.re), __dmul_rn(m.im, p.im))), __dmul_rn(2.0, atan2(m.im, p.re)));
}
// atanh(x + iy) = (ln(1 + z) - ln(1 - z)) / 2; below |z| = 1e-5 the series
// z + z^3 / 3.
__device__ __noinline__ fx_z fx_atanh_parts(double x, double y) {
    if (fx_disinf(x) || fx_disinf(y)) return fx_zmk(copysign(0.0, x), y != y ? y : copysign(1.5707963267948966, y));
    if (x == 0.0 && y != y) return fx_zmk(x, y);
    if (fx_hypot(x, y) < 1e-5) {
        double r2 = __dsub_rn(__dmul_rn(x, x), __dmul_rn(y, y)), i2 = __dmul_rn(__dmul_rn(2.0, x), y);
        double r3 = __dsub_rn(__dmul_rn(r2, x), __dmul_rn(i2, y)), i3 = __dadd_rn(__dmul_rn(r2, y), __dmul_rn(i2, x));
        return fx_zmk(x + r3 / 3.0, y + i3 / 3.0);
    }
    fx_z p = fx_log1p_parts(x, y), m = fx_log1p_parts(-x, -y);
    return fx_zmk((p.re - m.re) / 2.0, (p.im - m.im) / 2.0);
}
__device__ __noinline__ fx_c64 fx_clog1p(fx_c64 z) { return fx_zc64(fx_log1p_parts(z.re, z.im)); }
__device__ __noinline__ fx_c64 fx_casin(fx_c64 z) { return fx_zc64(fx_asin_parts(z.re, z.im)); }
__device__ __noinline__ fx_c64 fx_cacos(fx_c64 z) { return fx_zc64(fx_acos_parts(z.re, z.im)); }
__device__ __noinline__ fx_c64 fx_cacosh(fx_c64 z) { return fx_zc64(fx_acosh_parts(z.re, z.im)); }
__device__ __noinline__ fx_c64 fx_catanh(fx_c64 z) { return fx_zc64(fx_atanh_parts(z.re, z.im)); }
// atan z = -i atanh(iz).
__device__ __noinline__ fx_c64 fx_catan(fx_c64 z) {
    fx_z t = fx_atanh_parts(-(double)z.im, (double)z.re);
    return fx_cd(t.im, -t.re);
}
// asinh z = -i asin(iz).
__device__ __noinline__ fx_c64 fx_casinh(fx_c64 z) {
    fx_z t = fx_asin_parts(-(double)z.im, (double)z.re);
    return fx_cd(t.im, -t.re);
}
// a^b = e^(b ln a) with the product's recovery of infinities (MLX's
// formula, no special case for a = 0), in double, rounded once.
__device__ __noinline__ fx_c64 fx_cpow(fx_c64 a, fx_c64 b) {
    fx_z l = fx_ln_parts(a.re, a.im);
    fx_z e = fx_cmul_parts(b.re, b.im, l.re, l.im);
    return fx_zc64(fx_exp_parts(e.re, e.im));
}
