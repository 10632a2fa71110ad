// attention.cu: fused scaled dot-product attention (backend/fast_op.rs),
// forward and backward, for the real float module dtypes T, computing in
// TC. The twin of backend/cpu/attention.rs. No score matrix is stored: the
// forward pass keeps a running max and sum per query row (online softmax);
// the backward pass first recomputes each row's log-sum-exp (the forward
// kernel without the values) and then the probabilities from it
// (FlashAttention-2's split).
//
// Shapes: q (B, Hq, Lq, d), k (B, Hk, Lk, d), v (B, Hk, Lk, dv), rows
// contiguous; Hq is a multiple of Hk. `mask` is read through `ms` (element
// strides over (B, Hq, Lq, Lk)); `kind` is 0 none, 1 causal (query i sees
// keys j <= i + Lk - Lq), 2 boolean (fx_bool, 0 hides), 3 additive (T).
// Hidden scores become `fill` (MLX's finfo(dtype).min). `sinks`, when not
// null, holds one logit per query head. The head-dimension bucket D (32,
// 64, 128 or 256) bounds d and dv; G threads share each query row (or key
// row) and hold every G-th feature.
//   attention_fwd_<D>(q, k, v, mask, ms, kind, sinks, o, lse, FxAttnDims, scale, fill)
//       grid (ceil(Lq / 32), B * Hq), block 128; writes o (lse is unused)
//   attention_lse_<D>(same arguments): writes only lse, TC (B, Hq, Lq)
//   attention_delta(o, dout, lse, sinks, delta, dsinks, rows, dv, Lq, Hq)
//       delta[r] = dot(o[r], dout[r]); dsinks[h] -= exp(sink[h] - lse[r]) * delta[r]
//       (dsinks zeroed beforehand); one warp per row, any grid, blockDim 256
//   attention_bwd_<D>(q, k, v, mask, ms, kind, lse, delta, dout, dq_acc, dk, dv, FxAttnDims, scale, fill)
//       grid (ceil(Lk / 32), B * Hk), block 128; dq_acc is TC (zeroed
//       beforehand) and receives scale * dS K by atomic adds
//   attention_cast(const TC* acc, T* out, long long n): out = acc, any grid

#if FX_IS_FLOAT

struct FxAttnDims {
    int batch, q_heads, kv_heads, queries, keys, d, dv;
};

struct FxAttnStrides {
    long long s[4];
};

struct FxAttnAdd {
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return a + b; }
};

#define FX_ATTN_G 4
#define FX_ATTN_ROWS 32

__device__ __forceinline__ TC fx_attn_inf() { return (TC)fx_inf_f32(); }

// Applies the mask to score s of (b, h, i, j); `hidden` says whether the
// mask hid it (a hidden score passes no gradient).
__device__ __forceinline__ TC fx_attn_mask(TC s, int kind, const void* mask, const FxAttnStrides& ms, int b, int h,
                                           int i, int j, int shift, TC fill, bool& hidden) {
    hidden = false;
    if (kind == 0) return s;
    if (kind == 1) {
        hidden = j > i + shift;
    } else {
        long long at = b * ms.s[0] + h * ms.s[1] + i * ms.s[2] + j * ms.s[3];
        if (kind == 2) {
            hidden = ((const fx_bool*)mask)[at] == 0;
        } else {
            return s + fx_to_c(((const T*)mask)[at]);
        }
    }
    return hidden ? fill : s;
}

// Sum over the G lanes of a row group.
__device__ __forceinline__ TC fx_attn_group_sum(TC v) {
    v += fx_shfl_xor(v, 1);
    v += fx_shfl_xor(v, 2);
    return v;
}

// Keys per shared-memory tile (the tiles hold KT x D of T for k and v).
template <int D>
struct FxAttnTile {
    static constexpr int KT = (int)(16384 / (2 * D * sizeof(T))) < 32 ? (int)(16384 / (2 * D * sizeof(T))) : 32;
};

