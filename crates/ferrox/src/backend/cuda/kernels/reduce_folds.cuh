// reduce_folds.cuh: the first-pass folds of the reductions (sum, prod, max,
// min of the module dtype T) over any value source (see FxLoad), and the
// final passes over their partials. reduce.cu instantiates them over stored
// arrays; compile's fused reductions (cuda/fused_reduce.rs) over values a
// fused program computes on the fly. Kernel ABIs: see reduce.cu.

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

// The values a reduction folds come from a source `S` (element i of a
// flat index space):
//   S::Pack                   FX_P consecutive values;
//   s.addr(i)                 the byte address element i has (or would
//                             have, for values computed on the fly) in
//                             memory: the folds choose their order from it;
//   s.fetch(pack, i)          elements [i, i + FX_P) where addr(i) is
//                             16-byte aligned;
//   s.value(pack, e)          the e-th of them, as TC;
//   s.at(i)                   element i alone, as TC.
// FxLoad reads stored values; compile's fused reductions generate a source
// that computes each value from the program's inputs, so they fold in the
// order (and to the bits) of reducing the stored result.
struct FxLoad {
    const T* x;
    typedef FxPack<T, FX_P> Pack;
    __device__ __forceinline__ unsigned long long addr(long long i) const { return (unsigned long long)(x + i); }
    __device__ __forceinline__ void fetch(Pack& p, long long i) const { p.load(x + i); }
    __device__ __forceinline__ TC value(const Pack& p, int e) const { return fx_to_c(p.v[e]); }
    __device__ __forceinline__ TC at(long long i) const { return fx_to_c(x[i]); }
};

// Folds elements [start, start + n) of `src` into acc; this thread takes
// its share of a loop strided over `nth` threads starting at `tid`. Packs
// of FX_P when element `start` is 16-byte aligned.
template <class R, class S>
__device__ __forceinline__ TC fx_fold_contig(const S& src, long long start, long long n, long long tid, long long nth,
                                             TC acc) {
    constexpr int P = FX_P;
    constexpr int U = FxUnroll<P>::value;
    const R op{};
    long long done = 0;
    if ((src.addr(start) & 15) == 0) {
        const long long npk = n / P;
#pragma unroll 1
        for (long long base = tid; base < npk; base += U * nth) {
            typename S::Pack in[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if (base + u * nth < npk) src.fetch(in[u], start + (base + u * nth) * P);
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if (base + u * nth < npk) {
#pragma unroll
                    for (int e = 0; e < P; ++e) acc = op(acc, src.value(in[u], e));
                }
            }
        }
        done = npk * P;
    }
#pragma unroll 1
    for (long long i = done + tid; i < n; i += nth) acc = op(acc, src.at(start + i));
    return acc;
}

template <class R, class S>
__device__ __forceinline__ void fx_reduce_all(const S& src, typename R::Acc* partial, long long n) {
    __shared__ TC smem[32];
    TC acc = fx_fold_contig<R>(src, 0, n, fx_thread_id(), fx_thread_count(), R::identity());
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

template <class R, class S>
__device__ __forceinline__ void fx_reduce_rows(const S& src, T* out, long long n_out, const Strided1& kept,
                                               const Strided1& red) {
    __shared__ TC smem[32];
    const R op{};
    const long long r = fx_numel(red);
    const bool contiguous = red.ndim == 1 && red.s0[0] == 1;
    const long long tid = threadIdx.x, nth = blockDim.x;
#pragma unroll 1
    for (long long o = blockIdx.x; o < n_out; o += gridDim.x) {
        const long long row = fx_offset(o, kept);
        TC acc = R::identity();
        if (contiguous) {
            // Peel the elements before the first 16-byte boundary, then packs.
            const unsigned long long addr = src.addr(row);
            long long head = r;
            if (addr % sizeof(T) == 0) head = (long long)(((16 - (addr & 15)) & 15) / sizeof(T));
            if (head > r) head = r;
#pragma unroll 1
            for (long long i = tid; i < head; i += nth) acc = op(acc, src.at(row + i));
            acc = fx_fold_contig<R>(src, row + head, r - head, tid, nth, acc);
        } else {
#pragma unroll 1
            for (long long i = tid; i < r; i += nth) acc = op(acc, src.at(row + fx_offset(i, red)));
        }
        acc = fx_block_reduce(acc, op, smem);
        if (threadIdx.x == 0) out[o] = fx_from_c(acc);
    }
}

#define FX_COLS_WIDTH 32     // blockDim.x: columns per block
#define FX_COLS_MAX_ROWS 32  // blockDim.y bound (the ABI uses 8)

template <class R, class S>
__device__ __forceinline__ void fx_reduce_cols(const S& src, typename R::Acc* partial, long long outer, long long r,
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
                    const long long col = o * r * inner + j;
                    long long i = r0 + ty;
                    // Four rows in flight per step.
#pragma unroll 1
                    for (; i + 3 * ny < r1; i += 4 * ny) {
                        const TC v0 = src.at(col + i * inner), v1 = src.at(col + (i + ny) * inner);
                        const TC v2 = src.at(col + (i + 2 * ny) * inner), v3 = src.at(col + (i + 3 * ny) * inner);
                        acc = op(op(op(op(acc, v0), v1), v2), v3);
                    }
#pragma unroll 1
                    for (; i < r1; i += ny) acc = op(acc, src.at(col + i * inner));
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
