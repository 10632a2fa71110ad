// norm.cu: fused RMS and layer normalization over the last axis, forward
// and backward (backend/fast_op.rs), for the real float module dtypes T,
// computing in TC and rounding once. The twin of backend/cpu/norm.rs.
//
// Rows are contiguous runs of d elements; the weight and bias are d values,
// or one value for every feature when their `vec` flag is 0 (MLX's 0-d 1
// and 0). One block per row (the grid strides over rows); blockDim is a
// power of two from 32 to 1024.
//   rms_norm(const T* x, const T* w, int w_vec, T* y, long long rows, int d, float eps)
//   layer_norm(const T* x, const T* w, int w_vec, const T* b, int b_vec, T* y,
//              long long rows, int d, float eps)
// The backward kernels write dx and, per block, partial sums of the weight
// (and bias) cotangents into rows blockIdx.x of `pw` (and `pb`), TC arrays
// of gridDim.x x d; norm_feature_sum then adds the partial rows up.
//   rms_norm_vjp(const T* x, const T* w, int w_vec, const T* g, T* dx, TC* pw,
//                long long rows, int d, float eps)
//   layer_norm_vjp(const T* x, const T* w, int w_vec, const T* g, T* dx, TC* pw, TC* pb,
//                  long long rows, int d, float eps)
//   norm_feature_sum(const TC* partial, int parts, int d, T* out)   blockDim (32, <= 32), 32 features a block
// The `_packed` variants take the same arguments and hold each row in
// registers (one read of x and dy; the forward ones load a block's next row
// while they reduce the current one): rows of 16-byte packs, d * sizeof(T) a
// multiple of 16, 16-byte aligned x, dy, y, dx and vector w, b, and at most
// FX_NORM_VPT packs per thread (blockDim >= packs / FX_NORM_VPT).

#if FX_IS_FLOAT

struct FxNormAdd {
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return a + b; }
};

// The sum of f(j) over a row's features j, valid in every thread.
template <class F>
__device__ __forceinline__ TC fx_row_sum(int d, F f) {
    __shared__ TC red[32];
    __shared__ TC total;
    TC acc = 0;
    for (int j = threadIdx.x; j < d; j += blockDim.x) acc += f(j);
    acc = fx_block_reduce(acc, FxNormAdd(), red);
    if (threadIdx.x == 0) total = acc;
    __syncthreads();
    TC r = total;
    __syncthreads();  // `total` is rewritten by the next call
    return r;
}

__device__ __forceinline__ TC fx_feature(const T* p, int vec, int j) { return fx_to_c(p[vec ? j : 0]); }

__device__ __forceinline__ TC fx_rsqrt_c(TC v) {
#if defined(FX_DTYPE_F64)
    return rsqrt(v);
#else
    return rsqrtf(v);
#endif
}

extern "C" __global__ void rms_norm(const T* x, const T* w, int w_vec, T* y, long long rows, int d, float eps) {
    const TC inv_d = (TC)1 / (TC)d;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * d;
        T* yr = y + r * d;
        TC ss = fx_row_sum(d, [&](int j) {
            TC v = fx_to_c(xr[j]);
            return v * v;
        });
        TC scale = fx_rsqrt_c(ss * inv_d + (TC)eps);
        for (int j = threadIdx.x; j < d; j += blockDim.x) yr[j] = fx_from_c(fx_to_c(xr[j]) * scale * fx_feature(w, w_vec, j));
    }
}

extern "C" __global__ void layer_norm(const T* x, const T* w, int w_vec, const T* b, int b_vec, T* y, long long rows,
                                      int d, float eps) {
    const TC inv_d = (TC)1 / (TC)d;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * d;
        T* yr = y + r * d;
        TC mean = fx_row_sum(d, [&](int j) { return fx_to_c(xr[j]); }) * inv_d;
        TC var = fx_row_sum(d, [&](int j) {
                     TC c = fx_to_c(xr[j]) - mean;
                     return c * c;
                 }) * inv_d;
        TC scale = fx_rsqrt_c(var + (TC)eps);
        for (int j = threadIdx.x; j < d; j += blockDim.x)
            yr[j] = fx_from_c((fx_to_c(xr[j]) - mean) * scale * fx_feature(w, w_vec, j) + fx_feature(b, b_vec, j));
    }
}

