// attention.cu: fused scaled dot-product attention (backend/fast_op.rs),
// forward and backward, for the real float module dtypes T, computing in
// TC. The twin of backend/cpu/attention.rs. No score matrix is stored: the
// forward pass keeps a running max and sum per query row (online softmax)
// and writes each row's log-sum-exp beside o; the backward pass recomputes
// the probabilities from it (FlashAttention-2's split).
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
//   attention_fwd_<D>(q, k, v, mask, ms, kind, sinks, o, stats, FxAttnDims, FxAttnLayout, scale, fill)
//       grid (ceil(Lq / 32), B * Hq), block 128; writes o and stats, TC
//       (B, Hq, Lq, 2) contiguous: each row's max score m and
//       log(sum(exp(s - m))), the sink counted in both (kept apart: their
//       sum loses the second where every score is the mask's fill)
//   attention_delta(o, dout, stats, sinks, delta, dsinks, rows, dv, Lq, Hq, o rows, dout rows)
//       delta[r] = dot(o[r], dout[r]); dsinks[h] -= p(sink[h]) * delta[r]
//       (dsinks zeroed beforehand); one warp per row, any grid, blockDim 256
//   attention_bwd_<D>(q, k, v, mask, ms, kind, stats, delta, dout, dq_acc, dk, dv, FxAttnDims, FxAttnLayout,
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

// Whether the causal mask hides key j from query i: query i sees keys up to
// i + shift (shift = keys - queries, aligning the last query with the last key).
__device__ __forceinline__ bool fx_causal_hidden(int i, int j, int shift) { return j > i + shift; }

// Applies the mask to score s of (b, h, i, j); `hidden` says whether the
// mask hid it (a hidden score passes no gradient).
__device__ __forceinline__ TC fx_attn_mask(TC s, int kind, const void* mask, const FxAttnStrides& ms, int b, int h,
                                           int i, int j, int shift, TC fill, bool& hidden) {
    hidden = false;
    if (kind == 0) return s;
    if (kind == 1) {
        hidden = fx_causal_hidden(i, j, shift);
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

// Writes o and each row's log-sum-exp.
template <int D>
__device__ __forceinline__ void fx_attn_fwd(const T* q, const T* k, const T* v, const void* mask,
                                            const FxAttnStrides& ms, int kind, const T* sinks, T* o, TC* stats,
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
            // Rows past the last query (idle threads) read the last row's mask.
            s[jj] = j < n.keys ? fx_attn_mask(part, kind, mask, ms, b, h, active ? i : n.queries - 1, j, shift, fill, hidden)
                               : -fx_attn_inf();
            tile_max = fmax(tile_max, s[jj]);
        }
        const TC new_max = fmax(mx, tile_max);
        const TC alpha = mx == -fx_attn_inf() ? (TC)0 : fx_exp(mx - new_max);
        l *= alpha;
#pragma unroll
        for (int m = 0; m < M; ++m) acc[m] *= alpha;
#pragma unroll
        for (int jj = 0; jj < KT; ++jj) {
            const TC p = s[jj] == -fx_attn_inf() ? (TC)0 : fx_exp(s[jj] - new_max);
            l += p;
#pragma unroll
            for (int m = 0; m < M; ++m) acc[m] += p * fx_to_c(vs[jj][c + G * m]);
        }
        mx = new_max;
    }
    if (!active) return;
    if (c == 0) {
        stats[((long long)bh * n.queries + i) * 2] = mx;
        stats[((long long)bh * n.queries + i) * 2 + 1] = fx_log(l);
    }
    T* orow = o + fx_row(L.o, b, h, i);
#pragma unroll
    for (int m = 0; m < M; ++m) {
        const int f = c + G * m;
        if (f < n.dv) orow[f] = fx_from_c(acc[m] / l);
    }
}

extern "C" __global__ void attention_delta(const T* o, const T* dout, const TC* stats, const T* sinks, TC* delta,
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
                atomicAdd(dsinks + h, -fx_exp(fx_to_c(sinks[h]) - stats[2 * r] - stats[2 * r + 1]) * acc);
            }
        }
    }
}

// Queries per shared-memory tile of the backward pass.
#define FX_ATTN_QT (sizeof(T) == 2 ? 16 : 8)

