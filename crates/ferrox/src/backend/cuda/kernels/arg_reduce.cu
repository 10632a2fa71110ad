// arg_reduce.cu: argmax / argmin along one axis of the module dtype T.
//
// Kernels (blockDim 256 = 8 warps, any gridDim.x >= 1):
//   argmax(const T* x, unsigned int* out, long long n_out, long long len, long long step, Strided1 kept)
//   argmin(same parameters)
// For each output o (its base offset is the offset of o in `kept`, row-major
// over o), out[o] is the index k in [0, len) of the first largest (smallest)
// value among x[base + k*step]. NaN counts as the extreme and the first NaN
// wins (cpu reduce.rs `better`); complex values compare lexicographically.
// len >= 1.
//
// One warp per output (warp w of block b handles o = b*8 + w, then strides
// over the grid). Lanes scan k = lane, lane + 32, ... (for step == 1 in
// 16-byte packs: pack p goes to lane p % 32), each lane keeping its first
// best, and the 32 candidates are combined with shuffles, keeping the
// smaller index on ties.

// Whether v replaces the current best (strictly better, as the CPU scan).
template <bool IS_MAX>
__device__ __forceinline__ bool fx_better(TC v, TC best) {
    const bool nan_wins = fx_isnan(v) && !fx_isnan(best);
    return (IS_MAX ? fx_lt(best, v) : fx_lt(v, best)) || nan_wins;
}

// Lane state: the best value seen and its index (-1: none yet).
template <bool IS_MAX>
struct FxArgBest {
    TC best;
    long long at;
    // Elements must be offered in increasing k (the first best is kept).
    __device__ __forceinline__ void offer(TC v, long long k) {
        if (at < 0 || fx_better<IS_MAX>(v, best)) {
            best = v;
            at = k;
        }
    }
};

template <bool IS_MAX>
__device__ __forceinline__ void fx_arg_reduce(const T* x, unsigned int* out, long long n_out, long long len,
                                              long long step, const Strided1& kept) {
    constexpr int P = 16 / (int)sizeof(T);
    constexpr int U = FxUnroll<P>::value;
    const int lane = threadIdx.x & 31;
    const long long warps_per_block = blockDim.x >> 5;
    const long long nwarps = (long long)gridDim.x * warps_per_block;
    // o is uniform across a warp, so every lane reaches the shuffles.
#pragma unroll 1
    for (long long o = blockIdx.x * warps_per_block + (threadIdx.x >> 5); o < n_out; o += nwarps) {
        const T* base = x + fx_offset(o, kept);
        FxArgBest<IS_MAX> lb;
        lb.best = fx_zero();
        lb.at = -1;
        long long k0 = 0;  // elements before k0 have been offered
        if (step == 1) {
            // Contiguous: k < head one per lane, then 16-byte packs (pack p
            // goes to lane p % 32), then the tail; each lane still sees its
            // elements in increasing k.
            const unsigned long long addr = (unsigned long long)base;
            long long head = len;
            if (addr % sizeof(T) == 0) head = (long long)(((16 - (addr & 15)) & 15) / sizeof(T));
            if (head > len) head = len;
            if (lane < head) lb.offer(fx_to_c(base[lane]), lane);
            const long long npk = (len - head) / P;
            const T* body = base + head;
#pragma unroll 1
            for (long long p0 = lane; p0 < npk; p0 += 32 * U) {
                FxPack<T, P> in[U];
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    if (p0 + 32 * u < npk) in[u].load(body + (p0 + 32 * u) * P);
                }
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    if (p0 + 32 * u < npk) {
#pragma unroll
                        for (int e = 0; e < P; ++e) lb.offer(fx_to_c(in[u].v[e]), head + (p0 + 32 * u) * P + e);
                    }
                }
            }
            k0 = head + npk * P;
        }
#pragma unroll 1
        for (long long k = k0 + lane; k < len; k += 32) lb.offer(fx_to_c(base[k * step]), k);
        TC best = lb.best;
        long long at = lb.at;
#pragma unroll
        for (int m = 16; m >= 1; m >>= 1) {
            const TC other = fx_shfl_xor(best, m);
            const long long other_at = fx_shfl_xor(at, m);
            bool take;
            if (other_at < 0) {
                take = false;
            } else if (at < 0) {
                take = true;
            } else if (fx_better<IS_MAX>(other, best)) {
                take = true;
            } else if (fx_better<IS_MAX>(best, other)) {
                take = false;
            } else {
                take = other_at < at;  // equal: the first one wins
            }
            if (take) {
                best = other;
                at = other_at;
            }
        }
        if (lane == 0) out[o] = (unsigned int)at;
    }
}

extern "C" __global__ void argmax(const T* x, unsigned int* out, long long n_out, long long len, long long step,
                                  Strided1 kept) {
    fx_arg_reduce<true>(x, out, n_out, len, step, kept);
}

extern "C" __global__ void argmin(const T* x, unsigned int* out, long long n_out, long long len, long long step,
                                  Strided1 kept) {
    fx_arg_reduce<false>(x, out, n_out, len, step, kept);
}