extern "C" __global__ void rms_norm_vjp(const T* x, const T* w, int w_vec, const T* g, T* dx, TC* pw, long long rows,
                                        int d, float eps) {
    const TC inv_d = (TC)1 / (TC)d;
    TC* part = pw + (long long)blockIdx.x * d;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * d;
        const T* gr = g + r * d;
        TC ss = fx_row_sum(d, [&](int j) {
            TC v = fx_to_c(xr[j]);
            return v * v;
        });
        TC wgx = fx_row_sum(d, [&](int j) { return fx_feature(w, w_vec, j) * fx_to_c(gr[j]) * fx_to_c(xr[j]); });
        TC scale = fx_rsqrt_c(ss * inv_d + (TC)eps);
        TC k = wgx * inv_d * scale * scale * scale;
        const bool first = r == blockIdx.x;
        for (int j = threadIdx.x; j < d; j += blockDim.x) {
            TC xv = fx_to_c(xr[j]), gv = fx_to_c(gr[j]);
            dx[r * d + j] = fx_from_c(scale * fx_feature(w, w_vec, j) * gv - xv * k);
            TC c = gv * xv * scale;
            part[j] = first ? c : part[j] + c;
        }
    }
}

extern "C" __global__ void layer_norm_vjp(const T* x, const T* w, int w_vec, const T* g, T* dx, TC* pw, TC* pb,
                                          long long rows, int d, float eps) {
    const TC inv_d = (TC)1 / (TC)d;
    TC* part_w = pw + (long long)blockIdx.x * d;
    TC* part_b = pb + (long long)blockIdx.x * d;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * d;
        const T* gr = g + r * d;
        TC mean = fx_row_sum(d, [&](int j) { return fx_to_c(xr[j]); }) * inv_d;
        TC var = fx_row_sum(d, [&](int j) {
                     TC c = fx_to_c(xr[j]) - mean;
                     return c * c;
                 }) * inv_d;
        TC scale = fx_rsqrt_c(var + (TC)eps);
        TC wg_sum = fx_row_sum(d, [&](int j) { return fx_feature(w, w_vec, j) * fx_to_c(gr[j]); });
        TC wgx_sum =
            fx_row_sum(d, [&](int j) { return fx_feature(w, w_vec, j) * fx_to_c(gr[j]) * (fx_to_c(xr[j]) - mean); });
        TC a = wg_sum * inv_d, c = wgx_sum * scale * inv_d;
        const bool first = r == blockIdx.x;
        for (int j = threadIdx.x; j < d; j += blockDim.x) {
            TC xhat = (fx_to_c(xr[j]) - mean) * scale, gv = fx_to_c(gr[j]);
            dx[r * d + j] = fx_from_c(scale * (fx_feature(w, w_vec, j) * gv - a - xhat * c));
            part_w[j] = first ? gv * xhat : part_w[j] + gv * xhat;
            part_b[j] = first ? gv : part_b[j] + gv;
        }
    }
}

extern "C" __global__ void norm_feature_sum(const TC* partial, int parts, int d, T* out) {
    // blockDim (32, ny): 32 features per block, ny threads splitting the parts.
    __shared__ TC sm[32][32];
    const int tx = threadIdx.x, ty = threadIdx.y, j = blockIdx.x * 32 + tx;
    TC s = 0;
    if (j < d)
        for (int p = ty; p < parts; p += blockDim.y) s += partial[(long long)p * d + j];
    sm[ty][tx] = s;
    __syncthreads();
    if (ty == 0 && j < d) {
        for (int k = 1; k < blockDim.y; ++k) s += sm[k][tx];
        out[j] = fx_from_c(s);
    }
}