template <int D>
__device__ __forceinline__ void fx_attn_bwd(const T* q, const T* k, const T* v, const void* mask,
                                            const FxAttnStrides& ms, int kind, const TC* stats, const TC* delta,
                                            const T* dout, TC* dq_acc, T* dk, T* dv, const FxAttnDims& n,
                                            const FxAttnLayout& L, float scale, double fill_) {
    constexpr int G = FX_ATTN_G, M = D / G, QT = FX_ATTN_QT;
    __shared__ T qs[QT][D];
    __shared__ T gs[QT][D];
    __shared__ TC max_s[QT], log_sum_s[QT], delta_s[QT];
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
                max_s[threadIdx.x] = i < n.queries ? stats[(row0 + i) * 2] : (TC)0;
                log_sum_s[threadIdx.x] = i < n.queries ? stats[(row0 + i) * 2 + 1] : (TC)0;
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
                const TC p = valid ? fx_exp(s - max_s[ii] - log_sum_s[ii]) : (TC)0;
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
        TC* stats, FxAttnDims n, FxAttnLayout L, float scale, double fill) {                                        \
        fx_attn_fwd<D>(q, k, v, mask, ms, kind, sinks, o, stats, n, L, scale, fill);                                \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(128) attention_bwd_##D(                                            \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const TC* stats,           \
        const TC* delta, const T* dout, TC* dq_acc, T* dk, T* dv, FxAttnDims n, FxAttnLayout L, float scale,        \
        double fill) {                                                                                              \
        fx_attn_bwd<D>(q, k, v, mask, ms, kind, stats, delta, dout, dq_acc, dk, dv, n, L, scale, fill);             \
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
//   attention_decode_combine(part_acc, part_ml, sinks, o, stats, rows, chunks, D, queries, q_heads, o rows)
//       one thread per output element (the first of each row also writes
//       its statistics), any grid, blockDim 256

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
                                                    TC* stats, long long rows, int chunks, int d, int queries,
                                                    int q_heads, FxRows os) {
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
        if (f == 0) {
            stats[row * 2] = mx;
            stats[row * 2 + 1] = fx_log(l);
        }
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
// Tensor-core kernels (float16, bfloat16; d == dv == D in {64, 128}):
// FlashAttention-2's layout on mma.sync m16n8k16 with float32 accumulators,
// tiles staged in shared memory by cp.async so that the next tile's loads
// overlap the current tile's products. Masks, sinks and fully hidden rows
// behave as in fx_attn_fwd; mask arithmetic runs only on tiles that a
// causal boundary, the end of the keys or a mask tensor reaches.
//   attention_fwd_mma_<D>(same arguments as attention_fwd_<D>)
//       grid (ceil(Lq / 64), B * Hq), block 128: each warp owns 16 query
//       rows and walks 64-key tiles; P stays in registers (S's accumulator
//       layout is P's operand layout). Row blocks run last-first, so the
//       long causal rows start early.
//   attention_bwd_mma_<D>(same arguments as attention_bwd_<D>)
//       grid (ceil(Lk / 128), B * Hk), block 256, dynamic shared memory as
//       laid out below: each warp owns 16 keys and walks the query tiles
//       that see them, the next tile's q and do prefetched; dK and dV stay
//       in registers, dQ is added atomically (scale * dS K) into dq_acc

#if FX_IS_HALF

#define FX_MMA_ROWS 64
#define FX_MMA_KEYS 64
#define FX_BWD_KEYS 128
// Per head-dimension bucket (mirrored by mma_bwd_tiling in fast.rs):
// queries per tile, whether V stays in shared memory (else in registers),
// and blocks per SM the registers are sized for. Measured on the H200
// (backward of (8, 12, 1024, 64) and (8, 16, 4096, 128), causal bf16):
// at D = 64, V in shared memory brings the registers to 128 without
// spilling, so two blocks share an SM (0.58 -> 0.45 ms); at D = 128 the
// accumulators hold one block per SM either way, and 64-query tiles halve
// the barriers per key (11.4 -> 10.9 ms).
#define FX_BWD_QT_64 32
#define FX_BWD_VS_64 true
#define FX_BWD_BLOCKS_64 2
#define FX_BWD_QT_128 64
#define FX_BWD_VS_128 false
#define FX_BWD_BLOCKS_128 1

// Dynamic shared memory of attention_bwd_mma_<D> (QT = FX_BWD_QT_<D>):
// K [128][D + 8] (and V alike when FX_BWD_VS_<D>), two buffers each of q
// and do [QT][D + 8], dS [QT][136] (16-bit elements), then two buffers
// each of the row statistics [QT][2] and delta [QT] (floats).

// fx_mma, fx_ldmatrix_x4(_trans) and the cp.async helpers are in mma.cuh,
// which the module's source puts in front of this file.

// Two floats rounded to T and packed low-first into one register.
__device__ __forceinline__ unsigned fx_pack2(float lo, float hi) {
    return (unsigned)fx_from_c(lo).bits | ((unsigned)fx_from_c(hi).bits << 16);
}

// Elements (i, i + 1) of a row of T as one register (zero when not `valid`).
__device__ __forceinline__ unsigned fx_load2(const T* row, int i, bool valid) {
    return valid ? *reinterpret_cast<const unsigned*>(row + i) : 0u;
}

// Rows [r0, r0 + R) of a head-row operand (row stride `stride` elements)
// into shared rows of `pitch` elements, by `threads` threads; rows at or past
// `limit` read as zeros.
template <int R, int D>
__device__ __forceinline__ void fx_stage_rows(unsigned short* dst, int pitch, const T* base, long long stride, int r0,
                                              int limit, int threads) {
    for (int e = threadIdx.x; e < R * D / 8; e += threads) {
        const int r = e / (D / 8), c = (e % (D / 8)) * 8, i = r0 + r;
        const bool ok = i < limit;
        fx_cp_async<16>(&dst[r * pitch + c], base + (long long)(ok ? i : 0) * stride + c, ok);
    }
}

// dst[0] += a, dst[1] += b (one vector reduction where the GPU has it).
__device__ __forceinline__ void fx_red_add2(float* dst, float a, float b) {
#if __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst), "f"(a), "f"(b) : "memory");
#else
    atomicAdd(dst, a);
    atomicAdd(dst + 1, b);
#endif
}

// Zeroes an accumulator of N fragments of 4 floats (one thread's share of
// an m16n8 / wgmma tile).
template <int N>
__device__ __forceinline__ void fx_zero_frags(float (&d)[N][4]) {
#pragma unroll
    for (int i = 0; i < N; ++i) d[i][0] = d[i][1] = d[i][2] = d[i][3] = 0.f;
}

// A scaled forward score x of query i and key j at a tile's edge: -inf
// past the last key, otherwise masked per `kind` (the row clamped to the
// last query, for rows of a tile past it).
__device__ __forceinline__ float fx_attn_edge_score(float x, int i, int j, const FxAttnDims& n, int kind,
                                                    const void* mask, const FxAttnStrides& ms, int b, int h, int shift,
                                                    float fill) {
    if (j >= n.keys) return -fx_inf_f32();
    if (kind == 0) return x;
    bool hidden;
    return fx_attn_mask(x, kind, mask, ms, b, h, min(i, n.queries - 1), j, shift, fill, hidden);
}

// Stages the row statistics (max and log-sum, two floats a row) and the
// deltas of query rows [i0, i0 + QT) of head h into `dst` ([QT][2], then
// [QT]), by the block's first 2 QT threads; rows past the last read zeros.
template <int QT>
__device__ __forceinline__ void fx_stage_row_stats(float* dst, const TC* stats, const TC* delta, const FxAttnDims& n,
                                                   int b, int h, int i0) {
    if (threadIdx.x < 2 * QT) {
        const int r = threadIdx.x % QT, i = i0 + r;
        const long long row = ((long long)b * n.q_heads + h) * n.queries + (i < n.queries ? i : 0);
        if (threadIdx.x < QT) fx_cp_async<8>(dst + 2 * r, stats + 2 * row, i < n.queries);
        else fx_cp_async<4>(dst + 2 * QT + r, delta + row, i < n.queries);
    }
}

// One score of a backward tile in place: s (Q K^T) becomes P and dp
// (dO V^T) becomes dS, for query i and key j, whose statistics (max,
// log-sum) are `ml` and delta `delta`. Where `edge`, out-of-range pairs
// give zeros and the mask applies (a hidden score passes no gradient).
__device__ __forceinline__ void fx_attn_grad_score(float& s, float& dp, bool edge, int i, int j, const float* ml,
                                                   float delta, const FxAttnDims& n, int kind, const void* mask,
                                                   const FxAttnStrides& ms, int b, int h, int shift, float fill,
                                                   float scale) {
    float x = s * scale;
    bool valid = true, hidden = false;
    if (edge) {
        valid = i < n.queries && j < n.keys;
        if (valid && kind != 0) x = fx_attn_mask(x, kind, mask, ms, b, h, i, j, shift, fill, hidden);
    }
    const float p = valid ? __expf(x - ml[0] - ml[1]) : 0.f;
    s = p;
    dp = valid && !hidden ? p * (dp - delta) : 0.f;
}

// Writes this thread's accumulator rows, keys ja and jb (those below
// `keys`), of dK (times scale) and dV: D features from dk0 and dv0 with row
// strides dk_r and dv_r.
template <int D>
__device__ __forceinline__ void fx_store_key_grads(const float (&dk_acc)[D / 8][4], const float (&dv_acc)[D / 8][4],
                                                   T* dk0, T* dv0, long long dk_r, long long dv_r, int ja, int jb,
                                                   int keys, int t4, float scale) {
#pragma unroll
    for (int nb = 0; nb < D / 8; ++nb) {
        const int c = nb * 8 + t4 * 2;
        if (ja < keys) {
            *reinterpret_cast<unsigned*>(dk0 + (long long)ja * dk_r + c) = fx_pack2(dk_acc[nb][0] * scale, dk_acc[nb][1] * scale);
            *reinterpret_cast<unsigned*>(dv0 + (long long)ja * dv_r + c) = fx_pack2(dv_acc[nb][0], dv_acc[nb][1]);
        }
        if (jb < keys) {
            *reinterpret_cast<unsigned*>(dk0 + (long long)jb * dk_r + c) = fx_pack2(dk_acc[nb][2] * scale, dk_acc[nb][3] * scale);
            *reinterpret_cast<unsigned*>(dv0 + (long long)jb * dv_r + c) = fx_pack2(dv_acc[nb][2], dv_acc[nb][3]);
        }
    }
}

template <int D>
__device__ __forceinline__ void fx_attn_fwd_mma(const T* q, const T* k, const T* v, const void* mask,
                                                const FxAttnStrides& ms, int kind, const T* sinks, T* o, TC* stats,
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
    const int first_row = (gridDim.x - 1 - blockIdx.x) * FX_MMA_ROWS;
    const int q0 = first_row + warp * 16;
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
    fx_zero_frags(acc);
    const float sink = sinks ? fx_to_c(sinks[h]) : -inf;
    float m0 = sink, m1 = sink;
    // Per-thread partial sums of the two rows (the sink's share counted once, by t4 == 0).
    float l0 = sinks && t4 == 0 ? 1.f : 0.f, l1 = l0;
    // Causal: keys past the block's last row are hidden for every row, and
    // skipping them is exact when every row sees at least one key.
    int kend = n.keys;
    if (kind == 1 && first_row + shift >= 0) kend = min(n.keys, first_row + FX_MMA_ROWS + shift);
    const T* kb = k + fx_row(L.k, b, kvh, 0);
    const T* vb = v + fx_row(L.v, b, kvh, 0);
    if (kend > 0) {
        fx_stage_rows<KS, D>(ks, KP, kb, L.k.r, 0, n.keys, 128);
        fx_cp_async_commit();
    }
    for (int j0 = 0; j0 < kend; j0 += KS) {
        // K lands; every warp is done with the previous tile's V.
        fx_cp_async_wait_all();
        __syncthreads();
        fx_stage_rows<KS, D>(vs, KP, vb, L.v.r, j0, n.keys, 128);
        fx_cp_async_commit();
        float s[KS / 8][4];
#pragma unroll
        for (int nb = 0; nb < KS / 8; ++nb) {
            s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < D / 16; kk += 2) {
                // Keys nb*8.., features kk*16 + {0, 8, 16, 24}: B operands of steps kk and kk + 1.
                unsigned kf[4];
                fx_ldmatrix_x4(kf, &ks[(nb * 8 + (lane & 7)) * KP + kk * 16 + (lane >> 3) * 8]);
                fx_mma(s[nb], qa[kk], kf);
                fx_mma(s[nb], qa[kk + 1], kf + 2);
            }
        }
        // V lands; every warp is done with K, which the next tile's copy overwrites.
        fx_cp_async_wait_all();
        __syncthreads();
        if (j0 + KS < kend) {
            fx_stage_rows<KS, D>(ks, KP, kb, L.k.r, j0 + KS, n.keys, 128);
            fx_cp_async_commit();
        }
        const bool edge = kind >= 2 || j0 + KS > n.keys || (kind == 1 && j0 + KS - 1 > q0 + shift);
        float tmax0 = -inf, tmax1 = -inf;
#pragma unroll
        for (int nb = 0; nb < KS / 8; ++nb) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float x = s[nb][e] * scale;
                if (edge)
                    x = fx_attn_edge_score(x, e < 2 ? r0 : r1, j0 + nb * 8 + t4 * 2 + (e & 1), n, kind, mask, ms, b,
                                           h, shift, fill);
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
#pragma unroll
        for (int kk = 0; kk < KS / 16; ++kk) {
            unsigned pa[4] = {fx_pack2(s[2 * kk][0], s[2 * kk][1]), fx_pack2(s[2 * kk][2], s[2 * kk][3]),
                              fx_pack2(s[2 * kk + 1][0], s[2 * kk + 1][1]), fx_pack2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int nb = 0; nb < D / 8; nb += 2) {
                // V is [key][feature]: the transposing load gives the operands
                // of feature blocks nb and nb + 1.
                unsigned vf[4];
                fx_ldmatrix_x4_trans(vf, &vs[(kk * 16 + (lane & 15)) * KP + (nb + (lane >> 4)) * 8]);
                fx_mma(acc[nb], pa, vf);
                fx_mma(acc[nb + 1], pa, vf + 2);
            }
        }
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    if (t4 == 0 && in0) *reinterpret_cast<float2*>(stats + ((long long)bh * n.queries + r0) * 2) = make_float2(m0, logf(l0));
    if (t4 == 0 && in1) *reinterpret_cast<float2*>(stats + ((long long)bh * n.queries + r1) * 2) = make_float2(m1, logf(l1));
    T* o0 = o + fx_row(L.o, b, h, r0);
    T* o1 = o + fx_row(L.o, b, h, r1);
#pragma unroll
    for (int nb = 0; nb < D / 8; ++nb) {
        const int c = nb * 8 + t4 * 2;
        if (in0) *reinterpret_cast<unsigned*>(o0 + c) = fx_pack2(acc[nb][0] / l0, acc[nb][1] / l0);
        if (in1) *reinterpret_cast<unsigned*>(o1 + c) = fx_pack2(acc[nb][2] / l1, acc[nb][3] / l1);
    }
}

// The query tiles a backward block visits, in order: (query head of the
// group, first row), skipping causal tiles that see none of the block's keys
// (exact when each of their rows sees some key).
template <int QT>
struct FxBwdTiles {
    int group, queries, shift, j0;
    bool causal;

    // The first tile at or after row i0 (a multiple of QT) of head hg,
    // moving on to the next head past the last row.
    __device__ __forceinline__ void settle(int& hg, int& i0) const {
        if (causal) {
            // Skipped: i0 + shift >= 0 and i0 + QT - 1 + shift < j0.
            const int seen = j0 - shift - QT + 1;
            if (i0 + shift >= 0 && i0 < seen) i0 = (seen + QT - 1) / QT * QT;
        }
        if (i0 >= queries) {
            ++hg;
            i0 = 0;
            if (causal && shift >= 0) {
                const int seen = j0 - shift - QT + 1;
                if (seen > 0) i0 = (seen + QT - 1) / QT * QT;
            }
            if (i0 >= queries) hg = group;
        }
    }
};

template <int D, int QT, bool VS>
__device__ __forceinline__ void fx_attn_bwd_mma(const T* q, const T* k, const T* v, const void* mask,
                                                const FxAttnStrides& ms, int kind, const TC* stats, const TC* delta,
                                                const T* dout, TC* dq_acc, T* dk, T* dv, const FxAttnDims& n,
                                                const FxAttnLayout& L, float scale, double fill_) {
    constexpr int KB = FX_BWD_KEYS, KP = D + 8, SP = KB + 8;
    extern __shared__ __align__(16) unsigned char fx_bwd_smem[];
    unsigned short* ks = reinterpret_cast<unsigned short*>(fx_bwd_smem);  // [key][feature]
    unsigned short* vs = ks + KB * KP;                                      // [key][feature] when VS
    unsigned short* qs_buf = vs + (VS ? KB * KP : 0);                       // 2 x [query][feature]
    unsigned short* gs_buf = qs_buf + 2 * QT * KP;                          // 2 x dO [query][feature]
    unsigned short* dss = gs_buf + 2 * QT * KP;                             // dS [query][key]
    float* row_s = reinterpret_cast<float*>(dss + QT * SP);                 // 2 x (stats[QT][2], delta[QT])
    const float fill = (float)fill_;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int kvb = blockIdx.y, b = kvb / n.kv_heads, kvh = kvb % n.kv_heads;
    const int group = n.q_heads / n.kv_heads;
    const int shift = n.keys - n.queries;
    const int j0 = blockIdx.x * KB;
    const int jw = warp * 16;                 // this warp's first key in the block
    const int ja = j0 + jw + g, jb = ja + 8;  // the keys of this thread's accumulator rows
    const T* kb = k + fx_row(L.k, b, kvh, 0);
    const T* vb = v + fx_row(L.v, b, kvh, 0);
    const FxBwdTiles<QT> tiles{group, n.queries, shift, j0, kind == 1};
    // Stages query tile (hg, i0) into buffer `buf`.
    auto stage = [&](int hg, int i0, int buf) {
        const int h = kvh * group + hg;
        fx_stage_rows<QT, D>(qs_buf + buf * QT * KP, KP, q + fx_row(L.q, b, h, 0), L.q.r, i0, n.queries, 256);
        fx_stage_rows<QT, D>(gs_buf + buf * QT * KP, KP, dout + fx_row(L.dout, b, h, 0), L.dout.r, i0, n.queries,
                             256);
        fx_stage_row_stats<QT>(row_s + buf * 3 * QT, stats, delta, n, b, h, i0);
    };
    int hg = 0, i0 = 0;
    tiles.settle(hg, i0);
    fx_stage_rows<KB, D>(ks, KP, kb, L.k.r, j0, n.keys, 256);
    if (VS) fx_stage_rows<KB, D>(vs, KP, vb, L.v.r, j0, n.keys, 256);
    if (hg < group) stage(hg, i0, 0);
    fx_cp_async_commit();
    // V rows of this warp's keys as A operands (16 keys x D), held in
    // registers unless VS keeps them in shared memory.
    unsigned va[VS ? 1 : D / 16][4];
    if (!VS) {
        const T* v0 = vb + (long long)(ja < n.keys ? ja : 0) * L.v.r;
        const T* v1 = vb + (long long)(jb < n.keys ? jb : 0) * L.v.r;
#pragma unroll
        for (int kk = 0; kk < (VS ? 1 : D / 16); ++kk) {
            const int c = kk * 16 + t4 * 2;
            va[kk][0] = fx_load2(v0, c, ja < n.keys);
            va[kk][1] = fx_load2(v1, c, jb < n.keys);
            va[kk][2] = fx_load2(v0, c + 8, ja < n.keys);
            va[kk][3] = fx_load2(v1, c + 8, jb < n.keys);
        }
    }
    float dk_acc[D / 8][4], dv_acc[D / 8][4];
    fx_zero_frags(dk_acc);
    fx_zero_frags(dv_acc);
    for (int buf = 0; hg < group; buf ^= 1) {
        const int h = kvh * group + hg;
        const long long row0 = ((long long)b * n.q_heads + h) * n.queries;
        int next_hg = hg, next_i0 = i0 + QT;
        tiles.settle(next_hg, next_i0);
        // This tile lands; every warp is done with the previous tile (dS and
        // the other buffers are free).
        fx_cp_async_wait_all();
        __syncthreads();
        if (next_hg < group) {
            stage(next_hg, next_i0, buf ^ 1);
            fx_cp_async_commit();
        }
        const unsigned short* qs = qs_buf + buf * QT * KP;
        const unsigned short* gs = gs_buf + buf * QT * KP;
        const float* stats_s = row_s + buf * 3 * QT;  // (max, log-sum) per query
        const float* delta_s = stats_s + 2 * QT;
        // S^T = K Q^T and dP^T = V dO^T for this warp's 16 keys x QT queries.
        float st[QT / 8][4], dpt[QT / 8][4];
        fx_zero_frags(st);
        fx_zero_frags(dpt);
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            unsigned ka[4], vk[4];
            const int arow = (jw + (lane & 15)) * KP + kk * 16 + (lane >> 4) * 8;
            fx_ldmatrix_x4(ka, &ks[arow]);
            if (VS) fx_ldmatrix_x4(vk, &vs[arow]);
            const unsigned* vfrag = VS ? vk : va[VS ? 0 : kk];
#pragma unroll
            for (int nb = 0; nb < QT / 8; nb += 2) {
                // Queries (nb + {0, 1}) * 8 .., features kk*16 + {0, 8}.
                const int at = ((nb + (lane >> 4)) * 8 + (lane & 7)) * KP + kk * 16 + ((lane >> 3) & 1) * 8;
                unsigned bq[4], bg[4];
                fx_ldmatrix_x4(bq, &qs[at]);
                fx_ldmatrix_x4(bg, &gs[at]);
                fx_mma(st[nb], ka, bq);
                fx_mma(st[nb + 1], ka, bq + 2);
                fx_mma(dpt[nb], vfrag, bg);
                fx_mma(dpt[nb + 1], vfrag, bg + 2);
            }
        }
        // P^T and dS^T in place of S^T and dP^T.
        const bool edge = kind >= 2 || i0 + QT > n.queries || j0 + jw + 16 > n.keys ||
                          (kind == 1 && j0 + jw + 15 > i0 + shift);
#pragma unroll
        for (int nb = 0; nb < QT / 8; ++nb) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int il = nb * 8 + t4 * 2 + (e & 1);
                fx_attn_grad_score(st[nb][e], dpt[nb][e], edge, i0 + il, e < 2 ? ja : jb, stats_s + 2 * il,
                                   delta_s[il], n, kind, mask, ms, b, h, shift, fill, scale);
            }
        }
        // dV += P^T dO and dK += dS^T Q (k = queries: steps of 16).
