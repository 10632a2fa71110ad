// dtype.cuh: storage types of the 14 dtypes, their cast tags, the module's
// element type T, its compute type TC and the FX_IS_* flags.

// ---------------------------------------------------------------------------
// Storage types of the 14 dtypes
// ---------------------------------------------------------------------------

typedef unsigned char fx_bool;  // 0 or 1; same C type as fx_u8, never overload on it
typedef unsigned char fx_u8;
typedef unsigned short fx_u16;
typedef unsigned int fx_u32;
typedef unsigned long long fx_u64;
typedef signed char fx_i8;
typedef short fx_i16;
typedef int fx_i32;
typedef long long fx_i64;
struct alignas(2) fx_f16 {
    unsigned short bits;
};
struct alignas(2) fx_bf16 {
    unsigned short bits;
};
typedef float fx_f32;
typedef double fx_f64;
struct alignas(8) fx_c64 {
    float re, im;
};

__device__ __forceinline__ fx_c64 fx_cplx(float re, float im) {
    fx_c64 z;
    z.re = re;
    z.im = im;
    return z;
}

__device__ __forceinline__ float fx_inf_f32() { return __uint_as_float(0x7f800000u); }
__device__ __forceinline__ double fx_inf_f64() { return __longlong_as_double(0x7ff0000000000000ll); }

// ---- f16 (IEEE binary16) through PTX conversions ----

__device__ __forceinline__ float fx_f16_to_f32(fx_f16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    return f;
}
__device__ __forceinline__ fx_f16 fx_f16_from_f32(float f) {
    fx_f16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}
// One rounding straight from double.
__device__ __forceinline__ fx_f16 fx_f16_from_f64(double d) {
    fx_f16 h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h.bits) : "d"(d));
    return h;
}

// ---- bf16 by bit operations (as the `half` crate) ----

__device__ __forceinline__ float fx_bf16_to_f32(fx_bf16 h) { return __uint_as_float((unsigned int)h.bits << 16); }

// Round to nearest even; NaN stays a (quiet) NaN. From sm_80 on, one
// instruction does it (a NaN then becomes the canonical NaN rather than
// keeping its payload).
__device__ __forceinline__ fx_bf16 fx_bf16_from_f32(float f) {
    fx_bf16 h;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
    unsigned int x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        h.bits = (unsigned short)((x >> 16) | 0x0040u);
    } else if ((x & 0x8000u) != 0 && (x & (3u * 0x8000u - 1u)) != 0) {
        h.bits = (unsigned short)((x >> 16) + 1u);
    } else {
        h.bits = (unsigned short)(x >> 16);
    }
#endif
    return h;
}

// The `half` crate's bf16::from_f64 bit for bit (the CPU backend's cast):
// rounds the top 32 bits of the double to nearest even.
__device__ __forceinline__ fx_bf16 fx_bf16_from_f64(double value) {
    unsigned long long val = (unsigned long long)__double_as_longlong(value);
    unsigned int x = (unsigned int)(val >> 32);
    unsigned int sign = x & 0x80000000u;
    unsigned int exp = x & 0x7ff00000u;
    unsigned int man = x & 0x000fffffu;
    fx_bf16 h;
    if (exp == 0x7ff00000u) {  // infinity or NaN
        unsigned int nan_bit = (man == 0 && (unsigned int)val == 0) ? 0u : 0x0040u;
        h.bits = (unsigned short)((sign >> 16) | 0x7f80u | nan_bit | (man >> 13));
        return h;
    }
    unsigned int half_sign = sign >> 16;
    int half_exp = (int)(exp >> 20) - 1023 + 127;
    if (half_exp >= 0xff) {  // overflow
        h.bits = (unsigned short)(half_sign | 0x7f80u);
        return h;
    }
    if (half_exp <= 0) {  // subnormal or zero
        if (7 - half_exp > 21) {
            h.bits = (unsigned short)half_sign;
            return h;
        }
        man |= 0x00100000u;
        unsigned int half_man = man >> (14 - half_exp);
        unsigned int round_bit = 1u << (13 - half_exp);
        if ((man & round_bit) != 0 && (man & (3u * round_bit - 1u)) != 0) half_man += 1u;
        h.bits = (unsigned short)(half_sign | half_man);
        return h;
    }
    unsigned int bits = half_sign | ((unsigned int)half_exp << 7) | (man >> 13);
    const unsigned int round_bit = 0x1000u;
    if ((man & round_bit) != 0 && (man & (3u * round_bit - 1u)) != 0) bits += 1u;
    h.bits = (unsigned short)bits;
    return h;
}