// ---------------------------------------------------------------------------
// Register-cached rows: each thread holds FX_NORM_VPT packs of P elements.

#define FX_NORM_VPT 4
#define FX_NORM_P (16 / (int)sizeof(T))

struct FxNormRow {
    TC v[FX_NORM_VPT][FX_NORM_P];
};

// This thread's packs of a row as loaded, not yet converted: a load into
// one is issued at once and waited for only where it is converted.
struct FxNormRaw {
    FxPack<T, FX_NORM_P> pk[FX_NORM_VPT];
};

// Issues the loads of this thread's packs of a row.
__device__ __forceinline__ void fx_norm_fetch(const T* row, int packs, FxNormRaw& raw) {
#pragma unroll
    for (int i = 0; i < FX_NORM_VPT; ++i) {
        const int p = threadIdx.x + i * blockDim.x;
        if (p < packs) raw.pk[i].load(row + p * FX_NORM_P);
    }
}

// Converts fetched packs to TC (zeros past the row's end).
__device__ __forceinline__ void fx_norm_convert(const FxNormRaw& raw, int packs, FxNormRow& r) {
#pragma unroll
    for (int i = 0; i < FX_NORM_VPT; ++i) {
        const int p = threadIdx.x + i * blockDim.x;
#pragma unroll
        for (int e = 0; e < FX_NORM_P; ++e) r.v[i][e] = p < packs ? fx_to_c(raw.pk[i].v[e]) : (TC)0;
    }
}

// Loads this thread's packs of a row (zeros past the row's end).
__device__ __forceinline__ void fx_norm_load(const T* row, int packs, FxNormRow& r) {
    FxNormRaw raw;
    fx_norm_fetch(row, packs, raw);
    fx_norm_convert(raw, packs, r);
}

// Stores this thread's packs of a row.
__device__ __forceinline__ void fx_norm_store(T* row, int packs, const FxNormRow& r) {
#pragma unroll
    for (int i = 0; i < FX_NORM_VPT; ++i) {
        const int p = threadIdx.x + i * blockDim.x;
        if (p >= packs) continue;
        FxPack<T, FX_NORM_P> pk;
#pragma unroll
        for (int e = 0; e < FX_NORM_P; ++e) pk.v[e] = fx_from_c(r.v[i][e]);
        pk.store(row + p * FX_NORM_P);
    }
}

// A per-feature parameter at this thread's packs (a broadcast value for a 0-d one).
__device__ __forceinline__ void fx_norm_feature(const T* f, int vec, int packs, FxNormRow& r) {
    if (vec) {
        fx_norm_load(f, packs, r);
        return;
    }
    const TC x = fx_to_c(f[0]);
#pragma unroll
    for (int i = 0; i < FX_NORM_VPT; ++i)
#pragma unroll
        for (int e = 0; e < FX_NORM_P; ++e) r.v[i][e] = x;
}

// K sums at once (one block-wide reduction for several quantities).
template <int K>
struct FxNormSums {
    TC v[K];
};

template <int K>
struct FxNormSumsAdd {
    __device__ __forceinline__ FxNormSums<K> operator()(FxNormSums<K> a, const FxNormSums<K>& b) const {
#pragma unroll
        for (int k = 0; k < K; ++k) a.v[k] += b.v[k];
        return a;
    }
};

// Block-wide sums of K quantities over the row, valid in every thread:
// f(i, e, acc) adds this thread's element (i, e) into acc.v. One barrier
// pair per call: after the warps' partials meet in shared memory, every
// group of nwarps lanes folds a full copy of them in the order thread 0
// does, so all threads hold the same bits without a broadcast.
template <int K, class F>
__device__ __forceinline__ FxNormSums<K> fx_norm_sums(F f) {
    __shared__ FxNormSums<K> red[32];
    const FxNormSumsAdd<K> add;
    FxNormSums<K> acc = {};
#pragma unroll
    for (int i = 0; i < FX_NORM_VPT; ++i)
#pragma unroll
        for (int e = 0; e < FX_NORM_P; ++e) f(i, e, acc);
    acc = fx_warp_reduce(acc, add);
    const int nwarps = blockDim.x >> 5;
    if (nwarps == 1) return acc;
    __syncthreads();  // the previous row's readers are done with `red`
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
    __syncthreads();
    acc = red[threadIdx.x & (nwarps - 1)];
    return fx_warp_reduce(acc, add, nwarps);
}

