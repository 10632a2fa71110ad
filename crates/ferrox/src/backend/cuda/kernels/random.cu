// random.cu: MLX's random generator (threefry2x32 with 20 rounds, laid out
// as MLX's RandomBits) and the samplers fused with it, for the module dtype
// T. Every function mirrors backend/cpu/random.rs bit for bit, so a key
// gives the same values on both devices (and MLX's values).
//
// Layout: key k (keys[2k], keys[2k+1]) fills its own run of `per_key`
// output units from W generator words: W = ceil(per_key / 4) for raw bits
// (units are bytes), W = per_key for the samplers (units are elements;
// floats for complex64, two per element). With half = W / 2 and
// h2 = W - half, the counter pair (j, j + h2) gives words j and j + h2 for
// j < half; when W is odd, word `half` is the first word of the pair
// (half, 0). Counters are 32-bit (MLX's CPU truncates them the same way).
//
// Kernels (blockDim 256, any gridDim.x >= 1; keys and out contiguous;
// num_keys * per_key units in out). Every kernel takes
//   (const unsigned int* keys, T* out, long long num_keys,
//    long long per_key, long long slots)
//   random_bits     T = u8, u16, u32: the words' little-endian bytes
//                   (per_key counts bytes).
//   random_uniform  T = f16, bf16, f32: MLX's uniform on [0, 1):
//                   min(f32(w) * 2^-32, the largest T below 1), cast to T.
//   random_erfinv   T = f16, bf16, f32, f64, c64: MLX's float32 erfinv of
//                   its uniform on [-1 + 2^-24, 1) (2 u - 1 + 2^-24 rounded
//                   once), cast to T; complex64 takes (re, im) from
//                   consecutive words (per_key counts floats).
//   random_normal   T = f16, bf16, f32, f64: sqrt(2) rounded to T times
//                   random_erfinv's value, the product rounded in T.
// A thread owns one slot s of one key: the P = FX_RANDOM_PACK counter pairs
// j = s*P .. s*P+P-1, whose words make one 16-byte pack of output in each
// half (4 words for bits, f32 and c64, 8 for f16/bf16, 2 for f64), stored
// with one wide store where aligned. `slots` = ceil(h2 / P) per key; the
// grid covers num_keys * slots threads (it may loop).

#if FX_IS_HALF
#define FX_RANDOM_PACK 8
#elif defined(FX_DTYPE_F64)
#define FX_RANDOM_PACK 2
#else
#define FX_RANDOM_PACK 4
#endif

// ---------------------------------------------------------------------------
// The generator
// ---------------------------------------------------------------------------

// The generator is issue-bound on the integer ALU pipe (adds, funnel
// shifts and xors all go there). Multiplying by a 1 the compiler cannot see
// through makes each round's add an IMAD, which runs on the otherwise idle
// FMA pipe: the same bits, about 7% faster. Nothing ever writes fx_rng_one.
__constant__ unsigned fx_rng_one = 1u;

#define FX_TF_ROUND(r)          \
    x = y * fx_rng_one + x;     \
    y = __funnelshift_l(y, y, r) ^ x;

// The threefry2x32 block function, 20 rounds (JAX's and MLX's): (x, y) are
// the counters on entry, the two words on return. k2 = k0 ^ k1 ^ 0x1BD11BDA.
__device__ __forceinline__ void fx_threefry(unsigned k0, unsigned k1, unsigned k2, unsigned& x, unsigned& y) {
    x += k0;
    y += k1;
    FX_TF_ROUND(13) FX_TF_ROUND(15) FX_TF_ROUND(26) FX_TF_ROUND(6)
    x += k1;
    y += k2 + 1u;
    FX_TF_ROUND(17) FX_TF_ROUND(29) FX_TF_ROUND(16) FX_TF_ROUND(24)
    x += k2;
    y += k0 + 2u;
    FX_TF_ROUND(13) FX_TF_ROUND(15) FX_TF_ROUND(26) FX_TF_ROUND(6)
    x += k0;
    y += k1 + 3u;
    FX_TF_ROUND(17) FX_TF_ROUND(29) FX_TF_ROUND(16) FX_TF_ROUND(24)
    x += k1;
    y += k2 + 4u;
    FX_TF_ROUND(13) FX_TF_ROUND(15) FX_TF_ROUND(26) FX_TF_ROUND(6)
    x += k2;
    y += k0 + 5u;
}