#pragma unroll
        for (int kq = 0; kq < QT / 16; ++kq) {
            unsigned pa[4] = {fx_pack2(st[2 * kq][0], st[2 * kq][1]), fx_pack2(st[2 * kq][2], st[2 * kq][3]),
                              fx_pack2(st[2 * kq + 1][0], st[2 * kq + 1][1]),
                              fx_pack2(st[2 * kq + 1][2], st[2 * kq + 1][3])};
            unsigned da[4] = {fx_pack2(dpt[2 * kq][0], dpt[2 * kq][1]), fx_pack2(dpt[2 * kq][2], dpt[2 * kq][3]),
                              fx_pack2(dpt[2 * kq + 1][0], dpt[2 * kq + 1][1]),
                              fx_pack2(dpt[2 * kq + 1][2], dpt[2 * kq + 1][3])};
#pragma unroll
            for (int nb = 0; nb < D / 8; nb += 2) {
                // Queries kq*16 + {0, 8} .., features (nb + {0, 1}) * 8, transposed.
                const int at = (kq * 16 + (lane & 15)) * KP + (nb + (lane >> 4)) * 8;
                unsigned bg[4], bq[4];
                fx_ldmatrix_x4_trans(bg, &gs[at]);
                fx_mma(dv_acc[nb], pa, bg);
                fx_mma(dv_acc[nb + 1], pa, bg + 2);
                fx_ldmatrix_x4_trans(bq, &qs[at]);
                fx_mma(dk_acc[nb], da, bq);
                fx_mma(dk_acc[nb + 1], da, bq + 2);
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
        // The 8 warps tile dQ (QT x D): QT / 16 along the queries, the rest
        // along the features (FW each).
        {
            constexpr int QW = QT / 16, FW = D / (8 / QW);
            const int qw = (warp % QW) * 16, fw = (warp / QW) * FW;
            float dq[FW / 8][4];
            fx_zero_frags(dq);
#pragma unroll
            for (int kk = 0; kk < KB / 16; ++kk) {
                unsigned sa[4];
                fx_ldmatrix_x4(sa, &dss[(qw + (lane & 15)) * SP + kk * 16 + (lane >> 4) * 8]);
#pragma unroll
                for (int nb = 0; nb < FW / 8; nb += 2) {
                    unsigned bk[4];
                    fx_ldmatrix_x4_trans(bk, &ks[(kk * 16 + (lane & 15)) * KP + fw + (nb + (lane >> 4)) * 8]);
                    fx_mma(dq[nb], sa, bk);
                    fx_mma(dq[nb + 1], sa, bk + 2);
                }
            }
#pragma unroll
            for (int nb = 0; nb < FW / 8; ++nb) {
                const int f = fw + nb * 8 + t4 * 2;
                const int ia = i0 + qw + g, ib = ia + 8;
                if (ia < n.queries) fx_red_add2(dq_acc + (row0 + ia) * D + f, dq[nb][0] * scale, dq[nb][1] * scale);
                if (ib < n.queries) fx_red_add2(dq_acc + (row0 + ib) * D + f, dq[nb][2] * scale, dq[nb][3] * scale);
            }
        }
        hg = next_hg;
        i0 = next_i0;
    }
    fx_cp_async_wait_all();  // the K copy, when no tile ran
    fx_store_key_grads<D>(dk_acc, dv_acc, dk + fx_row(L.dk, b, kvh, 0), dv + fx_row(L.dv, b, kvh, 0), L.dk.r, L.dv.r, ja,
                            jb, n.keys, t4, scale);
}

