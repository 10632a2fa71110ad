// attention.cu: fused scaled dot-product attention (backend/fast_op.rs),
// forward and backward, for the real float module dtypes T, computing in
// TC. The twin of backend/cpu/attention.rs. No score matrix is stored: the
// forward pass keeps a running max and sum per query row (online softmax);
// the backward pass first recomputes each row's log-sum-exp (the forward
// kernel without the values) and then the probabilities from it
// (FlashAttention-2's split).
//
// Shapes: q (B, Hq, Lq, d), k (B, Hk, Lk, d), v (B, Hk, Lk, dv); Hq is a
// multiple of Hk. Every (B, H, L, ·) operand, input or output, is "head
// rows": features contiguous, its rows found through FxAttnLayout's element
// strides over batch, head and row (so transposed views need no copy). `mask` is read through `ms` (element
// strides over (B, Hq, Lq, Lk)); `kind` is 0 none, 1 causal (query i sees
// keys j <= i + Lk - Lq), 2 boolean (fx_bool, 0 hides), 3 additive (T).
// Hidden scores become `fill` (MLX's finfo(dtype).min). `sinks`, when not
// null, holds one logit per query head. The head-dimension bucket D (32,
// 64, 128 or 256) bounds d and dv; G threads share each query row (or key
// row) and hold every G-th feature.
//   attention_fwd_<D>(q, k, v, mask, ms, kind, sinks, o, lse, FxAttnDims, FxAttnLayout, scale, fill)
//       grid (ceil(Lq / 32), B * Hq), block 128; writes o (lse is unused)
//   attention_lse_<D>(same arguments): writes only lse, TC (B, Hq, Lq)
//   attention_delta(o, dout, lse, sinks, delta, dsinks, rows, dv, Lq, Hq, o rows, dout rows)
//       delta[r] = dot(o[r], dout[r]); dsinks[h] -= exp(sink[h] - lse[r]) * delta[r]
//       (dsinks zeroed beforehand); one warp per row, any grid, blockDim 256
//   attention_bwd_<D>(q, k, v, mask, ms, kind, lse, delta, dout, dq_acc, dk, dv, FxAttnDims, FxAttnLayout,
//                     scale, fill)
//       grid (ceil(Lk / 32), B * Hk), block 128; dq_acc is TC, contiguous
//       (zeroed beforehand) and receives scale * dS K by atomic adds
//   attention_cast(acc, out, n, d, queries, heads, out rows): out = acc (n
//       contiguous TC values, rows of d) into head rows, any grid

#if FX_IS_FLOAT

struct FxAttnDims {
    int batch, q_heads, kv_heads, queries, keys, d, dv;
};

struct FxAttnStrides {
    long long s[4];
};

// Element strides of one head-row operand over (batch, head, row).
struct FxRows {
    long long b, h, r;
};

// The head-row strides of every operand (the forward reads q, k, v, o).
struct FxAttnLayout {
    FxRows q, k, v, o, dout, dq, dk, dv;
};

