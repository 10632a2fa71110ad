// scan.cu: cumulative sums, products, maxima, minima and log-sum-exps of
// the module dtype T along one axis (cumsum, cumprod, cummax, cummin,
// logcumsumexp; logcumsumexp for the inexact dtypes only).
//
// Values combine in the compute type TC (float for f16/bf16) with the
// element functions of arith.cuh: sums and products of integers wrap; bool
// sum = or, prod = and, max = or, min = and; float and complex max/min
// propagate NaN. Identities (an exclusive scan's first element): sum 0,
// prod 1, max lowest (-inf, integer MIN, false, (-inf, -inf)), min highest,
// logaddexp -inf (-inf + 0i). Each combination runs in the order of a
// parallel scan (sequential within a thread, then across lanes, warps and
// tiles), so float results differ from a sequential loop by rounding only.
//
// `mode` (every kernel): bit 0 set = reverse (the scan runs from the end of
// each line), bit 1 set = exclusive (element i combines the elements before
// it; the first one is the identity). Inputs are contiguous; `x` and `y`
// may have any element alignment (16-byte packs are used where aligned).
//
// Kernels, for <op> in cumsum cumprod cummax cummin logcumsumexp:
//   <op>_tiles(const T* x, T* y, long long rows, long long n,
//              unsigned int* flags, unsigned long long* aggs,
//              unsigned long long* incls, unsigned int* counter, int mode)
//       x, y: [rows, n], scanned along n. blockDim.x = 32 * W, W in 1..8;
//       a tile is W * FX_SCAN_SEG consecutive elements of a row (FX_SCAN_SEG
//       = 1024, or 512 for 8-byte dtypes), one block per tile: grid.x =
//       rows * tiles_per_row, tiles_per_row = ceil(n / (W * FX_SCAN_SEG)). With tiles_per_row == 1, flags (and aggs, incls, counter)
//       are null and block b scans row b. Otherwise tiles publish their
//       aggregates and inclusive prefixes for their successors (decoupled
//       look-back, one pass): flags[grid.x], *counter and (for compute
//       types of up to 4 bytes, which pack their status into them) the
//       aggs slots must be zero at launch; aggs and incls hold grid.x
//       8-byte slots each. Tile t (in the order blocks start, from
//       *counter) is tile t / rows of row t % rows.
//   <op>_warps(const T* x, T* y, long long rows, long long n,
//              long long rows_per_warp, int mode)
//       x, y: [rows, n], 1 <= n < 2^24. Each warp scans groups of
//       rows_per_warp whole rows (grid-stride over groups) as one segmented
//       scan, one element per lane per step. blockDim.x a multiple of 32.
//   <op>_cols(const T* x, T* y, long long outer, long long n, long long inner, int mode)
//       x, y: [outer, n, inner], scanned along n: one thread per
//       (outer, inner) column (grid-stride), walking n. Any 1-D launch.
//   <op>_col_tiles(const T* x, T* y, long long outer, long long n, long long inner,
//                  unsigned int* flags, unsigned long long* aggs,
//                  unsigned long long* incls, unsigned int* counter, int mode)
//       x, y: [outer, n, inner], scanned along n. blockDim (32, 8); a tile
//       is 128 rows of n by 32 columns of inner; grid.x = outer *
//       ceil(inner / 32) * ceil(n / 128), one block per tile, linked by
//       decoupled look-back along n: flags[grid.x] and *counter zero at
//       launch, aggs and incls hold 32 * grid.x 8-byte slots each.

#define FX_SCAN_REVERSE 1
#define FX_SCAN_EXCLUSIVE 2

