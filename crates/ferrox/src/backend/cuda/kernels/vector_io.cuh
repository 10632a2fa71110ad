// vector_io.cuh: 16-byte pack loads/stores and the streaming map loops
// (fx_map1, fx_map2) built on them.

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

