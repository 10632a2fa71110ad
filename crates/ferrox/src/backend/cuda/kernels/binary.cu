// binary.cu: elementwise binary ops out = op(a, b) on the module dtype T.
//
// Kernels (blockDim 256, any gridDim.x >= 1; n may be 0; out contiguous):
//   <op>_vv      (const T* a, const T* b, O* out, long long n)              a, b contiguous
//   <op>_sv      (const T* a, const T* b, O* out, long long n)              a[0] broadcast, b contiguous
//   <op>_vs      (const T* a, const T* b, O* out, long long n)              a contiguous, b[0] broadcast
//   <op>_strided (const T* a, const T* b, O* out, long long n, Strided2 s)  a at s.s0, b at s.s1
//   <op>_kv      (FillValue a, const T* b, O* out, long long n)             a by value, b contiguous
//   <op>_vk      (const T* a, FillValue b, O* out, long long n)             a contiguous, b by value
// (the _kv/_vk forms take a Python scalar without copying it to the device)
// with O = T for
//   add subtract multiply divide power maximum minimum
// and O = fx_bool (unsigned char 0/1) for
//   equal not_equal less less_equal greater greater_equal
//
// Semantics follow element.rs: wrapping integer arithmetic, integer x / 0 =
// 0, integer powers with negative exponents, bool add = or, sub = xor, mul =
// div = and, pow = a | !b; NaN-propagating float maximum/minimum; complex
// comparisons are lexicographic; float less_equal is a <= b.

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

FX_BINARY(add, FxArith, OpAdd, T)
FX_BINARY(subtract, FxArith, OpSub, T)
FX_BINARY(multiply, FxArith, OpMul, T)
FX_BINARY(divide, FxArith, OpDiv, T)
FX_BINARY(power, FxArith, OpPow, T)
FX_BINARY(maximum, FxArith, OpMax, T)
FX_BINARY(minimum, FxArith, OpMin, T)

FX_BINARY(equal, FxCmp, OpEq, fx_bool)
FX_BINARY(not_equal, FxCmp, OpNe, fx_bool)
FX_BINARY(less, FxCmp, OpLt, fx_bool)
FX_BINARY(less_equal, FxCmp, OpLe, fx_bool)
FX_BINARY(greater, FxCmp, OpGt, fx_bool)
FX_BINARY(greater_equal, FxCmp, OpGe, fx_bool)