// Values each thread of a tile kernel holds (fewer tiles mean shorter
// look-back chains; 8-byte elements hold half as many, for registers).
#if defined(FX_DTYPE_U64) || defined(FX_DTYPE_I64) || defined(FX_DTYPE_F64) || FX_IS_COMPLEX
#define FX_SCAN_VALS 16
#else
#define FX_SCAN_VALS 32
#endif
// Elements per lane per step of a tile: one 16-byte pack.
#define FX_SP (16 / (int)sizeof(T))
// Steps per warp segment.
#define FX_SCH (FX_SCAN_VALS / FX_SP)
// Elements per warp segment of <op>_tiles.
#define FX_SCAN_SEG (32 * FX_SCAN_VALS)
// Rows per thread of <op>_col_tiles (128 rows per tile).
#define FX_SCAN_RPT 16
// Steps of <op>_warps whose loads are issued together.
#define FX_SCAN_BATCH 8

// ---------------------------------------------------------------------------
// The ops: identity and combine on TC
// ---------------------------------------------------------------------------

struct ScanSum {
    static __device__ __forceinline__ TC identity() { return fx_zero(); }
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_add(a, b); }
};
struct ScanProd {
    static __device__ __forceinline__ TC identity() { return fx_one(); }
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_mul(a, b); }
};
struct ScanMax {
    static __device__ __forceinline__ TC identity() { return fx_lowest(); }
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_max(a, b); }
};
struct ScanMin {
    static __device__ __forceinline__ TC identity() { return fx_highest(); }
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_min(a, b); }
};
#if FX_IS_INEXACT
struct ScanLogAddExp {
    static __device__ __forceinline__ TC identity() {
#if FX_IS_COMPLEX
        return fx_cplx(-fx_inf_f32(), 0.0f);
#else
        return fx_lowest();
#endif
    }
    __device__ __forceinline__ TC operator()(TC a, TC b) const { return fx_logaddexp(a, b); }
};
#endif

// ---------------------------------------------------------------------------
// Warp shuffles of any V (moved as 32-bit words) and the warp scan
// ---------------------------------------------------------------------------

template <class V>
__device__ __forceinline__ V fx_shfl_up(V v, unsigned int delta) {
    constexpr int W = ((int)sizeof(V) + 3) / 4;
    unsigned int w[W] = {};
    memcpy(w, &v, sizeof(V));
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = __shfl_up_sync(0xffffffffu, w[k], delta);
    memcpy(&v, w, sizeof(V));
    return v;
}

template <class V>
__device__ __forceinline__ V fx_shfl_idx(V v, int src) {
    constexpr int W = ((int)sizeof(V) + 3) / 4;
    unsigned int w[W] = {};
    memcpy(w, &v, sizeof(V));
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = __shfl_sync(0xffffffffu, w[k], src);
    memcpy(&v, w, sizeof(V));
    return v;
}

// Inclusive scan across the 32 lanes (lane l gets lanes 0..l combined).
// All 32 lanes must call it.
template <class Op>
__device__ __forceinline__ TC fx_warp_scan(TC v, const Op& op) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const TC y = fx_shfl_up(v, d);
        if (lane >= d) v = op(y, v);
    }
    return v;
}

// ---------------------------------------------------------------------------
// Tile status for decoupled look-back: a flag per tile (0 nothing yet,
// 1 aggregate published, 2 inclusive prefix published) and 8-byte slots
// holding TC values; slots are written before their flag is released and
// read after it is acquired.
// ---------------------------------------------------------------------------

#define FX_SCAN_AGG 1u
#define FX_SCAN_INCL 2u

__device__ __forceinline__ unsigned int fx_ld_acquire(const unsigned int* p) {
    unsigned int v;
#if __CUDA_ARCH__ >= 700
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
#else
    v = *(const volatile unsigned int*)p;
    __threadfence();
#endif
    return v;
}

__device__ __forceinline__ void fx_st_release(unsigned int* p, unsigned int v) {
#if __CUDA_ARCH__ >= 700
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
    __threadfence();
    *(volatile unsigned int*)p = v;
#endif
}

__device__ __forceinline__ void fx_slot_store(unsigned long long* p, TC v) {
    unsigned long long w = 0;
    memcpy(&w, &v, sizeof(TC));
#if __CUDA_ARCH__ >= 700
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(w) : "memory");
#else
    *(volatile unsigned long long*)p = w;
