// common.cuh: definitions shared by every ferrox CUDA kernel module.
//
// The host builds one module per (family, dtype) from the source
//
//     "#define FX_DTYPE_<D> 1\n" + common.cuh + "\n" + <family>.cu
//
// and compiles it with NVRTC without any include path, so this file is
// self-contained (no cuda_fp16.h, no stdint.h) and the family files do not
// include it. <D> is one of BOOL U8 U16 U32 U64 I8 I16 I32 I64 F16 BF16 F32
// F64 C64.
//
// What it provides:
//   * C types for all 14 dtypes (fx_bool ... fx_c64) and a tag struct per
//     dtype (DtBool ... DtC64) holding its C type and the casts into it with
//     the CPU backend's `Element::from_scalar` semantics;
//   * the module's element type `T`, its tag `TDt`, the compute type `TC`
//     (float for f16/bf16, else T), conversions fx_to_c / fx_from_c, and
//     flags FX_IS_BOOL, FX_IS_INT, FX_IS_SIGNED, FX_IS_HALF, FX_IS_FLOAT,
//     FX_IS_COMPLEX, FX_IS_INEXACT (each 0 or 1);
//   * the per-dtype arithmetic of element.rs on TC (fx_add ... fx_isnan) and
//     functors over it (OpAdd ... OpGe);
//   * the Strided1/2/3 layout structs and offset computation;
//   * 16-byte pack loads/stores and warp/block reduction helpers.
//
// Floating point expressions that Rust evaluates as separate multiply and
// add use the __fmul_rn/__fadd_rn intrinsics so that NVRTC (which contracts
// a*b+c into an FMA by default) rounds them the same way.

// ---------------------------------------------------------------------------
// Layouts
// ---------------------------------------------------------------------------

#define FX_MAX_DIMS 8

// Element i (row-major over `shape`) sits at offset sum_d idx_d * s_k[d] of
// operand k. Strides are in elements and may be negative or zero; ndim may
// be 0 (one element at offset 0).
struct Strided1 {
    long long ndim;
    long long shape[FX_MAX_DIMS];
    long long s0[FX_MAX_DIMS];
};
struct Strided2 {
    long long ndim;
    long long shape[FX_MAX_DIMS];
    long long s0[FX_MAX_DIMS];
    long long s1[FX_MAX_DIMS];
};
struct Strided3 {
    long long ndim;
    long long shape[FX_MAX_DIMS];
    long long s0[FX_MAX_DIMS];
    long long s1[FX_MAX_DIMS];
    long long s2[FX_MAX_DIMS];
};

// One element passed to a kernel by value: its bytes, little endian, in the
// first sizeof(T) bytes (fills, and Python scalars in binary ops).
struct alignas(8) FillValue {
    unsigned long long w[2];
};

// The element of type T held in a FillValue.
template <class V>
__device__ __forceinline__ V fx_value_of(const FillValue& v) {
    V val;
    memcpy(&val, &v, sizeof(V));
    return val;
}

