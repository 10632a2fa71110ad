// softmax.cu: softmax, log-sum-exp and cross entropy over the last axis
// (backend/fast_op.rs) for the real float module dtypes T, computing in TC
// and rounding once. The twin of backend/cpu/softmax.rs.
//
// Rows are contiguous runs of d elements. One block per row (the grid strides
// over rows); blockDim is a power of two from 32 to 1024 (each kernel is
// compiled for 1024 threads, which caps its registers at 64: float64 would
// take more). Each thread keeps a running maximum m and sum s of
// exp(x - m) over its elements, read once; the block merges the pairs. softmax reads the row a second time.
//   softmax(const T* x, T* y, long long rows, long long d)
//   logsumexp(const T* x, T* out, long long rows, long long d)
// A row holding NaN gives NaN; one holding +inf (and no NaN) gives NaN
// softmax and +inf log-sum-exp; an all -inf row gives NaN softmax and -inf
// log-sum-exp.
//
// The cross entropy against class indices (FastOp::CrossEntropy) reads each
// row once in 16-byte packs (from its first aligned element; the head and
// the tail element by element), one block per row:
//   cross_entropy(const T* x, const int* targets, T* loss, TC* stats, long long rows, long long d,
//                 long long ld, double smoothing)
//       loss[r] = m + log_sum - (1 - smoothing) x[r, t] - smoothing * mean(x[r]),
//       stats[2r], stats[2r + 1] = m, log_sum (the row's max and log(sum(exp(x - m))));
//       a target out of range (after negative ones count from the end) gives NaN.
//   cross_entropy_vjp(const T* x, const int* targets, const TC* stats, const T* g, T* dx, long long rows,
//                     long long d, long long ld, double smoothing)
// The rows of x are ld >= d elements apart (a view of padded logits), and
// so are those of dx.
//       dx[r, j] = g[r] (exp(x[r, j] - m - log_sum) - smoothing / d - (1 - smoothing) [j == t]);
//       NaN for a row whose target is out of range.

#if FX_IS_FLOAT

// The pair (m, s) is the running maximum of the non-NaN values and the sum
// of exp(x - m); s is NaN once a NaN was seen (sticky) and +inf once +inf
// was seen, so the log-sum-exp m + log(s) is NaN, +inf or -inf as the
// composed definition gives.

// Merges the pair (m2, s2) into the running pair (m, s).
__device__ __forceinline__ void fx_lse_merge(TC& m, TC& s, TC m2, TC s2) {
    const TC mn = fmax(m, m2);
    if (s != s || s2 != s2) {
        s = s + s2;  // NaN
    } else if (mn == (TC)fx_inf_f32()) {
        s = (TC)fx_inf_f32();
    } else if (mn != -(TC)fx_inf_f32()) {
        s = s * fx_exp(m - mn) + s2 * fx_exp(m2 - mn);
    }
    m = mn;
}

// Folds four more values into the pair: one rescale, four exponentials.
__device__ __forceinline__ void fx_lse_add4(TC& m, TC& s, TC a, TC b, TC c, TC e) {
    const TC mn = fmax(m, fmax(fmax(a, b), fmax(c, e)));
    if (a != a || b != b || c != c || e != e || s != s) {
        s = a + b + c + e + s;  // NaN
    } else if (mn == (TC)fx_inf_f32()) {
        s = (TC)fx_inf_f32();
    } else if (mn != -(TC)fx_inf_f32()) {
        s = s * fx_exp(m - mn) + fx_exp(a - mn) + fx_exp(b - mn) + fx_exp(c - mn) + fx_exp(e - mn);
    }
    m = mn;
}

// Merges the pairs (m, s) and sums `total` across the warp, into every lane.
__device__ __forceinline__ void fx_lse_warp_merge(TC& m, TC& s, TC& total) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const TC m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const TC s2 = __shfl_xor_sync(0xffffffffu, s, o);
        total += __shfl_xor_sync(0xffffffffu, total, o);
        fx_lse_merge(m, s, m2, s2);
    }
}