// ---------------------------------------------------------------------------
// Dtype tags: C type + casts from each kind of scalar (Element::from_scalar)
// ---------------------------------------------------------------------------
//
// Every tag has `type` and from_bool / from_i64 / from_u64 / from_f64 /
// from_c64(re, im), matching the Scalar variants Bool, Int, UInt, Float and
// Complex of element.rs.

// Float -> integer as C's conversion behaves on x86-64, which is what NumPy
// and MLX return (element.rs has the same rules): truncate toward zero; NaN
// and values outside the range of the 32- or 64-bit conversion instruction
// give its "integer indefinite" value (the minimum), then the result wraps
// to the target. Targets up to 16 bits and int32 use the 32-bit conversion,
// uint32 and int64 the 64-bit one; uint64 subtracts 2^63 from large values.
__device__ __forceinline__ int fx_cvt32(double v) {
    return (v > -2147483649.0 && v < 2147483648.0) ? (int)v : (int)0x80000000u;
}
__device__ __forceinline__ long long fx_cvt64(double v) {
    return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (long long)v
                                                                         : (long long)0x8000000000000000ull;
}
__device__ __forceinline__ unsigned long long fx_cvt_u64(double v) {
    if (v >= 9223372036854775808.0) {
        return (unsigned long long)fx_cvt64(v - 9223372036854775808.0) ^ 0x8000000000000000ull;
    }
    return (unsigned long long)fx_cvt64(v);
}

#define FX_INT_TAG(TAG, I, IMIN, IMAX, FROM_F64)                                                                 \
    struct TAG {                                                                                                \
        typedef I type;                                                                                         \
        static __device__ __forceinline__ I min_value() { return (I)(IMIN); }                                   \
        static __device__ __forceinline__ I max_value() { return (I)(IMAX); }                                   \
        static __device__ __forceinline__ I from_bool(bool b) { return (I)(b ? 1 : 0); }                        \
        /* wrapping (two's complement truncation) */                                                            \
        static __device__ __forceinline__ I from_i64(long long v) { return (I)(unsigned long long)v; }          \
        static __device__ __forceinline__ I from_u64(unsigned long long v) { return (I)v; }                     \
        static __device__ __forceinline__ I from_f64(double v) { return (I)FROM_F64(v); }                       \
        static __device__ __forceinline__ I from_c64(float re, float) { return from_f64((double)re); }          \
    };

FX_INT_TAG(DtU8, fx_u8, 0, 0xff, fx_cvt32)
FX_INT_TAG(DtU16, fx_u16, 0, 0xffff, fx_cvt32)
FX_INT_TAG(DtU32, fx_u32, 0, 0xffffffffu, fx_cvt64)
FX_INT_TAG(DtU64, fx_u64, 0, 0xffffffffffffffffull, fx_cvt_u64)
FX_INT_TAG(DtI8, fx_i8, -128, 127, fx_cvt32)
FX_INT_TAG(DtI16, fx_i16, -32768, 32767, fx_cvt32)
FX_INT_TAG(DtI32, fx_i32, (-2147483647 - 1), 2147483647, fx_cvt32)
FX_INT_TAG(DtI64, fx_i64, (-9223372036854775807ll - 1), 9223372036854775807ll, fx_cvt64)
#undef FX_INT_TAG