// The element offset of row i of head h of batch b.
__device__ __forceinline__ long long fx_row(const FxRows& s, int b, int h, long long i) {
    return b * s.b + h * s.h + i * s.r;
}

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
                                            const FxAttnDims& n, const FxAttnLayout& L, float scale, double fill_) {
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
    const T* qrow = q + fx_row(L.q, b, h, active ? i : 0);
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
    const T* kb = k + fx_row(L.k, b, kvh, 0);
    const T* vb = v + fx_row(L.v, b, kvh, 0);
    for (int j0 = 0; j0 < kend; j0 += KT) {
        __syncthreads();
        for (int e = threadIdx.x; e < KT * D; e += blockDim.x) {
            const int jj = e / D, f = e % D, j = j0 + jj;
            ks[jj][f] = j < n.keys && f < n.d ? kb[(long long)j * L.k.r + f] : fx_from_c(0);
            vs[jj][f] = j < n.keys && f < n.dv ? vb[(long long)j * L.v.r + f] : fx_from_c(0);
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
    T* orow = o + fx_row(L.o, b, h, i);
#pragma unroll
    for (int m = 0; m < M; ++m) {
        const int f = c + G * m;
        if (f < n.dv) orow[f] = fx_from_c(acc[m] / l);
    }
}

extern "C" __global__ void attention_delta(const T* o, const T* dout, const TC* lse, const T* sinks, TC* delta,
                                           TC* dsinks, long long rows, int dv, int queries, int q_heads, FxRows os,
                                           FxRows gs) {
    const long long warps = fx_thread_count() >> 5;
    const int lane = threadIdx.x & 31;
    for (long long r = fx_thread_id() >> 5; r < rows; r += warps) {
        const long long bh = r / queries;
        const int i = (int)(r % queries), h = (int)(bh % q_heads), b = (int)(bh / q_heads);
        const T* orow = o + fx_row(os, b, h, i);
        const T* grow = dout + fx_row(gs, b, h, i);
        TC acc = 0;
        for (int f = lane; f < dv; f += 32) acc += fx_to_c(orow[f]) * fx_to_c(grow[f]);
        acc = fx_warp_reduce(acc, FxAttnAdd());
        if (lane == 0) {
            delta[r] = acc;
            if (sinks) {
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
                                            const T* dout, TC* dq_acc, T* dk, T* dv, const FxAttnDims& n,
                                            const FxAttnLayout& L, float scale, double fill_) {
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
    const T* kb = k + fx_row(L.k, b, kvh, 0);
    const T* vb = v + fx_row(L.v, b, kvh, 0);
    TC kr[M], vr[M], dk_acc[M], dv_acc[M];
#pragma unroll
    for (int m = 0; m < M; ++m) {
        const int f = c + G * m;
        kr[m] = active && f < n.d ? fx_to_c(kb[(long long)j * L.k.r + f]) : (TC)0;
        vr[m] = active && f < n.dv ? fx_to_c(vb[(long long)j * L.v.r + f]) : (TC)0;
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
                qs[ii][f] = in && f < n.d ? q[fx_row(L.q, b, h, i) + f] : fx_from_c(0);
                gs[ii][f] = in && f < n.dv ? dout[fx_row(L.dout, b, h, i) + f] : fx_from_c(0);
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
                for (int jj = 0; jj < jn; ++jj) sum += ds_s[ii][jj] * fx_to_c(kb[(long long)(j0 + jj) * L.k.r + f]);
                if (sum != (TC)0) atomicAdd(dq_acc + (row0 + i) * n.d + f, sum * (TC)scale);
            }
        }
    }
    if (!active) return;
#pragma unroll
    for (int m = 0; m < M; ++m) {
        const int f = c + G * m;
        if (f < n.d) dk[fx_row(L.dk, b, kvh, j) + f] = fx_from_c(dk_acc[m] * (TC)scale);
        if (f < n.dv) dv[fx_row(L.dv, b, kvh, j) + f] = fx_from_c(dv_acc[m]);
    }
}

extern "C" __global__ void attention_cast(const TC* acc, T* out, long long n, int d, int queries, int heads,
                                          FxRows os) {
    for (long long e = fx_thread_id(); e < n; e += fx_thread_count()) {
        const long long row = e / d, bh = row / queries;
        const int f = (int)(e % d), i = (int)(row % queries), h = (int)(bh % heads), b = (int)(bh / heads);
        out[fx_row(os, b, h, i) + f] = fx_from_c(acc[e]);
    }
}

#define FX_ATTN_KERNELS(D)                                                                                           \
    extern "C" __global__ void __launch_bounds__(128) attention_fwd_##D(                                            \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const T* sinks, T* o,      \
        TC* lse, FxAttnDims n, FxAttnLayout L, float scale, double fill) {                                          \
        fx_attn_fwd<D, true>(q, k, v, mask, ms, kind, sinks, o, lse, n, L, scale, fill);                            \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(128) attention_lse_##D(                                            \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const T* sinks, T* o,      \
        TC* lse, FxAttnDims n, FxAttnLayout L, float scale, double fill) {                                          \
        fx_attn_fwd<D, false>(q, k, v, mask, ms, kind, sinks, o, lse, n, L, scale, fill);                           \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(128) attention_bwd_##D(                                            \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const TC* lse,             \
        const TC* delta, const T* dout, TC* dq_acc, T* dk, T* dv, FxAttnDims n, FxAttnLayout L, float scale,        \
        double fill) {                                                                                              \
        fx_attn_bwd<D>(q, k, v, mask, ms, kind, lse, delta, dout, dq_acc, dk, dv, n, L, scale, fill);               \
    }

FX_ATTN_KERNELS(32)
FX_ATTN_KERNELS(64)
FX_ATTN_KERNELS(128)
FX_ATTN_KERNELS(256)


// ---------------------------------------------------------------------------
// Split-K decode (few query rows, many keys): the keys of each row are cut
// into gridDim.x chunks; a block of 128 threads (16 groups of 8 lanes, one
// key per group at a time, the row's features spread over the 8 lanes) runs
// an online softmax over its chunk and writes its partial max, sum and
// weighted values; attention_decode_combine merges the chunks.
//   attention_decode_<D>(q, k, v, mask, ms, kind, part_acc, part_ml, FxAttnDims, FxAttnLayout, scale, fill, chunk)
//       grid (chunks, B * Hq * Lq), block 128; d == dv == D in {64, 128, 256};
//       part_acc TC [chunks][rows][D], part_ml TC [chunks][rows][2]
//   attention_decode_combine(part_acc, part_ml, sinks, o, rows, chunks, D, queries, q_heads, o rows)
//       one thread per output element, any grid, blockDim 256

#define FX_DEC_GROUPS 16

template <int D>
__device__ __forceinline__ void fx_attn_decode(const T* q, const T* k, const T* v, const void* mask,
                                               const FxAttnStrides& ms, int kind, TC* part_acc, TC* part_ml,
                                               const FxAttnDims& n, const FxAttnLayout& L, float scale, double fill_,
                                               int chunk) {
    constexpr int F = D / 8, P = 16 / (int)sizeof(T), PK = F / P;
    __shared__ TC red_acc[FX_DEC_GROUPS][D];
    __shared__ TC red_m[FX_DEC_GROUPS], red_l[FX_DEC_GROUPS];
    const TC fill = (TC)fill_;
    const long long row = blockIdx.y;
    const int i = (int)(row % n.queries), bh = (int)(row / n.queries);
    const int b = bh / n.q_heads, h = bh % n.q_heads, kvh = h / (n.q_heads / n.kv_heads);
    const int group = threadIdx.x / 8, lane8 = threadIdx.x % 8;
    const int shift = n.keys - n.queries;
    TC qr[F], acc[F];
    const T* qrow = q + fx_row(L.q, b, h, i);
#pragma unroll
    for (int pk = 0; pk < PK; ++pk) {
        FxPack<T, P> w;
        w.load(qrow + (pk * 8 + lane8) * P);
#pragma unroll
        for (int e = 0; e < P; ++e) {
            qr[pk * P + e] = fx_to_c(w.v[e]) * (TC)scale;
            acc[pk * P + e] = 0;
        }
    }
    int j_end = min(n.keys, (blockIdx.x + 1) * chunk);
    if (kind == 1 && i + shift >= 0) j_end = min(j_end, i + shift + 1);
    TC m = -fx_attn_inf(), l = 0;
    // The loop runs the same number of times in every thread (the shuffles
    // need the whole warp): groups past the chunk's end take part in the
    // shuffles with a zero and skip the update.
    for (int jb = blockIdx.x * chunk; jb < j_end; jb += FX_DEC_GROUPS) {
        const int j = jb + group;
        const bool live = j < j_end;
        const T* krow = k + fx_row(L.k, b, kvh, j);
        const T* vrow = v + fx_row(L.v, b, kvh, j);
        TC part = 0;
        if (live) {
#pragma unroll
            for (int pk = 0; pk < PK; ++pk) {
                FxPack<T, P> w;
                w.load(krow + (pk * 8 + lane8) * P);
#pragma unroll
                for (int e = 0; e < P; ++e) part += qr[pk * P + e] * fx_to_c(w.v[e]);
            }
        }
        part += fx_shfl_xor(part, 1);
        part += fx_shfl_xor(part, 2);
        part += fx_shfl_xor(part, 4);
        if (!live) continue;
        bool hidden;
        const TC sc = fx_attn_mask(part, kind, mask, ms, b, h, i, j, shift, fill, hidden);
        const TC m_new = fmax(m, sc);
        const TC alpha = m == -fx_attn_inf() ? (TC)0 : fx_exp(m - m_new);
        const TC p = sc == -fx_attn_inf() ? (TC)0 : fx_exp(sc - m_new);
        l = l * alpha + p;
        m = m_new;
#pragma unroll
        for (int pk = 0; pk < PK; ++pk) {
            FxPack<T, P> w;
            w.load(vrow + (pk * 8 + lane8) * P);
#pragma unroll
            for (int e = 0; e < P; ++e) acc[pk * P + e] = acc[pk * P + e] * alpha + p * fx_to_c(w.v[e]);
        }
    }
#pragma unroll
    for (int pk = 0; pk < PK; ++pk)
#pragma unroll
        for (int e = 0; e < P; ++e) red_acc[group][(pk * 8 + lane8) * P + e] = acc[pk * P + e];
    if (lane8 == 0) {
        red_m[group] = m;
        red_l[group] = l;
    }
    __syncthreads();
    TC mx = -fx_attn_inf();
    for (int gi = 0; gi < FX_DEC_GROUPS; ++gi) mx = fmax(mx, red_m[gi]);
    const long long out = (long long)blockIdx.x * gridDim.y + row;
    for (int f = threadIdx.x; f < D; f += blockDim.x) {
        TC sum = 0;
        for (int gi = 0; gi < FX_DEC_GROUPS; ++gi)
            if (red_m[gi] != -fx_attn_inf()) sum += red_acc[gi][f] * fx_exp(red_m[gi] - mx);
        part_acc[out * D + f] = sum;
    }
    if (threadIdx.x == 0) {
        TC sum = 0;
        for (int gi = 0; gi < FX_DEC_GROUPS; ++gi)
            if (red_m[gi] != -fx_attn_inf()) sum += red_l[gi] * fx_exp(red_m[gi] - mx);
        part_ml[out * 2] = mx;
        part_ml[out * 2 + 1] = sum;
    }
}

extern "C" __global__ void attention_decode_combine(const TC* part_acc, const TC* part_ml, const T* sinks, T* o,
                                                    long long rows, int chunks, int d, int queries, int q_heads,
                                                    FxRows os) {
    for (long long e = fx_thread_id(); e < rows * d; e += fx_thread_count()) {
        const long long row = e / d;
        const int f = (int)(e % d);
        TC mx = sinks ? fx_to_c(sinks[(row / queries) % q_heads]) : -fx_attn_inf();
        for (int z = 0; z < chunks; ++z) mx = fmax(mx, part_ml[((long long)z * rows + row) * 2]);
        TC l = sinks ? fx_exp(fx_to_c(sinks[(row / queries) % q_heads]) - mx) : (TC)0, acc = 0;
        for (int z = 0; z < chunks; ++z) {
            const long long at = (long long)z * rows + row;
            const TC mz = part_ml[at * 2];
            if (mz == -fx_attn_inf()) continue;
            const TC w = fx_exp(mz - mx);
            l += part_ml[at * 2 + 1] * w;
            acc += part_acc[at * d + f] * w;
        }
        const long long bh = row / queries;
        o[fx_row(os, (int)(bh / q_heads), (int)(bh % q_heads), row % queries) + f] = fx_from_c(acc / l);
    }
}

#define FX_ATTN_DECODE_KERNEL(D)                                                                                     \
    extern "C" __global__ void __launch_bounds__(128) attention_decode_##D(                                         \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, TC* part_acc,             \
        TC* part_ml, FxAttnDims n, FxAttnLayout L, float scale, double fill, int chunk) {                           \
        fx_attn_decode<D>(q, k, v, mask, ms, kind, part_acc, part_ml, n, L, scale, fill, chunk);                    \
    }

FX_ATTN_DECODE_KERNEL(64)
FX_ATTN_DECODE_KERNEL(128)
FX_ATTN_DECODE_KERNEL(256)

// ---------------------------------------------------------------------------
// Tensor-core forward pass (float16, bfloat16; d == dv == D in {64, 128}):
// FlashAttention-2's layout. Each warp owns 16 query rows; a block of 4
// warps walks 64-key tiles of K and V staged in shared memory. S = Q K^T and
// O += P V run on mma.sync m16n8k16 with float32 accumulators; the
// probabilities P stay in registers (the accumulator layout of S is the
// operand layout of P). Masks, sinks and fully hidden rows behave as in
// fx_attn_fwd.
//   attention_fwd_mma_<D>(same arguments as attention_fwd_<D>)
//   attention_lse_mma_<D>(same arguments): only the log-sum-exp of each row
//       grid (ceil(Lq / 64), B * Hq), block 128
//   attention_bwd_mma_<D>(same arguments as attention_bwd_<D>)
//       grid (ceil(Lk / 64), B * Hk), block 128: each warp owns 16 keys and
//       walks 32-query tiles; dK and dV stay in registers, dQ is added
//       atomically (scale * dS K) into dq_acc

#if FX_IS_HALF

#define FX_MMA_ROWS 64
#define FX_MMA_KEYS 64

// c += a b for one m16n8k16 tile (a: 4 registers of 2 elements, b: 2).
__device__ __forceinline__ void fx_mma(float* c, const unsigned* a, const unsigned* b) {
#if defined(FX_DTYPE_BF16)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// Two 8x8 tiles of 16-bit elements from shared memory, transposed: lanes
// 0-7 address the rows of the first tile, lanes 8-15 those of the second.
__device__ __forceinline__ void fx_ldmatrix_x2_trans(unsigned* r, const unsigned short* row) {
    const unsigned addr = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(addr));
}

// Two floats rounded to T and packed low-first into one register.
__device__ __forceinline__ unsigned fx_pack2(float lo, float hi) {
    return (unsigned)fx_from_c(lo).bits | ((unsigned)fx_from_c(hi).bits << 16);
}

// Elements (i, i + 1) of a row of T as one register (zero past `limit`).
__device__ __forceinline__ unsigned fx_load2(const T* row, int i, bool valid) {
    return valid ? *reinterpret_cast<const unsigned*>(row + i) : 0u;
}

// OUT: write o; otherwise only each row's log-sum-exp (into lse).
template <int D, bool OUT>
__device__ __forceinline__ void fx_attn_fwd_mma(const T* q, const T* k, const T* v, const void* mask,
                                                const FxAttnStrides& ms, int kind, const T* sinks, T* o, TC* lse,
                                                const FxAttnDims& n, const FxAttnLayout& L, float scale,
                                                double fill_) {
    constexpr int KS = FX_MMA_KEYS, KP = D + 8;
    // K and V tiles, [key][feature], rows padded so that the fragment loads
    // of 8 rows hit 32 different banks.
    __shared__ __align__(16) unsigned short ks[KS * KP];
    __shared__ __align__(16) unsigned short vs[KS * KP];
    const float fill = (float)fill_;
    const float inf = fx_inf_f32();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int bh = blockIdx.y, b = bh / n.q_heads, h = bh % n.q_heads;
    const int kvh = h / (n.q_heads / n.kv_heads);
    const int shift = n.keys - n.queries;
    const int q0 = blockIdx.x * FX_MMA_ROWS + warp * 16;
    const int r0 = q0 + g, r1 = q0 + g + 8;
    const bool in0 = r0 < n.queries, in1 = r1 < n.queries;
    const T* qrow0 = q + fx_row(L.q, b, h, in0 ? r0 : 0);
    const T* qrow1 = q + fx_row(L.q, b, h, in1 ? r1 : 0);
    unsigned qa[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        const int c = kk * 16 + t4 * 2;
        qa[kk][0] = fx_load2(qrow0, c, in0);
        qa[kk][1] = fx_load2(qrow1, c, in1);
        qa[kk][2] = fx_load2(qrow0, c + 8, in0);
        qa[kk][3] = fx_load2(qrow1, c + 8, in1);
    }
    float acc[D / 8][4];
#pragma unroll
    for (int nb = 0; nb < D / 8; ++nb) acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.f;
    const float sink = sinks ? fx_to_c(sinks[h]) : -inf;
    float m0 = sink, m1 = sink;
    // Per-thread partial sums of the two rows (the sink's share counted once, by t4 == 0).
    float l0 = sinks && t4 == 0 ? 1.f : 0.f, l1 = l0;
    int kend = n.keys;
    const int first_row = blockIdx.x * FX_MMA_ROWS;
    if (kind == 1 && first_row + shift >= 0) kend = min(n.keys, first_row + FX_MMA_ROWS + shift);
    const T* kb = k + fx_row(L.k, b, kvh, 0);
    const T* vb = v + fx_row(L.v, b, kvh, 0);
    for (int j0 = 0; j0 < kend; j0 += KS) {
        __syncthreads();
        for (int e = threadIdx.x; e < KS * D / 8; e += blockDim.x) {
            const int r = e / (D / 8), c = (e % (D / 8)) * 8, j = j0 + r;
            uint4 kw = make_uint4(0, 0, 0, 0), vw = make_uint4(0, 0, 0, 0);
            if (j < n.keys) {
                kw = *reinterpret_cast<const uint4*>(kb + (long long)j * L.k.r + c);
                vw = *reinterpret_cast<const uint4*>(vb + (long long)j * L.v.r + c);
            }
            *reinterpret_cast<uint4*>(&ks[r * KP + c]) = kw;
            *reinterpret_cast<uint4*>(&vs[r * KP + c]) = vw;
        }
        __syncthreads();
        float s[KS / 8][4];
#pragma unroll
        for (int nb = 0; nb < KS / 8; ++nb) {
            s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                const unsigned short* kr = &ks[(nb * 8 + g) * KP + kk * 16 + t4 * 2];
                unsigned bf[2] = {*reinterpret_cast<const unsigned*>(kr), *reinterpret_cast<const unsigned*>(kr + 8)};
                fx_mma(s[nb], qa[kk], bf);
            }
        }
        float tmax0 = -inf, tmax1 = -inf;
#pragma unroll
        for (int nb = 0; nb < KS / 8; ++nb) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int i = e < 2 ? r0 : r1, j = j0 + nb * 8 + t4 * 2 + (e & 1);
                float x = s[nb][e] * scale;
                if (j >= n.keys) {
                    x = -inf;
                } else if (kind != 0) {
                    bool hidden;
                    x = fx_attn_mask(x, kind, mask, ms, b, h, min(i, n.queries - 1), j, shift, fill, hidden);
                }
                s[nb][e] = x;
                if (e < 2) tmax0 = fmaxf(tmax0, x);
                else tmax1 = fmaxf(tmax1, x);
            }
        }
        tmax0 = fmaxf(tmax0, __shfl_xor_sync(0xffffffffu, tmax0, 1));
        tmax0 = fmaxf(tmax0, __shfl_xor_sync(0xffffffffu, tmax0, 2));
        tmax1 = fmaxf(tmax1, __shfl_xor_sync(0xffffffffu, tmax1, 1));
        tmax1 = fmaxf(tmax1, __shfl_xor_sync(0xffffffffu, tmax1, 2));
        const float n0 = fmaxf(m0, tmax0), n1 = fmaxf(m1, tmax1);
        const float a0 = m0 == -inf ? 0.f : __expf(m0 - n0), a1 = m1 == -inf ? 0.f : __expf(m1 - n1);
        l0 *= a0;
        l1 *= a1;