#endif
}

__device__ __forceinline__ TC fx_slot_load(const unsigned long long* p) {
    unsigned long long w;
#if __CUDA_ARCH__ >= 700
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(p) : "memory");
#else
    w = *(const volatile unsigned long long*)p;
#endif
    TC v;
    memcpy(&v, &w, sizeof(TC));
    return v;
}

// Spins until tile `t` has published something; returns its flag.
__device__ __forceinline__ unsigned int fx_scan_wait(const unsigned int* flags, long long t) {
    unsigned int f;
    do {
        f = fx_ld_acquire(flags + t);
    } while (f == 0);
    return f;
}

// Compute types of up to 4 bytes publish a row tile's status as one 8-byte
// word in its `aggs` slot, flag high and value low, so a look-back step is
// one load rather than a flag then a slot (the 8-byte status words must be
// zero at launch, like the flags).
#define FX_SCAN_PACKED (sizeof(TC) <= 4)

__device__ __forceinline__ void fx_status_store(unsigned int* flags, unsigned long long* aggs,
                                                unsigned long long* incls, long long t, unsigned int flag, TC v) {
    if constexpr (FX_SCAN_PACKED) {
        unsigned int bits = 0u;
        memcpy(&bits, &v, sizeof(TC));
        const unsigned long long w = ((unsigned long long)flag << 32) | bits;
        asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(aggs + t), "l"(w) : "memory");
    } else {
        fx_slot_store((flag == FX_SCAN_INCL ? incls : aggs) + t, v);
        fx_st_release(flags + t, flag);
    }
}

// Spins until tile `t` has published something; returns its flag and value.
__device__ __forceinline__ unsigned int fx_status_wait(const unsigned int* flags, const unsigned long long* aggs,
                                                       const unsigned long long* incls, long long t, TC* v) {
    if constexpr (FX_SCAN_PACKED) {
        unsigned long long w;
        do {
            asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(aggs + t) : "memory");
        } while ((w >> 32) == 0ull);
        const unsigned int bits = (unsigned int)w;
        memcpy(v, &bits, sizeof(TC));
        return (unsigned int)(w >> 32);
    } else {
        const unsigned int f = fx_scan_wait(flags, t);
        *v = fx_slot_load((f == FX_SCAN_INCL ? incls : aggs) + t);
        return f;
    }
}

// ---------------------------------------------------------------------------
// Contiguous lines: a lane's FX_SP consecutive elements in scan order
// ---------------------------------------------------------------------------

// Loads the elements q .. q + FX_SP - 1, in scan order, of a line of n
// elements starting at `line` (identity past the end). `packed`: the line is
// aligned so that these elements form one 16-byte pack.
__device__ __forceinline__ void fx_scan_load(const T* line, long long n, bool rev, bool packed, long long q,
                                             TC (&v)[FX_SP], TC id) {
    if (packed && q + FX_SP <= n) {
        FxPack<T, FX_SP> pk;
        pk.load(rev ? line + (n - q - FX_SP) : line + q);
#pragma unroll
        for (int e = 0; e < FX_SP; ++e) v[e] = fx_to_c(pk.v[rev ? FX_SP - 1 - e : e]);
    } else {
#pragma unroll
        for (int e = 0; e < FX_SP; ++e) {
            const long long k = q + e;
            v[e] = k < n ? fx_to_c(line[rev ? n - 1 - k : k]) : id;
        }
    }
}

// Stores what fx_scan_load loaded (elements past the end are dropped).
__device__ __forceinline__ void fx_scan_store(T* line, long long n, bool rev, bool packed, long long q,
                                              const TC (&v)[FX_SP]) {
    if (packed && q + FX_SP <= n) {
        FxPack<T, FX_SP> pk;
#pragma unroll
        for (int e = 0; e < FX_SP; ++e) pk.v[rev ? FX_SP - 1 - e : e] = fx_from_c(v[e]);
        pk.store(rev ? line + (n - q - FX_SP) : line + q);
    } else {
#pragma unroll
        for (int e = 0; e < FX_SP; ++e) {
            const long long k = q + e;
            if (k < n) line[rev ? n - 1 - k : k] = fx_from_c(v[e]);
        }
    }
}