// OUT: accumulate and write o; otherwise only each row's log-sum-exp.
template <int D, bool OUT>
__device__ __forceinline__ void fx_attn_fwd(const T* q, const T* k, const T* v, const void* mask,
                                            const FxAttnStrides& ms, int kind, const T* sinks, T* o, TC* lse,
                                            const FxAttnDims& n, float scale, double fill_) {
    constexpr int G = FX_ATTN_G, M = D / G, KT = FxAttnTile<D>::KT;
    __shared__ T ks[KT][D];
    __shared__ T vs[KT][D];
    const TC fill = (TC)fill_;
    const int bh = blockIdx.y, b = bh / n.q_heads, h = bh % n.q_heads;
    const int kvh = h / (n.q_heads / n.kv_heads);
    const int c = threadIdx.x % G;
    const int i = blockIdx.x * FX_ATTN_ROWS + threadIdx.x / G;
    const bool active = i < n.queries;
    const int shift = n.keys - n.queries;
    TC qr[M], acc[M];
    const T* qrow = q + ((long long)bh * n.queries + (active ? i : 0)) * n.d;
#pragma unroll
    for (int m = 0; m < M; ++m) {
        const int f = c + G * m;
        qr[m] = active && f < n.d ? fx_to_c(qrow[f]) * (TC)scale : (TC)0;
        acc[m] = 0;
    }
    TC mx = sinks ? fx_to_c(sinks[h]) : -fx_attn_inf();
    TC l = sinks ? (TC)1 : (TC)0;
    // Causal: keys past the block's last row are hidden for every row, and
    // skipping them is exact when every row sees at least one key.
    int kend = n.keys;
    const int first_row = blockIdx.x * FX_ATTN_ROWS;
    if (kind == 1 && first_row + shift >= 0) kend = min(n.keys, first_row + FX_ATTN_ROWS + shift);
    const long long kv_base = (long long)b * n.kv_heads + kvh;
    const T* kb = k + kv_base * n.keys * n.d;
    const T* vb = v + kv_base * n.keys * n.dv;
    for (int j0 = 0; j0 < kend; j0 += KT) {
        __syncthreads();
        for (int e = threadIdx.x; e < KT * D; e += blockDim.x) {
            const int jj = e / D, f = e % D, j = j0 + jj;
            ks[jj][f] = j < n.keys && f < n.d ? kb[(long long)j * n.d + f] : fx_from_c(0);
            vs[jj][f] = j < n.keys && f < n.dv ? vb[(long long)j * n.dv + f] : fx_from_c(0);
        }
        __syncthreads();
        TC s[KT];
        TC tile_max = -fx_attn_inf();
#pragma unroll
        for (int jj = 0; jj < KT; ++jj) {
            TC part = 0;
#pragma unroll
            for (int m = 0; m < M; ++m) part += qr[m] * fx_to_c(ks[jj][c + G * m]);
            part = fx_attn_group_sum(part);
            const int j = j0 + jj;
            bool hidden;
            s[jj] = j < n.keys ? fx_attn_mask(part, kind, mask, ms, b, h, i, j, shift, fill, hidden) : -fx_attn_inf();
            tile_max = fmax(tile_max, s[jj]);
        }
        const TC new_max = fmax(mx, tile_max);
        const TC alpha = mx == -fx_attn_inf() ? (TC)0 : fx_exp(mx - new_max);
        l *= alpha;
        if (OUT) {
#pragma unroll
            for (int m = 0; m < M; ++m) acc[m] *= alpha;
        }
#pragma unroll
        for (int jj = 0; jj < KT; ++jj) {
            const TC p = s[jj] == -fx_attn_inf() ? (TC)0 : fx_exp(s[jj] - new_max);
            l += p;
            if (OUT) {
#pragma unroll
                for (int m = 0; m < M; ++m) acc[m] += p * fx_to_c(vs[jj][c + G * m]);
            }
        }
        mx = new_max;
    }
    if (!active) return;
    if (!OUT) {
        if (c == 0) lse[(long long)bh * n.queries + i] = mx + fx_log(l);
        return;
    }
    T* orow = o + ((long long)bh * n.queries + i) * n.dv;
#pragma unroll
    for (int m = 0; m < M; ++m) {
        const int f = c + G * m;
        if (f < n.dv) orow[f] = fx_from_c(acc[m] / l);
    }
}