// Grid-stride helpers (64-bit).
__device__ __forceinline__ long long fx_thread_id() {
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long fx_thread_count() {
    return (long long)gridDim.x * blockDim.x;
}

// 64-bit division is a long instruction sequence on the GPU: keep one
// out-of-line copy per module.
__device__ __noinline__ unsigned long long fx_udiv64(unsigned long long a, unsigned long long b) { return a / b; }

// q = a / b, r = a % b, with a 32-bit fast path.
__device__ __forceinline__ void fx_divmod(unsigned long long a, unsigned long long b, unsigned long long& q,
                                          unsigned long long& r) {
    if (((a | b) >> 32) == 0) {
        unsigned int q32 = (unsigned int)a / (unsigned int)b;
        q = q32;
        r = a - (unsigned long long)q32 * b;
    } else {
        q = fx_udiv64(a, b);
        r = a - q * b;
    }
}

// The layout structs are read in place from kernel parameter space (ld.param
// with a computed address, no local copy): pass them on by reference.

// Number of dims to walk (ndim clamped to FX_MAX_DIMS for safety).
__device__ __forceinline__ int fx_ndim(long long ndim) {
    return ndim < FX_MAX_DIMS ? (int)ndim : FX_MAX_DIMS;
}

// Stride of operand K along dim d.
template <int K>
__device__ __forceinline__ long long fx_stride(const Strided1& s, int d) {
    return s.s0[d];
}
template <int K>
__device__ __forceinline__ long long fx_stride(const Strided2& s, int d) {
    if constexpr (K == 0) return s.s0[d];
    else return s.s1[d];
}
template <int K>
__device__ __forceinline__ long long fx_stride(const Strided3& s, int d) {
    if constexpr (K == 0) return s.s0[d];
    else if constexpr (K == 1) return s.s1[d];
    else return s.s2[d];
}

// Offsets of element i in the K operands of `s`, and i's index along the
// innermost dim.
template <int K, class S>
__device__ __forceinline__ void fx_seek(const S& s, long long i, long long (&off)[K], long long& inner) {
    unsigned long long rest = (unsigned long long)i, q, r;
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] = 0;
    inner = 0;
    const int nd = fx_ndim(s.ndim);
#pragma unroll 1
    for (int d = nd - 1; d >= 0; --d) {
        fx_divmod(rest, (unsigned long long)s.shape[d], q, r);
        off[0] += (long long)r * fx_stride<0>(s, d);
        if constexpr (K > 1) off[1] += (long long)r * fx_stride<1>(s, d);
        if constexpr (K > 2) off[2] += (long long)r * fx_stride<2>(s, d);
        if (d == nd - 1) inner = (long long)r;
        rest = q;
    }
}

// Offset of element i in the single operand of `s`.
__device__ __forceinline__ long long fx_offset(long long i, const Strided1& s) {
    long long off[1], inner;
    fx_seek<1>(s, i, off, inner);
    return off[0];
}

// Walks the elements i < n of `s`. Each warp takes blocks of 32 * FX_RUN
// consecutive elements (grid-stride); lane l takes elements i0 + 32 c for
// c < FX_RUN, i0 = block start + l, so every access of a warp stays
// coalesced along the innermost dim, and a lane divides once per block.
// When all of a lane's elements lie in one innermost row (the common case)
// it calls run(i0, offs), offs[c][k] being the offset of element i0 + 32 c
// in operand k, so the body can issue all its loads before using them;
// otherwise it calls one(i, off) element by element.
#define FX_RUN 8
template <int K, class S, class Run, class One>
__device__ __forceinline__ void fx_strided_runs(const S& s, long long n, Run run, One one) {
    const int nd = fx_ndim(s.ndim);
    const long long inner_n = nd > 0 ? s.shape[nd - 1] : 1;
    long long step[K];
#pragma unroll
    for (int k = 0; k < K; ++k) step[k] = 0;
    if (nd > 0) {
        step[0] = fx_stride<0>(s, nd - 1);
        if constexpr (K > 1) step[1] = fx_stride<1>(s, nd - 1);
        if constexpr (K > 2) step[2] = fx_stride<2>(s, nd - 1);
    }
    constexpr long long SPAN = 32 * FX_RUN;
    const long long lane = threadIdx.x & 31;
    const long long nwarps = fx_thread_count() >> 5;  // blockDim.x is a multiple of 32
#pragma unroll 1
    for (long long wbase = (fx_thread_id() >> 5) * SPAN; wbase < n; wbase += nwarps * SPAN) {
        const long long i0 = wbase + lane;
        if (i0 >= n) continue;
        long long cur[K], inner;
        fx_seek<K>(s, i0, cur, inner);
        if (wbase + SPAN <= n && inner + 32 * (FX_RUN - 1) < inner_n) {
            long long offs[FX_RUN][K];
#pragma unroll
            for (int c = 0; c < FX_RUN; ++c) {
#pragma unroll
                for (int k = 0; k < K; ++k) offs[c][k] = cur[k] + 32 * c * step[k];
            }
            run(i0, offs);
        } else {
#pragma unroll 1
            for (long long i = i0; i < n && i < wbase + SPAN; i += 32) {
                if (i > i0) {
                    inner += 32;
                    if (inner < inner_n) {
#pragma unroll
                        for (int k = 0; k < K; ++k) cur[k] += 32 * step[k];
                    } else {
                        fx_seek<K>(s, i, cur, inner);
                    }
                }
                one(i, cur);
            }
        }
    }
}

