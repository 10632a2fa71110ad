// rope.cu: fused rotary position embeddings (backend/fast_op.rs), for the
// real float module dtypes T, computing in TC. The twin of
// backend/cpu/rope.rs.
//
//   rope(const T* x, T* y, const int* offsets, int n_offsets, const float* freqs,
//        long long rows, int d, int t_len, long long rows_per_batch, int dims,
//        int traditional, int forward, float base_step, float scale)
// x and y hold `rows` rows of d features; row r is position r % t_len of
// batch entry r / rows_per_batch, whose offset is offsets[that entry] (or
// offsets[0] when n_offsets is 1). Pair i < dims/2 rotates features
// (i, i + dims/2), or (2i, 2i + 1) when `traditional`, by
// (position + offset) * scale * inv_freq, where inv_freq is 1 / freqs[i]
// when freqs is not null and exp(-i * base_step) otherwise; `forward` 0
// rotates the other way (the derivative). Features from dims on are
// copied. One thread per (row, pair) and per copied feature; any grid.

#if FX_IS_FLOAT

extern "C" __global__ void rope(const T* x, T* y, const int* offsets, int n_offsets, const float* freqs,
                                long long rows, int d, int t_len, long long rows_per_batch, int dims, int traditional,
                                int forward, float base_step, float scale) {
    const int half = dims / 2;
    const int rest = d - dims;
    const long long pairs = rows * half, copies = rows * rest;
    const long long tid = fx_thread_id(), nth = fx_thread_count();
    for (long long e = tid; e < pairs; e += nth) {
        const long long r = e / half;
        const int i = (int)(e % half);
        const int offset = offsets[n_offsets == 1 ? 0 : r / rows_per_batch];
        const TC position = ((TC)(float)(r % t_len) + (TC)(float)offset) * (TC)scale;
        const TC inv_freq = freqs ? (TC)1 / (TC)freqs[i] : (TC)expf(-(float)i * base_step);
        const TC theta = position * inv_freq;
        TC s, c;
#if defined(FX_DTYPE_F64)
        sincos(theta, &s, &c);
#else
        sincosf(theta, &s, &c);
#endif
        const int a = traditional ? 2 * i : i, b = traditional ? 2 * i + 1 : i + half;
        const T* xr = x + r * d;
        T* yr = y + r * d;
        const TC x1 = fx_to_c(xr[a]), x2 = fx_to_c(xr[b]);
        if (forward) {
            yr[a] = fx_from_c(x1 * c - x2 * s);
            yr[b] = fx_from_c(x1 * s + x2 * c);
        } else {
            yr[a] = fx_from_c(x1 * c + x2 * s);
            yr[b] = fx_from_c(x2 * c - x1 * s);
        }
    }
    for (long long e = tid; e < copies; e += nth) {
        const long long r = e / rest;
        const int j = dims + (int)(e % rest);
        y[r * d + j] = x[r * d + j];
    }
}

#endif
