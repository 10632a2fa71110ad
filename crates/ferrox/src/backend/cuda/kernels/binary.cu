// binary.cu: the kernels of one elementwise binary op out = op(a, b) on the
// module dtype T. The host appends one instantiation line per op it compiles,
//
//     FX_BINARY(<name>, <lift>, <functor>, <out>)
//
// with the functor of binary_ops.cuh, lift FxArith and out T for ops whose
// result has the operands' dtype, FxCmp and fx_bool for the comparisons.
//
// Kernels (blockDim 256, any gridDim.x >= 1; n may be 0; out contiguous):
//   <name>_vv      (const T* a, const T* b, O* out, long long n)              a, b contiguous
//   <name>_sv      (const T* a, const T* b, O* out, long long n)              a[0] broadcast, b contiguous
//   <name>_vs      (const T* a, const T* b, O* out, long long n)              a contiguous, b[0] broadcast
//   <name>_strided (const T* a, const T* b, O* out, long long n, Strided2 s)  a at s.s0, b at s.s1
//   <name>_kv      (FillValue a, const T* b, O* out, long long n)             a by value, b contiguous
//   <name>_vk      (const T* a, FillValue b, O* out, long long n)             a contiguous, b by value
// (the _kv/_vk forms take a Python scalar without copying it to the device).

// Lifts an arithmetic op on TC to storage type T.
template <class Op>
struct FxArith {
    __device__ __forceinline__ T operator()(T a, T b) const { return fx_from_c(Op()(fx_to_c(a), fx_to_c(b))); }
};
// Lifts a comparison on TC to T -> fx_bool.
template <class Op>
struct FxCmp {
    __device__ __forceinline__ fx_bool operator()(T a, T b) const {
        return (fx_bool)(Op()(fx_to_c(a), fx_to_c(b)) ? 1 : 0);
    }
};

// The contiguous body shared by the _vv, _sv and _vs kernels of one op
// (one copy of the unrolled code per op keeps modules quick to compile).
template <class F, class O>
__device__ __noinline__ void fx_binary_contig(const T* a, const T* b, O* out, long long n, bool a_scalar,
                                              bool b_scalar) {
    fx_map2(a, b, out, n, a_scalar, b_scalar, F());
}

// out[i] = f(a[off0(i)], b[off1(i)]) with out contiguous.
template <class F, class O>
__device__ __forceinline__ void fx_binary_strided(const T* a, const T* b, O* out, long long n, const Strided2& s) {
    fx_strided_runs<2>(
        s, n,
        [&](long long i0, const long long(&offs)[FX_RUN][2]) {
            T va[FX_RUN], vb[FX_RUN];
#pragma unroll
            for (int c = 0; c < FX_RUN; ++c) {
                va[c] = a[offs[c][0]];
                vb[c] = b[offs[c][1]];
            }
#pragma unroll
            for (int c = 0; c < FX_RUN; ++c) out[i0 + 32 * c] = F()(va[c], vb[c]);
        },
        [&](long long i, const long long(&off)[2]) { out[i] = F()(a[off[0]], b[off[1]]); });
}

// The four kernels of one op; F lifts OP, O is the output type.
#define FX_BINARY(NAME, F, OP, O)                                                                          \
    extern "C" __global__ void NAME##_vv(const T* a, const T* b, O* out, long long n) {                   \
        fx_binary_contig<F<OP>, O>(a, b, out, n, false, false);                                            \
    }                                                                                                      \
    extern "C" __global__ void NAME##_sv(const T* a, const T* b, O* out, long long n) {                   \
        fx_binary_contig<F<OP>, O>(a, b, out, n, true, false);                                             \
    }                                                                                                      \
    extern "C" __global__ void NAME##_vs(const T* a, const T* b, O* out, long long n) {                   \
        fx_binary_contig<F<OP>, O>(a, b, out, n, false, true);                                             \
    }                                                                                                      \
    extern "C" __global__ void NAME##_strided(const T* a, const T* b, O* out, long long n, Strided2 s) {  \
        fx_binary_strided<F<OP>, O>(a, b, out, n, s);                                                      \
    }                                                                                                      \
    extern "C" __global__ void NAME##_kv(FillValue a, const T* b, O* out, long long n) {                  \
        const T va = fx_value_of<T>(a);                                                                    \
        fx_binary_contig<F<OP>, O>(&va, b, out, n, true, false);                                           \
    }                                                                                                      \
    extern "C" __global__ void NAME##_vk(const T* a, FillValue b, O* out, long long n) {                  \
        const T vb = fx_value_of<T>(b);                                                                    \
        fx_binary_contig<F<OP>, O>(a, &vb, out, n, false, true);                                           \
    }