// Scans a warp segment held in registers (lane l holds elements
// c * 32 * FX_SP + l * FX_SP + e of step c): v becomes the inclusive (or
// exclusive) scan within the segment. Returns the segment's total, in
// every lane.
template <class Op>
__device__ __forceinline__ TC fx_scan_segment(TC (&v)[FX_SCH][FX_SP], const Op& op, bool excl) {
    const int lane = threadIdx.x & 31;
    TC carry = Op::identity();
#pragma unroll
    for (int c = 0; c < FX_SCH; ++c) {
#pragma unroll
        for (int e = 1; e < FX_SP; ++e) v[c][e] = op(v[c][e - 1], v[c][e]);
        const TC s = fx_warp_scan(v[c][FX_SP - 1], op);
        TC ex = fx_shfl_up(s, 1);
        if (lane == 0) ex = Op::identity();
        const TC pre = op(carry, ex);
        if (excl) {
#pragma unroll
            for (int e = FX_SP - 1; e > 0; --e) v[c][e] = op(pre, v[c][e - 1]);
            v[c][0] = pre;
        } else {
#pragma unroll
            for (int e = 0; e < FX_SP; ++e) v[c][e] = op(pre, v[c][e]);
        }
        carry = op(carry, fx_shfl_idx(s, 31));
    }
    return carry;
}

// The combination of every tile before tile `t` (the k-th of its line,
// k >= 1) whose predecessor in the line is tile t - stride: a warp looks at
// 32 predecessors at a time, folding aggregates until one has published
// its inclusive prefix. All 32 lanes must call it; every lane gets the result.
template <class Op>
__device__ __forceinline__ TC fx_scan_lookback(const unsigned int* flags, const unsigned long long* aggs,
                                               const unsigned long long* incls, long long t, long long k,
                                               long long stride, const Op& op) {
    const int lane = threadIdx.x & 31;
    TC prefix = Op::identity();
    long long first = k - 1;  // index in the line of the nearest predecessor
#pragma unroll 1
    while (true) {
        const long long kk = first - lane;
        unsigned int f = FX_SCAN_INCL;
        TC val = Op::identity();
        if (kk >= 0) f = fx_status_wait(flags, aggs, incls, t - (k - kk) * stride, &val);
        const unsigned int done = __ballot_sync(0xffffffffu, f == FX_SCAN_INCL);
        if (done != 0 && lane > __ffs(done) - 1) val = Op::identity();
        prefix = op(prefix, fx_warp_reduce(val, op));
        if (done != 0) break;
        first -= 32;
    }
    return prefix;
}

// ---------------------------------------------------------------------------
// <op>_tiles: rows scanned by tiles of W * 512 elements
// ---------------------------------------------------------------------------