extern "C" __global__ void attention_delta(const T* o, const T* dout, const TC* lse, const T* sinks, TC* delta,
                                           TC* dsinks, long long rows, int dv, int queries, int q_heads) {
    const long long warps = fx_thread_count() >> 5;
    const int lane = threadIdx.x & 31;
    for (long long r = fx_thread_id() >> 5; r < rows; r += warps) {
        TC acc = 0;
        for (int f = lane; f < dv; f += 32) acc += fx_to_c(o[r * dv + f]) * fx_to_c(dout[r * dv + f]);
        acc = fx_warp_reduce(acc, FxAttnAdd());
        if (lane == 0) {
            delta[r] = acc;
            if (sinks) {
                const int h = (int)((r / queries) % q_heads);
                atomicAdd(dsinks + h, -fx_exp(fx_to_c(sinks[h]) - lse[r]) * acc);
            }
        }
    }
}

// Queries per shared-memory tile of the backward pass.
#define FX_ATTN_QT (sizeof(T) == 2 ? 16 : 8)

template <int D>
__device__ __forceinline__ void fx_attn_bwd(const T* q, const T* k, const T* v, const void* mask,
                                            const FxAttnStrides& ms, int kind, const TC* lse, const TC* delta,
                                            const T* dout, TC* dq_acc, T* dk, T* dv, const FxAttnDims& n, float scale,
                                            double fill_) {
    constexpr int G = FX_ATTN_G, M = D / G, QT = FX_ATTN_QT;
    __shared__ T qs[QT][D];
    __shared__ T gs[QT][D];
    __shared__ TC lse_s[QT], delta_s[QT];
    __shared__ TC ds_s[QT][FX_ATTN_ROWS + 1];
    const TC fill = (TC)fill_;
    const int kvb = blockIdx.y, b = kvb / n.kv_heads, kvh = kvb % n.kv_heads;
    const int group = n.q_heads / n.kv_heads;
    const int c = threadIdx.x % G, jl = threadIdx.x / G;
    const int j0 = blockIdx.x * FX_ATTN_ROWS, j = j0 + jl;
    const bool active = j < n.keys;
    const int shift = n.keys - n.queries;
    const T* kb = k + (long long)kvb * n.keys * n.d;
    const T* vb = v + (long long)kvb * n.keys * n.dv;
    TC kr[M], vr[M], dk_acc[M], dv_acc[M];
#pragma unroll
    for (int m = 0; m < M; ++m) {
        const int f = c + G * m;
        kr[m] = active && f < n.d ? fx_to_c(kb[(long long)j * n.d + f]) : (TC)0;
        vr[m] = active && f < n.dv ? fx_to_c(vb[(long long)j * n.dv + f]) : (TC)0;
        dk_acc[m] = dv_acc[m] = 0;
    }
    for (int hg = 0; hg < group; ++hg) {
        const int h = kvh * group + hg;
        const long long row0 = ((long long)b * n.q_heads + h) * n.queries;
        for (int i0 = 0; i0 < n.queries; i0 += QT) {
            // Causal: skip query tiles that see none of these keys (exact
            // when each of their rows sees some key).
            if (kind == 1 && i0 + shift >= 0 && i0 + QT - 1 + shift < j0) continue;
            __syncthreads();
            for (int e = threadIdx.x; e < QT * D; e += blockDim.x) {
                const int ii = e / D, f = e % D, i = i0 + ii;
                const bool in = i < n.queries;
                qs[ii][f] = in && f < n.d ? q[(row0 + i) * n.d + f] : fx_from_c(0);
                gs[ii][f] = in && f < n.dv ? dout[(row0 + i) * n.dv + f] : fx_from_c(0);
            }
            if (threadIdx.x < QT) {
                const int i = i0 + threadIdx.x;
                lse_s[threadIdx.x] = i < n.queries ? lse[row0 + i] : (TC)0;
                delta_s[threadIdx.x] = i < n.queries ? delta[row0 + i] : (TC)0;
            }
            __syncthreads();
            for (int ii = 0; ii < QT; ++ii) {
                const int i = i0 + ii;
                TC s = 0, dp = 0;
#pragma unroll
                for (int m = 0; m < M; ++m) {
                    s += kr[m] * fx_to_c(qs[ii][c + G * m]);
                    dp += vr[m] * fx_to_c(gs[ii][c + G * m]);
                }
                s = fx_attn_group_sum(s) * (TC)scale;
                dp = fx_attn_group_sum(dp);
                bool hidden = false;
                const bool valid = active && i < n.queries;
                if (valid) s = fx_attn_mask(s, kind, mask, ms, b, h, i, j, shift, fill, hidden);
                const TC p = valid ? fx_exp(s - lse_s[ii]) : (TC)0;
                const TC ds = valid && !hidden ? p * (dp - delta_s[ii]) : (TC)0;
#pragma unroll
                for (int m = 0; m < M; ++m) {
                    dv_acc[m] += p * fx_to_c(gs[ii][c + G * m]);
                    dk_acc[m] += ds * fx_to_c(qs[ii][c + G * m]);
                }
                if (c == 0) ds_s[ii][jl] = ds;
            }
            __syncthreads();
            // dQ[i] += scale * sum_j dS[i][j] K[j] over this block's keys.
            for (int e = threadIdx.x; e < QT * n.d; e += blockDim.x) {
                const int ii = e / n.d, f = e % n.d, i = i0 + ii;
                if (i >= n.queries) continue;
                TC sum = 0;
                const int jn = min(FX_ATTN_ROWS, n.keys - j0);
                for (int jj = 0; jj < jn; ++jj) sum += ds_s[ii][jj] * fx_to_c(kb[(long long)(j0 + jj) * n.d + f]);
                if (sum != (TC)0) atomicAdd(dq_acc + (row0 + i) * n.d + f, sum * (TC)scale);
            }
        }
    }
    if (!active) return;
#pragma unroll
    for (int m = 0; m < M; ++m) {
        const int f = c + G * m;
        if (f < n.d) dk[(long long)kvb * n.keys * n.d + (long long)j * n.d + f] = fx_from_c(dk_acc[m] * (TC)scale);
        if (f < n.dv) dv[(long long)kvb * n.keys * n.dv + (long long)j * n.dv + f] = fx_from_c(dv_acc[m]);
    }
}