#pragma unroll
        for (int nb = 0; nb < D / 8; ++nb) {
            if (!OUT) break;
            acc[nb][0] *= a0;
            acc[nb][1] *= a0;
            acc[nb][2] *= a1;
            acc[nb][3] *= a1;
        }
#pragma unroll
        for (int nb = 0; nb < KS / 8; ++nb) {
            s[nb][0] = s[nb][0] == -inf ? 0.f : __expf(s[nb][0] - n0);
            s[nb][1] = s[nb][1] == -inf ? 0.f : __expf(s[nb][1] - n0);
            s[nb][2] = s[nb][2] == -inf ? 0.f : __expf(s[nb][2] - n1);
            s[nb][3] = s[nb][3] == -inf ? 0.f : __expf(s[nb][3] - n1);
            l0 += s[nb][0] + s[nb][1];
            l1 += s[nb][2] + s[nb][3];
        }
        m0 = n0;
        m1 = n1;
        if (!OUT) continue;
#pragma unroll
        for (int kk = 0; kk < KS / 16; ++kk) {
            unsigned pa[4] = {fx_pack2(s[2 * kk][0], s[2 * kk][1]), fx_pack2(s[2 * kk][2], s[2 * kk][3]),
                              fx_pack2(s[2 * kk + 1][0], s[2 * kk + 1][1]), fx_pack2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int nb = 0; nb < D / 8; ++nb) {
                // V is [key][feature]: the transposing load gives the operand's layout.
                unsigned bf[2];
                fx_ldmatrix_x2_trans(bf, &vs[(kk * 16 + (lane & 15)) * KP + nb * 8]);
                fx_mma(acc[nb], pa, bf);
            }
        }
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    if (!OUT) {
        if (t4 == 0 && in0) lse[(long long)bh * n.queries + r0] = m0 + logf(l0);
        if (t4 == 0 && in1) lse[(long long)bh * n.queries + r1] = m1 + logf(l1);
        return;
    }
    T* o0 = o + fx_row(L.o, b, h, r0);
    T* o1 = o + fx_row(L.o, b, h, r1);