template <class Op>
__device__ __forceinline__ void fx_scan_tiles(const T* x, T* y, long long rows, long long n, unsigned int* flags,
                                              unsigned long long* aggs, unsigned long long* incls,
                                              unsigned int* counter, int mode) {
    __shared__ TC sm_warp[32];
    __shared__ long long sm_tile;
    const Op op{};
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const bool rev = (mode & FX_SCAN_REVERSE) != 0, excl = (mode & FX_SCAN_EXCLUSIVE) != 0;
    long long t = blockIdx.x;
    if (flags != nullptr) {
        // Tiles in the order blocks start, so that every predecessor runs.
        if (threadIdx.x == 0) sm_tile = (long long)atomicAdd(counter, 1u);
        __syncthreads();
        t = sm_tile;
    }
    const long long row = t % rows, k = t / rows;
    const T* xr = x + row * n;
    T* yr = y + row * n;
    const bool xp = fx_aligned(rev ? (const void*)(xr + n) : (const void*)xr, 16);
    const bool yp = fx_aligned(rev ? (const void*)(yr + n) : (const void*)yr, 16);
    const long long seg = (k * nwarps + warp) * FX_SCAN_SEG;

    TC v[FX_SCH][FX_SP];
#pragma unroll
    for (int c = 0; c < FX_SCH; ++c) fx_scan_load(xr, n, rev, xp, seg + (c * 32 + lane) * FX_SP, v[c], Op::identity());
    const TC total = fx_scan_segment(v, op, excl);
    if (lane == 0) sm_warp[warp] = total;
    __syncthreads();
    if (warp == 0) {
        const TC s = fx_warp_scan(lane < nwarps ? sm_warp[lane] : Op::identity(), op);
        TC ex = fx_shfl_up(s, 1);
        if (lane == 0) ex = Op::identity();
        const TC aggregate = fx_shfl_idx(s, 31);
        TC prefix = Op::identity();
        if (flags != nullptr) {
            if (k > 0) {
                if (lane == 0) fx_status_store(flags, aggs, incls, t, FX_SCAN_AGG, aggregate);
                prefix = fx_scan_lookback(flags, aggs, incls, t, k, rows, op);
            }
            if (lane == 0) fx_status_store(flags, aggs, incls, t, FX_SCAN_INCL, op(prefix, aggregate));
        }
        if (lane < nwarps) sm_warp[lane] = op(prefix, ex);
    }
    __syncthreads();
    const TC pre = sm_warp[warp];
#pragma unroll
    for (int c = 0; c < FX_SCH; ++c) {
#pragma unroll
        for (int e = 0; e < FX_SP; ++e) v[c][e] = op(pre, v[c][e]);
        fx_scan_store(yr, n, rev, yp, seg + (c * 32 + lane) * FX_SP, v[c]);
    }
}

// ---------------------------------------------------------------------------
// <op>_warps: short rows, a segmented warp scan over groups of whole rows
// ---------------------------------------------------------------------------

