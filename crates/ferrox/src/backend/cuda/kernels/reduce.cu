// reduce.cu: sum, prod, max, min reductions of the module dtype T.
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

#if FX_IS_HALF
typedef float FxSumAcc;  // sums and products of f16/bf16 accumulate in f32
#else
typedef T FxSumAcc;
#endif

// Conversions between a memory type M (T or ACC) and TC.
template <class M>
struct FxMem;
template <>
struct FxMem<T> {
    static __device__ __forceinline__ TC load(T v) { return fx_to_c(v); }
    static __device__ __forceinline__ T store(TC v) { return fx_from_c(v); }
};
#if FX_IS_HALF
template <>
struct FxMem<float> {
    static __device__ __forceinline__ TC load(float v) { return v; }
    static __device__ __forceinline__ float store(TC v) { return v; }
};
#endif

// Reduction ops: the partial type, the identity and the combine.
struct RedSum {
    typedef FxSumAcc Acc;
    static __device__ __forceinline__ TC identity() { return fx_zero(); }
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_add(a, b); }
};
struct RedProd {
    typedef FxSumAcc Acc;
    static __device__ __forceinline__ TC identity() { return fx_one(); }
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_mul(a, b); }
};
struct RedMax {
    typedef T Acc;
    static __device__ __forceinline__ TC identity() { return fx_lowest(); }
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_max(a, b); }
};
struct RedMin {
    typedef T Acc;
    static __device__ __forceinline__ TC identity() { return fx_highest(); }
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_min(a, b); }
};

// Elements per 16-byte pack.
#define FX_P (16 / (int)sizeof(T))

// Folds x[0, n) (contiguous) into acc; this thread takes its share of a
// loop strided over `nth` threads starting at `tid`. Uses 16-byte packs when
// x is aligned for them.
template <class R>
__device__ __forceinline__ TC fx_fold_contig(const T* x, long long n, long long tid, long long nth, TC acc) {
    constexpr int P = FX_P;
    constexpr int U = FxUnroll<P>::value;
    const R op{};
    long long done = 0;
    if (fx_aligned(x, 16)) {
        const long long npk = n / P;
#pragma unroll 1
        for (long long base = tid; base < npk; base += U * nth) {
            FxPack<T, P> in[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if (base + u * nth < npk) in[u].load(x + (base + u * nth) * P);
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if (base + u * nth < npk) {
#pragma unroll
                    for (int e = 0; e < P; ++e) acc = op(acc, fx_to_c(in[u].v[e]));
                }
            }
        }
        done = npk * P;
    }
#pragma unroll 1
    for (long long i = done + tid; i < n; i += nth) acc = op(acc, fx_to_c(x[i]));
    return acc;
}

template <class R>
__device__ __forceinline__ void fx_reduce_all(const T* x, typename R::Acc* partial, long long n) {
    __shared__ TC smem[32];
    TC acc = fx_fold_contig<R>(x, n, fx_thread_id(), fx_thread_count(), R::identity());
    acc = fx_block_reduce(acc, R(), smem);
    if (threadIdx.x == 0) partial[blockIdx.x] = FxMem<typename R::Acc>::store(acc);
}

template <class R>
__device__ __forceinline__ void fx_reduce_final(const typename R::Acc* partial, T* out, long long k) {
    __shared__ TC smem[32];
    if (blockIdx.x != 0) return;  // one block does the work
    const R op{};
    TC acc = R::identity();
#pragma unroll 1
    for (long long i = threadIdx.x; i < k; i += blockDim.x) acc = op(acc, FxMem<typename R::Acc>::load(partial[i]));
    acc = fx_block_reduce(acc, op, smem);
    if (threadIdx.x == 0) out[0] = fx_from_c(acc);
}

template <class R>
__device__ __forceinline__ void fx_reduce_rows(const T* x, T* out, long long n_out, const Strided1& kept,
                                               const Strided1& red) {
    __shared__ TC smem[32];
    const R op{};
    const long long r = fx_numel(red);
    const bool contiguous = red.ndim == 1 && red.s0[0] == 1;
    const long long tid = threadIdx.x, nth = blockDim.x;
#pragma unroll 1
    for (long long o = blockIdx.x; o < n_out; o += gridDim.x) {
        const T* row = x + fx_offset(o, kept);
        TC acc = R::identity();
        if (contiguous) {
            // Peel the elements before the first 16-byte boundary, then packs.
            const unsigned long long addr = (unsigned long long)row;
            long long head = r;
            if (addr % sizeof(T) == 0) head = (long long)(((16 - (addr & 15)) & 15) / sizeof(T));
            if (head > r) head = r;
#pragma unroll 1
            for (long long i = tid; i < head; i += nth) acc = op(acc, fx_to_c(row[i]));
            acc = fx_fold_contig<R>(row + head, r - head, tid, nth, acc);
        } else {
#pragma unroll 1
            for (long long i = tid; i < r; i += nth) acc = op(acc, fx_to_c(row[fx_offset(i, red)]));
        }
        acc = fx_block_reduce(acc, op, smem);
        if (threadIdx.x == 0) out[o] = fx_from_c(acc);
    }
}