#pragma unroll
    for (int nb = 0; nb < D / 8; ++nb) {
        const int c = nb * 8 + t4 * 2;
        if (in0) *reinterpret_cast<unsigned*>(o0 + c) = fx_pack2(acc[nb][0] / l0, acc[nb][1] / l0);
        if (in1) *reinterpret_cast<unsigned*>(o1 + c) = fx_pack2(acc[nb][2] / l1, acc[nb][3] / l1);
    }
}


// A 16x16 tile of 16-bit elements from shared memory as an mma A operand:
// lanes 0-15 address rows 0-15 at column 0, lanes 16-31 at column 8.
__device__ __forceinline__ void fx_ldmatrix_x4(unsigned* r, const unsigned short* row) {
    const unsigned addr = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

#define FX_MMA_QT 32

template <int D>
__device__ __forceinline__ void fx_attn_bwd_mma(const T* q, const T* k, const T* v, const void* mask,
                                                const FxAttnStrides& ms, int kind, const TC* lse, const TC* delta,
                                                const T* dout, TC* dq_acc, T* dk, T* dv, const FxAttnDims& n,
                                                const FxAttnLayout& L, float scale, double fill_) {
    constexpr int KB = 64, QT = FX_MMA_QT, KP = D + 8, SP = KB + 8;
    __shared__ __align__(16) unsigned short ks[KB * KP];  // this block's keys, [key][feature]
    __shared__ __align__(16) unsigned short qs[QT * KP];  // query tile, [query][feature]
    __shared__ __align__(16) unsigned short gs[QT * KP];  // dO tile, [query][feature]
    __shared__ __align__(16) unsigned short dss[QT * SP]; // dS, [query][key]
    __shared__ float lse_s[QT], delta_s[QT];
    const float fill = (float)fill_;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int kvb = blockIdx.y, b = kvb / n.kv_heads, kvh = kvb % n.kv_heads;
    const int group = n.q_heads / n.kv_heads;
    const int shift = n.keys - n.queries;
    const int j0 = blockIdx.x * KB;
    const int jw = warp * 16;                    // this warp's first key in the block
    const int ja = j0 + jw + g, jb = ja + 8;     // the keys of this thread's accumulator rows
    const T* kb = k + fx_row(L.k, b, kvh, 0);
    const T* vb = v + fx_row(L.v, b, kvh, 0);
    for (int e = threadIdx.x; e < KB * D / 8; e += blockDim.x) {
        const int r = e / (D / 8), c = (e % (D / 8)) * 8, j = j0 + r;
        uint4 w = make_uint4(0, 0, 0, 0);
        if (j < n.keys) w = *reinterpret_cast<const uint4*>(kb + (long long)j * L.k.r + c);
        *reinterpret_cast<uint4*>(&ks[r * KP + c]) = w;
    }
    // V rows of this warp's keys as A operands (16 keys x D).
    unsigned va[D / 16][4];
    {
        const T* v0 = vb + (long long)(ja < n.keys ? ja : 0) * L.v.r;
        const T* v1 = vb + (long long)(jb < n.keys ? jb : 0) * L.v.r;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const int c = kk * 16 + t4 * 2;
            va[kk][0] = fx_load2(v0, c, ja < n.keys);
            va[kk][1] = fx_load2(v1, c, jb < n.keys);
            va[kk][2] = fx_load2(v0, c + 8, ja < n.keys);
            va[kk][3] = fx_load2(v1, c + 8, jb < n.keys);
        }
    }
    float dk_acc[D / 8][4], dv_acc[D / 8][4];
#pragma unroll
    for (int nb = 0; nb < D / 8; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) dk_acc[nb][e] = dv_acc[nb][e] = 0.f;
    for (int hg = 0; hg < group; ++hg) {
        const int h = kvh * group + hg;
        const long long row0 = ((long long)b * n.q_heads + h) * n.queries;
        for (int i0 = 0; i0 < n.queries; i0 += QT) {
            if (kind == 1 && i0 + shift >= 0 && i0 + QT - 1 + shift < j0) continue;
            __syncthreads();
            for (int e = threadIdx.x; e < QT * D / 8; e += blockDim.x) {
                const int r = e / (D / 8), c = (e % (D / 8)) * 8, i = i0 + r;
                uint4 qw = make_uint4(0, 0, 0, 0), gw = make_uint4(0, 0, 0, 0);
                if (i < n.queries) {
                    qw = *reinterpret_cast<const uint4*>(q + fx_row(L.q, b, h, i) + c);
                    gw = *reinterpret_cast<const uint4*>(dout + fx_row(L.dout, b, h, i) + c);
                }
                *reinterpret_cast<uint4*>(&qs[r * KP + c]) = qw;
                *reinterpret_cast<uint4*>(&gs[r * KP + c]) = gw;
            }
            if (threadIdx.x < QT) {
                const int i = i0 + threadIdx.x;
                lse_s[threadIdx.x] = i < n.queries ? (float)lse[row0 + i] : 0.f;
                delta_s[threadIdx.x] = i < n.queries ? (float)delta[row0 + i] : 0.f;
            }
            __syncthreads();
            // S^T = K Q^T and dP^T = V dO^T for this warp's 16 keys x QT queries.
            float st[QT / 8][4], dpt[QT / 8][4];
#pragma unroll
            for (int nb = 0; nb < QT / 8; ++nb)
#pragma unroll
                for (int e = 0; e < 4; ++e) st[nb][e] = dpt[nb][e] = 0.f;
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                unsigned ka[4];
                fx_ldmatrix_x4(ka, &ks[(jw + (lane & 15)) * KP + kk * 16 + (lane >> 4) * 8]);
#pragma unroll
                for (int nb = 0; nb < QT / 8; ++nb) {
                    const unsigned short* qr = &qs[(nb * 8 + g) * KP + kk * 16 + t4 * 2];
                    unsigned bq[2] = {*reinterpret_cast<const unsigned*>(qr), *reinterpret_cast<const unsigned*>(qr + 8)};
                    fx_mma(st[nb], ka, bq);
                    const unsigned short* gr = &gs[(nb * 8 + g) * KP + kk * 16 + t4 * 2];
                    unsigned bg[2] = {*reinterpret_cast<const unsigned*>(gr), *reinterpret_cast<const unsigned*>(gr + 8)};
                    fx_mma(dpt[nb], va[kk], bg);
                }
            }
            // P^T and dS^T in place of S^T and dP^T.
#pragma unroll
            for (int nb = 0; nb < QT / 8; ++nb) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int il = nb * 8 + t4 * 2 + (e & 1), i = i0 + il;
                    const int j = e < 2 ? ja : jb;
                    const bool valid = i < n.queries && j < n.keys;
                    float x = st[nb][e] * scale;
                    bool hidden = false;
                    if (valid && kind != 0) x = fx_attn_mask(x, kind, mask, ms, b, h, i, j, shift, fill, hidden);
                    const float p = valid ? __expf(x - lse_s[il]) : 0.f;
                    st[nb][e] = p;
                    dpt[nb][e] = valid && !hidden ? p * (dpt[nb][e] - delta_s[il]) : 0.f;
                }
            }
            // dV += P^T dO and dK += dS^T Q (k = queries: two steps of 16).