// Number of elements of the layout `s` describes.
__device__ __forceinline__ long long fx_numel(const Strided1& s) {
    long long n = 1;
#pragma unroll 1
    for (int d = 0; d < fx_ndim(s.ndim); ++d) n *= s.shape[d];
    return n;
}

// ---------------------------------------------------------------------------
// Small type utilities
// ---------------------------------------------------------------------------

template <bool B, class A, class Z>
struct FxSel {
    typedef A type;
};
template <class A, class Z>
struct FxSel<false, A, Z> {
    typedef Z type;
};

template <class A, class B>
struct FxSame {
    static constexpr bool value = false;
};
template <class A>
struct FxSame<A, A> {
    static constexpr bool value = true;
};

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
#error "define one FX_DTYPE_<D> before common.cuh"
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

// ---------------------------------------------------------------------------
// Complex arithmetic (num_complex formulas, rounded like Rust: no FMA)
// ---------------------------------------------------------------------------

// |(x, y)| as glibc's hypotf (what Rust's f32::hypot calls): the exact
// squares summed in double, one square root, rounded to float.
__device__ __forceinline__ float fx_hypotf(float x, float y) {
    const float inf = fx_inf_f32();
    if (fabsf(x) == inf || fabsf(y) == inf) return inf;
    double xd = x, yd = y;
    return (float)__dsqrt_rn(__dadd_rn(__dmul_rn(xd, xd), __dmul_rn(yd, yd)));
}

__device__ __forceinline__ fx_c64 fx_cadd(fx_c64 a, fx_c64 b) { return fx_cplx(a.re + b.re, a.im + b.im); }
__device__ __forceinline__ fx_c64 fx_csub(fx_c64 a, fx_c64 b) { return fx_cplx(a.re - b.re, a.im - b.im); }
// Product and quotient with C99 Annex G's recovery of infinities (as
// std::complex, so MLX), in double: element/complex.rs has the same code.
__device__ __forceinline__ fx_c64 fx_cd(double re, double im) { return fx_cplx((float)re, (float)im); }
__device__ __forceinline__ double fx_dinf() { return __longlong_as_double(0x7ff0000000000000ll); }
__device__ __forceinline__ double fx_unit_if_inf(double v) { return copysign(isinf(v) ? 1.0 : 0.0, v); }
__device__ __forceinline__ double fx_zero_if_nan(double v) { return isnan(v) ? copysign(0.0, v) : v; }
__device__ __noinline__ fx_c64 fx_cmul(fx_c64 z, fx_c64 w) {
    double a = z.re, b = z.im, c = w.re, d = w.im;
    double ac = a * c, bd = b * d, ad = a * d, bc = b * c;
    double x = ac - bd, y = ad + bc;
    if (!(isnan(x) && isnan(y))) return fx_cd(x, y);
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
    if (recalc) return fx_cd(fx_dinf() * (a * c - b * d), fx_dinf() * (a * d + b * c));
    return fx_cd(x, y);
}
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

__device__ __noinline__ fx_c64 fx_cexp(fx_c64 z) {
    double x = z.re, y = z.im;
    if (y == 0.0) return fx_cd(exp(x), y);
    if (fx_disinf(x)) {
        if (!fx_dfinite(y)) return x > 0.0 ? fx_cd(x, fx_dnan()) : fx_cd(0.0, 0.0);
        double r = exp(x);
        return fx_cd(r * cos(y), r * sin(y));
    }
    if (x != x || !fx_dfinite(y)) return fx_cd(fx_dnan(), fx_dnan());
    double r = exp(x);
    return fx_cd(r * cos(y), r * sin(y));
}
__device__ __noinline__ fx_c64 fx_cln(fx_c64 z) {
    double x = z.re, y = z.im;
    return fx_cd(log(hypot(x, y)), atan2(y, x));
}
__device__ __noinline__ fx_c64 fx_csqrt(fx_c64 z) {
    double x = z.re, y = z.im;
    if (fx_disinf(y)) return fx_cd(fx_dinf(), y);
    if (x != x) return fx_cd(fx_dnan(), fx_dnan());
    if (fx_disinf(x)) {
        if (x > 0.0) return fx_cd(x, y != y ? y : copysign(0.0, y));
        return fx_cd(y != y ? fx_dnan() : 0.0, copysign(fx_dinf(), y));
    }
    if (y != y) return fx_cd(fx_dnan(), fx_dnan());
    if (x == 0.0 && y == 0.0) return fx_cd(0.0, y);
    double t = sqrt((fabs(x) + hypot(x, y)) / 2.0);
    if (x >= 0.0) return fx_cd(t, y / (2.0 * t));
    return fx_cd(fabs(y) / (2.0 * t), copysign(t, y));
}
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
// Element::pow for Complex32: e^(b ln a), as std::pow (so MLX).
__device__ __noinline__ fx_c64 fx_cpow(fx_c64 a, fx_c64 b) { return fx_cexp(fx_cmul(b, fx_cln(a))); }

