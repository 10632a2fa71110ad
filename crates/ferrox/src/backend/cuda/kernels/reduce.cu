// reduce.cu: sum, prod, max, min reductions of the module dtype T (the
// folds are in reduce_folds.cuh, which comes before this file).
//
// ACC, the type of partial results in memory, is float for sum and prod of
// f16/bf16 and T otherwise. (Values are combined in the compute type TC:
// float for f16/bf16.) Integer sums and products wrap; bool sum = or, prod =
// and, max = or, min = and. Identities: sum 0, prod 1, max lowest (-inf,
// integer MIN, false, (-inf, -inf)), min highest. Float and complex max/min
// propagate NaN: once a NaN is combined in, the result is NaN.
//
// Kernels, for <op> in sum prod max min:
//   <op>_all(const T* x, ACC* partial, long long n)
//       contiguous x; 1-D blocks (blockDim.x a power of two in [32, 1024]),
//       any grid; block b writes partial[b].
//   <op>_final(const ACC* partial, T* out, long long k)
//       one block (blockDim.x a power of two in [32, 1024]) folds k partials
//       into out[0]; k == 0 gives the identity.
//   <op>_rows(const T* x, T* out, long long n_out, Strided1 kept, Strided1 red)
//       out[o] = fold over the elements of the layout `red` (shape/s0) based
//       at the offset of output o in `kept` (row-major over o). One block per
//       output (grid-stride over o), blockDim.x in {32, 64, 128, 256, 512}.
//   <op>_cols(const T* x, ACC* partial, long long outer, long long r, long long inner, long long split)
//       contiguous x of shape [outer, r, inner] reduced over r. blockDim
//       (32, 8); grid (ceil(inner/32), min(outer, cap), split). Block z folds
//       rows [z*chunk, (z+1)*chunk), chunk = ceil(r/split), and writes
//       partial[(z*outer + o)*inner + j].
//   <op>_cols_final(const ACC* partial, T* out, long long split, long long m)
//       out[j] = fold over s < split of partial[s*m + j], j < m; blockDim
//       (32, <= 32): 32 columns a block, blockDim.y threads splitting each.

#define FX_REDUCE(NAME, R)                                                                                      \
    extern "C" __global__ void NAME##_all(const T* x, R::Acc* partial, long long n) {                           \
        fx_reduce_all<R>(FxLoad{x}, partial, n);                                                                \
    }                                                                                                           \
    extern "C" __global__ void NAME##_final(const R::Acc* partial, T* out, long long k) {                       \
        fx_reduce_final<R>(partial, out, k);                                                                    \
    }                                                                                                           \
    extern "C" __global__ void NAME##_rows(const T* x, T* out, long long n_out, Strided1 kept, Strided1 red) {  \
        fx_reduce_rows<R>(FxLoad{x}, out, n_out, kept, red);                                                    \
    }                                                                                                           \
    extern "C" __global__ void NAME##_cols(const T* x, R::Acc* partial, long long outer, long long r,           \
                                           long long inner, long long split) {                                  \
        fx_reduce_cols<R>(FxLoad{x}, partial, outer, r, inner, split);                                          \
    }                                                                                                           \
    extern "C" __global__ void NAME##_cols_final(const R::Acc* partial, T* out, long long split, long long m) { \
        fx_reduce_cols_final<R>(partial, out, split, m);                                                        \
    }

FX_REDUCE(sum, RedSum)
FX_REDUCE(prod, RedProd)
FX_REDUCE(max, RedMax)
FX_REDUCE(min, RedMin)