#define FX_ATTN_MMA_KERNEL(D)                                                                                        \
    extern "C" __global__ void __launch_bounds__(128, 3) attention_fwd_mma_##D(                                        \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const T* sinks, T* o,      \
        TC* stats, FxAttnDims n, FxAttnLayout L, float scale, double fill) {                                        \
        fx_attn_fwd_mma<D>(q, k, v, mask, ms, kind, sinks, o, stats, n, L, scale, fill);                            \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256, FX_BWD_BLOCKS_##D) attention_bwd_mma_##D(                     \
        const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind, const TC* stats,           \
        const TC* delta, const T* dout, TC* dq_acc, T* dk, T* dv, FxAttnDims n, FxAttnLayout L, float scale,        \
        double fill) {                                                                                              \
        fx_attn_bwd_mma<D, FX_BWD_QT_##D, FX_BWD_VS_##D>(q, k, v, mask, ms, kind, stats, delta, dout, dq_acc, dk,   \
                                                         dv, n, L, scale, fill);                                    \
    }

FX_ATTN_MMA_KERNEL(64)
FX_ATTN_MMA_KERNEL(128)

// ---------------------------------------------------------------------------
// Hopper warpgroup kernels (sm_90a: wgmma), for head dimension 128:
//   attention_fwd_wg_128(same arguments as attention_fwd_<D>)
//       grid (ceil(Lq / 128), B * Hq), block 256: two warpgroups of 64 query
//       rows each. Dynamic shared memory (FX_WG_SHARED bytes, mirrored in
//       fast.rs): Q [128 rows], two stages of K and three of V [128 keys],
//       every tile two column halves of 64 features in 128-byte rows under
//       the 128-byte swizzle, the layout wgmma reads through descriptors.
//       S = Q K^T runs from shared memory; P stays in registers as the A
//       operand of O += P V.
//   attention_bwd_wg_128(same arguments as attention_bwd_<D>)
//       grid (ceil(Lk / 128), B * Hk), block 256: two warpgroups of 64 keys
//       each, walking 64-query tiles; dynamic shared memory
//       FX_WG_BWD_SHARED bytes (mirrored in fast.rs), laid out below.
// fast.rs launches them on devices of compute capability 9.0, for which
// the kernel library compiles to sm_90a; elsewhere the mma.sync kernels
// above serve head dimension 128.

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

#define FX_WG_ROWS 128
#define FX_WG_KEYS 128
// A tile of 128 rows x 128 features of a 16-bit type.
#define FX_WG_TILE (128 * 128 * 2)
// Q, two stages of K, three of V, and the slack that aligns the start to
// 1024 bytes.
#define FX_WG_SHARED (6 * FX_WG_TILE + 1024)

#if defined(FX_DTYPE_BF16)
#define FX_WG_TYPE "bf16"
#else
#define FX_WG_TYPE "f16"
#endif