// ---------------------------------------------------------------------------
// Element arithmetic on the compute type TC (element.rs)
// ---------------------------------------------------------------------------
//
// fx_add fx_sub fx_mul fx_div fx_pow fx_max fx_min fx_neg fx_abs
// fx_lt fx_le fx_eq fx_isnan, identities fx_zero fx_one fx_lowest fx_highest,
// and for inexact types fx_exp fx_log fx_sqrt fx_sin fx_cos fx_tanh fx_sigmoid.

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
__device__ __forceinline__ float fx_m_log(float a) { return logf(a); }
__device__ __forceinline__ double fx_m_log(double a) { return log(a); }
__device__ __forceinline__ float fx_m_sqrt(float a) { return sqrtf(a); }
__device__ __forceinline__ double fx_m_sqrt(double a) { return sqrt(a); }
__device__ __forceinline__ float fx_m_sin(float a) { return sinf(a); }
__device__ __forceinline__ double fx_m_sin(double a) { return sin(a); }
__device__ __forceinline__ float fx_m_cos(float a) { return cosf(a); }
__device__ __forceinline__ double fx_m_cos(double a) { return cos(a); }
__device__ __forceinline__ float fx_m_tanh(float a) { return tanhf(a); }
__device__ __forceinline__ double fx_m_tanh(double a) { return tanh(a); }

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
__device__ __forceinline__ bool fx_eq(TC a, TC b) { return a == b; }
__device__ __forceinline__ bool fx_lt(TC a, TC b) { return a < b; }
__device__ __forceinline__ bool fx_le(TC a, TC b) { return a <= b; }
__device__ __forceinline__ bool fx_isnan(TC a) { return a != a; }
__device__ __forceinline__ TC fx_zero() { return (TC)0; }
__device__ __forceinline__ TC fx_one() { return (TC)1; }
#if defined(FX_DTYPE_F64)
__device__ __forceinline__ TC fx_lowest() { return -fx_inf_f64(); }
__device__ __forceinline__ TC fx_highest() { return fx_inf_f64(); }
#else
__device__ __forceinline__ TC fx_lowest() { return -fx_inf_f32(); }
__device__ __forceinline__ TC fx_highest() { return fx_inf_f32(); }
#endif
__device__ __forceinline__ TC fx_exp(TC a) { return fx_m_exp(a); }
__device__ __forceinline__ TC fx_log(TC a) { return fx_m_log(a); }
__device__ __forceinline__ TC fx_sqrt(TC a) { return fx_m_sqrt(a); }
__device__ __forceinline__ TC fx_sin(TC a) { return fx_m_sin(a); }
__device__ __forceinline__ TC fx_cos(TC a) { return fx_m_cos(a); }
__device__ __forceinline__ TC fx_tanh(TC a) { return fx_m_tanh(a); }
__device__ __forceinline__ TC fx_sigmoid(TC a) { return (TC)1 / ((TC)1 + fx_m_exp(-a)); }

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
__device__ __forceinline__ bool fx_eq(TC a, TC b) { return fx_ceq(a, b); }
__device__ __forceinline__ bool fx_lt(TC a, TC b) { return fx_clt(a, b); }
__device__ __forceinline__ bool fx_le(TC a, TC b) { return fx_clt(a, b) || fx_ceq(a, b); }
__device__ __forceinline__ bool fx_isnan(TC a) { return fx_cisnan(a); }
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
#endif