struct DtBool {
    typedef fx_bool type;
    static __device__ __forceinline__ fx_bool from_bool(bool b) { return (fx_bool)(b ? 1 : 0); }
    static __device__ __forceinline__ fx_bool from_i64(long long v) { return (fx_bool)(v != 0); }
    static __device__ __forceinline__ fx_bool from_u64(unsigned long long v) { return (fx_bool)(v != 0); }
    static __device__ __forceinline__ fx_bool from_f64(double v) { return (fx_bool)(v != 0.0); }
    static __device__ __forceinline__ fx_bool from_c64(float re, float im) {
        return (fx_bool)(re != 0.0f || im != 0.0f);
    }
};

// Real floats: every scalar goes through f64 first (int -> f64 -> target).
struct DtF16 {
    typedef fx_f16 type;
    static __device__ __forceinline__ fx_f16 from_f64(double v) { return fx_f16_from_f64(v); }
    static __device__ __forceinline__ fx_f16 from_bool(bool b) { return from_f64(b ? 1.0 : 0.0); }
    static __device__ __forceinline__ fx_f16 from_i64(long long v) { return from_f64((double)v); }
    static __device__ __forceinline__ fx_f16 from_u64(unsigned long long v) { return from_f64((double)v); }
    static __device__ __forceinline__ fx_f16 from_c64(float re, float) { return from_f64((double)re); }
};
struct DtBF16 {
    typedef fx_bf16 type;
    static __device__ __forceinline__ fx_bf16 from_f64(double v) { return fx_bf16_from_f64(v); }
    static __device__ __forceinline__ fx_bf16 from_bool(bool b) { return from_f64(b ? 1.0 : 0.0); }
    static __device__ __forceinline__ fx_bf16 from_i64(long long v) { return from_f64((double)v); }
    static __device__ __forceinline__ fx_bf16 from_u64(unsigned long long v) { return from_f64((double)v); }
    static __device__ __forceinline__ fx_bf16 from_c64(float re, float) { return from_f64((double)re); }
};
struct DtF32 {
    typedef fx_f32 type;
    static __device__ __forceinline__ float from_f64(double v) { return (float)v; }
    static __device__ __forceinline__ float from_bool(bool b) { return b ? 1.0f : 0.0f; }
    static __device__ __forceinline__ float from_i64(long long v) { return (float)(double)v; }
    static __device__ __forceinline__ float from_u64(unsigned long long v) { return (float)(double)v; }
    static __device__ __forceinline__ float from_c64(float re, float) { return re; }
};
struct DtF64 {
    typedef fx_f64 type;
    static __device__ __forceinline__ double from_f64(double v) { return v; }
    static __device__ __forceinline__ double from_bool(bool b) { return b ? 1.0 : 0.0; }
    static __device__ __forceinline__ double from_i64(long long v) { return (double)v; }
    static __device__ __forceinline__ double from_u64(unsigned long long v) { return (double)v; }
    static __device__ __forceinline__ double from_c64(float re, float) { return (double)re; }
};
// Real scalars become (value as f32, 0).
struct DtC64 {
    typedef fx_c64 type;
    static __device__ __forceinline__ fx_c64 from_f64(double v) { return fx_cplx((float)v, 0.0f); }
    static __device__ __forceinline__ fx_c64 from_bool(bool b) { return fx_cplx(b ? 1.0f : 0.0f, 0.0f); }
    static __device__ __forceinline__ fx_c64 from_i64(long long v) { return from_f64((double)v); }
    static __device__ __forceinline__ fx_c64 from_u64(unsigned long long v) { return from_f64((double)v); }
    static __device__ __forceinline__ fx_c64 from_c64(float re, float im) { return fx_cplx(re, im); }
};

// ---------------------------------------------------------------------------
// The module's dtype
// ---------------------------------------------------------------------------