// The words of counter pairs j0 .. j0+P-1 of one key: a[p] is word j0+p,
// b[p] word j0+p+h2 (pair (half, 0) gives only a).
template <int P>
__device__ __forceinline__ void fx_random_pairs(unsigned k0, unsigned k1, long long j0, long long half, long long h2,
                                                unsigned (&a)[P], unsigned (&b)[P]) {
    const unsigned k2 = k0 ^ k1 ^ 0x1BD11BDAu;
#pragma unroll
    for (int p = 0; p < P; ++p) {
        const long long j = j0 + p;
        unsigned x = (unsigned)j, y = j < half ? (unsigned)(j + h2) : 0u;
        fx_threefry(k0, k1, k2, x, y);
        a[p] = x;
        b[p] = y;
    }
}

// ---------------------------------------------------------------------------
// The samplers (MLX's float32 op sequences, each rounding where MLX rounds)
// ---------------------------------------------------------------------------

// MLX's uniform on [0, 1) before the cast: f32(w) / 2^32 (MLX divides by
// float32(UINT32_MAX), which is 2^32), clamped to `upper`.
__device__ __forceinline__ float fx_unit(unsigned w, float upper) {
    return fminf(__fmul_rn(__uint2float_rn(w), __uint_as_float(0x2f800000u)), upper);
}

// glibc's logf (ARM's optimized-routines algorithm, which MLX's CPU erfinv
// calls) for positive normal x: table of (1/c, log c), then a polynomial
// in double. Identical to glibc for every positive float, with or without
// the fused multiply-adds below.
__device__ const __align__(16) double fx_logf_tab[32] = {
    0x1.661ec79f8f3bep+0, -0x1.57bf7808caadep-2, 0x1.571ed4aaf883dp+0, -0x1.2bef0a7c06ddbp-2,
    0x1.49539f0f010bp+0,  -0x1.01eae7f513a67p-2, 0x1.3c995b0b80385p+0, -0x1.b31d8a68224e9p-3,
    0x1.30d190c8864a5p+0, -0x1.6574f0ac07758p-3, 0x1.25e227b0b8eap+0,  -0x1.1aa2bc79c81p-3,
    0x1.1bb4a4a1a343fp+0, -0x1.a4e76ce8c0e5ep-4, 0x1.12358f08ae5bap+0, -0x1.1973c5a611cccp-4,
    0x1.0953f419900a7p+0, -0x1.252f438e10c1ep-5, 0x1p+0,               0x0p+0,
    0x1.e608cfd9a47acp-1, 0x1.aa5aa5df25984p-5,  0x1.ca4b31f026aap-1,  0x1.c5e53aa362eb4p-4,
    0x1.b2036576afce6p-1, 0x1.526e57720db08p-3,  0x1.9c2d163a1aa2dp-1, 0x1.bc2860d22477p-3,
    0x1.886e6037841edp-1, 0x1.1058bc8a07ee1p-2,  0x1.767dcf5534862p-1, 0x1.4043057b6ee09p-2,
};

__device__ __forceinline__ float fx_logf_glibc(float x) {
    const unsigned ix = __float_as_uint(x);
    const unsigned tmp = ix - 0x3f330000u;
    const int i = (int)((tmp >> 19) & 15u);
    const int k = (int)tmp >> 23;
    const unsigned iz = ix - (tmp & 0xff800000u);
    const double2 entry = __ldg(reinterpret_cast<const double2*>(fx_logf_tab) + i);  // one 16-byte load
    const double invc = entry.x, logc = entry.y;
    const double z = (double)__uint_as_float(iz);
    const double r = fma(z, invc, -1.0);
    const double y0 = fma((double)k, 0x1.62e42fefa39efp-1, logc);
    const double r2 = __dmul_rn(r, r);
    double y = fma(0x1.5575b0be00b6ap-2, r, -0x1.ffffef20a4123p-2);
    y = fma(-0x1.00ea348b88334p-2, r2, y);
    y = fma(y, r2, __dadd_rn(y0, r));
    return __double2float_rn(y);
}

// MLX's float32 erfinv (its CPU SIMD code, one lane).
__device__ __forceinline__ float fx_erfinv_mlx(float a) {
    const float t = fx_logf_glibc(__fmaf_rn(a, __fsub_rn(0.0f, a), 1.0f));
    float p;
    if (fabsf(t) > 6.125f) {
        p = 3.03697567e-10f;
        p = __fmaf_rn(p, t, 2.93243101e-8f);
        p = __fmaf_rn(p, t, 1.22150334e-6f);
        p = __fmaf_rn(p, t, 2.84108955e-5f);
        p = __fmaf_rn(p, t, 3.93552968e-4f);
        p = __fmaf_rn(p, t, 3.02698812e-3f);
        p = __fmaf_rn(p, t, 4.83185798e-3f);
        p = __fmaf_rn(p, t, -2.64646143e-1f);
        p = __fmaf_rn(p, t, 8.40016484e-1f);
    } else {
        p = 5.43877832e-9f;
        p = __fmaf_rn(p, t, 1.43285448e-7f);
        p = __fmaf_rn(p, t, 1.22774793e-6f);
        p = __fmaf_rn(p, t, 1.12963626e-7f);
        p = __fmaf_rn(p, t, -5.61530760e-5f);
        p = __fmaf_rn(p, t, -1.47697632e-4f);
        p = __fmaf_rn(p, t, 2.31468678e-3f);
        p = __fmaf_rn(p, t, 1.15392581e-2f);
        p = __fmaf_rn(p, t, -2.32015476e-1f);
        p = __fmaf_rn(p, t, 8.86226892e-1f);
    }
    return __fmul_rn(a, p);
}