#pragma unroll
            for (int kq = 0; kq < QT / 16; ++kq) {
                unsigned pa[4] = {fx_pack2(st[2 * kq][0], st[2 * kq][1]), fx_pack2(st[2 * kq][2], st[2 * kq][3]),
                                  fx_pack2(st[2 * kq + 1][0], st[2 * kq + 1][1]),
                                  fx_pack2(st[2 * kq + 1][2], st[2 * kq + 1][3])};
                unsigned da[4] = {fx_pack2(dpt[2 * kq][0], dpt[2 * kq][1]), fx_pack2(dpt[2 * kq][2], dpt[2 * kq][3]),
                                  fx_pack2(dpt[2 * kq + 1][0], dpt[2 * kq + 1][1]),
                                  fx_pack2(dpt[2 * kq + 1][2], dpt[2 * kq + 1][3])};
#pragma unroll
                for (int nb = 0; nb < D / 8; ++nb) {
                    unsigned bg[2], bq[2];
                    fx_ldmatrix_x2_trans(bg, &gs[(kq * 16 + (lane & 15)) * KP + nb * 8]);
                    fx_mma(dv_acc[nb], pa, bg);
                    fx_ldmatrix_x2_trans(bq, &qs[(kq * 16 + (lane & 15)) * KP + nb * 8]);
                    fx_mma(dk_acc[nb], da, bq);
                }
            }
            // dS to shared memory as [query][key] for dQ = dS K.