// Binary functors on TC. Arithmetic ones return TC, comparisons bool.
struct OpAdd {
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_add(a, b); }
};
struct OpSub {
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_sub(a, b); }
};
struct OpMul {
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_mul(a, b); }
};
struct OpDiv {
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_div(a, b); }
};
struct OpPow {
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_pow(a, b); }
};
struct OpMax {
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_max(a, b); }
};
struct OpMin {
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_min(a, b); }
};
struct OpEq {
    __device__ __forceinline__ bool operator()(TC a, TC b) const { return fx_eq(a, b); }
};
struct OpNe {
    __device__ __forceinline__ bool operator()(TC a, TC b) const { return !fx_eq(a, b); }
};
struct OpLt {
    __device__ __forceinline__ bool operator()(TC a, TC b) const { return fx_lt(a, b); }
};
struct OpLe {
    __device__ __forceinline__ bool operator()(TC a, TC b) const { return fx_le(a, b); }
};
struct OpGt {
    __device__ __forceinline__ bool operator()(TC a, TC b) const { return fx_lt(b, a); }
};
struct OpGe {
    __device__ __forceinline__ bool operator()(TC a, TC b) const { return fx_le(b, a); }
};

// ---------------------------------------------------------------------------
// 16-byte packs: wide loads and stores
// ---------------------------------------------------------------------------

// An unsigned word of B bytes (B = 1, 2, 4, 8, 16).
template <int B>
struct FxWord;
template <>
struct FxWord<1> {
    typedef unsigned char type;
};
template <>
struct FxWord<2> {
    typedef unsigned short type;
};
template <>
struct FxWord<4> {
    typedef unsigned int type;
};
template <>
struct FxWord<8> {
    typedef uint2 type;
};
template <>
struct FxWord<16> {
    typedef uint4 type;
};

// P consecutive elements moved with one load/store of P * sizeof(E) bytes;
// the address must be aligned to that size.
template <class E, int P>
struct FxPack {
    typedef typename FxWord<(int)sizeof(E) * P>::type W;
    E v[P];
    __device__ __forceinline__ void load(const E* p) {
        W w = *reinterpret_cast<const W*>(p);
        memcpy(v, &w, sizeof(W));
    }
    __device__ __forceinline__ void store(E* p) const {
        W w;
        memcpy(&w, v, sizeof(W));
        *reinterpret_cast<W*>(p) = w;
    }
};

__device__ __forceinline__ bool fx_aligned(const void* p, unsigned long long bytes) {
    return ((unsigned long long)p & (bytes - 1)) == 0;
}

// Packs of P elements each thread loads per loop iteration of the
// streaming kernels: enough bytes in flight to cover HBM latency, while
// keeping the number of inlined copies of the op (and compile time) small.
template <int P>
struct FxUnroll {
    static constexpr int value = P >= 8 ? 1 : 8 / P;
};

// y[i] = f(x[i]) for i < n, contiguous. Each thread moves 16-byte packs
// (of the wider of the two element types) when both pointers allow it,
// U packs per iteration, then the scalar tail.
template <class TI, class TO, class F>
__device__ __forceinline__ void fx_map1(const TI* x, TO* y, long long n, F f) {
    constexpr int SZ = sizeof(TI) > sizeof(TO) ? (int)sizeof(TI) : (int)sizeof(TO);
    constexpr int P = 16 / SZ;
    constexpr int U = FxUnroll<P>::value;
    const long long tid = fx_thread_id(), nth = fx_thread_count();
    long long done = 0;
    if (fx_aligned(x, P * sizeof(TI)) && fx_aligned(y, P * sizeof(TO))) {
        const long long npk = n / P;
#pragma unroll 1
        for (long long base = tid; base < npk; base += U * nth) {
            FxPack<TI, P> in[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                long long p = base + u * nth;
                if (p < npk) in[u].load(x + p * P);
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                long long p = base + u * nth;
                if (p < npk) {
                    FxPack<TO, P> out;
#pragma unroll
                    for (int e = 0; e < P; ++e) out.v[e] = f(in[u].v[e]);
                    out.store(y + p * P);
                }
            }
        }
        done = npk * P;
    }
#pragma unroll 1
    for (long long i = done + tid; i < n; i += nth) y[i] = f(x[i]);
}