// erfinv of MLX's uniform on [-1 + 2^-24, 1): 2 u + (-1 + 2^-24), the
// product exact and the sum rounded once, u on [0, 1).
__device__ __forceinline__ float fx_normal_erfinv(unsigned w) {
    const float u = fx_unit(w, __uint_as_float(0x3f7fffffu));
    return fx_erfinv_mlx(__fadd_rn(__fmul_rn(2.0f, u), __uint_as_float(0xbf7fffffu)));
}

// Per output dtype: the element type O the kernel writes and the
// transforms from one word (sqrt(2) rounded to T: 0x3fb504f3 for f32,
// 1.4140625 for f16 and bf16; products of two half values are exact in
// float32, so one rounding to T follows).
#if defined(FX_DTYPE_F32) || defined(FX_DTYPE_C64)
typedef float FxRandomOut;
struct FxUniform {
    __device__ __forceinline__ float operator()(unsigned w) const { return fx_unit(w, __uint_as_float(0x3f7fffffu)); }
};
struct FxErfinv {
    __device__ __forceinline__ float operator()(unsigned w) const { return fx_normal_erfinv(w); }
};
struct FxNormal {
    __device__ __forceinline__ float operator()(unsigned w) const {
        return __fmul_rn(__uint_as_float(0x3fb504f3u), fx_normal_erfinv(w));
    }
};
#elif defined(FX_DTYPE_F16)
typedef fx_f16 FxRandomOut;
struct FxUniform {
    __device__ __forceinline__ fx_f16 operator()(unsigned w) const {
        return fx_f16_from_f32(fx_unit(w, __uint_as_float(0x3f7fe000u)));
    }
};
struct FxErfinv {
    __device__ __forceinline__ fx_f16 operator()(unsigned w) const { return fx_f16_from_f32(fx_normal_erfinv(w)); }
};
struct FxNormal {
    __device__ __forceinline__ fx_f16 operator()(unsigned w) const {
        const float e = fx_f16_to_f32(fx_f16_from_f32(fx_normal_erfinv(w)));
        return fx_f16_from_f32(__fmul_rn(__uint_as_float(0x3fb50000u), e));
    }
};
#elif defined(FX_DTYPE_BF16)
typedef fx_bf16 FxRandomOut;
struct FxUniform {
    __device__ __forceinline__ fx_bf16 operator()(unsigned w) const {
        return fx_bf16_from_f32(fx_unit(w, __uint_as_float(0x3f7f0000u)));
    }
};
struct FxErfinv {
    __device__ __forceinline__ fx_bf16 operator()(unsigned w) const { return fx_bf16_from_f32(fx_normal_erfinv(w)); }
};
struct FxNormal {
    __device__ __forceinline__ fx_bf16 operator()(unsigned w) const {
        const float e = fx_bf16_to_f32(fx_bf16_from_f32(fx_normal_erfinv(w)));
        return fx_bf16_from_f32(__fmul_rn(__uint_as_float(0x3fb50000u), e));
    }
};
#elif defined(FX_DTYPE_F64)
typedef double FxRandomOut;
struct FxErfinv {
    __device__ __forceinline__ double operator()(unsigned w) const { return (double)fx_normal_erfinv(w); }
};
struct FxNormal {
    __device__ __forceinline__ double operator()(unsigned w) const {
        return __dmul_rn(__longlong_as_double(0x3ff6a09e667f3bcdll), (double)fx_normal_erfinv(w));
    }
};
#endif

// ---------------------------------------------------------------------------
// Drivers: one thread per slot (P counter pairs), stores in 16-byte packs
// ---------------------------------------------------------------------------

// Elements v[0 .. n) (n may exceed P: all P) to dst: one wide store when the
// pack is whole and aligned, else one element at a time.
template <class O, int P>
__device__ __forceinline__ void fx_store_run(O* dst, const FxPack<O, P>& v, long long n) {
    if (n >= P && fx_aligned(dst, sizeof(O) * P)) {
        v.store(dst);
        return;
    }
#pragma unroll
    for (int p = 0; p < P; ++p) {
        if (p < n) dst[p] = v.v[p];
    }
}