// The byte offset of 16-byte chunk c (0..7) of row r in a tile of 128-byte
// rows under the 128-byte swizzle (the chunk index XOR the row mod 8).
__device__ __forceinline__ int fx_sw128(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

// A wgmma shared-memory descriptor: start address, leading and stride
// byte offsets, 128-byte swizzle. Adding m to a descriptor moves its start
// 16 m bytes on (shared addresses stay below 2^18, so the field never
// carries).
__device__ __forceinline__ unsigned long long fx_wg_desc(const void* at, unsigned lbo, unsigned sbo) {
    const unsigned addr = (unsigned)__cvta_generic_to_shared(at);
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) |
           ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

__device__ __forceinline__ void fx_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void fx_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N of this warpgroup's wgmma groups are in flight.
template <int N>
__device__ __forceinline__ void fx_wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// Makes this thread's completed shared-memory writes visible to wgmma.
__device__ __forceinline__ void fx_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Keeps the compiler from moving accesses of an accumulator across wgmma
// issue and wait.
template <int N>
__device__ __forceinline__ void fx_wg_pin(float (&d)[N][4]) {
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[i][e])::"memory");
}

// The 64 accumulator registers of an m64n128 tile (one thread's share), as
// read-write asm operands.
#define FX_WG_D4(i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
#define FX_WG_D64                                                                                                    \
    FX_WG_D4(0), FX_WG_D4(1), FX_WG_D4(2), FX_WG_D4(3), FX_WG_D4(4), FX_WG_D4(5), FX_WG_D4(6), FX_WG_D4(7),          \
        FX_WG_D4(8), FX_WG_D4(9), FX_WG_D4(10), FX_WG_D4(11), FX_WG_D4(12), FX_WG_D4(13), FX_WG_D4(14), FX_WG_D4(15)

// d (m64 x n128) (+)= A B with A and B read through shared-memory
// descriptors, both K-major; `accumulate` 0 overwrites d.
__device__ __forceinline__ void fx_wg_ss_n128(float (&d)[16][4], unsigned long long a, unsigned long long b,
                                              int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." FX_WG_TYPE "." FX_WG_TYPE " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63 "
        "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : FX_WG_D64
        : "l"(a), "l"(b), "r"(accumulate));
}

// d (m64 x n128) += A B with A from registers (each warp's 16 rows as
// mma.sync's m16n8k16 A fragment) and B through a descriptor, MN-major.
__device__ __forceinline__ void fx_wg_rs_n128_mn(float (&d)[16][4], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." FX_WG_TYPE "." FX_WG_TYPE " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63 "
        "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : FX_WG_D64
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

// The 32 accumulator registers of an m64n64 tile.
#define FX_WG_D32 FX_WG_D4(0), FX_WG_D4(1), FX_WG_D4(2), FX_WG_D4(3), FX_WG_D4(4), FX_WG_D4(5), FX_WG_D4(6), FX_WG_D4(7)

// d (m64 x n64) (+)= A B through shared-memory descriptors, each K-major
// (TA, TB = 0) or MN-major (1); `accumulate` 0 overwrites d.
template <int TA, int TB>
__device__ __forceinline__ void fx_wg_ss_n64(float (&d)[8][4], unsigned long long a, unsigned long long b,
                                             int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32." FX_WG_TYPE "." FX_WG_TYPE " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31 "
        "}, %32, %33, p, 1, 1, %35, %36;\n}\n"
        : FX_WG_D32
        : "l"(a), "l"(b), "r"(accumulate), "n"(TA), "n"(TB));
}

// 2^x by the special-function unit (flushes denormals; 2^-inf = 0).
__device__ __forceinline__ float fx_ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Copies the rows [r0, r0 + R) of a head-row operand of 128 features into a
// swizzled tile, by the block's 256 threads: thread t moves 16-byte chunk
// t % 16 of rows t / 16 + 16 k, so its shared offsets step by 2048 bytes
// and its source by 16 rows. Rows at or past `limit` read as zeros.
template <int R>
struct FxWgStager {
    int offset;  // shared byte offset of the thread's first chunk
    int row;     // the thread's first row in the tile
    int col;     // the chunk's first element in its row

    __device__ __forceinline__ FxWgStager() {
        const int c = threadIdx.x & 15;
        row = threadIdx.x >> 4;
        col = c * 8;
        offset = (c >> 3) * (R * 128) + fx_sw128(row, c & 7);
    }

    __device__ __forceinline__ void operator()(unsigned char* dst, const T* base, long long stride, int r0,
                                               int limit) const {
        const T* src = base + (long long)(r0 + row) * stride + col;
        if (r0 + R <= limit) {
#pragma unroll
            for (int k = 0; k < R / 16; ++k) fx_cp_async<16>(dst + offset + k * 2048, src + k * 16 * stride, true);
        } else {
#pragma unroll
            for (int k = 0; k < R / 16; ++k) {
                const bool ok = r0 + row + 16 * k < limit;
                fx_cp_async<16>(dst + offset + k * 2048, ok ? src + k * 16 * stride : base, ok);
            }
        }
    }
};

// The stage of V tile t among the forward pass's three.
__device__ __forceinline__ unsigned char* fx_wg_v_stage(unsigned char* vst, int t) { return vst + (t % 3) * FX_WG_TILE; }

// The forward pass (see the section comment). Each warpgroup keeps its
// rows' output in registers and overlaps the softmax of key tile j with
// the tensor cores' O += P V of tile j - 1.
__device__ __forceinline__ void fx_attn_fwd_wg(const T* q, const T* k, const T* v, const void* mask,
                                               const FxAttnStrides& ms, int kind, const T* sinks, T* o, TC* stats,
                                               const FxAttnDims& n, const FxAttnLayout& L, float scale, double fill_) {
    constexpr int KS = FX_WG_KEYS;
    constexpr float LOG2E = 1.4426950408889634f;
    extern __shared__ __align__(1024) unsigned char fx_wg_raw[];
    unsigned char* smem = fx_wg_raw + ((1024 - ((unsigned)__cvta_generic_to_shared(fx_wg_raw) & 1023)) & 1023);
    unsigned char* qs = smem;
    unsigned char* kst = qs + FX_WG_TILE;       // two stages
    unsigned char* vst = kst + 2 * FX_WG_TILE;  // three stages
    const float fill = (float)fill_;
    const float inf = fx_inf_f32();
    // The warpgroup, read from lane 0 so that ptxas sees it uniform in
    // each warp (a branch on it would otherwise serialize the wgmma).
    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x >> 7), 0);
    const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int bh = blockIdx.y, b = bh / n.q_heads, h = bh % n.q_heads;
    const int kvh = h / (n.q_heads / n.kv_heads);
    const int shift = n.keys - n.queries;
    const int first_row = (gridDim.x - 1 - blockIdx.x) * FX_WG_ROWS;
    const int wg_row = first_row + wg * 64;
    const int q0 = wg_row + warp * 16;
    const int r0 = q0 + g, r1 = q0 + g + 8;
    const bool in0 = r0 < n.queries, in1 = r1 < n.queries;
    float acc[16][4];
    fx_zero_frags(acc);
    const float sink = sinks ? fx_to_c(sinks[h]) : -inf;
    float m0 = sink, m1 = sink;
    // Per-thread partial sums of the two rows (the sink's share counted once, by t4 == 0).
    float l0 = sinks && t4 == 0 ? 1.f : 0.f, l1 = l0;
    // Causal: keys past the block's last row are hidden for every row, and
    // skipping them is exact when every row sees some key.
    const bool causal_cut = kind == 1 && first_row + shift >= 0;
    const int kend = causal_cut ? min(n.keys, first_row + FX_WG_ROWS + shift) : n.keys;
    const T* kb = k + fx_row(L.k, b, kvh, 0);
    const T* vb = v + fx_row(L.v, b, kvh, 0);
    const FxWgStager<128> stager;
    if (kend > 0) {
        stager(qs, q + fx_row(L.q, b, h, 0), L.q.r, first_row, n.queries);
        stager(kst, kb, L.k.r, 0, n.keys);
        fx_cp_async_commit();
    }
    const unsigned long long q_desc = fx_wg_desc(qs + wg * 64 * 128, 16, 1024);  // this warpgroup's rows of Q
    const int tiles = (kend + KS - 1) / KS;
    unsigned pa[8][4];  // P of the previous tile, as A fragments
    // Each tile t computes S = Q K^T, then issues O += P V of tile t - 1
    // and, while the tensor cores run it, turns S into P. The block meets
    // at barrier b before K of tile b and V of tile b - 1 are read:
    // warpgroup 0 before S of tile b, warpgroup 1 (half a tile behind)
    // before the softmax of tile b - 1 (and both before the first tile), so
    // one warpgroup's softmax runs while the other's products keep the
    // tensor cores busy. After barrier b the next copies start: K of tile
    // b + 1 (two stages) and V of tile b (three stages: warpgroup 1 still
    // reads V of tile b - 2).
    auto barrier = [&](int bt) {
        // Every copy issued so far lands; every warp is done with the
        // buffers the next copies overwrite.
        fx_cp_async_wait_all();
        fx_proxy_fence();
        __syncthreads();
        if (bt < tiles) {
            if (bt + 1 < tiles) stager(kst + ((bt + 1) & 1) * FX_WG_TILE, kb, L.k.r, (bt + 1) * KS, n.keys);
            stager(fx_wg_v_stage(vst, bt), vb, L.v.r, bt * KS, n.keys);
            fx_cp_async_commit();
        }
    };
    for (int t = 0; t < tiles; ++t) {
        const int j0 = t * KS;
        if (wg == 0 || t == 0) barrier(t);
        float s[16][4];
        fx_wg_pin(acc);
        fx_wg_fence();
        const unsigned long long k_desc = fx_wg_desc(kst + (t & 1) * FX_WG_TILE, 16, 1024);
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            const int off = ((kk >> 2) * (128 * 128) + (kk & 3) * 32) >> 4;
            fx_wg_ss_n128(s, q_desc + off, k_desc + off, kk > 0);
        }
        fx_wg_commit();
        if (t > 0) {
            const unsigned long long v_desc = fx_wg_desc(fx_wg_v_stage(vst, t - 1), 128 * 128, 1024);
#pragma unroll
            for (int kk = 0; kk < 8; ++kk) fx_wg_rs_n128_mn(acc, pa[kk], v_desc + kk * 128);
        }
        fx_wg_commit();
        fx_wg_wait<1>();
        fx_wg_pin(s);
        // S is read: warpgroup 1's barrier lets the copies overwrite K.
        if (wg == 1) barrier(t + 1);
        // Scores in natural-log units (masked, scaled); the tile's row maxima.
        float tmax0 = -inf, tmax1 = -inf;
        const bool edge = kind >= 2 || j0 + KS > n.keys;
        const bool diagonal = kind == 1 && j0 + KS - 1 > q0 + shift;
        if (edge) {
#pragma unroll
            for (int nb = 0; nb < 16; ++nb) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    s[nb][e] = fx_attn_edge_score(s[nb][e] * scale, e < 2 ? r0 : r1, j0 + nb * 8 + t4 * 2 + (e & 1), n,
                                                  kind, mask, ms, b, h, shift, fill);
                }
            }
        } else if (diagonal) {  // causal within the keys: hidden scores are the fill, as fx_attn_mask has them
#pragma unroll
            for (int nb = 0; nb < 16; ++nb) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int j = j0 + nb * 8 + t4 * 2 + (e & 1);
                    s[nb][e] = fx_causal_hidden(e < 2 ? r0 : r1, j, shift) ? fill : s[nb][e] * scale;
                }
            }
        } else {
#pragma unroll
            for (int nb = 0; nb < 16; ++nb)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[nb][e] *= scale;
        }