#pragma unroll
            for (int nb = 0; nb < QT / 8; ++nb) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int il = nb * 8 + t4 * 2 + (e & 1), jl = jw + g + (e < 2 ? 0 : 8);
                    dss[il * SP + jl] = fx_from_c(dpt[nb][e]).bits;
                }
            }
            __syncthreads();
            // Warp w: queries (w % 2) * 16 .. +16, features (w / 2) * D/2 .. +D/2.
            {
                const int qw = (warp & 1) * 16, fw = (warp >> 1) * (D / 2);
                float dq[D / 16][4];
#pragma unroll
                for (int nb = 0; nb < D / 16; ++nb) dq[nb][0] = dq[nb][1] = dq[nb][2] = dq[nb][3] = 0.f;
#pragma unroll
                for (int kk = 0; kk < KB / 16; ++kk) {
                    unsigned sa[4];
                    fx_ldmatrix_x4(sa, &dss[(qw + (lane & 15)) * SP + kk * 16 + (lane >> 4) * 8]);
#pragma unroll
                    for (int nb = 0; nb < D / 16; ++nb) {
                        unsigned bk[2];
                        fx_ldmatrix_x2_trans(bk, &ks[(kk * 16 + (lane & 15)) * KP + fw + nb * 8]);
                        fx_mma(dq[nb], sa, bk);
                    }
                }
#pragma unroll
                for (int nb = 0; nb < D / 16; ++nb) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int i = i0 + qw + g + (e < 2 ? 0 : 8), f = fw + nb * 8 + t4 * 2 + (e & 1);
                        if (i < n.queries && dq[nb][e] != 0.f) atomicAdd(dq_acc + (row0 + i) * D + f, dq[nb][e] * scale);
                    }
                }
            }
        }
    }
    T* dk0 = dk + fx_row(L.dk, b, kvh, 0);
    T* dv0 = dv + fx_row(L.dv, b, kvh, 0);