// Merges the block's pairs (m, s) and sums its `total`, into every thread.
__device__ __forceinline__ void fx_lse_block_merge(TC& m, TC& s, TC& total) {
    __shared__ TC red_m[32];
    __shared__ TC red_s[32];
    __shared__ TC red_t[32];
    fx_lse_warp_merge(m, s, total);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    if (lane == 0) {
        red_m[warp] = m;
        red_s[warp] = s;
        red_t[warp] = total;
    }
    __syncthreads();
    m = lane < warps ? red_m[lane] : -(TC)fx_inf_f32();
    s = lane < warps ? red_s[lane] : (TC)0;
    total = lane < warps ? red_t[lane] : (TC)0;
    fx_lse_warp_merge(m, s, total);
    __syncthreads();  // red_* is rewritten by the next row
}

// The row's (max, sum of exp(x - max)), valid in every thread.
__device__ __forceinline__ void fx_row_lse(const T* xr, long long d, TC& m_out, TC& s_out) {
    const TC ninf = -(TC)fx_inf_f32();
    TC m = ninf, s = 0, unused = 0;
    const long long step = blockDim.x;
    long long i = threadIdx.x;
    for (; i + 3 * step < d; i += 4 * step)
        fx_lse_add4(m, s, fx_to_c(xr[i]), fx_to_c(xr[i + step]), fx_to_c(xr[i + 2 * step]), fx_to_c(xr[i + 3 * step]));
    for (; i < d; i += step) fx_lse_add4(m, s, fx_to_c(xr[i]), ninf, ninf, ninf);
    fx_lse_block_merge(m, s, unused);
    m_out = m;
    s_out = s;
}

// The class target t names among d, or -1 when out of range.
__device__ __forceinline__ long long fx_ce_class(int t, long long d) {
    const long long i = t < 0 ? (long long)t + d : (long long)t;
    return i >= 0 && i < d ? i : -1;
}

// Elements before the first 16-byte aligned one of row xr (at most d).
__device__ __forceinline__ long long fx_ce_head(const T* xr, long long d) {
    constexpr long long V = 16 / sizeof(T);
    const long long misaligned = ((unsigned long long)xr & 15) / sizeof(T);
    const long long head = misaligned == 0 ? 0 : V - misaligned;
    return head < d ? head : d;
}

extern "C" __global__ void __launch_bounds__(1024) cross_entropy(const T* x, const int* targets, T* loss, TC* stats, long long rows,
                                         long long d, long long ld, double smoothing) {
    constexpr int V = 16 / sizeof(T);
    const TC ninf = -(TC)fx_inf_f32();
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * ld;
        const long long head = fx_ce_head(xr, d);
        const long long packs = (d - head) / V;
        // The mean is summed relative to the row's first value, so that
        // large logits lose nothing to rounding.
        const TC first = fx_to_c(xr[0]);
        const TC pivot = fx_isfinite(first) ? first : (TC)0;
        TC m = ninf, s = 0, total = 0;
        for (long long i = threadIdx.x; i < head; i += blockDim.x) {
            const TC a = fx_to_c(xr[i]);
            total += a - pivot;
            fx_lse_add4(m, s, a, ninf, ninf, ninf);
        }
        for (long long p = threadIdx.x; p < packs; p += blockDim.x) {
            FxPack<T, V> pk;
            pk.load(xr + head + p * V);
            TC c[V < 4 ? 4 : V];
#pragma unroll
            for (int e = 0; e < V; ++e) c[e] = fx_to_c(pk.v[e]);
#pragma unroll
            for (int e = V; e < 4; ++e) c[e] = ninf;
#pragma unroll
            for (int e = 0; e < V; ++e) total += c[e] - pivot;
#pragma unroll
            for (int e = 0; e < (V < 4 ? 4 : V); e += 4) fx_lse_add4(m, s, c[e], c[e + 1], c[e + 2], c[e + 3]);
        }
        for (long long i = head + packs * V + threadIdx.x; i < d; i += blockDim.x) {
            const TC a = fx_to_c(xr[i]);
            total += a - pivot;
            fx_lse_add4(m, s, a, ninf, ninf, ninf);
        }
        fx_lse_block_merge(m, s, total);
        if (threadIdx.x == 0) {
            const long long t = fx_ce_class(targets[r], d);
            const TC log_sum = fx_log(s);
            // lse - keep x[t] - smoothing mean(x), large terms relative to m.
            TC value = log_sum + ((TC)1 - (TC)smoothing) * (m - (t >= 0 ? fx_to_c(xr[t]) : (TC)0));
            if (smoothing > 0.f) value += (TC)smoothing * ((m - pivot) - total / (TC)d);
            loss[r] = fx_from_c(t >= 0 ? value : (TC)__uint_as_float(0x7fc00000u));
            stats[2 * r] = m;
            stats[2 * r + 1] = log_sum;
        }
    }
}