#pragma unroll
        for (int nb = 0; nb < 16; ++nb) {
            tmax0 = fmaxf(tmax0, fmaxf(s[nb][0], s[nb][1]));
            tmax1 = fmaxf(tmax1, fmaxf(s[nb][2], s[nb][3]));
        }
        tmax0 = fmaxf(tmax0, __shfl_xor_sync(0xffffffffu, tmax0, 1));
        tmax0 = fmaxf(tmax0, __shfl_xor_sync(0xffffffffu, tmax0, 2));
        tmax1 = fmaxf(tmax1, __shfl_xor_sync(0xffffffffu, tmax1, 1));
        tmax1 = fmaxf(tmax1, __shfl_xor_sync(0xffffffffu, tmax1, 2));
        const float n0 = fmaxf(m0, tmax0), n1 = fmaxf(m1, tmax1);
        // p = 2^(x log2 e - m log2 e), one fused step where m log2 e is
        // finite; rows whose maximum is -inf or near the float minimum
        // (masked everywhere so far) take the exact difference instead.
        const float a0 = m0 == -inf ? 0.f : fx_ex2((m0 - n0) * LOG2E);
        const float a1 = m1 == -inf ? 0.f : fx_ex2((m1 - n1) * LOG2E);
        float sum0 = 0.f, sum1 = 0.f;
        unsigned pn[8][4];
        if (!__any_sync(0xffffffffu, !(n0 > -1e38f && n1 > -1e38f))) {
            const float c0 = n0 * LOG2E, c1 = n1 * LOG2E;
#pragma unroll
            for (int nb = 0; nb < 16; ++nb) {
                const float p0 = fx_ex2(fmaf(s[nb][0], LOG2E, -c0)), p1 = fx_ex2(fmaf(s[nb][1], LOG2E, -c0));
                const float p2 = fx_ex2(fmaf(s[nb][2], LOG2E, -c1)), p3 = fx_ex2(fmaf(s[nb][3], LOG2E, -c1));
                sum0 += p0 + p1;
                sum1 += p2 + p3;
                pn[nb >> 1][(nb & 1) * 2] = fx_pack2(p0, p1);
                pn[nb >> 1][(nb & 1) * 2 + 1] = fx_pack2(p2, p3);
            }
        } else {
            auto p = [&](float x, float m) { return x == -inf ? 0.f : fx_ex2((x - m) * LOG2E); };
#pragma unroll
            for (int nb = 0; nb < 16; ++nb) {
                const float p0 = p(s[nb][0], n0), p1 = p(s[nb][1], n0), p2 = p(s[nb][2], n1), p3 = p(s[nb][3], n1);
                sum0 += p0 + p1;
                sum1 += p2 + p3;
                pn[nb >> 1][(nb & 1) * 2] = fx_pack2(p0, p1);
                pn[nb >> 1][(nb & 1) * 2 + 1] = fx_pack2(p2, p3);
            }
        }
        m0 = n0;
        m1 = n1;
        l0 = l0 * a0 + sum0;
        l1 = l1 * a1 + sum1;
        fx_wg_wait<0>();
        fx_wg_pin(acc);
#pragma unroll
        for (int nb = 0; nb < 16; ++nb) {
            acc[nb][0] *= a0;
            acc[nb][1] *= a0;
            acc[nb][2] *= a1;
            acc[nb][3] *= a1;
        }
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
#pragma unroll
            for (int e = 0; e < 4; ++e) pa[kk][e] = pn[kk][e];
    }
    // The last tile's O += P V, once its V lands: warpgroup 0 meets the
    // block's last barrier here, warpgroup 1 met it before its last softmax.
    if (tiles > 0) {
        if (wg == 0) barrier(tiles);
        const unsigned long long v_desc = fx_wg_desc(fx_wg_v_stage(vst, tiles - 1), 128 * 128, 1024);
        fx_wg_pin(acc);
        fx_wg_fence();
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) fx_wg_rs_n128_mn(acc, pa[kk], v_desc + kk * 128);
        fx_wg_commit();
        fx_wg_wait<0>();
        fx_wg_pin(acc);
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    if (t4 == 0 && in0) *reinterpret_cast<float2*>(stats + ((long long)bh * n.queries + r0) * 2) = make_float2(m0, logf(l0));
    if (t4 == 0 && in1) *reinterpret_cast<float2*>(stats + ((long long)bh * n.queries + r1) * 2) = make_float2(m1, logf(l1));
    T* o0 = o + fx_row(L.o, b, h, r0);
    T* o1 = o + fx_row(L.o, b, h, r1);
    const float inv0 = 1.f / l0, inv1 = 1.f / l1;
#pragma unroll
    for (int nb = 0; nb < 16; ++nb) {
        const int c = nb * 8 + t4 * 2;
        if (in0) *reinterpret_cast<unsigned*>(o0 + c) = fx_pack2(acc[nb][0] * inv0, acc[nb][1] * inv0);
        if (in1) *reinterpret_cast<unsigned*>(o1 + c) = fx_pack2(acc[nb][2] * inv1, acc[nb][3] * inv1);
    }
}

extern "C" __global__ void __launch_bounds__(256, 1)
    attention_fwd_wg_128(const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind,
                         const T* sinks, T* o, TC* stats, FxAttnDims n, FxAttnLayout L, float scale, double fill) {
    fx_attn_fwd_wg(q, k, v, mask, ms, kind, sinks, o, stats, n, L, scale, fill);
}

// Query rows per tile of attention_bwd_wg_128.
#define FX_WG_BWD_QT 64

