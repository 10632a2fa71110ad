// arith.cuh: the per-dtype element arithmetic of element/ on the compute
// type TC (fx_add ... fx_isnan, fx_exp ... fx_sigmoid for inexact dtypes).

// ---------------------------------------------------------------------------
// Element arithmetic on the compute type TC (element/)
// ---------------------------------------------------------------------------
//
// Every dtype: fx_add fx_sub fx_mul fx_div fx_pow fx_max fx_min fx_neg
// fx_abs fx_sign fx_round fx_floor_divide fx_lt fx_le fx_eq, the tests
// fx_isnan fx_isinf fx_isfinite fx_isposinf fx_isneginf, identities fx_zero
// fx_one fx_lowest fx_highest. All but complex64: fx_floor fx_ceil fx_trunc
// fx_remainder. Bool and the integers: fx_bitwise_invert fx_bitwise_and
// fx_bitwise_or fx_bitwise_xor, and for the integers fx_left_shift
// fx_right_shift. Inexact types: fx_exp fx_log fx_log1p fx_log2 fx_log10
// fx_sqrt fx_rsqrt fx_sin fx_cos fx_tan fx_arcsin fx_arccos fx_arctan fx_sinh
// fx_cosh fx_tanh fx_arcsinh fx_arccosh fx_arctanh fx_logaddexp, and for the
// real floats fx_expm1 fx_sigmoid fx_erf fx_erfinv fx_arctan2 fx_gelu_approx
// fx_gelu_approx_derivative.

#if FX_IS_BOOL
// bool: add = or, sub = xor, mul = div = and, pow = a | !b, max = or, min = and.
__device__ __forceinline__ TC fx_b(bool v) { return (TC)(v ? 1 : 0); }
__device__ __forceinline__ TC fx_add(TC a, TC b) { return fx_b(a != 0 || b != 0); }
__device__ __forceinline__ TC fx_sub(TC a, TC b) { return fx_b((a != 0) != (b != 0)); }
__device__ __forceinline__ TC fx_mul(TC a, TC b) { return fx_b(a != 0 && b != 0); }
__device__ __forceinline__ TC fx_div(TC a, TC b) { return fx_b(a != 0 && b != 0); }
__device__ __forceinline__ TC fx_pow(TC a, TC b) { return fx_b(a != 0 || b == 0); }
__device__ __forceinline__ TC fx_max(TC a, TC b) { return fx_b(a != 0 || b != 0); }
__device__ __forceinline__ TC fx_min(TC a, TC b) { return fx_b(a != 0 && b != 0); }
__device__ __forceinline__ TC fx_neg(TC a) { return a; }
__device__ __forceinline__ TC fx_abs(TC a) { return a; }
__device__ __forceinline__ bool fx_eq(TC a, TC b) { return (a != 0) == (b != 0); }
__device__ __forceinline__ bool fx_lt(TC a, TC b) { return a == 0 && b != 0; }
__device__ __forceinline__ bool fx_le(TC a, TC b) { return fx_lt(a, b) || fx_eq(a, b); }
__device__ __forceinline__ bool fx_isnan(TC) { return false; }
__device__ __forceinline__ TC fx_zero() { return 0; }
__device__ __forceinline__ TC fx_one() { return 1; }
__device__ __forceinline__ TC fx_lowest() { return 0; }
__device__ __forceinline__ TC fx_highest() { return 1; }
// Sign and every rounding leave a bool unchanged; it is finite.
__device__ __forceinline__ TC fx_sign(TC a) { return a; }
__device__ __forceinline__ TC fx_floor(TC a) { return a; }
__device__ __forceinline__ TC fx_ceil(TC a) { return a; }
__device__ __forceinline__ TC fx_trunc(TC a) { return a; }
__device__ __forceinline__ TC fx_round(TC a) { return a; }
__device__ __forceinline__ bool fx_isinf(TC) { return false; }
__device__ __forceinline__ bool fx_isfinite(TC) { return true; }
__device__ __forceinline__ bool fx_isposinf(TC) { return false; }
__device__ __forceinline__ bool fx_isneginf(TC) { return false; }
// As the integers: x % 1 = 0 and x % 0 = x, so a and not b; x // y = a and b.
__device__ __forceinline__ TC fx_remainder(TC a, TC b) { return fx_b(a != 0 && b == 0); }
__device__ __forceinline__ TC fx_floor_divide(TC a, TC b) { return fx_b(a != 0 && b != 0); }
// Bitwise ops of bools are the logical ones.
__device__ __forceinline__ TC fx_bitwise_invert(TC a) { return fx_b(a == 0); }
__device__ __forceinline__ TC fx_bitwise_and(TC a, TC b) { return fx_b(a != 0 && b != 0); }
__device__ __forceinline__ TC fx_bitwise_or(TC a, TC b) { return fx_b(a != 0 || b != 0); }
__device__ __forceinline__ TC fx_bitwise_xor(TC a, TC b) { return fx_b((a != 0) != (b != 0)); }