// One element of the cross entropy's derivative.
__device__ __forceinline__ T fx_ce_grad(TC v, TC m, TC log_sum, TC gr, TC spread, bool target, TC keep) {
    return fx_from_c(gr * (fx_exp((v - m) - log_sum) - spread - (target ? keep : (TC)0)));
}

extern "C" __global__ void __launch_bounds__(1024) cross_entropy_vjp(const T* x, const int* targets, const TC* stats, const T* g, T* dx,
                                             long long rows, long long d, long long ld, double smoothing) {
    constexpr int V = 16 / sizeof(T);
    const TC keep = (TC)1 - (TC)smoothing, spread = (TC)smoothing / (TC)d;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * ld;
        T* dr = dx + r * ld;
        const long long t = fx_ce_class(targets[r], d);
        // A NaN scale for a target out of range makes the whole row NaN.
        const TC gr = t >= 0 ? fx_to_c(g[r]) : (TC)__uint_as_float(0x7fc00000u);
        const TC m = stats[2 * r], log_sum = stats[2 * r + 1];
        // The packs need x and dx equally aligned; otherwise the whole row
        // goes element by element.
        const bool paired = (((unsigned long long)xr ^ (unsigned long long)dr) & 15) == 0;
        const long long head = paired ? fx_ce_head(xr, d) : d;
        const long long packs = (d - head) / V;
        for (long long i = threadIdx.x; i < head; i += blockDim.x)
            dr[i] = fx_ce_grad(fx_to_c(xr[i]), m, log_sum, gr, spread, i == t, keep);
        for (long long p = threadIdx.x; p < packs; p += blockDim.x) {
            const long long i0 = head + p * V;
            FxPack<T, V> pk;
            pk.load(xr + i0);
#pragma unroll
            for (int e = 0; e < V; ++e) pk.v[e] = fx_ce_grad(fx_to_c(pk.v[e]), m, log_sum, gr, spread, i0 + e == t, keep);
            pk.store(dr + i0);
        }
        for (long long i = head + packs * V + threadIdx.x; i < d; i += blockDim.x)
            dr[i] = fx_ce_grad(fx_to_c(xr[i]), m, log_sum, gr, spread, i == t, keep);
    }
}

extern "C" __global__ void __launch_bounds__(1024) softmax(const T* x, T* y, long long rows, long long d) {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * d;
        T* yr = y + r * d;
        TC m, s;
        fx_row_lse(xr, d, m, s);
        // A +inf maximum or a NaN gives NaN everywhere; so does an all -inf
        // row (exp(-inf - -inf) is NaN), as in the composed definition.
        const TC inv = m == (TC)fx_inf_f32() ? s - s : (TC)1 / s;
        for (long long j = threadIdx.x; j < d; j += blockDim.x) yr[j] = fx_from_c(fx_exp(fx_to_c(xr[j]) - m) * inv);
    }
}

extern "C" __global__ void __launch_bounds__(1024) logsumexp(const T* x, T* out, long long rows, long long d) {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        TC m, s;
        fx_row_lse(x + r * d, d, m, s);
        if (threadIdx.x == 0) out[r] = fx_from_c(m + fx_log(s));
    }
}

#endif
