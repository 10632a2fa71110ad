// unary.cu: elementwise unary maps y = op(x) on the module dtype T.
//
// Kernels (blockDim 256, any gridDim.x >= 1; n may be 0):
//   <op>_contig (const T* x, T* y, long long n)              x, y contiguous
//   <op>_strided(const T* x, T* y, long long n, Strided1 s)  x at offsets of s, y contiguous
// for <op> in
//   negative abs                                   every dtype
//   exp log sqrt sin cos tanh sigmoid              inexact dtypes only (f16 bf16 f32 f64 c64)
//
// Semantics follow element.rs: negation wraps for integers, abs of the
// integer MIN is MIN, bool negative/abs are the identity, complex abs is
// (|z|, 0); f16/bf16 compute in f32 and round once on store.

// Lifts an op on the compute type TC to storage type T.
template <class Op>
struct FxLift1 {
    __device__ __forceinline__ T operator()(T v) const { return fx_from_c(Op()(fx_to_c(v))); }
};

struct OpNegative {
    __device__ __forceinline__ TC operator()(TC a) const { return fx_neg(a); }
};
struct OpAbs {
    __device__ __forceinline__ TC operator()(TC a) const { return fx_abs(a); }
};

#if FX_IS_INEXACT
struct OpExp {
    __device__ __forceinline__ TC operator()(TC a) const { return fx_exp(a); }
};
struct OpLog {
    __device__ __forceinline__ TC operator()(TC a) const { return fx_log(a); }
};
struct OpSqrt {
    __device__ __forceinline__ TC operator()(TC a) const { return fx_sqrt(a); }
};
struct OpSin {
    __device__ __forceinline__ TC operator()(TC a) const { return fx_sin(a); }
};
struct OpCos {
    __device__ __forceinline__ TC operator()(TC a) const { return fx_cos(a); }
};
struct OpTanh {
    __device__ __forceinline__ TC operator()(TC a) const { return fx_tanh(a); }
};
struct OpSigmoid {
    __device__ __forceinline__ TC operator()(TC a) const { return fx_sigmoid(a); }
};
#endif

// The two kernels of one op.
#define FX_UNARY(NAME, OP)                                                                      \
    extern "C" __global__ void NAME##_contig(const T* x, T* y, long long n) {                  \
        fx_map1(x, y, n, FxLift1<OP>());                                                        \
    }                                                                                           \
    extern "C" __global__ void NAME##_strided(const T* x, T* y, long long n, Strided1 s) {     \
        fx_map1_strided(x, y, n, s, FxLift1<OP>());                                             \
    }

FX_UNARY(negative, OpNegative)
FX_UNARY(abs, OpAbs)

#if FX_IS_INEXACT
FX_UNARY(exp, OpExp)
FX_UNARY(log, OpLog)
FX_UNARY(sqrt, OpSqrt)
FX_UNARY(sin, OpSin)
FX_UNARY(cos, OpCos)
FX_UNARY(tanh, OpTanh)
FX_UNARY(sigmoid, OpSigmoid)
#endif