#elif FX_IS_INT
// Integers wrap: arithmetic runs in an unsigned type of at least 32 bits
// (no signed overflow, no promotion to int) and is truncated back.
typedef FxSel<(sizeof(T) == 8), unsigned long long, unsigned int>::type FxUW;
__device__ __forceinline__ TC fx_add(TC a, TC b) { return (TC)((FxUW)a + (FxUW)b); }
__device__ __forceinline__ TC fx_sub(TC a, TC b) { return (TC)((FxUW)a - (FxUW)b); }
__device__ __forceinline__ TC fx_mul(TC a, TC b) { return (TC)((FxUW)a * (FxUW)b); }
__device__ __forceinline__ TC fx_neg(TC a) { return (TC)((FxUW)0 - (FxUW)a); }
// Truncating division; x / 0 = 0; MIN / -1 wraps to MIN.
__device__ __forceinline__ TC fx_div(TC a, TC b) {
    if (b == 0) return 0;
#if FX_IS_SIGNED
    if (b == (TC)-1) return fx_neg(a);
#endif
    return (TC)(a / b);
}
// Wrapping exponentiation by squaring; a negative exponent gives 0 (MLX).
__device__ __forceinline__ TC fx_pow(TC a, TC b) {
#if FX_IS_SIGNED
    if (b < 0) return 0;
#endif
    FxUW base = (FxUW)a, acc = 1;
    unsigned long long e = (unsigned long long)b;
    while (e != 0) {
        if (e & 1) acc *= base;
        base *= base;
        e >>= 1;
    }
    return (TC)acc;
}
__device__ __forceinline__ TC fx_max(TC a, TC b) { return a > b ? a : b; }
__device__ __forceinline__ TC fx_min(TC a, TC b) { return a < b ? a : b; }
__device__ __forceinline__ TC fx_abs(TC a) {
#if FX_IS_SIGNED
    return a < 0 ? fx_neg(a) : a;
#else
    return a;
#endif
}
__device__ __forceinline__ bool fx_eq(TC a, TC b) { return a == b; }
__device__ __forceinline__ bool fx_lt(TC a, TC b) { return a < b; }
__device__ __forceinline__ bool fx_le(TC a, TC b) { return a <= b; }
__device__ __forceinline__ bool fx_isnan(TC) { return false; }
__device__ __forceinline__ TC fx_zero() { return 0; }
__device__ __forceinline__ TC fx_one() { return 1; }
__device__ __forceinline__ TC fx_lowest() { return TDt::min_value(); }
__device__ __forceinline__ TC fx_highest() { return TDt::max_value(); }
// 1, 0 or -1 (the wrapped -1 for signed types; unsigned ones are 0 or 1).
__device__ __forceinline__ TC fx_sign(TC a) {
#if FX_IS_SIGNED
    return a > 0 ? (TC)1 : (a < 0 ? (TC)-1 : (TC)0);
#else
    return a > 0 ? (TC)1 : (TC)0;
#endif
}
// Integers are their own floor, ceiling, truncation and rounding; finite.
__device__ __forceinline__ TC fx_floor(TC a) { return a; }
__device__ __forceinline__ TC fx_ceil(TC a) { return a; }
__device__ __forceinline__ TC fx_trunc(TC a) { return a; }
__device__ __forceinline__ TC fx_round(TC a) { return a; }
__device__ __forceinline__ bool fx_isinf(TC) { return false; }
__device__ __forceinline__ bool fx_isfinite(TC) { return true; }
__device__ __forceinline__ bool fx_isposinf(TC) { return false; }
__device__ __forceinline__ bool fx_isneginf(TC) { return false; }
// Remainder with the divisor's sign (Python's %); x % 0 = x (MLX), and
// MIN % -1 wraps to 0.
__device__ __forceinline__ TC fx_remainder(TC a, TC b) {
    if (b == 0) return a;
#if FX_IS_SIGNED
    if (b == (TC)-1) return 0;
    TC r = (TC)(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? fx_add(r, b) : r;
#else
    return (TC)(a % b);
#endif
}
// Division rounded toward negative infinity (Python's //); x // 0 = 0, and
// MIN // -1 wraps to MIN.
__device__ __forceinline__ TC fx_floor_divide(TC a, TC b) {
    if (b == 0) return 0;
#if FX_IS_SIGNED
    if (b == (TC)-1) return fx_neg(a);
    TC q = (TC)(a / b);
    return ((TC)(a % b) != 0 && ((a < 0) != (b < 0))) ? fx_sub(q, (TC)1) : q;
#else
    return (TC)(a / b);
#endif
}
__device__ __forceinline__ TC fx_bitwise_invert(TC a) { return (TC)~a; }
__device__ __forceinline__ TC fx_bitwise_and(TC a, TC b) { return (TC)(a & b); }
__device__ __forceinline__ TC fx_bitwise_or(TC a, TC b) { return (TC)(a | b); }
__device__ __forceinline__ TC fx_bitwise_xor(TC a, TC b) { return (TC)(a ^ b); }
// Shifts as C on x86-64 (element/int.rs): types narrower than 32 bits and
// int32 shift as int, uint32 as unsigned, the 64-bit types as themselves;
// the count is taken modulo that width; right shifts of signed values are
// arithmetic. Left shifts run in the unsigned type of the same width (the
// same bits, no signed overflow).
#if defined(FX_DTYPE_U32) || defined(FX_DTYPE_U64) || defined(FX_DTYPE_I64)
typedef TC FxShiftW;
#else
typedef int FxShiftW;
#endif
__device__ __forceinline__ unsigned int fx_shift_count(TC b) {
    return (unsigned int)((unsigned long long)b & (sizeof(FxShiftW) * 8 - 1));
}
__device__ __forceinline__ TC fx_left_shift(TC a, TC b) { return (TC)((FxUW)(FxShiftW)a << fx_shift_count(b)); }
__device__ __forceinline__ TC fx_right_shift(TC a, TC b) { return (TC)((FxShiftW)a >> fx_shift_count(b)); }

#elif FX_IS_FLOAT
// Real floats (TC is float for f16/bf16/f32, double for f64).
__device__ __forceinline__ float fx_m_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double fx_m_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float fx_m_abs(float a) { return fabsf(a); }
__device__ __forceinline__ double fx_m_abs(double a) { return fabs(a); }
#if FX_IS_HALF
// Half floats keep 8 or 11 significant bits: the fast exponential (a few ulp
// of float) rounds to the same value but for rare ties, and keeps bf16/f16
// exp memory-bound instead of compute-bound.
__device__ __forceinline__ float fx_m_exp(float a) { return __expf(a); }
#else
__device__ __forceinline__ float fx_m_exp(float a) { return expf(a); }
#endif
__device__ __forceinline__ double fx_m_exp(double a) { return exp(a); }
__device__ __forceinline__ float fx_m_sqrt(float a) { return sqrtf(a); }
__device__ __forceinline__ double fx_m_sqrt(double a) { return sqrt(a); }
__device__ __forceinline__ float fx_m_floor(float a) { return floorf(a); }
__device__ __forceinline__ double fx_m_floor(double a) { return floor(a); }
__device__ __forceinline__ float fx_m_ceil(float a) { return ceilf(a); }
__device__ __forceinline__ double fx_m_ceil(double a) { return ceil(a); }
__device__ __forceinline__ float fx_m_trunc(float a) { return truncf(a); }
__device__ __forceinline__ double fx_m_trunc(double a) { return trunc(a); }
// Round half to even (rint in the default rounding mode).
__device__ __forceinline__ float fx_m_rint(float a) { return rintf(a); }
__device__ __forceinline__ double fx_m_rint(double a) { return rint(a); }
// C's fmod (Rust's %): exact, with the dividend's sign.
__device__ __forceinline__ float fx_m_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double fx_m_fmod(double a, double b) { return fmod(a, b); }

// An f64 result rounded to the module dtype as element/float.rs's from_f64
// rounds it, as TC (which the store then converts exactly): f32 rounds to
// nearest; f16 through f32, as half's f16::from_f64 does on x86-64 with
// F16C (f64 -> f32 -> f16); bf16 as half's bf16::from_f64 (rounding the
// top 32 bits of the double).
__device__ __forceinline__ TC fx_round64(double d) {
#if defined(FX_DTYPE_F64)
    return d;
#elif defined(FX_DTYPE_BF16)
    return fx_bf16_to_f32(fx_bf16_from_f64(d));
#else
    return (float)d;
#endif
}

#if defined(FX_DTYPE_F64)
// erf^-1 as element/float.rs's erfinv_f64: Giles' single-precision
// approximation as a start, then two Newton steps on erf (the polynomials
// with separate roundings, as Rust evaluates them).
__device__ __noinline__ double fx_erfinv_f64(double y) {
    if (y != y || fabs(y) > 1.0) return fx_dnan();
    if (fabs(y) == 1.0) return copysign(fx_dinf(), y);
    double w = -log((1.0 - y) * (1.0 + y));
    double x;
    if (w < 5.0) {
        const double c[8] = {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                             -0.00125372503, -0.00417768164, 0.246640727, 1.50140941};
        w = w - 2.5;
        double p = 2.81022636e-08;
#pragma unroll
        for (int k = 0; k < 8; ++k) p = __dadd_rn(c[k], __dmul_rn(p, w));
        x = p * y;
    } else {
        const double c[8] = {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                             -0.0076224613, 0.00943887047, 1.00167406, 2.83297682};
        w = sqrt(w) - 3.0;
        double p = -0.000200214257;
#pragma unroll
        for (int k = 0; k < 8; ++k) p = __dadd_rn(c[k], __dmul_rn(p, w));
        x = p * y;
    }
    // Newton on f(x) = erf(x) - y: f'(x) = 2/sqrt(pi) e^(-x^2).
    for (int k = 0; k < 2; ++k) {
        double err = erf(x) - y;
        x -= err / (1.12837916709551257389615890312154517 * exp(-x * x));
    }
    return x;
}
#endif

// The two-argument log-sum-exp of element/float.rs (MLX's formula).
__device__ __noinline__ double fx_logaddexp_f64(double a, double b) {
    bool a_hi = a > b || a != a;
    double hi = a_hi ? a : b, lo = a_hi ? b : a;
    if (lo == -fx_dinf() || hi == fx_dinf()) return hi;
    return hi + log1p(exp(lo - hi));
}

__device__ __forceinline__ TC fx_add(TC a, TC b) { return a + b; }
__device__ __forceinline__ TC fx_sub(TC a, TC b) { return a - b; }
__device__ __forceinline__ TC fx_mul(TC a, TC b) { return a * b; }
__device__ __forceinline__ TC fx_div(TC a, TC b) { return a / b; }
__device__ __forceinline__ TC fx_pow(TC a, TC b) { return fx_m_pow(a, b); }
// NaN propagates from either side.
__device__ __forceinline__ TC fx_max(TC a, TC b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ TC fx_min(TC a, TC b) { return (a < b || a != a) ? a : b; }
__device__ __forceinline__ TC fx_neg(TC a) { return -a; }
__device__ __forceinline__ TC fx_abs(TC a) { return fx_m_abs(a); }
// 1, 0 or -1; +0 for ±0 and NaN (MLX).
__device__ __forceinline__ TC fx_sign(TC a) { return (TC)((a > (TC)0) - (a < (TC)0)); }
__device__ __forceinline__ TC fx_floor(TC a) { return fx_m_floor(a); }
__device__ __forceinline__ TC fx_ceil(TC a) { return fx_m_ceil(a); }
__device__ __forceinline__ TC fx_trunc(TC a) { return fx_m_trunc(a); }
__device__ __forceinline__ TC fx_round(TC a) { return fx_m_rint(a); }
// Remainder with the divisor's sign (Python's %): fmod, moved into the
// divisor's sign by adding it; x % 0 is NaN.
__device__ __forceinline__ TC fx_remainder(TC a, TC b) {
    TC r = fx_m_fmod(a, b);
    return (r != (TC)0 && ((r < (TC)0) != (b < (TC)0))) ? r + b : r;
}
// floor(a / b) of the rounded quotient.
__device__ __forceinline__ TC fx_floor_divide(TC a, TC b) { return fx_m_floor(a / b); }
__device__ __forceinline__ bool fx_eq(TC a, TC b) { return a == b; }
__device__ __forceinline__ bool fx_lt(TC a, TC b) { return a < b; }
__device__ __forceinline__ bool fx_le(TC a, TC b) { return a <= b; }
__device__ __forceinline__ bool fx_isnan(TC a) { return a != a; }
__device__ __forceinline__ bool fx_isinf(TC a) { return fx_m_abs(a) == (TC)fx_inf_f32(); }
__device__ __forceinline__ bool fx_isfinite(TC a) { return fx_m_abs(a) < (TC)fx_inf_f32(); }
__device__ __forceinline__ bool fx_isposinf(TC a) { return a == (TC)fx_inf_f32(); }
__device__ __forceinline__ bool fx_isneginf(TC a) { return a == -(TC)fx_inf_f32(); }
__device__ __forceinline__ TC fx_zero() { return (TC)0; }
__device__ __forceinline__ TC fx_one() { return (TC)1; }
#if defined(FX_DTYPE_F64)
__device__ __forceinline__ TC fx_lowest() { return -fx_inf_f64(); }
__device__ __forceinline__ TC fx_highest() { return fx_inf_f64(); }
#else
__device__ __forceinline__ TC fx_lowest() { return -fx_inf_f32(); }
__device__ __forceinline__ TC fx_highest() { return fx_inf_f32(); }
#endif
// exp, sqrt and sigmoid compute in TC. The other functions take CUDA's
// float version for f16/bf16 (whose final rounding dominates its 1-2 ulp)
// and for f32 where CUDA bounds its error by 2 ulp (FX_FLOAT_MATH); where
// CUDA's float version may be off by more (tan, sinh, asinh, acosh, atanh,
// atan2: 3-4 ulp), f32 computes in double and rounds once (FX_F32_VIA_F64),
// as the CPU does. float64 uses the double functions.
#if defined(FX_DTYPE_F64)
#define FX_FLOAT_MATH(NAME, FF, DF) \
    __device__ __forceinline__ TC NAME(TC a) { return DF(a); }
#define FX_F32_VIA_F64(NAME, FF, DF) FX_FLOAT_MATH(NAME, FF, DF)
#else
#define FX_FLOAT_MATH(NAME, FF, DF) \
    __device__ __forceinline__ TC NAME(TC a) { return FF(a); }
#if defined(FX_DTYPE_F32)
#define FX_F32_VIA_F64(NAME, FF, DF) \
    __device__ __forceinline__ TC NAME(TC a) { return fx_round64(DF((double)a)); }
#else
#define FX_F32_VIA_F64(NAME, FF, DF) FX_FLOAT_MATH(NAME, FF, DF)
#endif
#endif
__device__ __forceinline__ TC fx_exp(TC a) { return fx_m_exp(a); }
__device__ __forceinline__ TC fx_sqrt(TC a) { return fx_m_sqrt(a); }
__device__ __forceinline__ TC fx_sigmoid(TC a) { return (TC)1 / ((TC)1 + fx_m_exp(-a)); }
FX_FLOAT_MATH(fx_expm1, expm1f, expm1)
FX_FLOAT_MATH(fx_log, logf, log)
FX_FLOAT_MATH(fx_log1p, log1pf, log1p)
FX_FLOAT_MATH(fx_log2, log2f, log2)
FX_FLOAT_MATH(fx_log10, log10f, log10)
FX_FLOAT_MATH(fx_rsqrt, rsqrtf, rsqrt)
FX_FLOAT_MATH(fx_sin, sinf, sin)
FX_FLOAT_MATH(fx_cos, cosf, cos)
FX_F32_VIA_F64(fx_tan, tanf, tan)
FX_FLOAT_MATH(fx_arcsin, asinf, asin)
FX_FLOAT_MATH(fx_arccos, acosf, acos)
FX_FLOAT_MATH(fx_arctan, atanf, atan)
FX_F32_VIA_F64(fx_sinh, sinhf, sinh)
FX_FLOAT_MATH(fx_cosh, coshf, cosh)
FX_FLOAT_MATH(fx_tanh, tanhf, tanh)
FX_F32_VIA_F64(fx_arcsinh, asinhf, asinh)
FX_F32_VIA_F64(fx_arccosh, acoshf, acosh)
FX_F32_VIA_F64(fx_arctanh, atanhf, atanh)
FX_FLOAT_MATH(fx_erf, erff, erf)
// erf^-1: float64 runs the CPU's algorithm; the narrower floats take
// CUDA's erfinvf (2 ulp).
#if defined(FX_DTYPE_F64)
__device__ __forceinline__ TC fx_erfinv(TC a) { return fx_erfinv_f64(a); }
#else
__device__ __forceinline__ TC fx_erfinv(TC a) { return erfinvf(a); }
#endif
// GELU's tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// and its derivative, in TC (float for the half types, as MLX's compiled
// formula computes them).
__device__ __forceinline__ TC fx_gelu_approx(TC x) {
    const TC u = (TC)0.7978845608028654 * (x + (TC)0.044715 * x * x * x);
    return (TC)0.5 * x * ((TC)1 + fx_tanh(u));
}
__device__ __forceinline__ TC fx_gelu_approx_derivative(TC x) {
    const TC x2 = x * x;
    const TC t = fx_tanh((TC)0.7978845608028654 * (x + (TC)0.044715 * x2 * x));
    return (TC)0.5 * ((TC)1 + t) +
           (TC)0.5 * x * ((TC)1 - t * t) * (TC)0.7978845608028654 * ((TC)1 + (TC)0.134145 * x2);
}
// The angle of the point (b, a) (atan2f may be off by 3 ulp: f32 goes
// through double).
#if FX_IS_HALF
__device__ __forceinline__ TC fx_arctan2(TC a, TC b) { return atan2f(a, b); }
#else
__device__ __forceinline__ TC fx_arctan2(TC a, TC b) { return fx_round64(atan2((double)a, (double)b)); }
#endif
__device__ __forceinline__ TC fx_logaddexp(TC a, TC b) { return fx_round64(fx_logaddexp_f64((double)a, (double)b)); }

#else  // complex64
__device__ __forceinline__ TC fx_add(TC a, TC b) { return fx_cadd(a, b); }
__device__ __forceinline__ TC fx_sub(TC a, TC b) { return fx_csub(a, b); }
__device__ __forceinline__ TC fx_mul(TC a, TC b) { return fx_cmul(a, b); }
__device__ __forceinline__ TC fx_div(TC a, TC b) { return fx_cdiv(a, b); }
__device__ __forceinline__ TC fx_pow(TC a, TC b) { return fx_cpow(a, b); }
__device__ __forceinline__ TC fx_max(TC a, TC b) { return (fx_clt(b, a) || fx_cisnan(a)) ? a : b; }
__device__ __forceinline__ TC fx_min(TC a, TC b) { return (fx_clt(a, b) || fx_cisnan(a)) ? a : b; }
__device__ __forceinline__ TC fx_neg(TC a) { return fx_cplx(-a.re, -a.im); }
__device__ __forceinline__ TC fx_abs(TC a) { return fx_cplx(fx_hypotf(a.re, a.im), 0.0f); }
// z / |z| in double (0 for 0).
__device__ __forceinline__ TC fx_sign(TC a) {
    double r = fx_hypotd(a.re, a.im);
    if (r == 0.0) return fx_cplx(0.0f, 0.0f);
    return fx_cd((double)a.re / r, (double)a.im / r);
}
// Each part rounded half to even.
__device__ __forceinline__ TC fx_round(TC a) { return fx_cplx(rintf(a.re), rintf(a.im)); }
// Complex quotient (MLX: the floor of a complex quotient leaves it).
__device__ __forceinline__ TC fx_floor_divide(TC a, TC b) { return fx_cdiv(a, b); }
__device__ __forceinline__ bool fx_eq(TC a, TC b) { return fx_ceq(a, b); }
__device__ __forceinline__ bool fx_lt(TC a, TC b) { return fx_clt(a, b); }
__device__ __forceinline__ bool fx_le(TC a, TC b) { return fx_clt(a, b) || fx_ceq(a, b); }
__device__ __forceinline__ bool fx_isnan(TC a) { return fx_cisnan(a); }
// Either part infinite; both parts finite.
__device__ __forceinline__ bool fx_isinf(TC a) { return fabsf(a.re) == fx_inf_f32() || fabsf(a.im) == fx_inf_f32(); }
__device__ __forceinline__ bool fx_isfinite(TC a) { return fabsf(a.re) < fx_inf_f32() && fabsf(a.im) < fx_inf_f32(); }
// Equality with ±inf + 0i (MLX).
__device__ __forceinline__ bool fx_isposinf(TC a) { return a.re == fx_inf_f32() && a.im == 0.0f; }
__device__ __forceinline__ bool fx_isneginf(TC a) { return a.re == -fx_inf_f32() && a.im == 0.0f; }
__device__ __forceinline__ TC fx_zero() { return fx_cplx(0.0f, 0.0f); }
__device__ __forceinline__ TC fx_one() { return fx_cplx(1.0f, 0.0f); }
__device__ __forceinline__ TC fx_lowest() { return fx_cplx(-fx_inf_f32(), -fx_inf_f32()); }
__device__ __forceinline__ TC fx_highest() { return fx_cplx(fx_inf_f32(), fx_inf_f32()); }
__device__ __forceinline__ TC fx_exp(TC a) { return fx_cexp(a); }
__device__ __forceinline__ TC fx_log(TC a) { return fx_cln(a); }
__device__ __forceinline__ TC fx_sqrt(TC a) { return fx_csqrt(a); }
__device__ __forceinline__ TC fx_sin(TC a) { return fx_csin(a); }
__device__ __forceinline__ TC fx_cos(TC a) { return fx_ccos(a); }
__device__ __forceinline__ TC fx_tanh(TC a) { return fx_ctanh(a); }
__device__ __forceinline__ TC fx_sigmoid(TC a) { return fx_cdiv(fx_one(), fx_cadd(fx_one(), fx_cexp(fx_neg(a)))); }
__device__ __forceinline__ TC fx_log1p(TC a) { return fx_clog1p(a); }
// ln z (rounded to complex64) divided by ln_b in double.
__device__ __forceinline__ TC fx_clog_base(TC a, double ln_b) {
    TC l = fx_cln(a);
    return fx_cd((double)l.re / ln_b, (double)l.im / ln_b);
}
__device__ __forceinline__ TC fx_log2(TC a) { return fx_clog_base(a, 0.693147180559945309417232121458176568); }
__device__ __forceinline__ TC fx_log10(TC a) { return fx_clog_base(a, 2.30258509299404568401799145468436421); }
// 1 / sqrt z as a complex quotient.
__device__ __forceinline__ TC fx_rsqrt(TC a) { return fx_cdiv(fx_one(), fx_csqrt(a)); }
__device__ __forceinline__ TC fx_tan(TC a) { return fx_ctan(a); }
__device__ __forceinline__ TC fx_arcsin(TC a) { return fx_casin(a); }
__device__ __forceinline__ TC fx_arccos(TC a) { return fx_cacos(a); }
__device__ __forceinline__ TC fx_arctan(TC a) { return fx_catan(a); }
__device__ __forceinline__ TC fx_sinh(TC a) { return fx_csinh(a); }
__device__ __forceinline__ TC fx_cosh(TC a) { return fx_ccosh(a); }
__device__ __forceinline__ TC fx_arcsinh(TC a) { return fx_casinh(a); }
__device__ __forceinline__ TC fx_arccosh(TC a) { return fx_cacosh(a); }
__device__ __forceinline__ TC fx_arctanh(TC a) { return fx_catanh(a); }
// MLX's formula hi + log1p(e^(lo - hi)) with the lexicographic maximum and
// minimum, in double and rounded once.
__device__ __noinline__ TC fx_logaddexp(TC a, TC b) {
    TC hi = fx_max(a, b), lo = fx_min(a, b);
    if ((lo.re == -fx_inf_f32() && lo.im == 0.0f) || hi.re == fx_inf_f32()) return hi;
    fx_z e = fx_exp_parts((double)lo.re - (double)hi.re, (double)lo.im - (double)hi.im);
    fx_z l = fx_log1p_parts(e.re, e.im);
    return fx_cd((double)hi.re + l.re, (double)hi.im + l.im);
}
#endif