extern "C" __global__ void attention_cast(const TC* acc, T* out, long long n) {
    for (long long e = fx_thread_id(); e < n; e += fx_thread_count()) out[e] = fx_from_c(acc[e]);
}

#define FX_ATTN_KERNELS(D)                                                                                           \
    extern "C" __global__ void __launch_bounds__(128) attention_fwd_##D(                                            \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const T* sinks, T* o,      \
        TC* lse, FxAttnDims n, float scale, double fill) {                                                          \
        fx_attn_fwd<D, true>(q, k, v, mask, ms, kind, sinks, o, lse, n, scale, fill);                               \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(128) attention_lse_##D(                                            \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const T* sinks, T* o,      \
        TC* lse, FxAttnDims n, float scale, double fill) {                                                          \
        fx_attn_fwd<D, false>(q, k, v, mask, ms, kind, sinks, o, lse, n, scale, fill);                              \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(128) attention_bwd_##D(                                            \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const TC* lse,             \
        const TC* delta, const T* dout, TC* dq_acc, T* dk, T* dv, FxAttnDims n, float scale, double fill) {          \
        fx_attn_bwd<D>(q, k, v, mask, ms, kind, lse, delta, dout, dq_acc, dk, dv, n, scale, fill);                  \
    }

FX_ATTN_KERNELS(32)
FX_ATTN_KERNELS(64)
FX_ATTN_KERNELS(128)
FX_ATTN_KERNELS(256)

#endif
