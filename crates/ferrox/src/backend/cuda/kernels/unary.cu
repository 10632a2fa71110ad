// unary.cu: the kernels of one elementwise unary op y = op(x) on the module
// dtype T. The host appends one instantiation line per op it compiles,
//
//     FX_UNARY(<name>, <functor>, <lift>, <out>)
//
// with the functor of unary_ops.cuh, lift FxLift1 and out T for ops whose
// result has the input's dtype, FxPred1 and fx_bool for the predicates.
//
// Kernels (blockDim 256, any gridDim.x >= 1; n may be 0):
//   <name>_contig (const T* x, O* y, long long n)              x, y contiguous
//   <name>_strided(const T* x, O* y, long long n, Strided1 s)  x at offsets of s, y contiguous
//
// f16/bf16 compute in float (TC) and round once on store.

// An op on the compute type TC lifted to storage type T.
template <class Op>
struct FxLift1 {
    __device__ __forceinline__ T operator()(T v) const { return fx_from_c(Op()(fx_to_c(v))); }
};
// A predicate on TC lifted to T -> fx_bool (0 or 1).
template <class Op>
struct FxPred1 {
    __device__ __forceinline__ fx_bool operator()(T v) const { return (fx_bool)(Op()(fx_to_c(v)) ? 1 : 0); }
};

#define FX_UNARY(NAME, OP, LIFT, O)                                                             \
    extern "C" __global__ void NAME##_contig(const T* x, O* y, long long n) {                  \
        fx_map1(x, y, n, LIFT<OP>());                                                           \
    }                                                                                           \
    extern "C" __global__ void NAME##_strided(const T* x, O* y, long long n, Strided1 s) {     \
        fx_map1_strided(x, y, n, s, LIFT<OP>());                                                \
    }
