// layout.cuh: strided layouts, by-value elements and grid-stride helpers.
//
// Part of the prelude every kernel module starts with (see kernels.rs:
// dtype.cuh comes after this file and may use FxSel from here).
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