#define FX_COLS_WIDTH 32     // blockDim.x: columns per block
#define FX_COLS_MAX_ROWS 32  // blockDim.y bound (the ABI uses 8)

template <class R>
__device__ __forceinline__ void fx_reduce_cols(const T* x, typename R::Acc* partial, long long outer, long long r,
                                               long long inner, long long split) {
    __shared__ TC sm[FX_COLS_MAX_ROWS][FX_COLS_WIDTH];
    const R op{};
    const int tx = threadIdx.x, ty = threadIdx.y, ny = blockDim.y;
    const long long chunk = split > 0 ? (r + split - 1) / split : r;
    // Block-uniform loops: the barriers below are reached by every thread.
#pragma unroll 1
    for (long long z = blockIdx.z; z < split; z += gridDim.z) {
        const long long r0 = z * chunk < r ? z * chunk : r;
        const long long r1 = r0 + chunk < r ? r0 + chunk : r;
#pragma unroll 1
        for (long long o = blockIdx.y; o < outer; o += gridDim.y) {
#pragma unroll 1
            for (long long jb = blockIdx.x; jb * FX_COLS_WIDTH < inner; jb += gridDim.x) {
                const long long j = jb * FX_COLS_WIDTH + tx;
                TC acc = R::identity();
                if (j < inner) {
                    const T* col = x + o * r * inner + j;
                    long long i = r0 + ty;
                    // Four rows in flight per step.
#pragma unroll 1
                    for (; i + 3 * ny < r1; i += 4 * ny) {
                        const T v0 = col[i * inner], v1 = col[(i + ny) * inner];
                        const T v2 = col[(i + 2 * ny) * inner], v3 = col[(i + 3 * ny) * inner];
                        acc = op(op(op(op(acc, fx_to_c(v0)), fx_to_c(v1)), fx_to_c(v2)), fx_to_c(v3));
                    }
#pragma unroll 1
                    for (; i < r1; i += ny) acc = op(acc, fx_to_c(col[i * inner]));
                }
                sm[ty][tx] = acc;
                __syncthreads();
                if (ty == 0 && j < inner) {
#pragma unroll 1
                    for (int k = 1; k < ny; ++k) acc = op(acc, sm[k][tx]);
                    partial[(z * outer + o) * inner + j] = FxMem<typename R::Acc>::store(acc);
                }
                __syncthreads();
            }
        }
    }
}

template <class R>
__device__ __forceinline__ void fx_reduce_cols_final(const typename R::Acc* partial, T* out, long long split,
                                                     long long m) {
    // blockDim (FX_COLS_WIDTH, ny): a block's ny threads split each column.
    __shared__ TC sm[FX_COLS_MAX_ROWS][FX_COLS_WIDTH];
    const R op{};
    const int tx = threadIdx.x, ty = threadIdx.y, ny = blockDim.y;
#pragma unroll 1
    for (long long jb = blockIdx.x; jb * FX_COLS_WIDTH < m; jb += gridDim.x) {
        const long long j = jb * FX_COLS_WIDTH + tx;
        TC acc = R::identity();
        if (j < m) {
#pragma unroll 1
            for (long long s = ty; s < split; s += ny) acc = op(acc, FxMem<typename R::Acc>::load(partial[s * m + j]));
        }
        sm[ty][tx] = acc;
        __syncthreads();
        if (ty == 0 && j < m) {
#pragma unroll 1
            for (int k = 1; k < ny; ++k) acc = op(acc, sm[k][tx]);
            out[j] = fx_from_c(acc);
        }
        __syncthreads();
    }
}

#define FX_REDUCE(NAME, R)                                                                                      \
    extern "C" __global__ void NAME##_all(const T* x, R::Acc* partial, long long n) {                           \
        fx_reduce_all<R>(x, partial, n);                                                                        \
    }                                                                                                           \
    extern "C" __global__ void NAME##_final(const R::Acc* partial, T* out, long long k) {                       \
        fx_reduce_final<R>(partial, out, k);                                                                    \
    }                                                                                                           \
    extern "C" __global__ void NAME##_rows(const T* x, T* out, long long n_out, Strided1 kept, Strided1 red) {  \
        fx_reduce_rows<R>(x, out, n_out, kept, red);                                                            \
    }                                                                                                           \
    extern "C" __global__ void NAME##_cols(const T* x, R::Acc* partial, long long outer, long long r,           \
                                           long long inner, long long split) {                                  \
        fx_reduce_cols<R>(x, partial, outer, r, inner, split);                                                  \
    }                                                                                                           \
    extern "C" __global__ void NAME##_cols_final(const R::Acc* partial, T* out, long long split, long long m) { \
        fx_reduce_cols_final<R>(partial, out, split, m);                                                        \
    }

FX_REDUCE(sum, RedSum)
FX_REDUCE(prod, RedProd)
FX_REDUCE(max, RedMax)
FX_REDUCE(min, RedMin)