// out[i] = f(a[i], b[i]) for i < n, contiguous; packs as fx_map1. With
// a_scalar (b_scalar) set, a[0] (b[0]) is used for every i instead.
template <class TI, class TO, class F>
__device__ __forceinline__ void fx_map2(const TI* a, const TI* b, TO* y, long long n, bool a_scalar, bool b_scalar,
                                        F f) {
    constexpr int SZ = sizeof(TI) > sizeof(TO) ? (int)sizeof(TI) : (int)sizeof(TO);
    constexpr int P = 16 / SZ;
    constexpr int U = FxUnroll<P>::value;
    if (n <= 0) return;
    const long long tid = fx_thread_id(), nth = fx_thread_count();
    const TI sa = a_scalar ? a[0] : TI(), sb = b_scalar ? b[0] : TI();
    long long done = 0;
    if ((a_scalar || fx_aligned(a, P * sizeof(TI))) && (b_scalar || fx_aligned(b, P * sizeof(TI))) &&
        fx_aligned(y, P * sizeof(TO))) {
        FxPack<TI, P> splat_a, splat_b;
#pragma unroll
        for (int e = 0; e < P; ++e) {
            splat_a.v[e] = sa;
            splat_b.v[e] = sb;
        }
        const long long npk = n / P;
#pragma unroll 1
        for (long long base = tid; base < npk; base += U * nth) {
            FxPack<TI, P> ina[U], inb[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                long long p = base + u * nth;
                if (p < npk) {
                    if (a_scalar) {
                        ina[u] = splat_a;
                    } else {
                        ina[u].load(a + p * P);
                    }
                    if (b_scalar) {
                        inb[u] = splat_b;
                    } else {
                        inb[u].load(b + p * P);
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                long long p = base + u * nth;
                if (p < npk) {
                    FxPack<TO, P> out;
#pragma unroll
                    for (int e = 0; e < P; ++e) out.v[e] = f(ina[u].v[e], inb[u].v[e]);
                    out.store(y + p * P);
                }
            }
        }
        done = npk * P;
    }
#pragma unroll 1
    for (long long i = done + tid; i < n; i += nth) y[i] = f(a_scalar ? sa : a[i], b_scalar ? sb : b[i]);
}

// y[i] = f(x[offset_s(i)]) for i < n; y contiguous.
template <class TI, class TO, class F>
__device__ __forceinline__ void fx_map1_strided(const TI* x, TO* y, long long n, const Strided1& s, F f) {
    fx_strided_runs<1>(
        s, n,
        [&](long long i0, const long long(&offs)[FX_RUN][1]) {
            TI v[FX_RUN];
#pragma unroll
            for (int c = 0; c < FX_RUN; ++c) v[c] = x[offs[c][0]];
#pragma unroll
            for (int c = 0; c < FX_RUN; ++c) y[i0 + 32 * c] = f(v[c]);
        },
        [&](long long i, const long long(&off)[1]) { y[i] = f(x[off[0]]); });
}

// ---------------------------------------------------------------------------
// Reductions across a warp / block
// ---------------------------------------------------------------------------

// __shfl_xor_sync for any trivially copyable V (moved as 32-bit words).
template <class V>
__device__ __forceinline__ V fx_shfl_xor(V v, int lane_mask) {
    constexpr int W = ((int)sizeof(V) + 3) / 4;
    unsigned int w[W] = {};
    memcpy(w, &v, sizeof(V));
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = __shfl_xor_sync(0xffffffffu, w[k], lane_mask);
    memcpy(&v, w, sizeof(V));
    return v;
}

// Butterfly reduction over the first `width` lanes (a power of two <= 32);
// every lane of those ends with the result. All 32 lanes must call it.
template <class V, class Op>
__device__ __forceinline__ V fx_warp_reduce(V v, Op op, int width = 32) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) {
        if (m < width) v = op(v, fx_shfl_xor(v, m));
    }
    return v;
}

// Reduces v over a 1-D block whose blockDim.x is a power of two >= 32 (up to
// 1024); the result is valid in thread 0. `smem` holds 32 values. Must be
// reached by every thread of the block.
template <class V, class Op>
__device__ __forceinline__ V fx_block_reduce(V v, Op op, V* smem) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    v = fx_warp_reduce(v, op);
    if (nwarps == 1) return v;
    __syncthreads();  // smem may still be read by a previous call
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = smem[lane < nwarps ? lane : 0];
        v = fx_warp_reduce(v, op, nwarps);
    }
    return v;
}