// The rows per head of attention_bwd_wg_128's dQ accumulator: the queries
// padded to whole tiles.
__device__ __forceinline__ long long fx_wg_dq_rows(int queries) {
    return (queries + FX_WG_BWD_QT - 1) / FX_WG_BWD_QT * FX_WG_BWD_QT;
}
// K and V [128 keys], two buffers each of q, do and dS [64 queries] (all
// swizzled tiles), two buffers of the tile's row statistics and deltas
// (3 x 64 floats), and the alignment slack.
#define FX_WG_BWD_SHARED (2 * FX_WG_TILE + 6 * (FX_WG_TILE / 2) + 2 * 3 * 64 * 4 + 1024)

// dst[0..3] += (a, b, c, d) in one vector reduction.
__device__ __forceinline__ void fx_red_add4(float* dst, float a, float b, float c, float d) {
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// The backward pass for one block of 128 keys (grid (ceil(Lk / 128), B * Hk),
// block 256): warpgroup w owns keys 64w .. 64w + 63 and walks the query
// tiles that see them. S^T = K Q^T and dP^T = V dO^T run from shared memory;
// dV += P^T dO and dK += dS^T Q take P^T and dS^T from registers; dQ = dS K
// (each warpgroup 64 of the features) reads dS back from shared memory,
// where it lies transposed as the warpgroups hold it (A MN-major). dS has
// two buffers, so a tile's dQ runs on the tensor cores during the next
// tile's softmax.
//
// dq_acc is not row-major here: each (batch, query head) holds
// ceil(Lq / 64) tiles of 64 rows x 128 features (the last padded) in the
// warpgroups' fragment order, so that each warp adds its 4 KB with 16-byte
// reductions covering whole lines. Float ((w * 8 + nb) * 32 + lane) * 4 + e
// of a tile, for warp w of the block (warpgroup w / 4), is element e of the
// lane's accumulator fragment nb: row 16 (w % 4) + lane / 4 + 8 (e / 2),
// feature 64 (w / 4) + 8 nb + 2 (lane % 4) + e % 2. attention_cast_wg puts
// the rows in order.
__device__ __forceinline__ void fx_attn_bwd_wg(const T* q, const T* k, const T* v, const void* mask,
                                               const FxAttnStrides& ms, int kind, const TC* stats, const TC* delta,
                                               const T* dout, TC* dq_acc, T* dk, T* dv, const FxAttnDims& n,
                                               const FxAttnLayout& L, float scale, double fill_) {
    constexpr int KB = 128, QT = FX_WG_BWD_QT, QTILE = FX_WG_TILE / 2;
    constexpr float LOG2E = 1.4426950408889634f;
    extern __shared__ __align__(1024) unsigned char fx_wg_raw[];
    unsigned char* smem = fx_wg_raw + ((1024 - ((unsigned)__cvta_generic_to_shared(fx_wg_raw) & 1023)) & 1023);
    unsigned char* ks = smem;                    // [128 keys], K-major halves
    unsigned char* vs = ks + FX_WG_TILE;         // [128 keys]
    unsigned char* qs_buf = vs + FX_WG_TILE;     // 2 x [64 queries]
    unsigned char* gs_buf = qs_buf + 2 * QTILE;  // 2 x dO [64 queries]
    unsigned char* ds_buf = gs_buf + 2 * QTILE;  // 2 x dS [128 keys][64 queries]
    float* row_s = reinterpret_cast<float*>(ds_buf + 2 * QTILE);  // 2 x (stats[64][2], delta[64])
    const float fill = (float)fill_;
    const int wg = __shfl_sync(0xffffffffu, threadIdx.x >> 7, 0);
    const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, t4 = lane & 3;
    const int kvb = blockIdx.y, b = kvb / n.kv_heads, kvh = kvb % n.kv_heads;
    const int group = n.q_heads / n.kv_heads;
    const int shift = n.keys - n.queries;
    const long long dq_rows = fx_wg_dq_rows(n.queries);
    const int j0 = blockIdx.x * KB;
    const int jw = wg * 64 + warp * 16;       // this warp's first key in the block
    const int ja = j0 + jw + g, jb = ja + 8;  // the keys of this thread's accumulator rows
    const T* kb = k + fx_row(L.k, b, kvh, 0);
    const T* vb = v + fx_row(L.v, b, kvh, 0);
    const FxBwdTiles<QT> tiles{group, n.queries, shift, j0, kind == 1};
    const FxWgStager<QT> row_stager;
    const FxWgStager<KB> key_stager;
    // Descriptors of this warpgroup's keys and values (K-major, for S^T and
    // dP^T) and of its column half of K (MN-major, for dQ); a descriptor
    // plus a byte offset / 16 addresses the tile that far in.
    const unsigned long long k_desc = fx_wg_desc(ks + wg * 64 * 128, 16, 1024);
    const unsigned long long v_desc = fx_wg_desc(vs + wg * 64 * 128, 16, 1024);
    const unsigned long long kf_desc = fx_wg_desc(ks + wg * (KB * 128), KB * 128, 1024);
    // Stages query tile (hg, i0) into buffer `buf`.
    auto stage = [&](int hg, int i0, int buf) {
        const int h = kvh * group + hg;
        row_stager(qs_buf + buf * QTILE, q + fx_row(L.q, b, h, 0), L.q.r, i0, n.queries);
        row_stager(gs_buf + buf * QTILE, dout + fx_row(L.dout, b, h, 0), L.dout.r, i0, n.queries);
        fx_stage_row_stats<QT>(row_s + buf * 3 * QT, stats, delta, n, b, h, i0);
    };
    // Issues dQ (QT x 128) = dS K from dS buffer `buf`: this warpgroup's 64
    // features (a column half of K).
    auto issue_dq = [&](float (&dq)[8][4], int buf) {
        const unsigned long long ds_desc = fx_wg_desc(ds_buf + buf * QTILE, QT * 128, 1024);
        fx_wg_fence();
#pragma unroll
        for (int kk = 0; kk < KB / 16; ++kk)
            fx_wg_ss_n64<1, 1>(dq, ds_desc + kk * 128, kf_desc + kk * 128, kk > 0);
        fx_wg_commit();
    };
    // Adds the warp's share of a finished dQ (times scale) into its tile of
    // dq_acc (rows row0 + i0 onwards; the layout above).
    auto add_dq = [&](const float (&dq)[8][4], long long row0, int i0) {
        float* tile = dq_acc + (row0 + i0) * 128 + (wg * 4 + warp) * 8 * 128 + lane * 4;
#pragma unroll
        for (int nb = 0; nb < 8; ++nb)
            fx_red_add4(tile + nb * 128, dq[nb][0] * scale, dq[nb][1] * scale, dq[nb][2] * scale, dq[nb][3] * scale);
    };
    int hg = 0, i0 = 0;
    tiles.settle(hg, i0);
    key_stager(ks, kb, L.k.r, j0, n.keys);
    key_stager(vs, vb, L.v.r, j0, n.keys);
    if (hg < group) stage(hg, i0, 0);
    fx_cp_async_commit();
    // The first tile's dQ product reads dS buffer 1 before any tile wrote it.
    for (int e = threadIdx.x; e < QTILE / 16; e += 256) reinterpret_cast<uint4*>(ds_buf + QTILE)[e] = make_uint4(0, 0, 0, 0);
    float dk_acc[16][4], dv_acc[16][4], dq[8][4];
    fx_zero_frags(dk_acc);
    fx_zero_frags(dv_acc);
    long long prev_row0 = 0;
    int prev_i0 = 0, t = 0;
    for (; hg < group; ++t) {
        const int buf = t & 1;
        const int h = kvh * group + hg;
        const long long row0 = ((long long)b * n.q_heads + h) * dq_rows;
        int next_hg = hg, next_i0 = i0 + QT;
        tiles.settle(next_hg, next_i0);
        // This tile lands, and the previous one's dS is whole in shared memory.
        fx_cp_async_wait_all();
        fx_proxy_fence();
        __syncthreads();
        const unsigned char* qs = qs_buf + buf * QTILE;
        const unsigned char* gs = gs_buf + buf * QTILE;
        const float* stats_s = row_s + buf * 3 * QT;  // (max, log-sum) per query
        const float* delta_s = stats_s + 2 * QT;
        // S^T = K Q^T and dP^T = V dO^T for this warpgroup's 64 keys x QT
        // queries; then the previous tile's dQ, which runs during this
        // tile's softmax.
        float st[QT / 8][4], dpt[QT / 8][4];
        const unsigned long long q_desc = fx_wg_desc(qs, 16, 1024), g_desc = fx_wg_desc(gs, 16, 1024);
        fx_wg_fence();
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            const int ok = ((kk >> 2) * (KB * 128) + (kk & 3) * 32) >> 4;
            const int oq = ((kk >> 2) * (QT * 128) + (kk & 3) * 32) >> 4;
            fx_wg_ss_n64<0, 0>(st, k_desc + ok, q_desc + oq, kk > 0);
            fx_wg_ss_n64<0, 0>(dpt, v_desc + ok, g_desc + oq, kk > 0);
        }
        fx_wg_commit();
        issue_dq(dq, buf ^ 1);
        // The next tile is copied in while they run.
        if (next_hg < group) {
            stage(next_hg, next_i0, buf ^ 1);
            fx_cp_async_commit();
        }
        fx_wg_wait<1>();
        fx_wg_pin(st);
        fx_wg_pin(dpt);
        // P^T and dS^T in place of S^T and dP^T: within the bounds and
        // without a mask tensor, a lean pass (each pair of queries'
        // statistics and deltas read once; on the causal diagonal, hidden
        // pairs redone from the fill); otherwise one score at a time, with
        // the mask.
        const bool lean = kind <= 1 && i0 + QT <= n.queries && j0 + jw + 16 <= n.keys;
        const bool diagonal = kind == 1 && j0 + jw + 15 > i0 + shift;
        if (lean) {
#pragma unroll
            for (int nb = 0; nb < QT / 8; ++nb) {
                const int il = nb * 8 + t4 * 2;
                const float4 ml = *reinterpret_cast<const float4*>(stats_s + 2 * il);
                const float2 dl = *reinterpret_cast<const float2*>(delta_s + il);
                const float c0 = ml.x + ml.y, c1 = ml.z + ml.w;
                const float p0 = fx_ex2(fmaf(st[nb][0], scale, -c0) * LOG2E);
                const float p1 = fx_ex2(fmaf(st[nb][1], scale, -c1) * LOG2E);
                const float p2 = fx_ex2(fmaf(st[nb][2], scale, -c0) * LOG2E);
                const float p3 = fx_ex2(fmaf(st[nb][3], scale, -c1) * LOG2E);
                st[nb][0] = p0;
                st[nb][1] = p1;
                st[nb][2] = p2;
                st[nb][3] = p3;
                dpt[nb][0] = p0 * (dpt[nb][0] - dl.x);
                dpt[nb][1] = p1 * (dpt[nb][1] - dl.y);
                dpt[nb][2] = p2 * (dpt[nb][2] - dl.x);
                dpt[nb][3] = p3 * (dpt[nb][3] - dl.y);
                if (diagonal) {
                    // A hidden score is the fill (as fx_attn_mask has it) and
                    // passes no gradient.
                    const float h0 = fx_ex2((fill - ml.x - ml.y) * LOG2E), h1 = fx_ex2((fill - ml.z - ml.w) * LOG2E);
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        if (fx_causal_hidden(i0 + il + (e & 1), e < 2 ? ja : jb, shift)) {
                            st[nb][e] = e & 1 ? h1 : h0;
                            dpt[nb][e] = 0.f;
                        }
                    }
                }
            }
        } else {
#pragma unroll
            for (int nb = 0; nb < QT / 8; ++nb) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int il = nb * 8 + t4 * 2 + (e & 1);
                    fx_attn_grad_score(st[nb][e], dpt[nb][e], true, i0 + il, e < 2 ? ja : jb, stats_s + 2 * il,
                                       delta_s[il], n, kind, mask, ms, b, h, shift, fill, scale);
                }
            }
        }
        // dV += P^T dO and dK += dS^T Q (k = queries: steps of 16), while dS
        // goes to shared memory as [key][query] for the next tile's dQ.
        unsigned pa[QT / 16][4], da[QT / 16][4];