// Whether this thread's pack i lies inside the row.
__device__ __forceinline__ bool fx_norm_in_row(int i, int packs) { return threadIdx.x + i * blockDim.x < packs; }

extern "C" __global__ void rms_norm_packed(const T* x, const T* w, int w_vec, T* y, long long rows, int d, float eps) {
    const int packs = d / FX_NORM_P;
    const TC inv_d = (TC)1 / (TC)d;
    FxNormRow wr, r;
    FxNormRaw next;  // the block's next row, in flight while this one is reduced
    fx_norm_feature(w, w_vec, packs, wr);
    if (blockIdx.x < rows) fx_norm_fetch(x + (long long)blockIdx.x * d, packs, next);
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        fx_norm_convert(next, packs, r);
        if (row + gridDim.x < rows) fx_norm_fetch(x + (row + gridDim.x) * d, packs, next);
        const TC ss = fx_norm_sums<1>([&](int i, int e, FxNormSums<1>& a) { a.v[0] += r.v[i][e] * r.v[i][e]; }).v[0];
        const TC scale = fx_rsqrt_c(ss * inv_d + (TC)eps);
#pragma unroll
        for (int i = 0; i < FX_NORM_VPT; ++i)
#pragma unroll
            for (int e = 0; e < FX_NORM_P; ++e) r.v[i][e] = r.v[i][e] * scale * wr.v[i][e];
        fx_norm_store(y + row * d, packs, r);
    }
}

extern "C" __global__ void layer_norm_packed(const T* x, const T* w, int w_vec, const T* b, int b_vec, T* y,
                                             long long rows, int d, float eps) {
    const int packs = d / FX_NORM_P;
    const TC inv_d = (TC)1 / (TC)d;
    FxNormRow wr, br, r;
    FxNormRaw next;  // the block's next row, in flight while this one is reduced
    fx_norm_feature(w, w_vec, packs, wr);
    fx_norm_feature(b, b_vec, packs, br);
    if (blockIdx.x < rows) fx_norm_fetch(x + (long long)blockIdx.x * d, packs, next);
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        fx_norm_convert(next, packs, r);
        if (row + gridDim.x < rows) fx_norm_fetch(x + (row + gridDim.x) * d, packs, next);
        const TC mean = fx_norm_sums<1>([&](int i, int e, FxNormSums<1>& a) { a.v[0] += r.v[i][e]; }).v[0] * inv_d;
        const TC var = fx_norm_sums<1>([&](int i, int e, FxNormSums<1>& a) {
                           const TC c = r.v[i][e] - mean;
                           a.v[0] += fx_norm_in_row(i, packs) ? c * c : (TC)0;
                       }).v[0] *
                       inv_d;
        const TC scale = fx_rsqrt_c(var + (TC)eps);
#pragma unroll
        for (int i = 0; i < FX_NORM_VPT; ++i)
#pragma unroll
            for (int e = 0; e < FX_NORM_P; ++e) r.v[i][e] = (r.v[i][e] - mean) * scale * wr.v[i][e] + br.v[i][e];
        fx_norm_store(y + row * d, packs, r);
    }
}

// Adds this thread's per-feature sums into row blockIdx.x of a partial array.
__device__ __forceinline__ void fx_norm_partial(TC* part, int packs, const FxNormRow& acc) {
#pragma unroll
    for (int i = 0; i < FX_NORM_VPT; ++i) {
        const int p = threadIdx.x + i * blockDim.x;
        if (p >= packs) continue;
#pragma unroll
        for (int e = 0; e < FX_NORM_P; ++e) part[p * FX_NORM_P + e] = acc.v[i][e];
    }
}