template <class Op>
__device__ __forceinline__ void fx_scan_warps(const T* x, T* y, long long rows, long long n, long long rows_per_warp,
                                              int mode) {
    const Op op{};
    const int lane = threadIdx.x & 31;
    const bool rev = (mode & FX_SCAN_REVERSE) != 0, excl = (mode & FX_SCAN_EXCLUSIVE) != 0;
    const int ni = (int)n;
    const int col_step = 32 % ni, row_step = 32 / ni;
    const long long groups = (rows + rows_per_warp - 1) / rows_per_warp;
    const long long nwarps = fx_thread_count() >> 5;
#pragma unroll 1
    for (long long g = fx_thread_id() >> 5; g < groups; g += nwarps) {
        const long long r0 = g * rows_per_warp;
        const long long count = rows - r0 < rows_per_warp ? rows - r0 : rows_per_warp;
        const T* xg = x + r0 * n;
        T* yg = y + r0 * n;
        // Position of this lane's element: row r of the group, column col.
        int col = lane % ni;
        long long r = lane / ni;
        TC carry = Op::identity();
#pragma unroll 1
        for (long long s0 = 0; s0 < count * n; s0 += 32 * FX_SCAN_BATCH) {
            TC v[FX_SCAN_BATCH];
            int cols[FX_SCAN_BATCH];
            long long at[FX_SCAN_BATCH];
#pragma unroll
            for (int b = 0; b < FX_SCAN_BATCH; ++b) {
                cols[b] = col;
                at[b] = r < count ? r * n + (rev ? ni - 1 - col : col) : -1;
                v[b] = at[b] >= 0 ? fx_to_c(xg[at[b]]) : Op::identity();
                col += col_step;
                r += row_step;
                if (col >= ni) {
                    col -= ni;
                    r += 1;
                }
            }
#pragma unroll
            for (int b = 0; b < FX_SCAN_BATCH; ++b) {
                const int c = cols[b];
                TC w = v[b];
                // Segmented inclusive scan: lane l - d is in this row when d <= c.
#pragma unroll
                for (int d = 1; d < 32; d <<= 1) {
                    const TC u = fx_shfl_up(w, d);
                    if (d <= c && d <= lane) w = op(u, w);
                }
                if (c > lane) w = op(carry, w);  // the row began in an earlier step
                const TC before = fx_shfl_up(w, 1);
                const TC next_carry = fx_shfl_idx(w, 31);
                if (at[b] >= 0) {
                    const TC out = !excl ? w : (c == 0 ? Op::identity() : (lane == 0 ? carry : before));
                    yg[at[b]] = fx_from_c(out);
                }
                carry = next_carry;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// <op>_cols: one thread per column of [outer, n, inner]
// ---------------------------------------------------------------------------

template <class Op>
__device__ __forceinline__ void fx_scan_cols(const T* x, T* y, long long outer, long long n, long long inner,
                                             int mode) {
    const Op op{};
    const bool rev = (mode & FX_SCAN_REVERSE) != 0, excl = (mode & FX_SCAN_EXCLUSIVE) != 0;
    const long long cols = outer * inner;
#pragma unroll 1
    for (long long c = fx_thread_id(); c < cols; c += fx_thread_count()) {
        unsigned long long o, j;
        fx_divmod((unsigned long long)c, (unsigned long long)inner, o, j);
        const long long base = (long long)o * n * inner + (long long)j;
        TC acc = Op::identity();
#pragma unroll 1
        for (long long i0 = 0; i0 < n; i0 += 8) {
            TC v[8];
#pragma unroll
            for (int u = 0; u < 8; ++u) {
                const long long i = i0 + u;
                v[u] = i < n ? fx_to_c(x[base + (rev ? n - 1 - i : i) * inner]) : Op::identity();
            }
#pragma unroll
            for (int u = 0; u < 8; ++u) {
                const long long i = i0 + u;
                if (i < n) {
                    const TC before = acc;
                    acc = op(acc, v[u]);
                    y[base + (rev ? n - 1 - i : i) * inner] = fx_from_c(excl ? before : acc);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// <op>_col_tiles: tiles of 128 rows x 32 columns, look-back along n
// ---------------------------------------------------------------------------

template <class Op>
__device__ __forceinline__ void fx_scan_col_tiles(const T* x, T* y, long long outer, long long n, long long inner,
                                                  unsigned int* flags, unsigned long long* aggs,
                                                  unsigned long long* incls, unsigned int* counter, int mode) {
    __shared__ TC sm_part[8][32];
    __shared__ TC sm_pre[32];
    __shared__ long long sm_tile;
    const Op op{};
    const int tx = threadIdx.x, ty = threadIdx.y;
    const bool rev = (mode & FX_SCAN_REVERSE) != 0, excl = (mode & FX_SCAN_EXCLUSIVE) != 0;
    if (tx == 0 && ty == 0) sm_tile = (long long)atomicAdd(counter, 1u);
    __syncthreads();
    const long long t = sm_tile;
    const long long groups = (inner + 31) / 32;
    const long long stride = outer * groups;  // tiles per step along n
    const long long k = t / stride, o = (t % stride) / groups, g = t % groups;
    const long long j = g * 32 + tx;
    const bool col_ok = j < inner;
    const long long base = o * n * inner + j;
    const long long q0 = k * (8 * FX_SCAN_RPT) + ty * FX_SCAN_RPT;

    TC v[FX_SCAN_RPT];
#pragma unroll
    for (int r = 0; r < FX_SCAN_RPT; ++r) {
        const long long q = q0 + r;
        v[r] = (col_ok && q < n) ? fx_to_c(x[base + (rev ? n - 1 - q : q) * inner]) : Op::identity();
    }
#pragma unroll
    for (int r = 1; r < FX_SCAN_RPT; ++r) v[r] = op(v[r - 1], v[r]);
    sm_part[ty][tx] = v[FX_SCAN_RPT - 1];
    __syncthreads();
    TC ex = Op::identity();
#pragma unroll 1
    for (int u = 0; u < ty; ++u) ex = op(ex, sm_part[u][tx]);
    if (ty == 0) {
        TC aggregate = Op::identity();
#pragma unroll
        for (int u = 0; u < 8; ++u) aggregate = op(aggregate, sm_part[u][tx]);
        TC prefix = Op::identity();
        if (k > 0) {
            fx_slot_store(aggs + t * 32 + tx, aggregate);
            __threadfence();
            __syncwarp();
            if (tx == 0) fx_st_release(flags + t, FX_SCAN_AGG);
            // Walk back along n; each lane folds its own column.
            long long p = t - stride;
#pragma unroll 1
            while (true) {
                const unsigned int f = fx_scan_wait(flags, p);
                prefix = op(fx_slot_load((f == FX_SCAN_INCL ? incls : aggs) + p * 32 + tx), prefix);
                if (f == FX_SCAN_INCL) break;
                p -= stride;
            }
        }
        fx_slot_store(incls + t * 32 + tx, op(prefix, aggregate));
        __threadfence();
        __syncwarp();
        if (tx == 0) fx_st_release(flags + t, FX_SCAN_INCL);
        sm_pre[tx] = prefix;
    }
    __syncthreads();
    const TC pre = op(sm_pre[tx], ex);
    if (col_ok) {
#pragma unroll
        for (int r = 0; r < FX_SCAN_RPT; ++r) {
            const long long q = q0 + r;
            if (q < n) {
                const TC out = excl ? (r == 0 ? pre : op(pre, v[r - 1])) : op(pre, v[r]);
                y[base + (rev ? n - 1 - q : q) * inner] = fx_from_c(out);
            }
        }
    }
}

#define FX_SCAN(NAME, OP)                                                                                            \
    extern "C" __global__ void NAME##_tiles(const T* x, T* y, long long rows, long long n, unsigned int* flags,      \
                                            unsigned long long* aggs, unsigned long long* incls,                     \
                                            unsigned int* counter, int mode) {                                       \
        fx_scan_tiles<OP>(x, y, rows, n, flags, aggs, incls, counter, mode);                                         \
    }                                                                                                                \
    extern "C" __global__ void NAME##_warps(const T* x, T* y, long long rows, long long n, long long rows_per_warp, \
                                            int mode) {                                                              \
        fx_scan_warps<OP>(x, y, rows, n, rows_per_warp, mode);                                                       \
    }                                                                                                                \
    extern "C" __global__ void NAME##_cols(const T* x, T* y, long long outer, long long n, long long inner,          \
                                           int mode) {                                                               \
        fx_scan_cols<OP>(x, y, outer, n, inner, mode);                                                               \
    }                                                                                                                \
    extern "C" __global__ void NAME##_col_tiles(const T* x, T* y, long long outer, long long n, long long inner,     \
                                                unsigned int* flags, unsigned long long* aggs,                       \
                                                unsigned long long* incls, unsigned int* counter, int mode) {        \
        fx_scan_col_tiles<OP>(x, y, outer, n, inner, flags, aggs, incls, counter, mode);                             \
    }

// The family module instantiates every op. The modules the backend loads
// hold one op each (kernels.rs, Module::Scan): they define FX_SCAN_ONE and
// append that op's FX_SCAN line.
#ifndef FX_SCAN_ONE
FX_SCAN(cumsum, ScanSum)
FX_SCAN(cumprod, ScanProd)
FX_SCAN(cummax, ScanMax)
FX_SCAN(cummin, ScanMin)
#if FX_IS_INEXACT
FX_SCAN(logcumsumexp, ScanLogAddExp)
#endif
#endif