#if defined(FX_DTYPE_BOOL)
typedef DtBool TDt;
#elif defined(FX_DTYPE_U8)
typedef DtU8 TDt;
#elif defined(FX_DTYPE_U16)
typedef DtU16 TDt;
#elif defined(FX_DTYPE_U32)
typedef DtU32 TDt;
#elif defined(FX_DTYPE_U64)
typedef DtU64 TDt;
#elif defined(FX_DTYPE_I8)
typedef DtI8 TDt;
#elif defined(FX_DTYPE_I16)
typedef DtI16 TDt;
#elif defined(FX_DTYPE_I32)
typedef DtI32 TDt;
#elif defined(FX_DTYPE_I64)
typedef DtI64 TDt;
#elif defined(FX_DTYPE_F16)
typedef DtF16 TDt;
#elif defined(FX_DTYPE_BF16)
typedef DtBF16 TDt;
#elif defined(FX_DTYPE_F32)
typedef DtF32 TDt;
#elif defined(FX_DTYPE_F64)
typedef DtF64 TDt;
#elif defined(FX_DTYPE_C64)
typedef DtC64 TDt;
#else
#error "define one FX_DTYPE_<D> before the prelude"
#endif

// The module's element type.
typedef TDt::type T;

#if defined(FX_DTYPE_BOOL)
#define FX_IS_BOOL 1
#else
#define FX_IS_BOOL 0
#endif

#if defined(FX_DTYPE_U8) || defined(FX_DTYPE_U16) || defined(FX_DTYPE_U32) || defined(FX_DTYPE_U64) || \
    defined(FX_DTYPE_I8) || defined(FX_DTYPE_I16) || defined(FX_DTYPE_I32) || defined(FX_DTYPE_I64)
#define FX_IS_INT 1
#else
#define FX_IS_INT 0
#endif

#if defined(FX_DTYPE_F16) || defined(FX_DTYPE_BF16)
#define FX_IS_HALF 1
#else
#define FX_IS_HALF 0
#endif

#if FX_IS_HALF || defined(FX_DTYPE_F32) || defined(FX_DTYPE_F64)
#define FX_IS_FLOAT 1
#else
#define FX_IS_FLOAT 0
#endif

#if defined(FX_DTYPE_C64)
#define FX_IS_COMPLEX 1
#else
#define FX_IS_COMPLEX 0
#endif

#define FX_IS_INEXACT (FX_IS_FLOAT || FX_IS_COMPLEX)

// Whether T can hold negative values: signed integers, floats, complex.
#if defined(FX_DTYPE_I8) || defined(FX_DTYPE_I16) || defined(FX_DTYPE_I32) || defined(FX_DTYPE_I64) || \
    FX_IS_FLOAT || FX_IS_COMPLEX
#define FX_IS_SIGNED 1
#else
#define FX_IS_SIGNED 0
#endif

// ---- compute type: f16/bf16 load to float, compute, round once on store ----

#if FX_IS_HALF
typedef float TC;
#else
typedef T TC;
#endif

__device__ __forceinline__ TC fx_to_c(T v) {
#if defined(FX_DTYPE_F16)
    return fx_f16_to_f32(v);
#elif defined(FX_DTYPE_BF16)
    return fx_bf16_to_f32(v);
#else
    return v;
#endif
}

__device__ __forceinline__ T fx_from_c(TC v) {
#if defined(FX_DTYPE_F16)
    return fx_f16_from_f32(v);
#elif defined(FX_DTYPE_BF16)
    return fx_bf16_from_f32(v);
#else
    return v;
#endif
}

// Cast a module element to dtype D (CPU: D::from_scalar(v.to_scalar())).
template <class D>
__device__ __forceinline__ typename D::type fx_cast(T v) {
    if constexpr (FxSame<D, TDt>::value) {
        return v;
    } else {
#if FX_IS_BOOL
        return D::from_bool(v != 0);
#elif FX_IS_INT && FX_IS_SIGNED
        return D::from_i64((long long)v);
#elif FX_IS_INT
        return D::from_u64((unsigned long long)v);
#elif FX_IS_FLOAT
        return D::from_f64((double)fx_to_c(v));
#else
        return D::from_c64(v.re, v.im);
#endif
    }
}

