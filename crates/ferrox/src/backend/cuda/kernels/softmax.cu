// softmax.cu: softmax and log-sum-exp over the last axis (backend/fast_op.rs)
// for the real float module dtypes T, computing in TC and rounding once.
// The twin of backend/cpu/softmax.rs.
//
// Rows are contiguous runs of d elements. One block per row (the grid strides
// over rows); blockDim is a power of two from 32 to 1024. Each thread keeps a
// running maximum m and sum s of exp(x - m) over its elements, read once;
// the block merges the pairs. softmax reads the row a second time.
//   softmax(const T* x, T* y, long long rows, long long d)
//   logsumexp(const T* x, T* out, long long rows, long long d)
// A row holding NaN gives NaN; one holding +inf (and no NaN) gives NaN
// softmax and +inf log-sum-exp; an all -inf row gives NaN softmax and -inf
// log-sum-exp.

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

// The row's (max, sum of exp(x - max)), valid in every thread.
__device__ __forceinline__ void fx_row_lse(const T* xr, long long d, TC& m_out, TC& s_out) {
    __shared__ TC red_m[32];
    __shared__ TC red_s[32];
    const TC ninf = -(TC)fx_inf_f32();
    TC m = ninf, s = 0;
    const long long step = blockDim.x;
    long long i = threadIdx.x;
    for (; i + 3 * step < d; i += 4 * step)
        fx_lse_add4(m, s, fx_to_c(xr[i]), fx_to_c(xr[i + step]), fx_to_c(xr[i + 2 * step]), fx_to_c(xr[i + 3 * step]));
    for (; i < d; i += step) fx_lse_add4(m, s, fx_to_c(xr[i]), ninf, ninf, ninf);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const TC m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const TC s2 = __shfl_xor_sync(0xffffffffu, s, o);
        fx_lse_merge(m, s, m2, s2);
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    if (lane == 0) {
        red_m[warp] = m;
        red_s[warp] = s;
    }
    __syncthreads();
    m = lane < warps ? red_m[lane] : ninf;
    s = lane < warps ? red_s[lane] : (TC)0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const TC m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const TC s2 = __shfl_xor_sync(0xffffffffu, s, o);
        fx_lse_merge(m, s, m2, s2);
    }
    __syncthreads();  // red_* is rewritten by the next row
    m_out = m;
    s_out = s;
}

extern "C" __global__ void softmax(const T* x, T* y, long long rows, long long d) {
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

extern "C" __global__ void logsumexp(const T* x, T* out, long long rows, long long d) {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        TC m, s;
        fx_row_lse(x + r * d, d, m, s);
        if (threadIdx.x == 0) out[r] = fx_from_c(m + fx_log(s));
    }
}

#endif