extern "C" __global__ void rms_norm_vjp_packed(const T* x, const T* w, int w_vec, const T* g, T* dx, TC* pw,
                                               long long rows, int d, float eps) {
    const int packs = d / FX_NORM_P;
    const TC inv_d = (TC)1 / (TC)d;
    FxNormRow wr, xr, gr, dw = {};
    fx_norm_feature(w, w_vec, packs, wr);
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        fx_norm_load(x + row * d, packs, xr);
        fx_norm_load(g + row * d, packs, gr);
        // The sum of squares and the sum of w * g * x, in one reduction.
        const FxNormSums<2> s = fx_norm_sums<2>([&](int i, int e, FxNormSums<2>& a) {
            a.v[0] += xr.v[i][e] * xr.v[i][e];
            a.v[1] += wr.v[i][e] * gr.v[i][e] * xr.v[i][e];
        });
        const TC scale = fx_rsqrt_c(s.v[0] * inv_d + (TC)eps);
        const TC k = s.v[1] * inv_d * scale * scale * scale;
#pragma unroll
        for (int i = 0; i < FX_NORM_VPT; ++i)
#pragma unroll
            for (int e = 0; e < FX_NORM_P; ++e) {
                dw.v[i][e] += gr.v[i][e] * xr.v[i][e] * scale;
                gr.v[i][e] = scale * wr.v[i][e] * gr.v[i][e] - xr.v[i][e] * k;
            }
        fx_norm_store(dx + row * d, packs, gr);
    }
    fx_norm_partial(pw + (long long)blockIdx.x * d, packs, dw);
}

extern "C" __global__ void layer_norm_vjp_packed(const T* x, const T* w, int w_vec, const T* g, T* dx, TC* pw,
                                                 TC* pb, long long rows, int d, float eps) {
    const int packs = d / FX_NORM_P;
    const TC inv_d = (TC)1 / (TC)d;
    FxNormRow wr, xr, gr, dw = {}, db = {};
    fx_norm_feature(w, w_vec, packs, wr);
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        fx_norm_load(x + row * d, packs, xr);
        fx_norm_load(g + row * d, packs, gr);
        const TC mean = fx_norm_sums<1>([&](int i, int e, FxNormSums<1>& a) { a.v[0] += xr.v[i][e]; }).v[0] * inv_d;
#pragma unroll
        for (int i = 0; i < FX_NORM_VPT; ++i)
#pragma unroll
            for (int e = 0; e < FX_NORM_P; ++e) xr.v[i][e] -= mean;  // x - mean
        // The variance's sum and the sums of w * g and w * g * (x - mean), in
        // one reduction (packs past the row have g = 0).
        const FxNormSums<3> s = fx_norm_sums<3>([&](int i, int e, FxNormSums<3>& a) {
            const TC c = xr.v[i][e], wg = wr.v[i][e] * gr.v[i][e];
            a.v[0] += fx_norm_in_row(i, packs) ? c * c : (TC)0;
            a.v[1] += wg;
            a.v[2] += wg * c;
        });
        const TC scale = fx_rsqrt_c(s.v[0] * inv_d + (TC)eps);
        const TC a = s.v[1] * inv_d, c = s.v[2] * scale * inv_d;
#pragma unroll
        for (int i = 0; i < FX_NORM_VPT; ++i)
#pragma unroll
            for (int e = 0; e < FX_NORM_P; ++e) {
                const TC gv = gr.v[i][e], xhat = xr.v[i][e] * scale;
                dw.v[i][e] += gv * xhat;
                db.v[i][e] += gv;
                gr.v[i][e] = scale * (wr.v[i][e] * gv - a - xhat * c);
            }
        fx_norm_store(dx + row * d, packs, gr);
    }
    fx_norm_partial(pw + (long long)blockIdx.x * d, packs, dw);
    fx_norm_partial(pb + (long long)blockIdx.x * d, packs, db);
}

#endif