#pragma unroll
    for (int nb = 0; nb < D / 8; ++nb) {
        const int c = nb * 8 + t4 * 2;
        if (ja < n.keys) {
            *reinterpret_cast<unsigned*>(dk0 + (long long)ja * L.dk.r + c) = fx_pack2(dk_acc[nb][0] * scale, dk_acc[nb][1] * scale);
            *reinterpret_cast<unsigned*>(dv0 + (long long)ja * L.dv.r + c) = fx_pack2(dv_acc[nb][0], dv_acc[nb][1]);
        }
        if (jb < n.keys) {
            *reinterpret_cast<unsigned*>(dk0 + (long long)jb * L.dk.r + c) = fx_pack2(dk_acc[nb][2] * scale, dk_acc[nb][3] * scale);
            *reinterpret_cast<unsigned*>(dv0 + (long long)jb * L.dv.r + c) = fx_pack2(dv_acc[nb][2], dv_acc[nb][3]);
        }
    }
}

#define FX_ATTN_MMA_KERNEL(D)                                                                                        \
    extern "C" __global__ void __launch_bounds__(128) attention_fwd_mma_##D(                                        \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const T* sinks, T* o,      \
        TC* lse, FxAttnDims n, FxAttnLayout L, float scale, double fill) {                                          \
        fx_attn_fwd_mma<D, true>(q, k, v, mask, ms, kind, sinks, o, lse, n, L, scale, fill);                        \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(128) attention_lse_mma_##D(                                        \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const T* sinks, T* o,      \
        TC* lse, FxAttnDims n, FxAttnLayout L, float scale, double fill) {                                          \
        fx_attn_fwd_mma<D, false>(q, k, v, mask, ms, kind, sinks, o, lse, n, L, scale, fill);                       \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(128, 1) attention_bwd_mma_##D(                                     \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const TC* lse,             \
        const TC* delta, const T* dout, TC* dq_acc, T* dk, T* dv, FxAttnDims n, FxAttnLayout L, float scale,        \
        double fill) {                                                                                              \
        fx_attn_bwd_mma<D>(q, k, v, mask, ms, kind, lse, delta, dout, dq_acc, dk, dv, n, L, scale, fill);           \
    }

FX_ATTN_MMA_KERNEL(64)
FX_ATTN_MMA_KERNEL(128)

#endif

#endif