#pragma unroll
        for (int kq = 0; kq < QT / 16; ++kq) {
            pa[kq][0] = fx_pack2(st[2 * kq][0], st[2 * kq][1]);
            pa[kq][1] = fx_pack2(st[2 * kq][2], st[2 * kq][3]);
            pa[kq][2] = fx_pack2(st[2 * kq + 1][0], st[2 * kq + 1][1]);
            pa[kq][3] = fx_pack2(st[2 * kq + 1][2], st[2 * kq + 1][3]);
            da[kq][0] = fx_pack2(dpt[2 * kq][0], dpt[2 * kq][1]);
            da[kq][1] = fx_pack2(dpt[2 * kq][2], dpt[2 * kq][3]);
            da[kq][2] = fx_pack2(dpt[2 * kq + 1][0], dpt[2 * kq + 1][1]);
            da[kq][3] = fx_pack2(dpt[2 * kq + 1][2], dpt[2 * kq + 1][3]);
        }
        fx_wg_pin(dv_acc);
        fx_wg_pin(dk_acc);
        const unsigned long long gt_desc = fx_wg_desc(gs, QT * 128, 1024), qt_desc = fx_wg_desc(qs, QT * 128, 1024);
        fx_wg_fence();
#pragma unroll
        for (int kq = 0; kq < QT / 16; ++kq) {
            fx_wg_rs_n128_mn(dv_acc, pa[kq], gt_desc + kq * 128);
            fx_wg_rs_n128_mn(dk_acc, da[kq], qt_desc + kq * 128);
        }
        fx_wg_commit();
        unsigned char* dss = ds_buf + buf * QTILE;
#pragma unroll
        for (int nb = 0; nb < QT / 8; ++nb) {
            const int chunk = nb, jl = jw + g;
            *reinterpret_cast<unsigned*>(dss + fx_sw128(jl, chunk) + t4 * 4) = da[nb >> 1][(nb & 1) * 2];
            *reinterpret_cast<unsigned*>(dss + fx_sw128(jl + 8, chunk) + t4 * 4) = da[nb >> 1][(nb & 1) * 2 + 1];
        }
        // The previous tile's dQ is done (dV and dK may still run).
        fx_wg_wait<1>();
        fx_wg_pin(dq);
        if (t > 0) add_dq(dq, prev_row0, prev_i0);
        fx_wg_wait<0>();
        fx_wg_pin(dv_acc);
        fx_wg_pin(dk_acc);
        prev_row0 = row0;
        prev_i0 = i0;
        hg = next_hg;
        i0 = next_i0;
    }
    if (t > 0) {  // the last tile's dQ
        fx_proxy_fence();
        __syncthreads();
        issue_dq(dq, (t - 1) & 1);
        fx_wg_wait<0>();
        fx_wg_pin(dq);
        add_dq(dq, prev_row0, prev_i0);
    }
    fx_cp_async_wait_all();  // the K and V copies, when no tile ran
    fx_store_key_grads<128>(dk_acc, dv_acc, dk + fx_row(L.dk, b, kvh, 0), dv + fx_row(L.dv, b, kvh, 0), L.dk.r, L.dv.r, ja,
                            jb, n.keys, t4, scale);
}

extern "C" __global__ void __launch_bounds__(256, 1)
    attention_bwd_wg_128(const T* q, const T* k, const T* v, const void* mask, FxAttnStrides ms, int kind,
                         const TC* stats, const TC* delta, const T* dout, TC* dq_acc, T* dk, T* dv, FxAttnDims n,
                         FxAttnLayout L, float scale, double fill) {
    fx_attn_bwd_wg(q, k, v, mask, ms, kind, stats, delta, dout, dq_acc, dk, dv, n, L, scale, fill);
}

// attention_cast's counterpart (same arguments, d = 128) for the dQ that
// attention_bwd_wg_128 accumulated in its tile order (see there).
extern "C" __global__ void attention_cast_wg(const TC* acc, T* out, long long n, int d, int queries, int heads,
                                             FxRows os) {
    const long long dq_rows = fx_wg_dq_rows(queries);
    for (long long e = fx_thread_id(); e < n; e += fx_thread_count()) {
        const long long row = e / d, bh = row / queries;
        const int f = (int)(e % d), i = (int)(row % queries), h = (int)(bh % heads), b = (int)(bh / heads);
        const int r = i % FX_WG_BWD_QT, w = (f >> 6) * 4 + (r >> 4), nb = (f >> 3) & 7;
        const int lane = (r & 7) * 4 + ((f >> 1) & 3), el = (f & 1) + ((r >> 3) & 1) * 2;
        const long long tile = (bh * dq_rows + (i - r)) * d;
        out[fx_row(os, b, h, i) + f] = fx_from_c(acc[tile + ((w * 8 + nb) * 32 + lane) * 4 + el]);
    }
}

#endif

#endif

#endif