// Samplers: one word per element of O, per_key elements per key.
template <int P, class O, class F>
__device__ __forceinline__ void fx_random_fill(const unsigned* keys, O* out, long long num_keys, long long per_key,
                                               long long slots, F f) {
    const long long half = per_key >> 1, h2 = per_key - half;
    const long long total = num_keys * slots, nth = fx_thread_count();
#pragma unroll 1
    for (long long g = fx_thread_id(); g < total; g += nth) {
        unsigned long long kq, s;
        fx_divmod((unsigned long long)g, (unsigned long long)slots, kq, s);
        const long long j0 = (long long)s * P;
        unsigned a[P], b[P];
        fx_random_pairs<P>(keys[2 * kq], keys[2 * kq + 1], j0, half, h2, a, b);
        O* base = out + (long long)kq * per_key;
        FxPack<O, P> pack;
#pragma unroll
        for (int p = 0; p < P; ++p) pack.v[p] = f(a[p]);
        fx_store_run<O, P>(base + j0, pack, h2 - j0);
        if (j0 < half) {
#pragma unroll
            for (int p = 0; p < P; ++p) pack.v[p] = f(b[p]);
            fx_store_run<O, P>(base + h2 + j0, pack, half - j0);
        }
    }
}

// Words w[0 .. n) (n <= 4) to dst, which has `room` bytes of the key left:
// one 16-byte store when whole and aligned, else word by word, and byte by
// byte for a key's last, partial word or an unaligned key (uint8/uint16
// keys after the first start anywhere).
__device__ __forceinline__ void fx_store_words(unsigned char* dst, const unsigned (&w)[4], long long n, long long room) {
    if (n >= 4 && room >= 16 && fx_aligned(dst, 16)) {
        *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
        return;
    }
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        if (p < n) {
            unsigned char* d = dst + 4 * p;
            const long long left = room - 4 * p;
            if (left >= 4 && fx_aligned(d, 4)) {
                *reinterpret_cast<unsigned*>(d) = w[p];
            } else {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    if (i < left) d[i] = (unsigned char)(w[p] >> (8 * i));
                }
            }
        }
    }
}

// Raw bits: per_key bytes per key.
__device__ __forceinline__ void fx_random_bytes(const unsigned* keys, unsigned char* out, long long num_keys,
                                                long long per_key, long long slots) {
    const long long words = (per_key + 3) >> 2;
    const long long half = words >> 1, h2 = words - half;
    const long long total = num_keys * slots, nth = fx_thread_count();
#pragma unroll 1
    for (long long g = fx_thread_id(); g < total; g += nth) {
        unsigned long long kq, s;
        fx_divmod((unsigned long long)g, (unsigned long long)slots, kq, s);
        const long long j0 = (long long)s * 4;
        unsigned a[4], b[4];
        fx_random_pairs<4>(keys[2 * kq], keys[2 * kq + 1], j0, half, h2, a, b);
        unsigned char* base = out + (long long)kq * per_key;
        fx_store_words(base + 4 * j0, a, h2 - j0, per_key - 4 * j0);
        if (j0 < half) fx_store_words(base + 4 * (h2 + j0), b, half - j0, per_key - 4 * (h2 + j0));
    }
}

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

#if defined(FX_DTYPE_U8) || defined(FX_DTYPE_U16) || defined(FX_DTYPE_U32)
extern "C" __global__ void random_bits(const unsigned* keys, T* out, long long num_keys, long long per_key,
                                       long long slots) {
    fx_random_bytes(keys, reinterpret_cast<unsigned char*>(out), num_keys, per_key, slots);
}
#endif

#if FX_IS_HALF || defined(FX_DTYPE_F32)
extern "C" __global__ void random_uniform(const unsigned* keys, T* out, long long num_keys, long long per_key,
                                          long long slots) {
    fx_random_fill<FX_RANDOM_PACK>(keys, out, num_keys, per_key, slots, FxUniform());
}
#endif

#if FX_IS_FLOAT || FX_IS_COMPLEX
extern "C" __global__ void random_erfinv(const unsigned* keys, T* out, long long num_keys, long long per_key,
                                         long long slots) {
    fx_random_fill<FX_RANDOM_PACK>(keys, reinterpret_cast<FxRandomOut*>(out), num_keys, per_key, slots, FxErfinv());
}
#endif

#if FX_IS_FLOAT
extern "C" __global__ void random_normal(const unsigned* keys, T* out, long long num_keys, long long per_key,
                                         long long slots) {
    fx_random_fill<FX_RANDOM_PACK>(keys, out, num_keys, per_key, slots, FxNormal());
}
#endif
